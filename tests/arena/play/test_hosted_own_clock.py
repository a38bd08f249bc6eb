"""A hosted bot thinks only on its own clock (arena/sandbox/freeze.py): hostile uploads that
leave a thread, or a child that left their session, burning CPU get none while the other seat
plays, measured in CPU seconds from /proc and from the control group; what a bot burns while
it starts is charged to its start-up budget, and one over it faults naming that limit. Each
runs both ways a sandbox is frozen: by its control group, and by signals without one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest
from helpers.sandbox import requires_bwrap
from helpers.saturation import busy_processes
from helpers.uploads import entry, write_bundle

from arena import processes
from arena.play.hosted import HostedPlayer
from arena.sandbox import cgroups
from arena.sandbox.causes import PREFIX
from arena.sandbox.launch import Launch
from arena.sandbox.limits import Limits
from bots.random_bot import RandomBot
from sdk.actions import Action
from sdk.referee import DecisionRequest, FaultKind, LocalPlayer, RefereeConfig, play_match

pytestmark = requires_bwrap

CONFIG = RefereeConfig(decision_deadline_ms=1000, time_bank_ms=0, max_faults=1000, lifecycle_deadline_ms=5000)
#: How long the other seat plays each of its turns (sleeping: the CPU is there for the taking).
OTHER_TURN_S = 0.15
_TICKS = os.sysconf("SC_CLK_TCK")

SPIN_THREAD = """
import threading
if when == "import":
    def spin():
        while True:
            pass
    threading.Thread(target=spin, daemon=True).start()
"""
# The child starts a session of its own and is orphaned (its parent exits): it is in neither
# the bot's process group nor below the bot's process.
SPIN_CHILD = """
if when == "import":
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            while True:
                pass
        os._exit(0)
"""
# CPU while it starts: a second of it (charged), or without end (over any budget).
START_SECOND = """
if when == "import":
    start = time.process_time()
    while time.process_time() - start < 1.0:
        pass
"""
START_FOREVER = """
if when == "import":
    while True:
        pass
"""


@pytest.fixture(params=["cgroup", "no-cgroup"])
def freezing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """How the sandbox is frozen this run: by its control group's freezer (v2), by signals in a
    sandbox with a v1 group (its limits, its CPU count), or by signals without a group."""
    if request.param == "cgroup":
        group = cgroups.make_group()
        if group is None:
            pytest.skip("this machine does not let the worker make control groups")
        method = "cgroup" if group.can_freeze else "signals"
        group.remove()
    else:  # a delegated tree that does not exist: no group, as for an unprivileged worker
        monkeypatch.setenv("TONK_SANDBOX_CGROUP", f"tonk-test-none-{os.urandom(4).hex()}")
        assert cgroups.make_group() is None
        method = "signals"
    yield method


def tree_cpu_ns(root_pid: int) -> int:
    """CPU (user + system, and of waited-for children) of every process below ``root_pid``,
    read from /proc: a measure of its own, not the sandbox's."""
    total = 0
    for p in processes.descendants(root_pid):
        try:
            fields = (processes.PROC / str(p.pid) / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15])
    return total * 1_000_000_000 // _TICKS


class OtherSeat(LocalPlayer):
    """The other seat: each of its turns takes ``OTHER_TURN_S``, over which it measures the
    CPU the hosted bot's processes used (from /proc, and as the sandbox counts it)."""

    def __init__(self, hosted: HostedPlayer):
        super().__init__(RandomBot)
        self.hosted = hosted
        self.proc_ns: list[int] = []
        self.box_ns: list[int] = []

    def act(self, request: DecisionRequest) -> Action | int:
        box = self.hosted.box
        assert box is not None and box.process is not None
        proc_before, box_before = tree_cpu_ns(box.process.pid), box.cpu_ns()
        time.sleep(OTHER_TURN_S)
        self.proc_ns.append(tree_cpu_ns(box.process.pid) - proc_before)
        self.box_ns.append(box.cpu_ns() - box_before)
        return super().act(request)


def hosted(root: Path, name: str, attack: str | None, limits: Limits) -> HostedPlayer:
    bundle = write_bundle(root, name, attack)
    return HostedPlayer(name, lambda: bundle, Launch("python", entry=entry(name)), limits=limits)


@pytest.mark.parametrize("attack", ["thread", "child"])
def test_a_bots_thread_or_child_gets_no_cpu_while_the_other_seat_plays(
    freezing: str, attack: str, tmp_path: Path
) -> None:
    spin = SPIN_THREAD if attack == "thread" else SPIN_CHILD
    player = hosted(tmp_path, f"spinner-{attack}", spin, Limits(start_s=60))
    other = OtherSeat(player)
    try:
        player.prepare()
        box = player.box
        assert box is not None and box.process is not None
        assert getattr(box.freezer, "method", "signals") == freezing
        result = play_match([player, other], seed=20261207, hands=6, config=CONFIG)
        # The spinner was alive all along, and ran while the bot's own calls were in flight.
        spinning = [p for p in processes.descendants(box.process.pid) if p.running]
        assert len(spinning) >= (2 if attack == "child" else 1), spinning
    finally:
        player.close()
    assert [f for f in result.faults if f.seat == 0] == []
    assert len(other.proc_ns) >= 4
    # The other seat played len(...) * 0.15 s; the bot's processes used no CPU in that time
    # (a tick of /proc's 10 ms at most, for rounding).
    assert sum(other.proc_ns) <= 10_000_000, f"its CPU ns in the other seat's turns (/proc): {other.proc_ns}"
    assert sum(other.box_ns) <= 10_000_000, f"its CPU ns in the other seat's turns (sandbox): {other.box_ns}"


