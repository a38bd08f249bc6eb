"""The processes a process has started, and keeping none of them alive past it.

Read from ``/proc`` (Linux; elsewhere every answer is empty), for the tools and tests that must
leave nothing running: ``bench/load.py``'s watchdog kills the whole tree it started, and the
test suite fails a test that leaves a process behind. :func:`exit_with` makes a pool worker
end with the process that owns the pool, however that one ends (even by ``SIGKILL``, which
gives it no chance to stop its pool).

A run that starts processes (the test suite, a bench, ``make test-under-load``) keeps them from
outliving it, even when the run itself is killed by ``SIGKILL``, with two things, measured:

- :func:`spawn` (``subprocess.Popen``'s arguments) sets ``PR_SET_PDEATHSIG`` (``SIGKILL``) in the
  child before its ``exec``: the kernel kills it the moment its starter dies. The signal fires
  when the *thread* that forked the child ends, not the process (a child started from a thread
  that then returned was dead 0.5 s later), so a child asked for from any thread but the main
  one is forked by one long-lived spawner thread instead. It reaches only that child: what the
  child forks, double-forks or daemonises (``redis-server --daemonize``, gunicorn's workers, RQ's
  work horses) does not inherit it, and a set-user-ID ``exec`` clears it. Hence also
- :func:`watch_run`: a watchdog process, started once per run, that no signal to the run
  reaches (its own session, SIGINT and SIGHUP ignored, not a descendant of the run, so a kill
  of the run's process tree or group misses it) and that waits on a pidfd of the run's first
  process. When that process ends, however it ends, the watchdog SIGKILLs, again and again
  until none is left, every process with the run's mark (:data:`RUN_MARK`) in its environment,
  every process it saw below the run's first process (it looks once a second) and everything
  below those, then removes the run's temporary folders, and exits. The environment is what
  survives every way of re-parenting oneself (fork, ``setsid``, daemonising), and :func:`spawn`
  puts the mark back into an environment a caller built from scratch; the tree covers a process
  that overwrites its environment (``redis-server`` does, to set its title: a leftover one had
  none). What detaches within a second *and* drops its environment is left to its starter's own
  guarantee (the sandbox's bubblewrap runs with ``--die-with-parent`` from a long-lived thread,
  a hosted bot with :func:`exit_with`). A process of another user is found by its environment
  only when the watchdog runs as root (``/proc/<pid>/environ`` is private).

A subreaper (``PR_SET_CHILD_SUBREAPER``) cannot be the watchdog: it must be an ancestor of the
run, and the run's first process is the one being killed. It serves inside the run instead
(:func:`adopt_orphans`, in each pytest): a ``redis-server --daemonize yes`` started with plain
``subprocess`` was orphaned to pid 1 at once with its environment overwritten, and outlived a
watched owner's SIGKILL; adopted, it stays in the tree the watchdog notes, and went with it. A
process group or session kill misses everything started with ``start_new_session=True``, which
is how most tests start their servers.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    # os.open and one read, not Path.read_bytes: the tests' leak check reads every process's
    # stat twice a test, and the Path and file-object layers were two thirds of that.
    try:
        fd = os.open(f"{PROC}/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        stat = os.read(fd, 4096)  # one line: pid, a name of at most 15 bytes, 52 numbers
    except OSError:
        return None
    finally:
        os.close(fd)
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


# -- a run's processes end with it -------------------------------------------------------------

#: In the environment of every process a watched run starts (:func:`watch_run`, :func:`spawn`).
RUN_MARK = "TONK_RUN_MARK"
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


class WatchdogError(RuntimeError):
    """The run's watchdog did not start."""


_prctl: Any = None


def _prctl_function() -> Any:
    """libc's ``prctl``, looked up once in the parent (the child between fork and exec only calls
    it: a lookup there could wait on a lock another thread of the parent held), or False."""
    global _prctl
    if _prctl is None:
        try:
            import ctypes

            _prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):  # not Linux: the watchdog alone covers
            _prctl = False
    return _prctl


