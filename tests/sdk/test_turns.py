"""The referee tells a player when its turn is over (sdk.referee.Player: ``turns()`` and
``turn_over()``), which lets a hosted bot's sandbox run through the calls of one turn and stop
between turns (arena/play/hosted.py); and a watched Decide is cut off by the process's
watchdog when its watch says so, the player playing on after (sdk.grpc_player)."""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections.abc import Iterator

import pytest
from helpers.grpc_bots import CrashBot, serving

from bots.random_bot import RandomBot
from sdk.actions import Action
from sdk.bot import Bot, HandResult, MatchInfo, MatchSummary
from sdk.grpc_player import GrpcPlayer
from sdk.observation import Observation
from sdk.referee import (
    DecisionRequest,
    FaultKind,
    LocalPlayer,
    PlayerWrapper,
    RefereeConfig,
    play_match,
)


class Told(LocalPlayer):
    """Logs each call (its seat's) and each ``turn_over``, in the order the referee made them,
    into a log shared by the seats."""

    def __init__(self, seat: int, log: list[tuple[int, str]]):
        super().__init__(RandomBot)
        self.seat, self.log = seat, log
        self.inside = 0

    @contextlib.contextmanager
    def turns(self) -> Iterator[None]:
        self.inside += 1
        try:
            yield
        finally:
            self.inside -= 1

    def turn_over(self) -> None:
        self.log.append((self.seat, "over"))

    def _call(self, name: str) -> None:
        assert self.inside == 1, "called outside the referee's turns()"
        self.log.append((self.seat, name))

    def describe(self) -> dict[str, str]:
        self._call("describe")
        return super().describe()

    def match_start(self, info: MatchInfo) -> None:
        self._call("start")
        super().match_start(info)

    def act(self, request: DecisionRequest) -> Action | int:
        self._call("act")
        return super().act(request)

    def hand_end(self, result: HandResult) -> None:
        self._call("hand_end")
        super().hand_end(result)

    def match_end(self, summary: MatchSummary) -> None:
        self._call("match_end")
        super().match_end(summary)


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_seats_turn_is_over_exactly_when_the_referee_next_calls_another_or_stores_a_hand(
    wrapped: bool,
) -> None:
    log: list[tuple[int, str]] = []
    stored: list[int] = []
    seats = [Told(0, log), Told(1, log), Told(2, log)]
    players = [PlayerWrapper(p) for p in seats] if wrapped else seats

    def on_hand(*_: object) -> None:
        log.append((-1, "stored"))
        stored.append(len(log))

    result = play_match(players, seed=7, hands=4, on_hand=on_hand)
    assert result.faults == [] and len(stored) == 4
    assert all(p.inside == 0 for p in seats)
    calls = [(s, what) for s, what in log if what not in ("over", "stored")]
    # Several seats' turns have more than one call (a draw, then its discard): the case told apart.
    assert any(a[0] == b[0] for a, b in itertools.pairwise(calls))
    held: int | None = None  # the seat whose turn it is, by the log
    for seat, what in log:
        if what == "over":
            assert seat == held, f"turn_over of seat {seat} while it was seat {held}'s turn: {log}"
            held = None
        elif what == "stored":
            assert held is None, f"seat {held}'s turn not over before the hand was stored"
        else:
            assert held in (None, seat), f"seat {seat} called in seat {held}'s turn: {log}"
            held = seat
    assert held is None  # over at the end of the match


def test_turn_over_comes_even_when_a_match_ends_by_a_failure() -> None:
    log: list[tuple[int, str]] = []

    class Broken(Told):
        def act(self, request: DecisionRequest) -> Action | int:
            super().act(request)
            raise KeyError("not a bot's fault: the referee's caller sees it")

    seats = [Broken(0, log), Told(1, log)]
    with pytest.raises(KeyError):
        play_match(seats, seed=1, hands=2)
    assert log[-1][1] == "over" and all(p.inside == 0 for p in seats)


RELEASE = threading.Event()


class StuckOnce(Bot):
    """Its first decision takes a second (the SDK's server answers a match's calls in turn,
    so the next waits for it), the rest are at once."""

    name = "stuck-once"
    calls = 0

    def act(self, obs: Observation) -> Action | int:
        StuckOnce.calls += 1
        if StuckOnce.calls == 1:
            RELEASE.wait(1.0)
        return 0


def test_the_watchdog_cuts_a_watched_decide_off_and_the_player_plays_on() -> None:
    looks: list[float] = []

    def watch(elapsed_s: float) -> str | None:
        if len(looks) >= 3:  # only the stuck decision is cut off
            return None
        looks.append(elapsed_s)
        return "cut off: by the test's watch" if len(looks) == 3 else None

    StuckOnce.calls = 0
    RELEASE.clear()
    try:
        with serving(StuckOnce, max_workers=4) as server:
            player = GrpcPlayer(server.address, transport_timeout_s=lambda _ms: 60.0)
            player.watch, player.watch_after_s = watch, 0.05
            try:
                config = RefereeConfig(decision_deadline_ms=10_000, max_faults=100)
                result = play_match([player, LocalPlayer(RandomBot)], seed=3, hands=3, config=config)
            finally:
                player.close()
    finally:
        RELEASE.set()
    mine = [f for f in result.faults if f.seat == 0]
    assert len(mine) == 1 and mine[0].kind is FaultKind.TIMEOUT
    assert mine[0].reason == "Decide: cut off: by the test's watch"
    # Looked at only past watch_after_s, three times, the third cutting it off (not the 60 s
    # transport timeout); the seat's later decisions went through on a new channel.
    assert len(looks) == 3 and looks[0] >= 0.05
    assert StuckOnce.calls > 1
    later = result.hands[mine[0].hand_index + 1 :]
    assert later and any(seat == 0 for log in later for seat, _ in log.record.actions)


def test_a_watched_decide_that_fails_fails_as_an_unwatched_one() -> None:
    faults = []
    for watched in (False, True):
        with serving(CrashBot) as server:
            player = GrpcPlayer(server.address)
            if watched:
                player.watch, player.watch_after_s = (lambda _s: None), 0.0
            try:
                result = play_match([player, LocalPlayer(RandomBot)], seed=3, hands=1)
            finally:
                player.close()
        faults.append([(f.kind, f.reason) for f in result.faults])
    assert faults[0] and faults[0][0][0] is FaultKind.CRASH
    assert faults[1] == faults[0]


def test_a_forked_child_watches_with_a_watchdog_of_its_own() -> None:
    """The watchdog's thread does not survive a fork (and its lock may be held at it): the
    child starts its own at its first watched call (a worker's pool processes are forks)."""
    from sdk import grpc_player

    probe = grpc_player._Watched(None, lambda _s: None, 0.0, 3600.0)  # type: ignore[arg-type]
    grpc_player._WATCHDOG.add(probe)
    try:
        assert grpc_player._WATCHDOG._thread is not None
        pid = os.fork()
        if pid == 0:  # the child: a clean watchdog, whose lock is free
            ok = grpc_player._WATCHDOG._thread is None and grpc_player._WATCHDOG._lock.acquire(timeout=5)
            os._exit(0 if ok and not grpc_player._WATCHDOG._calls else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        probe.finish()
