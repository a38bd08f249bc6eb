"""Time is accounted: lifecycle notices (EndHand, EndMatch) have their own bounded cost and are
recorded when slow, and a registration check has an overall time limit, so a slow bot cannot
stretch a match or hold a check slot for minutes. Real bots over gRPC on loopback.

The referee times these matches by :data:`BOT_TIME`, a clock that moves only when a slow bot
says how long it took: every other call (the house bot's, the slow bot's quick ones) takes
exactly 0 ms however busy the machine is, so which notices are on the record is the product's
verdict, not the machine's. The cut-offs themselves are the transport's, in real time: a bot
meant to be cut off really waits, many times longer than its deadline's share of the match."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from helpers.faultbots import register_bots

from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from sdk.bot import HandResult, MatchInfo, MatchSummary
from sdk.grpc_player import GrpcPlayer
from sdk.observation import Observation
from sdk.referee import LocalPlayer, RefereeConfig, play_match
from sdk.server import RunningServer, start_server


class BotTime:
    """The referee's clock here (``play_match(clock=BOT_TIME)``): it moves only by what a slow
    bot :meth:`spend` s, when the bot begins the call it is slow in."""

    def __init__(self) -> None:
        self.ns = 0
        self.lock = threading.Lock()

    def __call__(self) -> int:
        return self.ns

    def spend(self, seconds: float) -> None:
        with self.lock:
            self.ns += int(seconds * 1e9)


BOT_TIME = BotTime()


class SlowNoticeBot(RandomBot):
    """Plays at once, but takes ``delay_s`` of :data:`BOT_TIME` over every EndHand and
    EndMatch, and really waits ``wait_s`` in each (for the transport to cut it off)."""

    name = "slow-notices"
    delay_s = 1.9
    wait_s = 1.9
    calls: dict[str, int] = {}
    lock = threading.Lock()

    @classmethod
    def count(cls, rpc: str) -> None:
        with cls.lock:
            cls.calls[rpc] = cls.calls.get(rpc, 0) + 1

    def on_hand_end(self, result: HandResult) -> None:
        self.count("EndHand")
        BOT_TIME.spend(self.delay_s)
        threading.Event().wait(self.wait_s)

    def on_match_end(self, summary: MatchSummary) -> None:
        self.count("EndMatch")
        BOT_TIME.spend(self.delay_s)
        threading.Event().wait(self.wait_s)


@pytest.fixture
def slow_bot() -> Iterator[RunningServer]:
    SlowNoticeBot.calls = {}
    SlowNoticeBot.delay_s = SlowNoticeBot.wait_s = 1.9
    server = start_server(SlowNoticeBot)
    yield server
    server.stop(0)


def play(address: str, config: RefereeConfig, hands: int = 6, clock: Any = BOT_TIME) -> Any:
    with GrpcPlayer(address) as player:
        return play_match([player, LocalPlayer(GreedyBot)], 77, hands, config=config, clock=clock)


def test_a_notice_cut_off_is_recorded_and_ends_that_seats_notices(slow_bot: RunningServer) -> None:
    """The probe's bot: 1.9 s over each EndHand and EndMatch, in a 6-hand match. Its first
    EndHand is cut at the 1 s deadline and recorded; it gets no more notices in the match
    (before: every notice waited out, 13.5 s for the match, nothing recorded)."""
    result = play(slow_bot.address, RefereeConfig(decision_deadline_ms=1000, lifecycle_deadline_ms=1000))
    assert len(result.hands) == 6 and result.faults == []
    notes = [(n.seat, n.hand_index, n.rpc, n.cut_off) for n in result.slow_notices]
    assert notes == [(0, 0, "EndHand", True)]
    assert result.slow_notices[0].elapsed_ms == 1900
    assert "EndHand: slow lifecycle notice" in result.slow_notices[0].reason
    assert SlowNoticeBot.calls == {"EndHand": 1}
    # Slowness changes no chip: the same match with the bot taking its notices at once.
    SlowNoticeBot.delay_s = SlowNoticeBot.wait_s = 0.0
    same = play(slow_bot.address, RefereeConfig(decision_deadline_ms=1000))
    assert same.scores == result.scores and same.slow_notices == []


def test_notices_over_half_the_deadline_are_recorded_but_still_sent(slow_bot: RunningServer) -> None:
    """6 s a notice (on the referee's clock; the bot answers at once) against a 10 s deadline:
    over half of it (recorded as slow), short of the cut (so still sent)."""
    SlowNoticeBot.delay_s, SlowNoticeBot.wait_s = 6.0, 0.0
    result = play(slow_bot.address, RefereeConfig(lifecycle_deadline_ms=10_000), hands=3)
    assert [(n.rpc, n.hand_index, n.cut_off) for n in result.slow_notices] == [
        ("EndHand", 0, False), ("EndHand", 1, False), ("EndHand", 2, False), ("EndMatch", 3, False),
    ]
    assert all(n.elapsed_ms == 6000 for n in result.slow_notices)
    assert SlowNoticeBot.calls == {"EndHand": 3, "EndMatch": 1}


class SlowStartBot(RandomBot):
    """Takes ``delay_s`` of :data:`BOT_TIME` to start, and really waits ``wait_s``."""

    name = "slow-start"
    delay_s = wait_s = 0.0

    def start_match(self, info: MatchInfo) -> None:
        BOT_TIME.spend(self.delay_s)
        threading.Event().wait(self.wait_s)
        super().start_match(info)


def test_a_slow_start_is_recorded_and_one_cut_off_is_the_fault_it_was() -> None:
    """6 s to start (on the referee's clock) against a 10 s deadline is recorded; a start that
    really takes 0.6 s against a 100 ms deadline (six times it) is cut off, a TIMEOUT fault."""
    server = start_server(SlowStartBot)
    try:
        SlowStartBot.delay_s, SlowStartBot.wait_s = 6.0, 0.0
        slow = play(server.address, RefereeConfig(lifecycle_deadline_ms=10_000), hands=1)
        SlowStartBot.delay_s, SlowStartBot.wait_s = 0.0, 0.6
        cut = play(server.address, RefereeConfig(lifecycle_deadline_ms=100), hands=1)
    finally:
        server.stop(0)
    assert slow.faults == [] and [(n.rpc, n.cut_off) for n in slow.slow_notices] == [("StartMatch", False)]
    assert slow.slow_notices[0].elapsed_ms == 6000
    assert [(f.decision, f.kind.value) for f in cut.faults] == [(-1, "timeout")] and cut.forfeited == 0
    assert "StartMatch: no reply within 100 ms" in cut.faults[0].reason


def test_a_players_shorter_lifecycle_timeout_is_kept(slow_bot: RunningServer) -> None:
    """The bot's 1.9 s notice is cut off by the player's 0.3 s timeout: the referee's 10 s
    deadline would have let it finish (its 1.9 s on the referee's clock is not over 5 s)."""
    config = RefereeConfig(lifecycle_deadline_ms=10_000)
    with GrpcPlayer(slow_bot.address, lifecycle_timeout_s=0.3) as player:
        result = play_match([player, LocalPlayer(GreedyBot)], 5, 2, config=config, clock=BOT_TIME)
        assert player.lifecycle_timeout_s == 0.3
    assert [(n.seat, n.rpc, n.cut_off) for n in result.slow_notices] == [(0, "EndHand", True)]
    assert SlowNoticeBot.calls == {"EndHand": 1}


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("pg_url" if request.param == "postgres" else "sqlite_url"))


@pytest.mark.slow
def test_the_arena_stores_slow_notices_without_charging_them(url: str, slow_bot: RunningServer) -> None:
    from sqlalchemy import select

    from arena.runtime.backends import EmbeddedBackend
    from arena.runtime.driver import run_tournament
    from arena.store.db import dispose_engines, session_scope
    from arena.store.models import FaultRecord, Match, MatchSeat
    from arena.tournaments.lifecycle import create_tournament

    with ExitStack() as stack:
        stack.callback(dispose_engines)
        house = start_server(GreedyBot)
        stack.callback(house.stop, 0)
        ids = register_bots(url, {"slow-notices": slow_bot.address, "house": house.address})
        with session_scope(url) as session:
            tid = create_tournament(
                session, name="slow", bot_ids=list(ids.values()), table_sizes=[2], deals_per_table=1,
                hands_per_match=3, seed=99,
                # The slow bot's 1.9 s notices are cut off at 1 s (a worker's referee keeps the
                # wall clock: a busy machine may put the house bot, or the slow bot's quick
                # StartMatch, on the record too; what is checked is the slow bot's notices).
                config={"decision_deadline_ms": 1000, "lifecycle_deadline_ms": 1000},
            ).id
        backend = EmbeddedBackend(url, 1)
        stack.callback(backend.close, cancel=True)
        progress = run_tournament(url, tid, backend, poll_s=0.1)
        assert progress.done == progress.total == 2
        with session_scope(url) as session:
            records = session.execute(
                select(FaultRecord.bot_id, FaultRecord.kind, FaultRecord.decision, FaultRecord.reason)
            ).all()
            charged = session.execute(select(Match.faults)).scalars().all()
            seat_faults = session.execute(select(MatchSeat.faults)).scalars().all()
        assert charged == [0, 0] and set(seat_faults) == {0}
        # Every record is a slow notice (none charged), and the slow bot's notices are exactly
        # its first EndHand of each match, cut off.
        assert {kind for _, kind, _, _ in records} == {"slow"}
        notices = [(d, r) for bot, _, d, r in records if bot == ids["slow-notices"] and d != -1]
        assert [d for d, _ in notices] == [-2, -2]
        assert all("EndHand: slow lifecycle notice" in r and "no more notices" in r for _, r in notices)


# -- registration checks have an overall time limit -------------------------------------------


class SlowButLegalBot(RandomBot):
    """Answers every decision legally, 300 ms late: within any deadline, but slow enough to
    make the full check last far longer than the arena allows."""

    name = "slow-but-legal"
    decisions = 0
    lock = threading.Lock()

    def act(self, obs: Observation) -> int:
        with SlowButLegalBot.lock:
            SlowButLegalBot.decisions += 1
        threading.Event().wait(0.3)
        return super().act(obs)


@pytest.mark.slow
def test_a_registration_check_stops_at_its_time_limit_and_frees_the_slot(sqlite_url: str) -> None:
    import json
    import time

    from sqlalchemy import select

    from arena.bots.owners import create_owner
    from arena.config import Settings
    from arena.store.db import dispose_engines, session_scope
    from arena.store.models import Bot, CheckLease
    from dashboard import create_app

    server = start_server(SlowButLegalBot)
    try:
        settings = Settings(
            database_url=sqlite_url, allowed_bot_hosts=("127.0.0.1",), decision_deadline_ms=10_000,
            check_time_limit_s=3,
        )
        app = create_app({"DATABASE_URL": sqlite_url, "SETTINGS": settings, "TESTING": True})
        with session_scope(sqlite_url) as session:
            _owner, token = create_owner(session, "dawdler")
        response = app.test_client().post(
            "/api/v1/bots", data=json.dumps({"name": "dawdler", "address": server.address}),
            headers={"Authorization": f"Bearer {token}"}, content_type="application/json",
        )
        error = response.get_json()["error"]
        assert response.status_code == 422 and error["code"] == "check_time_limit", error
        assert "3 s" in error["message"]
        # The check really stopped: the bot hears nothing more from the arena.
        seen = SlowButLegalBot.decisions
        time.sleep(1.0)
        assert SlowButLegalBot.decisions == seen
        with session_scope(sqlite_url) as session:
            assert session.scalars(select(Bot)).all() == []
            assert session.scalars(select(CheckLease)).all() == []  # the slot is free again
    finally:
        server.stop(0)
        dispose_engines()
