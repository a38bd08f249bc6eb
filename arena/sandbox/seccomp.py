"""The system-call filter every sandboxed bot runs under: a classic-BPF seccomp program that
bubblewrap installs (``bwrap --seccomp FD``) just before it starts the bot, inherited by
everything the bot starts.

It refuses with ``EPERM`` what a bot never needs and the kernel's riskiest doors are behind:
debugging other processes (ptrace, process_vm_*), mounting and namespaces (mount, the new
mount API, pivot_root, unshare, setns, ``clone`` with a namespace flag), keyrings, eBPF,
perf events, userfaultfd, io_uring, kernel modules, kexec, swap, reboot, accounting, the
clock, file handles (open_by_handle_at). ``clone3`` answers ``ENOSYS``: its flags live in
memory a filter cannot read, and C libraries fall back to ``clone`` on ``ENOSYS``. A call
of another architecture (the i386 or x32 entry on x86_64) kills the process: the table of
numbers is of one architecture only.

No libseccomp binding is needed: the program is a few dozen fixed instructions, built here
from the table below (numbers from ``asm/unistd_64.h`` and ``asm-generic/unistd.h``).
"""

from __future__ import annotations

import functools
import os
import platform
import struct
from dataclasses import dataclass
from pathlib import Path

from arena.errors import ArenaError

#: Refused with EPERM: name -> (x86_64 number, aarch64 number or None where it has none).
DENIED: dict[str, tuple[int, int | None]] = {
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "move_mount": (429, 429),
    "open_tree": (428, 428),
    "mount_setattr": (442, 442),
    "unshare": (272, 97),
    "setns": (308, 268),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "reboot": (169, 142),
    "acct": (163, 89),
    "quotactl": (179, 60),
    "quotactl_fd": (443, 443),
    "syslog": (103, 116),
    "lookup_dcookie": (212, 18),
    "fanotify_init": (300, 262),
    "settimeofday": (164, 170),
    "clock_settime": (227, 112),
    "adjtimex": (159, 171),
    "clock_adjtime": (305, 266),
    "sethostname": (170, 161),
    "setdomainname": (171, 162),
    "vhangup": (153, 58),
    "iopl": (172, None),
    "ioperm": (173, None),
    "uselib": (134, None),
    "_sysctl": (156, None),
    "nfsservctl": (180, 42),
}
#: ``clone``: refused (EPERM) only with one of CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER,
#: NEWPID, NEWNET in its flags (its first argument on both architectures); threads and forks pass.
CLONE = (56, 220)
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
#: ``clone3``: ENOSYS, so the C library uses ``clone``, which the filter can read.
CLONE3 = (435, 435)

EPERM, ENOSYS = 1, 38
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_BIT = 0x40000000  # x86_64's x32 entry: numbers at and above it

# Classic BPF (linux/filter.h, linux/seccomp.h).
_LD_ABS_W = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ, _JGE, _JSET = 0x15, 0x35, 0x45  # BPF_JMP | op | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
# Offsets in struct seccomp_data: nr, arch, then args[0] (its low 32 bits, little-endian).
_NR, _ARCH, _ARG0_LOW = 0, 4, 16


class SeccompUnavailableError(ArenaError):
    """The worker's kernel or architecture cannot give a sandboxed bot its system-call filter."""

    status = 503
    code = "sandbox_unavailable"


@dataclass(frozen=True, slots=True)
class _Jump:
    """A conditional jump to named places, resolved into offsets when the program is laid out."""

    op: int
    k: int
    true: str | None  # label, or None: the next instruction
    false: str | None


def machine() -> str:
    """The worker's architecture, as the table names it."""
    name = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(name, name)