def adopt_orphans() -> bool:
    """Make this process the one its orphaned descendants are re-parented to, instead of pid 1
    (``PR_SET_CHILD_SUBREAPER``): a process that daemonises stays in this process's tree, where
    the run's watchdog and the leak check see it. Adopted ones that exit stay zombies until this
    process ends (nothing here waits for a child it did not start). False where not Linux."""
    prctl = _prctl_function()
    return bool(prctl) and prctl(_PR_SET_CHILD_SUBREAPER, 1) == 0


def _dies_with(parent: int, then: Callable[[], object] | None) -> Callable[[], None]:
    prctl = _prctl_function()

    def before_exec() -> None:
        if prctl:
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:  # the starter died before the line above: nothing fires
                os._exit(1)
        if then is not None:
            then()

    return before_exec


_spawner: ThreadPoolExecutor | None = None
_spawner_lock = threading.Lock()


def _spawner_thread() -> ThreadPoolExecutor:
    """One thread that lives as long as this process, to fork the children other threads ask
    for: the parent-death signal fires when the forking thread ends."""
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = ThreadPoolExecutor(1, thread_name_prefix="tonk-spawner")
        return _spawner


def _forget_spawner() -> None:
    global _spawner
    _spawner = None  # a forked child has none of its parent's threads


os.register_at_fork(after_in_child=_forget_spawner)


#: util-linux's ``setpriv``, which sets the parent-death signal and execs the command.
_SETPRIV = shutil.which("setpriv")


