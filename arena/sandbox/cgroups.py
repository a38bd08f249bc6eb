"""A control group per sandbox: memory and process limits over all its processes together,
and the CPU time they used, as the kernel counts it.

cgroup v2 (one tree, ``/sys/fs/cgroup/cgroup.controllers``) and v1 (a tree per controller:
``memory``, ``pids``, ``cpuacct``) are both handled. Making a group needs write access to
the tree (root, or a delegated subtree named by ``TONK_SANDBOX_CGROUP``); without it
:func:`make_group` returns None and the sandbox falls back to per-process resource limits.

A v2 group can be frozen (:meth:`Group.freeze`, ``cgroup.freeze``): its processes then get no
CPU at all until thawed (arena/sandbox/freeze.py), and a fatal signal still ends them. v1's
freezer is not used: a task it froze does not die of SIGKILL until thawed, so the sandboxes of a
worker killed outright would stay, frozen, until the next worker's sweep; a v1 sandbox is
stopped by signals instead.

A group is named ``tonk-<worker pid>-<n>``: the worker's pid tells whose it is, so the groups
of a worker that was killed before it could remove them are removed by the next one
(:func:`sweep_dead_groups`).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import signal
import threading
import time
from pathlib import Path

from arena import processes

ROOT = Path("/sys/fs/cgroup")
_V1_CONTROLLERS = ("memory", "pids", "cpuacct")
_counter = itertools.count(1)
_lock = threading.Lock()


class CgroupError(OSError):
    """A control group could not be set up (the sandbox then uses resource limits)."""


def _base_dirs() -> list[Path] | None:
    """Where this worker makes groups: one folder (v2) or one per controller (v1)."""
    delegated = os.environ.get("TONK_SANDBOX_CGROUP", "").strip()
    if (ROOT / "cgroup.controllers").exists():  # v2
        base = Path(delegated) if delegated else ROOT
        return [base] if os.access(base, os.W_OK) else None
    dirs = [ROOT / c / delegated.strip("/") if delegated else ROOT / c for c in _V1_CONTROLLERS]
    return dirs if all(d.is_dir() and os.access(d, os.W_OK) for d in dirs) else None


class Group:
    """One sandbox's control group (in one folder for v2, three for v1)."""

    def __init__(self, dirs: list[Path]):
        self.dirs = dirs
        self.v2 = len(dirs) == 1
        # Files read on every call of its bot (CPU, members) are opened once and read with
        # pread: a read is then one system call, not an open, a read and a close.
        self._fds: dict[Path, int] = {}
        self._fds_lock = threading.Lock()
        self._closed = False  # set by remove(): no descriptor is opened again

    def _read(self, path: Path, *, kept: bool = True) -> bytes:
        """The file's content now, from a kept descriptor, or one opened for this read alone
        (``kept=False``); OSError once the group is gone or removed. Under the lock: a
        watchdog's read racing remove() must neither reopen a file that nothing would close,
        nor read a closed descriptor's number after reuse."""
        with self._fds_lock:
            if self._closed:
                raise OSError(errno.EBADF, "the group was removed", str(path))
            if not kept:
                once = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                try:
                    return os.pread(once, 65536, 0)
                finally:
                    os.close(once)
            fd = self._fds.get(path)
            if fd is None:
                fd = self._fds[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            return os.pread(fd, 65536, 0)

    def _close_files(self) -> None:
        with self._fds_lock:
            fds, self._fds, self._closed = self._fds, {}, True
        for fd in fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)

    @property
    def procs_files(self) -> list[Path]:
        """The files a process writes its pid to, to join the group."""
        return [d / "cgroup.procs" for d in self.dirs]

    @property
    def can_freeze(self) -> bool:
        """v2 only (Linux 5.2 on): see the module's docstring for v1."""
        return self.v2 and (self.dirs[0] / "cgroup.freeze").exists()

    def freeze(self, frozen: bool, timeout_s: float = 2.0) -> bool:
        """Freeze (or thaw) every process of the group, threads and children alike; True once
        the kernel says all are (False: no freezer, or it did not settle within ``timeout_s``:
        a task stuck in the kernel)."""
        if not self.can_freeze:
            return False
        want = 1 if frozen else 0
        try:
            (self.dirs[0] / "cgroup.freeze").write_text(str(want))
        except OSError:
            return False
        deadline = time.monotonic() + timeout_s
        while _counter_in(self.dirs[0] / "cgroup.events", "frozen") != want:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.0005)
        return True

    def _file(self, v1_controller: str, name: str) -> Path:
        if self.v2:
            return self.dirs[0] / name
        return self.dirs[_V1_CONTROLLERS.index(v1_controller)] / name

    def limit(self, memory_bytes: int, processes: int) -> None:
        if self.v2:
            (self.dirs[0] / "memory.max").write_text(str(memory_bytes))
            swap = self.dirs[0] / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
            (self.dirs[0] / "pids.max").write_text(str(processes))
        else:
            self._file("memory", "memory.limit_in_bytes").write_text(str(memory_bytes))
            self._file("pids", "pids.max").write_text(str(processes))

    def cpu_ns(self) -> int:
        """CPU time (user + system) of every process that was ever in the group."""
        try:
            if self.v2:
                for line in self._read(self.dirs[0] / "cpu.stat").splitlines():
                    if line.startswith(b"usage_usec "):
                        return int(line.split()[1]) * 1000
                return 0
            return int(self._read(self._file("cpuacct", "cpuacct.usage")))
        except (OSError, ValueError):
            return 0

    def memory_peak(self) -> int:
        name = ("memory.peak", "") if self.v2 else ("", "memory.max_usage_in_bytes")
        path = self.dirs[0] / name[0] if self.v2 else self._file("memory", name[1])
        try:
            return int(path.read_text())
        except (OSError, ValueError):
            return 0

    def events(self) -> tuple[int, int]:
        """(processes the kernel killed for memory, forks refused at the process limit) so
        far: the counters that tell why a bot that hit a limit stopped answering."""
        if self.v2:
            memory = _counter_in(self.dirs[0] / "memory.events", "oom_kill")
        else:  # v1 counts OOM kills in memory.oom_control (kernel 4.13 on)
            memory = _counter_in(self._file("memory", "memory.oom_control"), "oom_kill")
        return memory, _counter_in(self._file("pids", "pids.events"), "max")

    def pids(self) -> set[int]:
        return set(self.members())

    def members(self) -> list[int]:
        """The group's processes, from one controller's list (each lists them all: a process
        joins every controller's group). v2 lists them afresh at each read of a kept
        descriptor; v1 keeps the list an open file first read for as long as it is read again
        within a second (the kernel's pidlist cache), so a process forked since would go
        unseen by the freezer and by :meth:`kill_all`: v1's list is opened for each read."""
        try:
            return [int(x) for x in self._read(self.procs_files[0], kept=self.v2).split()]
        except (OSError, ValueError):
            return []

    def threads(self) -> list[int]:
        """The group's threads (every thread of every member), read as :meth:`members` is."""
        name = "cgroup.threads" if self.v2 else "tasks"
        try:
            return [int(x) for x in self._read(self.dirs[0] / name, kept=self.v2).split()]
        except (OSError, ValueError):
            return []

    def kill_all(self) -> None:
        """SIGKILL every process in the group (v2 has one write for it; v1 is killed pid by pid
        until the group is empty, since a fork can race a single pass)."""
        if self.v2 and (self.dirs[0] / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (self.dirs[0] / "cgroup.kill").write_text("1")
        for _ in range(100):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            threading.Event().wait(0.01)

    def remove(self) -> None:
        self.kill_all()  # first: it reads the members, and after _close_files nothing can
        self._close_files()
        for d in self.dirs:
            for _ in range(100):  # a killed process leaves the group once it is reaped
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    threading.Event().wait(0.01)


def _counter_in(path: Path, key: str) -> int:
    """The value of ``key`` in a flat-keyed cgroup file (``name value`` lines), 0 if absent."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def owner_pid(name: str, prefix: str) -> int | None:
    """The worker pid in ``<prefix><pid>-...``, or None for a name of another form."""
    if not name.startswith(prefix):
        return None
    head = name[len(prefix) :].split("-", 1)[0]
    return int(head) if head.isdigit() else None


def sweep_dead_groups() -> int:
    """Remove the groups of workers that are gone (killed with SIGKILL, they could not):
    anything still in them is killed first. Returns how many were removed."""
    bases = _base_dirs()
    if bases is None:
        return 0
    removed = 0
    names = {d.name for d in bases[0].iterdir() if d.is_dir()} if bases[0].is_dir() else set()
    for name in sorted(names):
        pid = owner_pid(name, "tonk-")
        if pid is None or pid == os.getpid() or processes.alive(pid):
            continue
        Group([b / name for b in bases]).remove()
        removed += 1
    return removed


def make_group() -> Group | None:
    """A new, empty group for one sandbox, or None where this worker may not make groups."""
    bases = _base_dirs()
    if bases is None:
        return None
    with _lock:
        name = f"tonk-{os.getpid()}-{next(_counter)}"
    dirs = [b / name for b in bases]
    made: list[Path] = []
    try:
        for d in dirs:
            d.mkdir()
            made.append(d)
        if len(dirs) == 1:  # v2: the controllers must be enabled in the parent
            controllers = (bases[0] / "cgroup.subtree_control").read_text().split()
            if not {"memory", "pids", "cpu"} <= set(controllers):
                raise CgroupError(f"{bases[0]} does not delegate memory, pids and cpu")
    except OSError:
        for d in made:
            d.rmdir()
        return None
    return Group(dirs)
