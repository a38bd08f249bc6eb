"""The template of fast starts, run inside a sandbox of its own (arena/sandbox/template.py):
it imports the SDK and gRPC, starts nothing (no server, channel or thread: gRPC is not
fork-safe once it has), and for each match forks a child that builds a fresh sandbox of its
own before any bot code runs.

It runs as ``python -I -S -c <this file>`` with only the standard library and the SDK
(``/opt/tonk/site``) on its path: never the bot's code, which is imported by the match's
process alone. It must not import the arena: the arena is not in the sandbox.

Per match, on its control socket (``/run/tonk/template.sock``), the worker sends one JSON
line with the output pipe's write end (``SCM_RIGHTS``), and the processes go:

- **A**, a fork of the template: new mount, PID, network, IPC and UTS namespaces; fresh
  memory-backed ``/tmp``, ``/dev/shm`` and ``/run/tonk`` of the match's sizes over the
  template's; says ``forked`` (the worker reads its pid from the message's credentials and
  moves it into the match's control group), waits for ``go``, then forks B in a new cgroup
  namespace, and reports B's end (``exit N``, N as bubblewrap gives it: 128 + a signal);
- **B**, pid 1 of the new PID namespace (it dies with A): a fresh ``/proc``; the match's
  resource limits, then no capabilities, no new privileges and the system-call filter; it
  reaps orphans and ends with C, as bubblewrap's own init does;
- **C**, the bot: its own session, output to the pipe, every other descriptor closed, the
  bot's folders first on its path, then the launcher's work (arena/sandbox/launcher.py).
"""

import contextlib
import ctypes
import json
import os
import resource
import signal
import socket
import sys
import traceback
from typing import Any

CONTROL = "/run/tonk/template.sock"
SOCKET = "/run/tonk/bot.sock"
_NEWNS, _NEWCGROUP, _NEWUTS, _NEWIPC, _NEWPID, _NEWNET = (
    0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x20000000, 0x40000000,
)  # fmt: skip
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
_PR_SET_PDEATHSIG, _PR_CAPBSET_DROP, _PR_SET_SECCOMP, _PR_SET_NO_NEW_PRIVS = 1, 24, 22, 38
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_SECCOMP_MODE_FILTER = 2
_CAPSET = {"x86_64": 126, "aarch64": 91}
_LAST_CAP = 63

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(
        _libc.mount(
            source.encode(), target.encode(), fstype.encode() if fstype else None, ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )  # fmt: skip


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _lock_down(program: bytes) -> None:
    """No capability (bounding, ambient, effective, permitted, inheritable), no new
    privileges, and the system-call filter, as bubblewrap leaves the bot."""
    for cap in range(_LAST_CAP + 1):
        _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the kernel's last: ignored
    _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.syscall(_CAPSET[os.uname().machine], header, data), "capset")
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")


def _send(conn: socket.socket, line: str) -> None:
    conn.sendall(line.encode() + b"\n")


def _receive(conn: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            raise EOFError("the worker hung up")
        data += chunk
    return data.decode().strip()


def _match(conn: socket.socket, request: dict[str, Any], out_fd: int) -> int:
    """Process A (see the module's docstring); returns its exit status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.setsid()
    _check(_libc.unshare(_NEWNS | _NEWPID | _NEWNET | _NEWIPC | _NEWUTS), "unshare")
    _mount("none", "/", None, _MS_REC | _MS_PRIVATE)
    for place, size in request["sizes"].items():
        _mount("tmpfs", place, "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={size},mode=0755")
    _send(conn, "forked")
    if _receive(conn) != "go":
        return 1
    _check(_libc.unshare(_NEWCGROUP), "unshare cgroup")
    init = os.fork()
    if init == 0:
        try:
            _init(conn, request, out_fd)
        except BaseException:
            os.write(out_fd, ("sandbox: " + traceback.format_exc()).encode(errors="replace"))
            os._exit(71)
    os.close(out_fd)
    _, status = os.waitpid(init, 0)
    code = os.waitstatus_to_exitcode(status)
    _send(conn, f"exit {code}")
    return 0


def _init(conn: socket.socket, request: dict[str, Any], out_fd: int) -> None:
    """Process B: pid 1 of the match's PID namespace."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    conn.close()
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    for name, (soft, hard) in request["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    _lock_down(bytes.fromhex(request["seccomp"]))
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.closerange(3, 65536)
    bot = os.fork()
    if bot == 0:
        try:
            _bot(request["entry"])
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    while True:  # reap every orphan; end with the bot, as bubblewrap's init does
        pid, status = os.wait()
        if pid == bot:
            code = os.waitstatus_to_exitcode(status)
            os._exit(128 - code if code < 0 else code)


def _bot(entry: str) -> None:
    """Process C: what arena/sandbox/launcher.py does, in a process that already has the SDK."""
    os.setsid()
    os.chdir("/bot/code")
    sys.path[:0] = ["/bot/code", "/bot/deps"]
    from sdk.players import load_bot_class
    from sdk.server import start_server

    bot_class = load_bot_class(entry)
    running = start_server(bot_class, unix_socket=os.environ["TONK_SOCKET"], max_workers=4)
    print(f"serving {entry} on {os.environ['TONK_SOCKET']}", file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: running.stop(0))
    running.server.wait_for_termination()


def main() -> None:
    sys.path[:0] = ["/opt/tonk/site"]
    import grpc  # noqa: F401

    import sdk.players
    import sdk.server  # noqa: F401

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # each A is reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(CONTROL + ".new")
    listener.listen(64)
    os.rename(CONTROL + ".new", CONTROL)  # it appears listening: the worker connects once it is there
    print("template ready", flush=True)
    while True:
        conn, _ = listener.accept()
        try:
            message, fds, _flags, _addr = socket.recv_fds(conn, 65536, 1)
            request = json.loads(message.decode())
        except (OSError, ValueError):
            conn.close()
            continue
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            conn.close()
            continue
        pid = os.fork()
        if pid == 0:
            listener.close()
            try:
                code = _match(conn, request, fds[0])
            except BaseException:
                with_trace = "sandbox: " + traceback.format_exc()
                with contextlib.suppress(OSError):
                    os.write(fds[0], with_trace.encode(errors="replace"))
                code = 70
            os._exit(code)
        conn.close()
        os.close(fds[0])


if __name__ == "__main__":
    main()
