"""A built bot in a bubblewrap sandbox, serving ``tonk.v1`` on a Unix socket: one match's
(or deal's, or worker's) process, and everything it starts, ended together.

What the bot gets (docs/operator-guide.md, "The sandbox"):

- **no network**: its own network namespace with nothing in it; it serves gRPC on the Unix
  socket ``/run/tonk/bot.sock``, in a folder of its own (memory-backed, ``Limits.run_mb``)
  that the worker reaches through ``/proc/<pid>/root``: nothing of the worker's disk is
  writable from inside;
- **a read-only view** of its bundle (``/bot/code``, ``/bot/deps``) and of the runtime only
  (``/usr`` and the libraries, the Python installation and the SDK's packages:
  arena/sandbox/runtime.py); no other bot's code, none of the arena's files, database,
  tokens or environment (``--clearenv``);
- **a private /tmp** of ``Limits.tmp_mb`` and ``/dev/shm`` of ``Limits.shm_mb`` (both
  memory-backed) and nothing else writable (``/dev`` itself is read-only): every place it can
  write has a size, with or without a control group;
- **its own user**: a uid of its own outside (when the worker is root), ``nobody`` inside,
  no capabilities, no new privileges, its own PID, IPC and UTS namespaces;
- **a system-call filter** (arena/sandbox/seccomp.py): ptrace, mount, namespaces, keyrings,
  eBPF, modules and the like refused with EPERM, for the bot and all it starts;
- **limits** (arena/sandbox/limits.py): memory and processes over the whole sandbox by a
  control group where the worker may make one (arena/sandbox/cgroups.py), else by resource
  limits per process; open files, file size and CPU seconds always by resource limits.
  When the bot stops answering, :meth:`Sandbox.limit_hit` says which of them it ran into
  (arena/sandbox/causes.py).

The sandbox ends with :meth:`Sandbox.close`, and with the worker however it ends: bubblewrap
runs with ``--die-with-parent`` (the kernel kills it when the worker dies, even by SIGKILL)
and the bot is inside its PID namespace, which the kernel empties when its first process dies.

    with Sandbox(bundle, launch, limits=limits) as box:
        player = GrpcPlayer(box.address)      # "unix:/proc/self/fd/<n>/bot.sock"
        ...
        box.cpu_ns()                          # CPU time of all its processes so far
    box.output()                              # what it printed (bounded)
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

from arena import processes
from arena.errors import ArenaError
from arena.sandbox import causes, cgroups, freeze, seccomp
from arena.sandbox.freeze import Freezer
from arena.sandbox.launch import SOCKET_PLACEHOLDER, Launch
from arena.sandbox.limits import Limits, sandbox_nice
from arena.sandbox.procfiles import ProcFiles
from arena.sandbox.runtime import LAUNCHER, staged_bundle, staged_runtime

SOCKET = "/run/tonk/bot.sock"
#: The places the bot may write, each a memory-backed file system of its own size.
WRITABLE = ("/run/tonk", "/tmp", "/dev/shm")
BWRAP = "bwrap"
# A uid of its own per sandbox when the worker is root: processes of one sandbox then never
# count against another's limits or may signal one another. Far above any real user.
_UID_BASE = 3_000_000
_UID_SPAN = 1_000_000
# The system folders every runtime needs, bound read-only where they exist.
_SYSTEM = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc/alternatives", "/etc/ld.so.cache")
_counter = itertools.count(1)
# Every sandbox is started from this one long-lived thread. bubblewrap's --die-with-parent is
# the kernel's parent-death signal, which fires when the *thread* that started it ends: a
# sandbox started from a short-lived thread (a pool starting a match's seats at once) would
# die with it.
_SPAWNER = ThreadPoolExecutor(1, thread_name_prefix="tonk-sandbox-spawner")


_swept = False
_sweep_lock = threading.Lock()


def sweep_dead_workers(root: Path) -> int:
    """Once per process, before its first sandbox: remove what workers that were killed before
    they could clean up left behind (their sandbox folders, named ``box-<pid>-...``, and their
    control groups). A folder whose worker is alive, or whose pid was reused, is left alone.
    Returns how many folders and groups were removed."""
    global _swept
    with _sweep_lock:
        if _swept:
            return 0
        _swept = True
    removed = cgroups.sweep_dead_groups()
    for folder in root.glob("box-*"):
        pid = cgroups.owner_pid(folder.name, "box-")
        if pid is None or pid == os.getpid() or processes.alive(pid):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed += 1
    return removed


class SandboxError(ArenaError):
    """The sandbox could not be set up on this worker (bubblewrap missing or refused)."""

    status = 503
    code = "sandbox_unavailable"


class SandboxStartError(ArenaError):
    """The bot in the sandbox did not start serving; the message ends with what it printed
    and begins with the limit it ran into, if one (``cause``: arena/sandbox/causes.py)."""

    status = 422
    code = "bot_did_not_start"
    cause: str | None = None
    detail = ""  # the message without the cause


def bwrap_path() -> str:
    """bubblewrap's path, once the worker is seen to have what the sandbox needs of it and of
    the kernel (SandboxError saying what is missing)."""
    found = shutil.which(BWRAP)
    if found is None:
        raise SandboxError(
            "bubblewrap (bwrap) is not installed on this worker: hosted bots need it "
            "(Debian: apt-get install bubblewrap; see docs/operator-guide.md)"
        )
    try:
        seccomp.check_host()
    except seccomp.SeccompUnavailableError as exc:
        raise SandboxError(str(exc)) from exc
    return found


def host_problem() -> str | None:
    """What keeps this worker from running hosted bots (for the worker to say at its start),
    or None."""
    try:
        bwrap_path()
    except SandboxError as exc:
        return str(exc)
    return None


def sandbox_root() -> Path:
    """Where the worker keeps its sandboxes' folders and the staged runtime (``TONK_SANDBOX_DIR``,
    else the temp folder)."""
    root = Path(
        os.environ.get("TONK_SANDBOX_DIR", "").strip() or Path(tempfile.gettempdir()) / "tonk-sandbox"
    )
    root.mkdir(mode=0o711, parents=True, exist_ok=True)
    return root


#: Bytes of the end of the bot's output kept apart from the bounded start, to tell what it
#: printed last (a runtime's "MemoryError" as it died) whatever it printed before.
TAIL = 4096


class _Output:
    """Drains the bot's stdout and stderr (one pipe) so it never blocks on them, keeping the
    first ``limit`` bytes and counting the rest."""

    def __init__(self, pipe: object, limit: int):
        self.limit = limit
        self.kept = bytearray()
        self.tail = bytearray()  # the last TAIL bytes: what it printed as it died
        self.total = 0
        self._pipe = pipe
        self._thread = threading.Thread(target=self._run, name="tonk-sandbox-output", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        read = self._pipe.read1  # type: ignore[attr-defined]
        while True:
            try:
                chunk = read(65536)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            self.total += len(chunk)
            room = self.limit - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]
            self.tail = (self.tail + chunk[-TAIL:])[-TAIL:]

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if self.total > len(self.kept):
            text += f"\n[... {self.total - len(self.kept)} more bytes not kept]\n"
        return text


class Sandbox:
    """One sandboxed bot process tree (see the module's docstring)."""

    def __init__(self, bundle: Path, launch: Launch, *, limits: Limits | None = None):
        self.bundle = Path(bundle).resolve()
        self.launch = launch
        self.limits = limits or Limits.from_env()
        self.workdir: Path | None = None
        self.group: cgroups.Group | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._output: _Output | None = None
        self._places: dict[str, int] = {}  # path inside -> O_PATH handle on its mount
        self.started_ns = 0
        self.ready_ns = 0
        #: Stops its processes between calls, once :meth:`freeze_between_calls` (freeze.py).
        self.freezer: Freezer | None = None
        self._schedstats = ProcFiles("schedstat")  # each thread's run delay (run_delay_ns)
        #: CPU of its processes from launch to serving (to its first freeze), once measured.
        self.startup_cpu_ns = 0

    # -- life ------------------------------------------------------------------------------

    @property
    def address(self) -> str:
        """The socket, through the worker's handle on the sandbox's own socket folder: the
        handle pins that very folder, so a reused pid can never lead to another's bot."""
        assert "/run/tonk" in self._places, "the sandbox is not started"
        return f"unix:/proc/self/fd/{self._places['/run/tonk']}/bot.sock"

    def start(self) -> Sandbox:
        """Start the bot and wait until it answers health checks on its socket."""
        bwrap = bwrap_path()
        sweep_dead_workers(sandbox_root())
        self.bundle = staged_bundle(self.bundle, sandbox_root())
        self.started_ns = time.monotonic_ns()
        self.workdir = Path(
            tempfile.mkdtemp(prefix=f"box-{os.getpid()}-{next(_counter)}-", dir=sandbox_root())
        )
        uid = _UID_BASE + secrets.randbelow(_UID_SPAN) if os.geteuid() == 0 else os.geteuid()
        self.workdir.chmod(0o711)
        self.group = cgroups.make_group()
        if self.group is not None:
            self.group.limit(self.limits.memory_mb * 1024 * 1024, self.limits.processes)
        filter_fd = -1
        try:
            # The filter's descriptor is inherited down the chain to bubblewrap, which reads it.
            filter_fd = seccomp.program_fd()
            argv = self._argv(bwrap, uid, filter_fd)
            env = {"PATH": "/usr/bin:/bin", "TONK_CGROUP_PROCS": self._procs_files()}
            self.process = _SPAWNER.submit(
                _popen_at_nice,
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
                pass_fds=(filter_fd,),
            ).result()
        except BaseException:
            self.close()
            raise
        finally:
            if filter_fd >= 0:
                os.close(filter_fd)
        self._output = _Output(self.process.stdout, self.limits.output_kb * 1024)
        try:
            self._wait_ready()
        except BaseException:
            self.close()
            raise
        self.ready_ns = time.monotonic_ns()
        self.freezer = Freezer(self.group, self.process.pid)
        return self

    def freeze_between_calls(self) -> None:
        """From now on the bot runs only while a call is in flight (``freezer.awake()``:
        arena/sandbox/freeze.py). The first time, what it used from launch to now is charged
        to its start-up budget: over it, the sandbox is closed and SandboxStartError names
        the limit."""
        if self.freezer is None:  # a sandbox started another way (arena/sandbox/template.py)
            assert self.process is not None, "the sandbox is not started"
            self.freezer = Freezer(self.group, self.process.pid)
        first = not self.freezer.enabled
        self.freezer.enable()
        if first:
            self.startup_cpu_ns = self.cpu_ns()
            if self.startup_cpu_ns > self.limits.start_cpu_s * 1e9:
                error = self._start_failure("it was frozen before its first call")
                self.close()
                raise error

    def _procs_files(self) -> str:
        # Split on spaces by the shell: the group's folders have none (arena/sandbox/cgroups.py).
        return " ".join(str(f) for f in self.group.procs_files) if self.group else ""

    def _argv(self, bwrap: str, uid: int, filter_fd: int) -> list[str]:
        lim = self.limits
        # The chain, each exec'ing the next: sh joins the control group (so everything after
        # is counted in it), prlimit sets the per-process limits, setpriv (as root) drops to
        # the sandbox's own uid, bwrap builds the namespaces.
        join = 'for f in $TONK_CGROUP_PROCS; do echo $$ > "$f"; done; exec "$@"'
        chain = ["/bin/sh", "-c", join, "sh"]
        rl = [
            "prlimit",
            f"--nofile={lim.open_files}",
            f"--fsize={lim.tmp_mb * 1024 * 1024}",
            # SIGXCPU at the limit (named in the fault: arena/sandbox/causes.py), SIGKILL a few
            # seconds on for a bot that ignores it.
            f"--cpu={lim.cpu_s}:{lim.cpu_s + 5}",
            "--core=0",
            f"--msgqueue={_msgqueue_bytes()}",  # POSIX message queues: kernel memory, bounded
        ]
        if self.group is None:  # no control group: the memory and process limits per process
            rl += [f"--as={lim.memory_mb * 1024 * 1024}", f"--nproc={lim.processes}"]
        chain += [*rl, "--"]
        if os.geteuid() == 0:
            chain += [
                "setpriv",
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                "--inh-caps=-all",
                "--",
            ]
        chain.append(bwrap)
        box = [
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--cap-drop", "ALL",
            "--seccomp", str(filter_fd),  # installed last, just before the bot starts
            "--clearenv",
            "--uid", "65534",
            "--gid", "65534",
            "--hostname", "tonk-bot",
            "--proc", "/proc",
            # bubblewrap's /dev is a tmpfs of no size the bot could fill: read-only, with a
            # /dev/shm of its own size; the socket's folder too is memory of a fixed size.
            "--dev", "/dev",
            "--remount-ro", "/dev",
            "--size", str(lim.shm_mb * 1024 * 1024), "--tmpfs", "/dev/shm",
            "--size", str(lim.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp",
            "--size", str(lim.run_mb * 1024 * 1024), "--tmpfs", "/run/tonk",
        ]  # fmt: skip

        # bubblewrap runs as the sandbox's uid, which must be able to reach every source: the
        # bundle and the runtime are staged under the sandbox folder (arena/sandbox/runtime.py).
        assert self.workdir is not None
        box += ["--ro-bind", str(self.bundle), "/bot"]
        for path in _SYSTEM:
            box += ["--ro-bind-try", path, path]
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "TONK_SOCKET": SOCKET,
            "MALLOC_ARENA_MAX": "2",  # glibc: fewer reserved arenas under the memory limit
            "PYTHONUNBUFFERED": "1",
        }
        if self.launch.kind == "python":
            runtime = staged_runtime(sandbox_root())
            for src, dst in runtime.binds():
                box += ["--ro-bind", src, dst]
            command = [runtime.interpreter, "-I", "-S", "-B", LAUNCHER, str(self.launch.entry)]
        else:
            command = [a.replace(SOCKET_PLACEHOLDER, SOCKET) for a in self.launch.command or ()]
        for key, value in env.items():
            box += ["--setenv", key, value]
        # The root bubblewrap builds is a writable tmpfs: made read-only last, so the WRITABLE
        # places (each capped) are all the bot can write.
        box += ["--remount-ro", "/", "--chdir", "/bot/code", "--", *command]
        return chain + box

    def _wait_ready(self) -> None:
        import grpc
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        assert self.process is not None and self.workdir is not None
        deadline = time.monotonic() + self.limits.start_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise self._start_failure(f"the bot exited with status {self.process.returncode}")
            used = self.cpu_ns()
            if used > self.limits.start_cpu_s * 1e9:  # the start-up budget (causes.from_startup)
                self.startup_cpu_ns = used
                raise self._start_failure("it was still starting")
            if not self._places:
                self._places = _open_places(self.process.pid)
            if self._places and os.path.exists(f"/proc/self/fd/{self._places['/run/tonk']}/bot.sock"):
                with grpc.insecure_channel(self.address) as channel:
                    try:
                        reply = health_pb2_grpc.HealthStub(channel).Check(
                            health_pb2.HealthCheckRequest(service=""),
                            timeout=max(0.1, deadline - time.monotonic()),
                        )
                        if reply.status == health_pb2.HealthCheckResponse.SERVING:
                            return
                    except grpc.RpcError:
                        pass
            time.sleep(0.01)
        raise self._start_failure(f"the bot was not serving within {self.limits.start_s:g} s")

    def _start_failure(self, what: str) -> SandboxStartError:
        assert self._output is not None
        if self.process is not None and self.process.poll() is not None:
            self._output.join(1.0)
        cause = self.limit_hit()
        tail = self._output.text()[-1500:].strip()
        text = f"{what}; it printed: {tail}" if tail else f"{what}; it printed nothing"
        error = SandboxStartError(f"{cause}; {text}" if cause else text)
        error.cause, error.detail = cause, text
        return error

    def close(self) -> None:
        """End the bot and everything it started; idempotent."""
        if self.freezer is not None:
            self.freezer.close()  # no call will freeze it again
        proc = self.process
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        if self.group is not None:
            self.group.remove()  # processes that left the session are still in the group
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)
            if self._output is not None:
                self._output.join(2.0)
            if proc.stdout is not None:
                proc.stdout.close()
        # Without a control group, anything left is found by its ancestry (bwrap's init has died,
        # so orphans were reparented; the PID namespace's end has killed them already).
        self._schedstats.close()
        places, self._places = self._places, {}
        for fd in places.values():  # the last hold on the sandbox's file systems
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> Sandbox:
        return self.start() if self.process is None else self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- accounts --------------------------------------------------------------------------

    def cpu_ns(self) -> int:
        """CPU time, user and system, of all the sandbox's processes so far (without a control
        group: of the processes alive now, and the children they waited for)."""
        if self.group is not None:
            return self.group.cpu_ns()
        if self.process is None:
            return 0
        return sum(_cpu_of(pid) for pid in freeze.tree(self.process.pid))

    def run_delay_ns(self) -> int:
        """How long the sandbox's threads have waited, runnable, for a CPU (the kernel's
        schedstat, summed over the threads alive now): the time the host's load took from
        them, which a decision's wall-clock ceiling does not count (arena/sandbox/clock.py).
        Read at every decision: the threads are listed in one read of the group (else walked
        down the tree) and each one's schedstat read from a kept descriptor."""
        if self.process is None:
            return 0
        group = self.group
        if group is not None:
            threads = group.threads()
        else:
            threads = []
            for pid in freeze.tree(self.process.pid):
                with contextlib.suppress(OSError, ValueError):
                    threads += [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
        self._schedstats.keep_only(threads)
        total = 0
        for tid in threads:
            with contextlib.suppress(ValueError, IndexError):
                total += int((self._schedstats.read(tid) or b"0 0").split()[1])
        return total

    def memory_peak(self) -> int:
        return self.group.memory_peak() if self.group is not None else 0

    def counters(self) -> causes.Counters:
        """The kernel's limit counters and the output's length now: what :meth:`limit_hit`
        measures from (zeros without a control group)."""
        oom, refused = self.group.events() if self.group is not None else (0, 0)
        return causes.Counters(oom, refused, self.output_bytes())

    def limit_hit(
        self, since: causes.Counters | None = None, *, settle_s: float = 0.0, said: str = ""
    ) -> str | None:
        """The sentence naming each limit the bot ran into since ``since`` (default: its
        start), or None. ``settle_s``: how long to let a dying bot's bubblewrap exit first, so
        the signal that ended it can be read. ``said``: what the bot answered with its fault
        (its runtime's error), read with what it printed where there is no control group: its
        reply can arrive before the output's reader has its last words."""
        found = causes.from_startup(self.startup_cpu_ns, self.limits) if since is None else []
        since = since or causes.Counters()
        proc = self.process
        if proc is not None and settle_s > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(settle_s)
        lim = self.limits
        found += causes.from_counters(since, self.counters(), lim) if self.group is not None else []
        found += causes.from_exit(proc.poll() if proc is not None else None, lim)
        sizes = {"/run/tonk": lim.run_mb, "/tmp": lim.tmp_mb, "/dev/shm": lim.shm_mb}
        found += causes.full_places(self._places, sizes)
        if self.group is None and proc is not None:
            if proc.poll() is not None and self._output is not None:
                self._output.join(0.5)  # the last words of a bot that died
            tail = ""
            if self._output is not None and self._output.total > since.printed:
                fresh = min(self._output.total - since.printed, len(self._output.tail))
                tail = self._output.tail[-fresh:].decode("utf-8", errors="replace") if fresh else ""
            found += causes.from_rlimits(f"{tail}\n{said}", _threads_below(proc.pid), lim)
        return causes.describe(found)

    def output(self) -> str:
        """What the bot printed (stdout and stderr, interleaved), bounded by ``Limits.output_kb``."""
        return self._output.text() if self._output is not None else ""

    def output_bytes(self) -> int:
        return self._output.total if self._output is not None else 0

    def truncated(self) -> bool:
        return self._output is not None and self._output.total > len(self._output.kept)


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _popen_at_nice(argv: list[str], **options: object) -> subprocess.Popen[bytes]:
    """Popen from the spawner thread at ``TONK_SANDBOX_NICE``: Linux keeps a nice value per
    thread and a child inherits its thread's, so the sandbox runs at that value whatever the
    worker's, and only this thread changes. Lowering it below the worker's needs
    CAP_SYS_NICE (or RLIMIT_NICE); refused, the sandbox keeps the worker's (the decision's
    wall ceiling does not count the time the load takes from it: arena/play/hosted.py)."""
    tid = threading.get_native_id()
    want = sandbox_nice()
    if os.getpriority(os.PRIO_PROCESS, tid) != want:
        with contextlib.suppress(PermissionError):
            os.setpriority(os.PRIO_PROCESS, tid, want)
    return subprocess.Popen(argv, **options)  # type: ignore[call-overload,no-any-return]


def _open_places(bwrap_pid: int) -> dict[str, int]:
    """O_PATH handles on the sandbox's WRITABLE mounts, once bubblewrap has built its root,
    else {} (not yet). They are reached through ``/proc/<pid>/root`` of the sandbox's first
    process, and taken only when that root is not the worker's own (before bubblewrap's
    pivot_root it still is, and the worker's /run/tonk must never be taken for the bot's)."""
    try:
        task = processes.PROC / str(bwrap_pid) / "task" / str(bwrap_pid)
        children = (task / "children").read_text().split()
        if not children:
            return {}
        root = processes.PROC / children[0] / "root"
        st, own = os.stat(root), os.stat("/")
        if (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino):
            return {}
        opened: dict[str, int] = {}
        try:
            for place in WRITABLE:
                fd = os.open(f"{root}{place}", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
                opened[place] = fd
                if os.fstat(fd).st_dev == st.st_dev:  # not its own mount yet
                    raise FileNotFoundError(place)
        except OSError:
            for fd in opened.values():
                os.close(fd)
            return {}
        return opened
    except OSError:
        return {}


def _msgqueue_bytes() -> int:
    """256 KiB of POSIX message queues, or less if the worker's own hard limit is lower (an
    unprivileged worker may not raise it)."""
    hard = resource.getrlimit(resource.RLIMIT_MSGQUEUE)[1]
    return 256 * 1024 if hard == resource.RLIM_INFINITY else min(256 * 1024, hard)


def _threads_below(pid: int) -> int:
    """Threads of every process below ``pid`` (what ``RLIMIT_NPROC`` counts)."""
    total = 0
    for p in processes.descendants(pid):
        with contextlib.suppress(OSError, ValueError):
            for line in (processes.PROC / str(p.pid) / "status").read_text().splitlines():
                if line.startswith("Threads:"):
                    total += int(line.split()[1])
                    break
    return total


def _cpu_of(pid: int) -> int:
    try:
        fields = (processes.PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0
    # utime, stime, cutime, cstime are fields 14-17 of stat; [0] here is field 3
    return sum(int(x) for x in fields[11:15]) * 1_000_000_000 // _TICKS
