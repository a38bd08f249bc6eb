"""A hosted bot thinks only on its own clock: between its calls its processes do not run.

A bot's decision is charged the CPU of all its processes from request to reply
(arena/play/hosted.py); without more, a thread or a child it leaves running would think for
free while the other seats play. So the sandbox is stopped whenever none of its calls is in
flight, and let run just before each one (every call: GetInfo, StartMatch, Decide, EndHand,
EndMatch, EndDeal; the arena sends no health ping to a running hosted bot, so a frozen bot
is never taken for a dead one). In a match, the referee says when a seat's turn (its run of
consecutive calls: a draw and its discard) is over (sdk.referee.Player), and the sandbox runs
from its turn's first call to that (:meth:`Freezer.hold`, arena/play/hosted.py): a stop and a
start a turn, not a call. How it is stopped:

- **with a cgroup v2 group** (``cgroup.freeze``): the kernel freezes every task of the group,
  threads and children, wherever they moved in the process tree, and none can thaw itself
  (arena/sandbox/cgroups.py; v1's freezer is not used: its frozen tasks ignore SIGKILL);
- **otherwise**, by ``SIGSTOP`` to every process below bubblewrap, which cannot be caught
  or ignored and stops all the threads of a process (listed from the sandbox's v1 group in
  one read where it has one, else walked down the tree). A child that started its own session,
  or whose parent exited, is still below bubblewrap (orphans of the sandbox's PID namespace
  go to its init); the tree is walked again until every process in it is stopped, so a fork,
  or a ``SIGCONT`` one of its processes sent another (or the kernel's, to a process group
  orphaned while stopped), during a pass is caught by the next.

**Shared sandboxes** (memory scope deal or worker serve matches at once): the sandbox is
frozen only when no call of any of its matches is in flight; while one match's call runs,
the others' bots, the same processes, run too (their CPU is charged to that call).

The CPU the bot uses before it serves (importing, loading) is charged to its start-up budget
(``Limits.start_cpu_s``), and it is frozen from then until its first call.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Final

from arena import processes
from arena.sandbox import cgroups
from arena.sandbox.procfiles import ProcFiles

#: Process states that run no code: stopped (by a signal, or traced), zombie, dead.
_STILL: Final = frozenset("TtZX")
#: How long stopping the tree by signals may take before it is given up (a task in an
#: uninterruptible sleep stops when it wakes; the next freeze tries again).
STOP_TIMEOUT_S: Final = 2.0


class Freezer:
    """Stops one sandbox's processes while none of its calls is in flight (once enabled)."""

    def __init__(self, group: cgroups.Group | None, root_pid: int):
        self.group = group if group is not None and group.can_freeze else None
        self.root_pid = root_pid
        # Stopped by signals in a group of its own (v1): its members are read from the group
        # in one read, where a walk of the tree reads a file per thread.
        self._members = group if group is not None and self.group is None else None
        self._lock = threading.Lock()
        self._in_flight = 0
        self._enabled = False
        self._frozen_by: str | None = None  # "cgroup" or "signals" while frozen
        # Each process's state is read twice a freeze by signals: from kept descriptors.
        self._stats = ProcFiles("stat")

    @property
    def method(self) -> str:
        """How this sandbox is frozen: ``cgroup`` or ``signals``."""
        return "cgroup" if self.group is not None else "signals"

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def frozen(self) -> bool:
        return self._frozen_by is not None

    def enable(self) -> None:
        """From now on, freeze whenever no call is in flight (now, if none is)."""
        with self._lock:
            self._enabled = True
            if self._in_flight == 0 and self._frozen_by is None:
                self._freeze()

    def disable(self) -> None:
        """Thaw for good (before the sandbox is closed)."""
        with self._lock:
            self._enabled = False
            self._thaw()

    def close(self) -> None:
        """Thaw for good and let go of the files it reads (the sandbox is closing)."""
        self.disable()
        self._stats.close()

    @contextlib.contextmanager
    def awake(self) -> Iterator[None]:
        """Around one call: the sandbox runs from before the request to after the reply."""
        self.hold()
        try:
            yield
        finally:
            self.release()

    def hold(self) -> None:
        """Let it run until the matching :meth:`release` (a call, or a turn of calls)."""
        with self._lock:
            self._in_flight += 1
            self._thaw()

    def release(self) -> None:
        with self._lock:
            self._in_flight -= 1
            if self._in_flight == 0 and self._enabled:
                self._freeze()

    # -- with the lock held -----------------------------------------------------------------

    def _freeze(self) -> None:
        if self.group is not None and self.group.freeze(True):
            self._frozen_by = "cgroup"
            return
        # No freezer, or it did not settle: stop what it holds by signals as well.
        self._frozen_by = "signals"
        stop_tree(self.root_pid, below=self._below, state=self._state)

    def _thaw(self) -> None:
        how, self._frozen_by = self._frozen_by, None
        if how is None:
            return
        if self.group is not None:
            self.group.freeze(False)
        if how == "signals":
            continue_tree(self.root_pid, below=self._below)

    def _below(self, root_pid: int) -> list[int]:
        """Every process of the sandbox but its root (bubblewrap, or the template's fork)."""
        if self._members is None:
            found = tree(root_pid)
        else:
            found = [pid for pid in self._members.members() if pid != root_pid]
        self._stats.keep_only(found)
        return found

    def _state(self, pid: int) -> str:
        return _state_in(self._stats.read(pid))


def tree(root_pid: int) -> list[int]:
    """Every process below ``root_pid`` (children, theirs...), zombies included: walked down
    each thread's ``children`` list, a few reads per process where a scan of all of /proc
    reads every process of the machine (30 ms on a busy one, per call of every bot)."""
    if not _HAVE_CHILDREN:
        return [p.pid for p in processes.descendants(root_pid)]
    found: list[int] = []
    seen = {root_pid}
    todo = [root_pid]
    while todo:
        pid = todo.pop()
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    kids = [int(k) for k in f.read().split()]
            except (OSError, ValueError):
                continue
            for kid in kids:
                if kid not in seen:
                    seen.add(kid)
                    found.append(kid)
                    todo.append(kid)
    return found


def _state_in(stat: bytes | None) -> str:
    """The state letter in a ``/proc/<pid>/stat`` line, ``X`` if there is none."""
    try:
        return stat.rpartition(b")")[2].split()[0].decode() if stat else "X"
    except IndexError:
        return "X"


# The kernel lists each thread's children where it is built with CONFIG_PROC_CHILDREN.
_HAVE_CHILDREN: Final = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def stop_tree(
    root_pid: int,
    timeout_s: float = STOP_TIMEOUT_S,
    below: Callable[[int], list[int]] = tree,
    *,
    state: Callable[[int], str],
) -> bool:
    """``SIGSTOP`` every process below ``root_pid`` (as ``below`` lists them) until all are
    seen stopped (by ``state``); True if they were within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    passes = 0
    while True:
        running = [pid for pid in below(root_pid) if state(pid) not in _STILL]
        if not running:
            return True
        if time.monotonic() > deadline:
            return False
        for pid in running:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
        # The signal is taken when the task next runs: often at once (the wake-up of a task
        # at the sandbox's priority preempts a worker niced below it), so look again first
        # after giving up the CPU, and sleep only if that was not enough.
        passes += 1
        if passes == 1:
            os.sched_yield()
        else:
            time.sleep(0.0005)


def continue_tree(root_pid: int, below: Callable[[int], list[int]] = tree) -> None:
    """``SIGCONT`` every process below ``root_pid``."""
    for pid in below(root_pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGCONT)