def _setpriv_wrapped(args: list[Any], parent: int) -> list[Any]:
    """``args`` run so they die with ``parent``: setpriv sets the signal before it execs, then a
    shell checks that ``parent`` is still its parent (one killed between fork and prctl fires
    nothing, so the child exits instead) and execs the command in the same process, so
    ``Popen.pid`` stays the command's."""
    check = f'[ "$PPID" = {int(parent)} ] || exit 1; exec "$@"'
    return [_SETPRIV, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", check, "sh", *args]


def _guarded(args: Any, popen: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    mark = os.environ.get(RUN_MARK)
    env = popen.get("env")
    if mark and env is not None and RUN_MARK not in env:
        popen = {**popen, "env": {**env, RUN_MARK: mark}}
    plain = isinstance(args, list | tuple) and not popen.get("shell") and "executable" not in popen
    if _SETPRIV and plain and popen.get("preexec_fn") is None:
        # setpriv sets the signal and execs the command, where a preexec_fn would run Python in
        # the forked child: in a process with gRPC loaded, gRPC's fork handler restarts its
        # poller there, which then finds its epoll descriptor closed and aborts the child
        # (measured: 18 of 200 children killed by SIGABRT with a preexec_fn, none with setpriv).
        return _setpriv_wrapped(list(args), os.getpid()), popen
    return args, {**popen, "preexec_fn": _dies_with(os.getpid(), popen.get("preexec_fn"))}


def spawn(args: Any, **popen: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(args, **popen)`` whose child dies with this process however this one
    ends (``PR_SET_PDEATHSIG``, forked from a thread that lives as long as this process), and
    carries the run's mark (:data:`RUN_MARK`) even in an environment given whole, so the
    run's watchdog also finds what it forks or daemonises (see the module's docstring)."""
    args, popen = _guarded(args, popen)
    if threading.current_thread() is threading.main_thread():
        return subprocess.Popen(args, **popen)
    child: subprocess.Popen[Any] = _spawner_thread().submit(lambda: subprocess.Popen(args, **popen)).result()
    return child


def ensure_watched() -> str:
    """For a script that starts processes (a bench, ``make test-under-load``): a watchdog of its
    own (:func:`watch_run`) unless it runs inside a watched run already, whose watchdog then
    covers what it starts (and :func:`spawn`'s children die with it at once anyway)."""
    return os.environ.get(RUN_MARK) or watch_run()


def run_process(args: Any, **popen: Any) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run(args, **popen)`` with :func:`spawn`'s guarantees. The calling thread
    waits for the child, so it outlives it: no spawner thread is needed."""
    args, popen = _guarded(args, popen)
    return subprocess.run(args, **popen)


def watch_run(folders: Iterable[Path | str] = ()) -> str:
    """Mark this run and start its watchdog (see the module's docstring): every process started
    from now on carries ``RUN_MARK=<a new value>``, and when this process ends, however it ends,
    each one still running is killed and ``folders`` are removed. Returns the mark."""
    mark = uuid.uuid4().hex
    watchdog = subprocess.Popen(
        [sys.executable, "-I", str(Path(__file__).resolve()), "--watch", str(os.getpid()), mark,
         *map(str, folders)],
        # An empty environment: no mark of the run (nor of a test session) to be found by.
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={}, cwd="/",
        start_new_session=True,
    )  # fmt: skip
    assert watchdog.stdout is not None
    with watchdog.stdout:
        said = watchdog.stdout.readline()
    watchdog.wait()
    if said.strip() != b"watching":
        raise WatchdogError(f"the run's watchdog did not start (exit status {watchdog.returncode})")
    os.environ[RUN_MARK] = mark
    return mark


#: How often the watchdog notes the run's process tree (see :func:`_watch`).
_LOOK_S = 1.0


def _remember(owner: int, seen: dict[int, int]) -> dict[int, int]:
    """pid -> start of the owner's descendants now, and of those seen before still running."""
    table = all_processes()
    kept = {pid: started for pid, started in seen.items() if pid in table and table[pid].started == started}
    return {**kept, **{p.pid: p.started for p in descendants(owner, table)}}


def _kill_run(mark: str, seen: dict[int, int], *, rounds: int = 500) -> None:
    """SIGKILL the run's processes, again until a look finds none (or after ``rounds`` looks):
    those with the mark in their environment, those of ``seen`` still running, and everything
    below them (what they start meanwhile included)."""
    me = os.getpid()
    for _ in range(rounds):
        _environ_seen.clear()  # a process may have exec'd with a new environment since
        table = all_processes()
        targets = {p.pid for p in with_environment(RUN_MARK, mark, table)}
        targets |= {pid for pid, started in seen.items() if pid in table and table[pid].started == started}
        children: dict[int, list[int]] = {}
        for info in table.values():
            children.setdefault(info.ppid, []).append(info.pid)
        todo = list(targets)
        while todo:
            for child in children.get(todo.pop(), ()):
                if child not in targets:
                    targets.add(child)
                    todo.append(child)
        left = [pid for pid in targets if pid != me and table[pid].running]
        if not left:
            return
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def _watch(owner: int, mark: str, folders: list[str]) -> None:
    """The watchdog's body (run as ``python -I arena/processes.py --watch OWNER MARK FOLDER...``).
    Besides the mark, it notes the owner's process tree every :data:`_LOOK_S`: a process may
    overwrite its environment (``redis-server`` does, to set its title), and one seen once below
    the owner is killed with the run even after it was orphaned."""
    for sig in (signal.SIGINT, signal.SIGHUP):  # a terminal's Ctrl-C or hang-up ends the run, not this
        signal.signal(sig, signal.SIG_IGN)
    try:
        fd = os.pidfd_open(owner)
    except ProcessLookupError:
        fd = -2  # gone already
    except (AttributeError, OSError):
        fd = -1  # no pidfd (an old kernel): look at the owner each time instead
    if os.fork():
        os._exit(0)  # its child is no descendant of the run: a kill of the run's tree misses it
    print("watching", flush=True)
    os.dup2(os.open(os.devnull, os.O_RDWR), 1)  # the starter's pipe is closed: it reads to its end
    seen: dict[int, int] = {}
    if fd >= 0:
        while not select.select([fd], [], [], _LOOK_S)[0]:  # readable once the owner has exited
            seen = _remember(owner, seen)
    elif fd == -1:
        while alive(owner):
            seen = _remember(owner, seen)
            time.sleep(_LOOK_S)
    _kill_run(mark, seen)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__" and sys.argv[1:2] == ["--watch"]:
    _watch(int(sys.argv[2]), sys.argv[3], sys.argv[4:])
