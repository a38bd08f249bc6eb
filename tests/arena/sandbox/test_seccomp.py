"""The system-call filter (#37), from inside real bubblewrap sandboxes: a hosted bot that
calls ptrace, mount, bpf, unshare, keyctl (by number, through the C library's ``syscall``)
gets EPERM for each and plays its match on; a house bot, and a bot using threads and files
in /tmp, play as before under it. The program itself is checked for both architectures."""

from __future__ import annotations

import re
import shutil
import struct
from pathlib import Path

import pytest
from helpers.sandbox import requires_bwrap
from helpers.uploads import entry, write_bundle

from arena.play.hosted import HostedPlayer
from arena.sandbox import seccomp
from arena.sandbox.launch import Launch
from arena.sandbox.limits import Limits
from arena.sandbox.runner import Sandbox, host_problem
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from sdk.grpc_player import GrpcPlayer
from sdk.referee import LocalPlayer, RefereeConfig, play_match

ROOT = Path(__file__).resolve().parents[3]
CONFIG = RefereeConfig(decision_deadline_ms=2000, max_faults=3, lifecycle_deadline_ms=10000)

# Numbers written out here, apart from arena/sandbox/seccomp.py's table: a wrong number there
# lets the real call through and the test sees it succeed. Without the filter PTRACE_TRACEME,
# a new user namespace and the session keyring's id succeed and clone3 answers EINVAL (seen
# with an allow-all program); mount and bpf are refused anyway for want of capabilities: the
# filter is their second wall.
SYSCALLS = {
    "x86_64": {"ptrace": 101, "mount": 165, "bpf": 321, "unshare": 272, "keyctl": 250, "clone3": 435},
    "aarch64": {"ptrace": 117, "mount": 40, "bpf": 280, "unshare": 97, "keyctl": 219, "clone3": 435},
}

FORBIDDEN = """
    if when == "match-start":
        return
    import ctypes, errno, platform
    libc = ctypes.CDLL(None, use_errno=True)
    nr = {numbers!r}[platform.machine()]
    def call(name, *args):
        ctypes.set_errno(0)
        result = libc.syscall(nr[name], *[ctypes.c_long(a) for a in args])
        code = ctypes.get_errno()
        said = errno.errorcode.get(code, code) if result == -1 else result
        report(f"{{name}} {{when}}", result != -1, said)
    attr = ctypes.create_string_buffer(128)  # union bpf_attr for BPF_MAP_CREATE: an array map
    fields = [2, 4, 4, 1]  # map_type BPF_MAP_TYPE_ARRAY, key_size, value_size, max_entries
    ctypes.memmove(attr, b"".join(f.to_bytes(4, "little") for f in fields), 16)
    call("ptrace", 0, 0, 0, 0)  # PTRACE_TRACEME
    source, target, kind = (ctypes.create_string_buffer(s) for s in (b"none", b"/tmp", b"tmpfs"))
    call("mount", ctypes.addressof(source), ctypes.addressof(target), ctypes.addressof(kind), 0, 0)
    call("bpf", 0, ctypes.addressof(attr), 128)  # BPF_MAP_CREATE
    call("unshare", 0x10000000)  # CLONE_NEWUSER
    call("keyctl", 0, -3 & 0xFFFFFFFF, 1)  # KEYCTL_GET_KEYRING_ID of the session keyring, create
    call("clone3", 0, 0)
    status = open("/proc/self/status").read()
    modes = [l.split()[1] for l in status.splitlines() if l.startswith(("Seccomp:", "Seccomp_filters:"))]
    print("FILTER " + " ".join(modes), flush=True)
"""


def machine_or_skip() -> str:
    arch = seccomp.machine()
    if arch not in SYSCALLS:
        pytest.skip(f"no syscall numbers for {arch} in this test")
    return arch


def test_the_program_checks_the_architecture_first_and_allows_last() -> None:
    for arch, audit in (("x86_64", 0xC000003E), ("aarch64", 0xC00000B7)):
        code = seccomp.program(arch)
        words = [struct.unpack("=HBBI", code[i : i + 8]) for i in range(0, len(code), 8)]
        assert words[0] == (0x20, 0, 0, 4)  # load the arch
        assert words[1][0] == 0x15 and words[1][3] == audit
        assert words[1 + 1 + words[1][2]] == (0x06, 0, 0, seccomp.RET_KILL_PROCESS)  # foreign: killed
        denied = {w[3] for w in words if w[0] == 0x15 and w[3] < 1000}
        column = 0 if arch == "x86_64" else 1
        assert {n[column] for n in seccomp.DENIED.values() if n[column] is not None} <= denied
        returns = [w[3] for w in words if w[0] == 0x06]
        errno_eperm, errno_enosys = seccomp.RET_ERRNO | 1, seccomp.RET_ERRNO | 38
        assert returns == [seccomp.RET_ALLOW, errno_eperm, errno_enosys, seccomp.RET_KILL_PROCESS]
        assert len(words) < 4096  # the kernel's BPF_MAXINSNS


def test_the_table_names_each_number_once_per_architecture() -> None:
    for column in (0, 1):
        numbers = [n[column] for n in seccomp.DENIED.values() if n[column] is not None]
        numbers += [seccomp.CLONE[column], seccomp.CLONE3[column]]
        assert len(numbers) == len(set(numbers))


