"""Fast starts that carry nothing: a match's sandbox forked from a template (issue #37).

A hosted bot's start costs ~200 ms of CPU, nearly all of it its interpreter importing the SDK
and gRPC. A **template** is a process that has done that and nothing else (no server, no
channel, no thread: gRPC is not fork-safe once it has started one; no bot code), kept per
bot version on the worker; each match forks it, and the fork builds a fresh sandbox of its
own before the bot's code is imported (arena/sandbox/forker.py): tens of milliseconds of CPU.

Where it lives: in a bubblewrap sandbox of its own, built like a match's (arena/sandbox/
runner.py: the bot's bundle and the runtime read-only, its own user, network, PID, IPC, UTS
and cgroup namespaces, no environment, a read-only root, ``--die-with-parent``), except that
it keeps its capabilities *inside its user namespace* and has no system-call filter, both to
build each match's namespaces; the match's processes drop every capability and install the
same filter (arena/sandbox/seccomp.py) before the bot's code runs. Each match gets new mount,
PID, network, IPC, UTS and cgroup namespaces, fresh ``/tmp``, ``/dev/shm`` and ``/run/tonk``
of its sizes, a fresh ``/proc``, its resource limits and its own control group, which the
worker moves it into before anything of the bot runs: nothing of one match reaches the next,
and nothing of the template but the imported modules reaches a match. What differs from a
sandbox of its own: the processes of one bot version's matches on a worker share a uid
outside (each sandbox of another bot, or of the template path's fallback, has its own); they
cannot see or signal each other (separate PID namespaces), and their process limit is their
control group's.

The fast path is taken for Python bots when the worker can make control groups (the process
limit must be per match, which resource limits per uid are not) and the bundle does not ship
a package the template has already imported (``grpc``, ``google``, ``sdk``...: the bot would
get the template's); otherwise, and with ``TONK_SANDBOX_TEMPLATES=0``, a match starts a
sandbox of its own (arena/sandbox/spares.py, else runner.py).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from arena.sandbox import cgroups, seccomp
from arena.sandbox.freeze import Freezer
from arena.sandbox.launch import Launch
from arena.sandbox.limits import Limits
from arena.sandbox.runner import (
    WRITABLE,
    Sandbox,
    SandboxStartError,
    _msgqueue_bytes,
    _open_places,
    _Output,
    sandbox_root,
)
from arena.sandbox.runtime import python_runtime, staged_bundle

#: Templates kept per worker process when ``TONK_SANDBOX_TEMPLATES`` is not set.
DEFAULT_TEMPLATES: Final = 8
MAX_TEMPLATES: Final = 256
#: How long a template is kept after its last match.
IDLE_S: Final = 300.0
CONTROL = "template.sock"
_Key = tuple[Path, Limits]
_HERE = Path(__file__).resolve().parent


class _ForkError(Exception):
    """The template could not fork the match's sandbox (the worker's doing, not the bot's):
    the match starts a sandbox of its own instead."""


def template_count(environ: Mapping[str, str] | None = None) -> int:
    """``TONK_SANDBOX_TEMPLATES``: bot versions whose template a worker process keeps (0: none)."""
    raw = (os.environ if environ is None else environ).get("TONK_SANDBOX_TEMPLATES", "").strip()
    if not raw:
        return DEFAULT_TEMPLATES
    what = "environment variable TONK_SANDBOX_TEMPLATES must be"
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{what} a whole number, got {raw!r}") from None
    if not 0 <= value <= MAX_TEMPLATES:
        raise ValueError(f"{what} from 0 to {MAX_TEMPLATES}, got {raw!r}")
    return value


def shadowed(bundle: Path) -> set[str]:
    """Top-level packages of the bundle that the template has imported already."""
    runtime = set(python_runtime().packages)
    names: set[str] = set()
    for folder in (bundle / "code", bundle / "deps"):
        with contextlib.suppress(OSError):
            names |= {p.name.removesuffix(".py") for p in folder.iterdir()}
    return names & runtime


class _TemplateBox(Sandbox):
    """The template's own sandbox (see the module's docstring)."""

    key: tuple[Path, Limits]  # what Templates keeps it by

    def _argv(self, bwrap: str, uid: int, filter_fd: int) -> list[str]:
        argv = super()._argv(bwrap, uid, filter_fd)
        i = argv.index("--cap-drop")
        argv[i : i + 2] = ["--cap-add", "ALL"]  # inside its user namespace only
        i = argv.index("--seccomp")
        del argv[i : i + 2]  # each match's processes install it
        end = len(argv) - 1 - argv[::-1].index("--")
        interpreter = argv[end + 1]
        argv[end + 1 :] = [interpreter, "-I", "-S", "-B", "-c", (_HERE / "forker.py").read_text()]
        return argv

    def _wait_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.limits.start_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise self._start_failure(f"the template exited with status {self.process.returncode}")
            if not self._places:
                self._places = _open_places(self.process.pid)
            if self._places and os.path.exists(self.control()):
                return
            time.sleep(0.005)
        raise self._start_failure(f"the template was not ready within {self.limits.start_s:g} s")

    def control(self) -> str:
        return f"/proc/self/fd/{self._places['/run/tonk']}/{CONTROL}"

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


class ForkedProcess:
    """A match's first process (A in arena/sandbox/forker.py), as much of ``subprocess.Popen``
    as the sandbox uses: it is not the worker's child; its end (bubblewrap's way: 128 + the
    signal that ended the bot) comes over the template's connection."""

    def __init__(self, pid: int, conn: socket.socket, stdout: object):
        self.pid = pid
        self.stdout = stdout
        self.returncode: int | None = None
        self._conn = conn
        self._buffer = b""
        self._lock = threading.Lock()  # the match's thread and a decision's watch both poll

    def _read(self, timeout: float | None) -> None:
        with self._lock:
            self._read_locked(timeout)

    def _read_locked(self, timeout: float | None) -> None:
        if self.returncode is not None:
            return
        ready, _, _ = select.select([self._conn], [], [], timeout)
        if not ready:
            return
        try:
            chunk = self._conn.recv(4096)
        except OSError:
            chunk = b""
        if not chunk:  # A ended without a word: killed
            self.returncode = self._ended()
            return
        self._buffer += chunk
        for line in self._buffer.split(b"\n")[:-1]:
            if line.startswith(b"exit "):
                self.returncode = int(line.split()[1])
        if self.returncode is not None:
            self._conn.close()

    def _ended(self) -> int:
        self._conn.close()
        return -signal.SIGKILL

    def poll(self) -> int | None:
        self._read(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired("sandbox", timeout or 0)
            self._read(0.05 if left is None else min(left, 0.05))  # short: others poll too
        return self.returncode


class ForkedSandbox(Sandbox):
    """A match's sandbox forked from its bot's template (see the module's docstring)."""

    def __init__(
        self,
        template: _TemplateBox,
        launch: Launch,
        limits: Limits,
        group: cgroups.Group,
        release: Callable[[_TemplateBox], None],
    ):
        super().__init__(template.bundle, launch, limits=limits)
        self.template = template
        self.group = group
        self._release: Callable[[_TemplateBox], None] | None = release

    def close(self) -> None:
        super().close()
        release, self._release = self._release, None
        if release is not None:  # once: its template may close when no match of it runs
            release(self.template)

    def start(self) -> Sandbox:
        assert self.group is not None and self.launch.entry is not None
        lim = self.limits
        self.started_ns = time.monotonic_ns()
        # Empty, as a sandbox's own is once bubblewrap has built its root: the match's places
        # are memory of their own, reached through its first process.
        self.workdir = Path(tempfile.mkdtemp(prefix=f"box-{os.getpid()}-fork-", dir=sandbox_root()))
        self.group.limit(lim.memory_mb * 1024 * 1024, lim.processes)
        read_end, write_end = os.pipe()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # A's pid, as the worker sees it
            conn.settimeout(lim.start_s)
            conn.connect(self.template.control())
            cpu = resource_limit(lim.cpu_s, lim.cpu_s + 5)
            request = {
                "entry": self.launch.entry,
                "sizes": {place: mb << 20 for place, mb in (("/run/tonk", lim.run_mb), ("/tmp", lim.tmp_mb),
                                                            ("/dev/shm", lim.shm_mb))},
                "rlimits": {
                    "RLIMIT_NOFILE": resource_limit(lim.open_files),
                    "RLIMIT_FSIZE": resource_limit(lim.tmp_mb << 20),
                    "RLIMIT_CPU": cpu,
                    "RLIMIT_CORE": resource_limit(0),
                    "RLIMIT_MSGQUEUE": resource_limit(_msgqueue_bytes()),
                },
                "seccomp": seccomp.program().hex(),
            }
            socket.send_fds(conn, [json.dumps(request).encode()], [write_end])
            os.close(write_end)
            write_end = -1
            pid = _forked_pid(conn)
            for procs in self.group.procs_files:
                procs.write_text(str(pid))
            conn.sendall(b"go\n")
            conn.settimeout(None)
            self.process = ForkedProcess(pid, conn, os.fdopen(read_end, "rb"))  # type: ignore[assignment]
            read_end = -1
            self._places = _places_of(pid)
        except BaseException as exc:
            for fd in (read_end, write_end):
                if fd >= 0:
                    os.close(fd)
            if self.process is None:
                conn.close()
            self.close()
            if isinstance(exc, (OSError, EOFError)):
                raise _ForkError(f"the sandbox could not be forked from its template: {exc}") from exc
            raise
        assert self.process is not None
        self._output = _Output(self.process.stdout, lim.output_kb * 1024)
        try:
            self._wait_ready()
        except BaseException:
            self.close()
            raise
        self.ready_ns = time.monotonic_ns()
        self.freezer = Freezer(self.group, self.process.pid)
        return self


def resource_limit(soft: int, hard: int | None = None) -> tuple[int, int]:
    return soft, soft if hard is None else hard


def _forked_pid(conn: socket.socket) -> int:
    """A's pid as the worker sees it: the kernel's credentials on its ``forked``."""
    size = struct.calcsize("3i")
    data, ancillary, _flags, _addr = conn.recvmsg(64, socket.CMSG_SPACE(size))
    if not data.startswith(b"forked"):
        raise EOFError(f"the template answered {data[:80]!r}")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid: int = struct.unpack("3i", payload[:size])[0]
            return pid
    raise EOFError("the template's answer carried no credentials")


def _places_of(pid: int) -> dict[str, int]:
    """O_PATH handles on the match's writable mounts, through A (it is in their namespace)."""
    opened: dict[str, int] = {}
    try:
        for place in WRITABLE:
            opened[place] = os.open(f"/proc/{pid}/root{place}", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        for fd in opened.values():
            os.close(fd)
        raise
    return opened


class Templates:
    """The templates of one worker process, by bundle. A template's matches live in its PID
    namespace and end with it, so a template is closed (least recently used beyond the
    capacity, or unused for ``IDLE_S``) only once none of its matches is running."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # By bundle and limits: a match's processes may lower the template's resource limits,
        # never raise them.
        self._kept: OrderedDict[_Key, _TemplateBox] = OrderedDict()
        self._starting: dict[_Key, threading.Lock] = {}
        self._last_used: dict[_Key, float] = {}
        self._users: dict[_TemplateBox, int] = {}
        self.forks = 0

    def start(self, bundle: Path, launch: Launch, limits: Limits) -> Sandbox | None:
        """The match's sandbox forked from its bot's template, started; None where the fast
        path is not taken (see the module's docstring). A bot that does not start raises
        SandboxStartError, as it would in a sandbox of its own."""
        box = self.prepare(bundle, launch, limits)
        if box is None:
            return None
        try:
            box.start()
        except _ForkError:
            self._drop(box.template)
            return None
        finally:
            self._trim(template_count())
        self.forks += 1
        return box

    def prepare(self, bundle: Path, launch: Launch, limits: Limits) -> ForkedSandbox | None:
        """The match's sandbox, not started yet, with its template started (None: the fast
        path is not taken)."""
        if template_count() == 0 or launch.kind != "python" or shadowed(Path(bundle)):
            return None
        group = cgroups.make_group()
        if group is None:
            return None
        try:
            template = self._template(Path(bundle), limits)
        except (SandboxStartError, OSError):  # the runtime's doing: the plain path says the bot's
            group.remove()
            return None
        return ForkedSandbox(template, launch, limits, group, self._release)

    def _template(self, bundle: Path, limits: Limits) -> _TemplateBox:
        """The bundle's live template, started if need be, with one more user."""
        key = (staged_bundle(bundle, sandbox_root()), limits)
        with self._lock:
            starting = self._starting.setdefault(key, threading.Lock())
        with starting:  # one start per bundle at a time
            with self._lock:
                template = self._kept.get(key)
                if template is not None and template.alive():
                    return self._use(key, template)
            if template is not None:
                self._drop(template)
            # Its own limits are the match's: memory for what its forks share, and its start.
            template = _TemplateBox(key[0], Launch("python", entry="template:Template"), limits=limits)
            template.key = key
            template.start()
            with self._lock:
                self._kept[key] = template
                return self._use(key, template)

    def _use(self, key: _Key, template: _TemplateBox) -> _TemplateBox:
        self._kept.move_to_end(key)
        self._last_used[key] = time.monotonic()
        self._users[template] = self._users.get(template, 0) + 1
        return template

    def _release(self, template: _TemplateBox) -> None:
        with self._lock:
            self._users[template] = self._users.get(template, 1) - 1
            self._last_used[template.key] = time.monotonic()

    def _drop(self, template: _TemplateBox) -> None:
        """Forget a template that failed; it closes once its matches have (or now, if none)."""
        with self._lock:
            if self._kept.get(template.key) is template:
                del self._kept[template.key]
            idle = self._users.get(template, 0) <= 0
            if idle:
                self._users.pop(template, None)
        if idle:
            template.close()

    def _trim(self, capacity: int) -> None:
        """Close idle templates beyond ``capacity`` or unused for ``IDLE_S``, and those
        forgotten whose last match has ended."""
        now = time.monotonic()
        closing: list[_TemplateBox] = []
        with self._lock:
            over = len(self._kept) - capacity
            for key, template in list(self._kept.items()):  # least recently used first
                if self._users.get(template, 0) > 0:
                    continue
                if over > 0 or now - self._last_used.get(key, now) > IDLE_S:
                    del self._kept[key]
                    closing.append(template)
                    over -= 1
            kept = set(self._kept.values())
            for template, users in list(self._users.items()):
                if users <= 0 and template not in kept:
                    del self._users[template]
                    closing.append(template)
        for template in closing:
            template.close()

    def close_all(self) -> None:
        """Close every template (and so every match forked from one)."""
        with self._lock:
            kept = list(self._kept.values()) + [t for t in self._users if t not in self._kept.values()]
            self._kept, self._users = OrderedDict(), {}
        for template in kept:
            template.close()


#: The worker process's templates (arena/sandbox/spares.py forks its matches from them).
TEMPLATES = Templates()
atexit.register(TEMPLATES.close_all)