@functools.cache
def program(arch: str | None = None) -> bytes:
    """The filter for ``arch`` (default: this machine's) as packed ``struct sock_filter``s."""
    arch = arch or machine()
    if arch not in _AUDIT_ARCH:
        raise SeccompUnavailableError(
            f"no system-call filter for the {arch!r} architecture (only {', '.join(_AUDIT_ARCH)}): "
            "hosted bots cannot be sandboxed on this worker"
        )
    col = 0 if arch == "x86_64" else 1
    code: list[tuple[int, int] | _Jump | str] = [
        (_LD_ABS_W, _ARCH),
        _Jump(_JEQ, _AUDIT_ARCH[arch], None, "kill"),
        (_LD_ABS_W, _NR),
    ]
    if arch == "x86_64":
        code.append(_Jump(_JGE, _X32_BIT, "kill", None))
    for numbers in DENIED.values():
        if numbers[col] is not None:
            code.append(_Jump(_JEQ, numbers[col], "eperm", None))  # type: ignore[arg-type]
    code.append(_Jump(_JEQ, CLONE3[col], "enosys", None))
    code += [
        _Jump(_JEQ, CLONE[col], None, "allow"),
        (_LD_ABS_W, _ARG0_LOW),
        _Jump(_JSET, CLONE_NAMESPACES, "eperm", "allow"),
        "allow", (_RET, RET_ALLOW),
        "eperm", (_RET, RET_ERRNO | EPERM),
        "enosys", (_RET, RET_ERRNO | ENOSYS),
        "kill", (_RET, RET_KILL_PROCESS),
    ]  # fmt: skip
    return _assemble(code)


def _assemble(code: list[tuple[int, int] | _Jump | str]) -> bytes:
    """Lay out the instructions, turning labels into the 8-bit forward offsets BPF jumps take."""
    labels: dict[str, int] = {}
    index = 0
    for item in code:
        if isinstance(item, str):
            labels[item] = index
        else:
            index += 1
    out = bytearray()
    index = 0
    for item in code:
        if isinstance(item, str):
            continue
        if isinstance(item, _Jump):
            jt = 0 if item.true is None else labels[item.true] - index - 1
            jf = 0 if item.false is None else labels[item.false] - index - 1
            assert 0 <= jt <= 255 and 0 <= jf <= 255, "a jump too far for classic BPF"
            out += struct.pack("=HBBI", item.op, jt, jf, item.k)
        else:
            out += struct.pack("=HBBI", item[0], 0, 0, item[1])
        index += 1
    return bytes(out)


def program_fd() -> int:
    """A fresh file (in memory, close-on-exec) holding the filter, at its start: bubblewrap
    reads it from the descriptor it is given. The caller passes it on and closes it."""
    data = program()
    fd = os.memfd_create("tonk-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


_ACTIONS = Path("/proc/sys/kernel/seccomp/actions_avail")


def host_problem(actions_file: Path = _ACTIONS) -> str | None:
    """Why this worker's kernel cannot install the filter, or None: seccomp filters built in
    (CONFIG_SECCOMP_FILTER, which lists its actions) with the errno and kill-process actions
    the program returns (Linux 4.14 on), and an architecture the table knows."""
    try:
        program()
    except SeccompUnavailableError as exc:
        return str(exc)
    try:
        actions = set(actions_file.read_text().split())
    except OSError:
        return (
            f"the kernel has no seccomp filters ({actions_file} is missing: CONFIG_SECCOMP_FILTER, "
            "Linux 4.14 or later): hosted bots cannot get their system-call filter"
        )
    missing = {"errno", "kill_process", "allow"} - actions
    if missing:
        return (
            f"the kernel's seccomp lacks the action(s) {', '.join(sorted(missing))} "
            f"({actions_file} lists {' '.join(sorted(actions))}): hosted bots need Linux 4.14 or later"
        )
    return None


@functools.cache
def check_host() -> None:
    """Raise SeccompUnavailableError if the filter cannot be installed here (a passed check is
    remembered for the process; a failed one is made again, as functools.cache keeps no
    exception)."""
    problem = host_problem()
    if problem is not None:
        raise SeccompUnavailableError(problem + " (see docs/operator-guide.md, 'Hosted bots: the sandbox')")
