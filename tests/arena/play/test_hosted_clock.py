"""The CPU-time clock of hosted bots: on a saturated worker machine, a hosted bot that thinks
20 ms of CPU per decision under a 50 ms deadline is never charged a timeout, while the same
bot charged by the wall clock is (which shows the machine really was saturated)."""

from __future__ import annotations

from pathlib import Path

from helpers.sandbox import requires_bwrap
from helpers.saturation import busy_processes
from helpers.uploads import entry

from arena.play.hosted import HostedPlayer
from arena.sandbox.clock import wall_ceiling_s
from arena.sandbox.launch import Launch
from arena.sandbox.limits import Limits
from arena.sandbox.runner import Sandbox
from bots.random_bot import RandomBot
from sdk.grpc_player import GrpcPlayer
from sdk.referee import FaultKind, LocalPlayer, Player, RefereeConfig, play_match

pytestmark = requires_bwrap

THINKER = """
import time
from sdk.bot import Bot

class UploadedBot(Bot):
    name = "thinker"
    def act(self, obs):
        start = time.thread_time()
        while time.thread_time() - start < 0.020:  # 20 ms of CPU, however long that takes
            pass
        return self.rng.choice(obs.legal_actions)
"""
CONFIG = RefereeConfig(decision_deadline_ms=50, time_bank_ms=0, max_faults=1000, lifecycle_deadline_ms=5000)


def thinker_bundle(root: Path) -> Path:
    bundle = root / "thinker"
    (bundle / "code").mkdir(parents=True)
    (bundle / "deps").mkdir()
    (bundle / "code" / "bot_thinker.py").write_text(THINKER)
    return bundle


class WallClocked:
    """A gRPC player whose own measure of the bot's time is hidden, so the referee charges
    its wall clock (sdk.clock's lag correction would credit the machine's load to the
    referee process and so hide it)."""

    def __init__(self, inner: GrpcPlayer):
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        if name == "last_charged_us":
            return None
        return getattr(self.inner, name)


def timeouts(player: Player) -> tuple[list[str], int]:
    """The timeouts charged to seat 0 (their reasons, which say what was counted) and its
    decisions, in a 20-hand match against random."""
    result = play_match([player, LocalPlayer(RandomBot)], seed=20261202, hands=20, config=CONFIG)
    mine = [f.reason for f in result.faults if f.seat == 0 and f.kind is FaultKind.TIMEOUT]
    decisions = sum(1 for log in result.hands for seat, _ in log.record.actions if seat == 0)
    return mine, decisions + len(mine)


def test_a_hosted_bot_is_charged_its_cpu_time_not_the_machines_load(tmp_path: Path) -> None:
    bundle = thinker_bundle(tmp_path)
    launch = Launch("python", entry=entry("thinker"))
    with busy_processes(6):  # three per core of this 2-core machine
        hosted = HostedPlayer("thinker", lambda: bundle, launch, limits=Limits(start_s=60))
        try:
            charged_timeouts, decisions = timeouts(hosted)
        finally:
            hosted.close()
        # The same bot in the same sandbox, charged by the referee's wall clock alone.
        with Sandbox(bundle, launch, limits=Limits(start_s=60)) as box:
            wall = WallClocked(GrpcPlayer(box.address, transport_timeout_s=wall_ceiling_s))
            try:
                wall_timeouts, _ = timeouts(wall)
            finally:
                wall.close()
    assert decisions >= 20
    assert charged_timeouts == [], charged_timeouts
    assert wall_timeouts, "the machine was not saturated: the control saw no timeout"