def test_the_cpu_a_bot_burns_as_it_starts_is_charged_to_its_start_up_budget(
    freezing: str, tmp_path: Path
) -> None:
    player = hosted(tmp_path, "slow-start", START_SECOND, Limits(start_s=60, start_cpu_s=30))
    try:
        player.prepare()
        assert player.box is not None
        assert player.box.startup_cpu_ns >= 1_000_000_000
        result = play_match([player, LocalPlayer(RandomBot)], seed=1, hands=1, config=CONFIG)
    finally:
        player.close()
    assert [f for f in result.faults if f.seat == 0] == []


def test_a_bot_over_its_start_up_budget_faults_naming_it(freezing: str, tmp_path: Path) -> None:
    player = hosted(tmp_path, "endless-start", START_FOREVER, Limits(start_s=120, start_cpu_s=1.5))
    try:
        result = play_match([player, LocalPlayer(RandomBot)], seed=1, hands=1, config=CONFIG)
    finally:
        player.close()
    mine = [f for f in result.faults if f.seat == 0]
    assert mine and mine[0].kind is FaultKind.UNREACHABLE
    reason = mine[0].reason
    assert reason.startswith(PREFIX + "start-up budget ("), reason
    assert "the start-up budget is 1.5 s" in reason
    assert player.limit_hit is not None and "start-up budget" in player.limit_hit
    # The owner's log page shows it (the seat's output is its reason when it never started).
    output = player.output()
    assert output is not None and "start-up budget" in output.text
    assert player.box is None or player.box.process is None or player.box.process.poll() is not None


def test_the_sandbox_runs_at_its_own_nice_value_whatever_the_workers(tmp_path: Path) -> None:
    """A worker started under ``nice -n 10``: its bots run at TONK_SANDBOX_NICE (0 unless set)."""
    bundle = write_bundle(tmp_path, "honest")
    script = f"""
import os, sys
from arena.sandbox.launch import Launch
from arena.sandbox.limits import Limits
from arena.sandbox.runner import Sandbox
from arena import processes
with Sandbox({str(bundle)!r}, Launch("python", entry={entry("honest")!r}), limits=Limits(start_s=60)) as box:
    nices = set()
    for p in processes.descendants(box.process.pid):
        nices.add(int((processes.PROC / str(p.pid) / "stat").read_text().rsplit(")", 1)[1].split()[16]))
    print(os.getpriority(os.PRIO_PROCESS, 0), sorted(nices))
"""
    root = Path(__file__).resolve().parents[3]
    # Only a privileged worker may lower a nice value; refused, the sandbox keeps the worker's.
    allowed = os.geteuid() == 0
    for env_nice, expected in (("", 0 if allowed else 10), ("15", 15)):
        env = {**os.environ, "TONK_SANDBOX_NICE": env_nice}
        out = subprocess.run(
            ["nice", "-n", "10", sys.executable, "-c", script],
            cwd=root, env=env, capture_output=True, text=True, timeout=300, check=True,
        ).stdout.split(maxsplit=1)
        assert out[0] == "10"  # the worker itself stays niced
        assert out[1].strip() == f"[{expected}]", out


NEAR_BUDGET = """
import time
from sdk.bot import Bot

class UploadedBot(Bot):
    name = "near-budget"
    def act(self, obs):
        # 90% of its 200 ms of CPU, its process's (its gRPC threads' too), however long it takes
        start = time.process_time()
        while time.process_time() - start < 0.180:
            pass
        return self.rng.choice(obs.legal_actions)
"""
NEAR_CONFIG = RefereeConfig(
    decision_deadline_ms=200, time_bank_ms=0, max_faults=1000, lifecycle_deadline_ms=10_000
)


def starve(pids: list[int], nice: int) -> None:
    """Leave the sandbox's processes a small share of the CPU: their sessions' autogroups and
    every thread at ``nice``, so the load beside them takes most of the time from them."""
    for pid in pids:
        with suppress(OSError):
            Path(f"/proc/{pid}/autogroup").write_text(str(nice))
        with suppress(OSError):
            for tid in os.listdir(f"/proc/{pid}/task"):
                with suppress(OSError):
                    os.setpriority(os.PRIO_PROCESS, int(tid), nice)


def test_a_bot_using_90_percent_of_its_budget_never_times_out_however_loaded_the_host(tmp_path: Path) -> None:
    """Two busy loops per core beside it, its processes niced to a small share of what is left:
    its decisions take many times their deadline in wall time and none is a timeout, since the
    wall ceiling does not count the time it waited for a CPU (before, the 2 s ceiling cut them
    off where the machine was busy)."""
    player = hosted(tmp_path, "near", None, Limits(start_s=60))
    (tmp_path / "near" / "code" / "bot_near.py").write_text(NEAR_BUDGET)
    with busy_processes(2 * (os.cpu_count() or 1)):
        try:
            player.prepare()
            assert player.box is not None and player.box.process is not None
            starve([p.pid for p in processes.descendants(player.box.process.pid)], 5)
            result = play_match([player, LocalPlayer(RandomBot)], seed=20261207, hands=1, config=NEAR_CONFIG)
        finally:
            player.close()
    assert [f for f in result.faults if f.seat == 0] == []
    assert sum(1 for log in result.hands for seat, _ in log.record.actions if seat == 0) >= 3