def test_an_unknown_architecture_or_kernel_is_refused_with_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(seccomp.SeccompUnavailableError, match=r"'riscv64' architecture"):
        seccomp.program("riscv64")
    missing = seccomp.host_problem(tmp_path / "actions_avail")
    assert missing is not None and "CONFIG_SECCOMP_FILTER" in missing
    old = tmp_path / "old"
    old.write_text("kill_thread trap errno trace allow\n")
    problem = seccomp.host_problem(old)
    assert problem is not None and "kill_process" in problem and "errno" not in problem.split("(")[0]
    assert seccomp.host_problem() is None  # this machine runs the sandbox tests


@requires_bwrap
def test_what_the_worker_says_at_its_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert host_problem() is None
    monkeypatch.setenv("PATH", str(tmp_path))  # no bubblewrap on it
    problem = host_problem()
    assert problem is not None and "bubblewrap (bwrap) is not installed" in problem


@requires_bwrap
def test_forbidden_calls_get_eperm_and_the_match_plays_on(tmp_path: Path) -> None:
    machine_or_skip()
    bundle = write_bundle(tmp_path, "prier", FORBIDDEN.format(numbers=SYSCALLS))
    launch = Launch("python", entry=entry("prier"))
    hosted = HostedPlayer("prier", lambda: bundle, launch, limits=Limits(start_s=60))
    try:
        result = play_match([hosted, LocalPlayer(RandomBot)], seed=20261206, hands=3, config=CONFIG)
    finally:
        hosted.close()
    output = hosted.output()
    assert output is not None
    text = output.text
    for when in ("import", "decision"):
        for name in ("ptrace", "mount", "bpf", "unshare", "keyctl"):
            assert f"ATTACK {name} {when}: blocked (EPERM)" in text, text
        assert f"ATTACK clone3 {when}: blocked (ENOSYS)" in text, text
    assert "SUCCEEDED" not in text
    # The kernel says a filter is in force (mode 2), and one only: bubblewrap's, ours.
    assert re.search(r"^FILTER 2 1$", text, re.M), text
    # Its other behaviour is unaffected: every hand played, no fault on either seat.
    assert result.faults == [] and len(result.hands) == 3 and result.forfeited is None


X32 = """
    if when != "import":
        return
    import subprocess, sys
    child = "import ctypes; ctypes.CDLL(None).syscall(0x40000000 | 39); print('x32 answered')"
    done = subprocess.run([sys.executable, "-I", "-c", child], capture_output=True, text=True)
    report("x32 getpid", done.returncode == 0, f"status {done.returncode} {done.stdout.strip()}")
"""


@requires_bwrap
def test_a_call_through_another_abi_kills_the_caller(tmp_path: Path) -> None:
    if seccomp.machine() != "x86_64":
        pytest.skip("the x32 entry is x86_64's")
    bundle = write_bundle(tmp_path, "abi", X32)
    with Sandbox(bundle, Launch("python", entry=entry("abi")), limits=Limits(start_s=60)) as box:
        pass
    assert "ATTACK x32 getpid: blocked (status -31 )" in box.output(), box.output()  # SIGSYS


THREADS_AND_FILES = """
import os, tempfile, threading
from concurrent.futures import ThreadPoolExecutor
from sdk.bot import Bot

class UploadedBot(Bot):
    name = "worker-bee"
    def act(self, obs):
        with ThreadPoolExecutor(4) as pool:  # threads (clone without namespace flags)
            sizes = list(pool.map(self.write, range(4)))
        assert sizes == [64] * 4, sizes
        return obs.legal_actions[0]
    def write(self, n):
        with tempfile.NamedTemporaryFile(dir="/tmp") as f:
            f.write(b"x" * 64)
            f.flush()
            return os.stat(f.name).st_size
"""


@requires_bwrap
def test_a_bot_with_threads_and_tmp_files_plays_under_the_filter(tmp_path: Path) -> None:
    bundle = tmp_path / "bee"
    (bundle / "code").mkdir(parents=True)
    (bundle / "deps").mkdir()
    (bundle / "code" / "bot_bee.py").write_text(THREADS_AND_FILES)
    for path in [bundle, *bundle.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    launch = Launch("python", entry="bot_bee:UploadedBot")
    hosted = HostedPlayer("bee", lambda: bundle, launch, limits=Limits(start_s=60))
    try:
        result = play_match([hosted, LocalPlayer(GreedyBot)], seed=7, hands=3, config=CONFIG)
    finally:
        hosted.close()
    assert result.faults == [] and len(result.hands) == 3


@requires_bwrap
def test_a_house_bot_plays_hosted_under_the_filter(tmp_path: Path) -> None:
    bundle = tmp_path / "house"
    (bundle / "code" / "bots").mkdir(parents=True)
    (bundle / "deps").mkdir()
    (bundle / "code" / "bots" / "__init__.py").write_text("")
    for name in ("greedy.py", "heuristic.py"):
        shutil.copy(ROOT / "bots" / name, bundle / "code" / "bots" / name)
    for path in [bundle, *bundle.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    launch = Launch("python", entry="bots.heuristic:HeuristicBot")
    with Sandbox(bundle, launch, limits=Limits(start_s=60)) as box:
        player = GrpcPlayer(box.address)
        try:
            result = play_match([player, LocalPlayer(GreedyBot)], seed=11, hands=4, config=CONFIG)
        finally:
            player.close()
    assert result.faults == [] and len(result.hands) == 4
