"""The processes a process has started, and keeping none of them alive past it.

Read from ``/proc`` (Linux; elsewhere every answer is empty), for the tools and tests that must
leave nothing running: ``bench/load.py``'s watchdog kills the whole tree it started, and the
test suite fails a test that leaves a process behind. :func:`exit_with` makes a pool worker
end with the process that owns the pool, however that one ends (even by ``SIGKILL``, which
gives it no chance to stop its pool).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    pid: int
    ppid: int
    state: str  # one letter, as /proc/<pid>/stat gives it: R, S, D, Z (zombie)...
    started: int  # clock ticks after boot: with the pid, names the process even if pids are reused
    name: str  # the kernel's short name (/proc/<pid>/comm)

    @property
    def running(self) -> bool:
        """Alive, not a zombie (a zombie has exited and only waits to be reaped)."""
        return self.state not in ("Z", "X")

    def command(self) -> str:
        """The command line, or ``[name]`` when there is none (a zombie, a kernel thread)."""
        try:
            raw = (PROC / str(self.pid) / "cmdline").read_bytes()
        except OSError:
            raw = b""
        return raw.replace(b"\0", b" ").decode(errors="replace").strip() or f"[{self.name}]"


def process_info(pid: int) -> ProcessInfo | None:
    """One process, or None if it is gone (or there is no /proc)."""
    try:
        stat = (PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split at the last ")".
    head, _, tail = stat.rpartition(b")")
    fields = tail.split()
    if len(fields) < 20:
        return None
    name = head.partition(b"(")[2].decode(errors="replace")
    return ProcessInfo(pid, int(fields[1]), fields[0].decode(), int(fields[19]), name)


def all_processes() -> dict[int, ProcessInfo]:
    found = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir(PROC):
            if entry.name.isdigit():
                info = process_info(int(entry.name))
                if info is not None:
                    found[info.pid] = info
    return found


def descendants(pid: int, table: dict[int, ProcessInfo] | None = None) -> list[ProcessInfo]:
    """Every process below ``pid`` (children, their children...), zombies included."""
    table = all_processes() if table is None else table
    children: dict[int, list[ProcessInfo]] = {}
    for info in table.values():
        children.setdefault(info.ppid, []).append(info)
    out: list[ProcessInfo] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            out.append(child)
            todo.append(child.pid)
    return out


def with_environment(name: str, value: str, table: dict[int, ProcessInfo] | None = None) -> list[ProcessInfo]:
    """The processes started with ``name=value`` in their environment: this finds what a
    process started even after it was orphaned (its parent is then 1, not the starter)."""
    table = all_processes() if table is None else table
    needle = f"{name}={value}".encode()
    out = []
    for info in table.values():
        key = (info.pid, info.started, needle)
        found = _environ_seen.get(key)
        if found is None:
            try:
                env = (PROC / str(info.pid) / "environ").read_bytes()
            except OSError:
                continue
            # A process's initial environment never changes: look once per process.
            found = _environ_seen[key] = needle in env.split(b"\0")
        if found:
            out.append(info)
    return out


_environ_seen: dict[tuple[int, int, bytes], bool] = {}


def kill_all(pids: Iterable[int], *, wait_s: float = 5.0) -> None:
    """SIGKILL each process, then reap those that are this process's children (so none is
    left a zombie) and wait, at most ``wait_s``, for the others to be gone."""
    pids = list(pids)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + wait_s
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
            except ChildProcessError:  # not our child: it is gone once /proc says so
                info = process_info(pid)
                if info is None or not info.running:
                    break
            time.sleep(0.02)


def exit_with(owner: int) -> None:
    """End this process (``os._exit``) as soon as process ``owner`` ends, from a daemon thread.

    A ``ProcessPoolExecutor`` worker waits for work on a pipe it also holds the writing end of,
    so it never sees its owner die: without this, a pool whose owner was killed stays forever
    (and keeps the multiprocessing fork server and resource tracker alive with it)."""
    try:
        fd = os.pidfd_open(owner)
    except ProcessLookupError:
        os._exit(1)
    except (AttributeError, OSError):
        fd = -1  # no pidfd (an old kernel, not Linux): look once a second instead

    def watch() -> None:
        if fd >= 0:
            select.select([fd], [], [])
        else:
            while alive(owner):
                time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name=f"exit-with-{owner}", daemon=True).start()


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited: someone else's counts (it exists), a
    zombie (killed, not yet reaped) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
