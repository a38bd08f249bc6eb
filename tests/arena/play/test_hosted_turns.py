"""A hosted bot's sandbox runs through the calls of one of its turns and is stopped between
turns (the referee says when a turn is over: sdk.referee.Player), and a decision past its
wall ceiling is cut off by the worker's watchdog, the seat playing on after
(arena/play/hosted.py, sdk/grpc_player.py). That a stopped bot gets no CPU while the other
seat plays is tests/arena/play/test_hosted_own_clock.py's."""

from __future__ import annotations

from pathlib import Path

from helpers.sandbox import requires_bwrap
from helpers.uploads import entry, write_bundle

from arena.play.hosted import HostedPlayer
from arena.sandbox.launch import Launch
from arena.sandbox.limits import Limits
from bots.random_bot import RandomBot
from sdk.actions import Action
from sdk.referee import DecisionRequest, FaultKind, LocalPlayer, RefereeConfig, play_match

pytestmark = requires_bwrap

# Its first decision sleeps 3 s, past the wall ceiling of a 100 ms deadline (5 x 0.1 + 1 =
# 1.5 s; sleeping, it waits for no CPU, so the host's load does not move the ceiling); the
# others are at once.
SLEEP_ONCE = """
import time
from sdk.bot import Bot

class UploadedBot(Bot):
    name = "sleep-once"
    slept = False
    def act(self, obs):
        if not UploadedBot.slept:
            UploadedBot.slept = True
            time.sleep(3.0)
        return obs.legal_actions[0]
"""


def test_a_decision_past_the_wall_ceiling_is_cut_off_and_the_seat_plays_on(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path, "sleep-once")
    (bundle / "code" / "bot_sleep_once.py").write_text(SLEEP_ONCE)
    player = HostedPlayer(
        "sleep-once", lambda: bundle, Launch("python", entry=entry("sleep-once")), limits=Limits(start_s=60)
    )
    config = RefereeConfig(decision_deadline_ms=100, max_faults=1000, lifecycle_deadline_ms=10_000)
    try:
        result = play_match([player, LocalPlayer(RandomBot)], seed=11, hands=3, config=config)
    finally:
        player.close()
    mine = [f for f in result.faults if f.seat == 0]
    assert mine and mine[0].kind is FaultKind.TIMEOUT, mine
    # Cut by the watch (the transport's backstop is 15 s away).
    assert "cut off: no reply within the wall-clock ceiling of 1.5 s" in mine[0].reason, mine[0]
    # The channel the cut closed was opened anew: the seat decided again in later hands.
    assert not [f for f in mine if f.kind is FaultKind.UNREACHABLE], mine
    later = result.hands[mine[0].hand_index + 1 :]
    assert later and any(seat == 0 for log in later for seat, _ in log.record.actions)


def test_the_sandbox_is_stopped_once_a_turn_not_once_a_call(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path, "honest")
    player = HostedPlayer(
        "honest", lambda: bundle, Launch("python", entry=entry("honest")), limits=Limits(start_s=60)
    )
    stopped_in_other_turns: list[bool] = []

    class Other(LocalPlayer):  # the other seat: was the hosted bot stopped while it played?
        def act(self, request: DecisionRequest) -> Action | int:
            freezer = player.box.freezer if player.box is not None else None
            stopped_in_other_turns.append(freezer is not None and freezer.frozen)
            return super().act(request)

    freezes: list[None] = []
    try:
        player.prepare()
        box = player.box
        assert box is not None and box.freezer is not None and box.freezer.frozen
        freeze = box.freezer._freeze

        def counted() -> None:
            freezes.append(None)
            freeze()

        box.freezer._freeze = counted  # type: ignore[method-assign]
        result = play_match([player, Other(RandomBot)], seed=5, hands=4)
        assert box.freezer.frozen
    finally:
        player.close()
    assert result.faults == []
    assert stopped_in_other_turns and all(stopped_in_other_turns)
    # Its calls: GetInfo, StartMatch, its decisions, an EndHand a hand, EndMatch. It is stopped
    # once per run of them, fewer times (a draw and its discard are one turn).
    decisions = sum(1 for log in result.hands for seat, _ in log.record.actions if seat == 0)
    calls = 3 + len(result.hands) + decisions
    assert 0 < len(freezes) < calls, (len(freezes), calls)
