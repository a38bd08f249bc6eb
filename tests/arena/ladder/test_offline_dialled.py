"""A dialled bot that stops answering gets no new ladder table (issue #36): a real bot served
over gRPC on a loopback port, a real PostgreSQL store, the scheduler's ``tick`` called
directly. Its server stopped, it forfeits a match as unreachable, and the very next tick
gives it no table while the others still get theirs; a health probe finds it still down and
puts the next one off; served again on the same port, a probe finds it answering and it gets
tables again (arena/bots/reachability.py)."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterator

import pytest
from helpers.arena import SETTINGS, grpc_bots, hosted_bots, new_tournament, wait_for
from helpers.ladder import add_bots, new_ladder, run_tick
from sqlalchemy import select

from arena.bots import reachability
from arena.bots.registry import update_bot
from arena.play.capacity import capacities, capacity_of
from arena.runtime.jobs import play_match_job
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Bot, BotOutage, FaultRecord, Match, MatchSeat, Owner, utcnow
from arena.store.statuses import MatchStatus
from arena.tournaments.lifecycle import start_tournament
from bots.random_bot import RandomBot
from sdk.referee import FaultKind
from sdk.server import RunningServer, start_server

HOSTS = SETTINGS.allowed_bot_hosts


@pytest.fixture
def url(pg_url: str) -> Iterator[str]:
    yield pg_url
    dispose_engines()


@pytest.fixture
def served() -> Iterator[list[RunningServer]]:
    """The bot's servers, each stopped at the end (stopping one twice is harmless)."""
    servers: list[RunningServer] = []
    yield servers
    for server in servers:
        server.stop(0)


def pending(url: str, ladder_id: int) -> list[tuple[int, set[int]]]:
    """The ladder's pending matches, oldest first, with the bots seated at each."""
    with session_scope(url) as session:
        rows = session.execute(
            select(Match.id, MatchSeat.bot_id)
            .join(MatchSeat, MatchSeat.match_id == Match.id)
            .where(Match.tournament_id == ladder_id, Match.status == MatchStatus.PENDING)
            .order_by(Match.id)
        ).all()
    out: dict[int, set[int]] = {}
    for match_id, bot_id in rows:
        out.setdefault(match_id, set()).add(bot_id)
    return list(out.items())


def play(url: str, match_id: int) -> None:
    assert play_match_job(match_id, url) == "done"


def forfeited_unreachable(url: str, match_id: int, bot_id: int) -> bool:
    with session_scope(url) as session:
        match = session.get(Match, match_id)
        assert match is not None and match.status == MatchStatus.DONE
        seat = session.scalar(
            select(MatchSeat.seat).where(MatchSeat.match_id == match_id, MatchSeat.bot_id == bot_id)
        )
        kinds = set(
            session.scalars(
                select(FaultRecord.kind).where(FaultRecord.match_id == match_id, FaultRecord.bot_id == bot_id)
            )
        )
        return match.forfeited_seat == seat and FaultKind.UNREACHABLE.value in kinds


def outage(url: str, bot_id: int) -> reachability.Outage | None:
    with session_scope(url) as session:
        return reachability.outage_of(session, bot_id)


def live_capacity(url: str, bot_id: int) -> int:
    with session_scope(url) as session:
        return capacities(session, [bot_id], live=True)[bot_id]


def tick_until_seated(url: str, ladder_id: int, bot_id: int, ticks: int = 12) -> None:
    """Tick, playing what is pending between ticks, until a tick gives ``bot_id`` a table."""
    for _ in range(ticks):
        _held, tables = run_tick(url, ladder_id)
        if any(bot_id in bots for _t, bots, _r in tables):
            return
        for match_id, _bots in pending(url, ladder_id):
            play(url, match_id)
    raise AssertionError(f"bot {bot_id} got no table in {ticks} ticks")


def test_a_dialled_bot_that_stops_answering_gets_no_table_until_it_answers(
    url: str, served: list[RunningServer]
) -> None:
    served.append(start_server(RandomBot))
    port = served[0].port
    address = f"127.0.0.1:{port}"
    add_bots(url, 3)  # hosted, each of its own owner: the ladder goes on without the dialled bot
    [dialled] = grpc_bots(url, {"dialled": address})
    ladder = new_ladder(url, target=4)  # two 2-seat tables of two matches each

    # Answering, it is seated like any bot and its matches are played.
    tick_until_seated(url, ladder, dialled)
    assert live_capacity(url, dialled) > 0

    served[0].stop(0)  # it stops answering; the ladder does not know yet
    theirs = [m for m, bots in pending(url, ladder) if dialled in bots]
    assert theirs, "the tick that seated it left its matches pending"
    play(url, theirs[0])
    assert forfeited_unreachable(url, theirs[0], dialled)
    found = outage(url, dialled)
    assert found is not None and found.cause == reachability.CAUSE_MATCH
    assert address not in found.reason and "127.0.0.1" not in found.reason  # shown publicly
    assert live_capacity(url, dialled) == 0
    with session_scope(url) as session:
        assert capacity_of(session, dialled) > 0  # its matches already made still play (and forfeit)

    # Within one tick of its first forfeit, and for as long as it is down: no new table for
    # it, while the others keep getting theirs.
    others_seated = 0
    for _ in range(4):
        for match_id, _bots in pending(url, ladder):
            play(url, match_id)
        _held, tables = run_tick(url, ladder)
        assert tables, "the ladder still adds tables, for the bots that answer"
        assert all(dialled not in bots for _t, bots, _r in tables)
        others_seated += len(tables)
    assert others_seated >= 4

    # A probe finds it still down: the outage goes on, now for a failed health check, and the
    # next probe is put off (none is due at once).
    assert reachability.probe_due(url, HOSTS) == {dialled: False}
    found = outage(url, dialled)
    assert found is not None and found.cause == reachability.CAUSE_HEALTH and found.failures == 1
    assert found.probe_at > utcnow()
    assert reachability.probe_due(url, HOSTS) == {}
    assert live_capacity(url, dialled) == 0

    # Served again on the same port: the next due probe finds it answering.
    served.append(start_server(RandomBot, port=port))
    later = found.probe_at + dt.timedelta(seconds=1)
    wait_for(lambda: reachability.probe_due(url, HOSTS, now=later).get(dialled) is True, timeout=30)
    assert outage(url, dialled) is None
    assert live_capacity(url, dialled) > 0
    tick_until_seated(url, ladder, dialled)
    mine = [m for m, bots in pending(url, ladder) if dialled in bots]
    play(url, mine[0])
    assert not forfeited_unreachable(url, mine[0], dialled)


def test_backoff_doubles_up_to_its_cap() -> None:
    waits = [reachability.backoff_s(n) for n in range(0, 12)]
    assert waits[0] == 0.0 and waits[1] == reachability.PROBE_EVERY_S
    cap = reachability.BACKOFF_MAX_S
    assert all(b == min(2 * a, cap) for a, b in itertools.pairwise(waits[1:]))
    assert waits[-1] == reachability.BACKOFF_MAX_S


def test_a_reason_is_cleaned_bounded_and_hides_where_the_bot_listens(url: str) -> None:
    [bot] = grpc_bots(url, {"hidden": "127.0.0.1:1"})
    with session_scope(url) as session:
        reachability.note_offline(
            session, bot, reachability.CAUSE_HEALTH, "down at 127.0.0.1:1 \x00\x1b[31m" + "x" * 5000,
            address="127.0.0.1:1",
        )
    found = outage(url, bot)
    assert found is not None
    assert "127.0.0.1" not in found.reason and "\x00" not in found.reason and "\x1b" not in found.reason
    assert len(found.reason) <= reachability.REASON_CHARS


def test_a_forfeit_noted_while_a_probe_ran_outlives_its_answer(url: str) -> None:
    """A probe claimed, then a match records a new forfeit, then the probe answers: the newer
    forfeit stands (the bot may have answered between two failures); the next probe decides."""
    [bot] = grpc_bots(url, {"flaky": "127.0.0.1:1"})
    start = utcnow()
    with session_scope(url) as session:
        reachability.note_offline(session, bot, reachability.CAUSE_MATCH, "match 1: gone", now=start)
    with session_scope(url) as session:
        [(claimed, _address, noted_at)] = reachability.claim_due(session, now=start)
    assert claimed == bot
    with session_scope(url) as session:
        reachability.note_forfeit(session, bot, 2, "gone again")
        assert session.scalar(select(BotOutage.noted_at).where(BotOutage.bot_id == bot)) > noted_at
    with session_scope(url) as session:
        reachability.record_probe(session, bot, None, noted_at=noted_at)
    assert outage(url, bot) is not None
    with session_scope(url) as session:
        reachability.record_probe(session, bot, None)
    assert outage(url, bot) is None


def test_a_match_played_through_ends_an_outage_noted_before_it_began(
    url: str, served: list[RunningServer]
) -> None:
    """Where no ladder runner probes (a tournament only), the bot's next match played without
    being unreachable ends its outage; not one that began before the outage was noted."""
    served.append(start_server(RandomBot))
    [dialled] = grpc_bots(url, {"dialled": served[0].address})
    tournament = new_tournament(url, [dialled, *hosted_bots(url, ["random"])])
    with session_scope(url) as session:
        start_tournament(session, tournament)
        first, second = session.scalars(
            select(Match.id).where(Match.tournament_id == tournament).order_by(Match.id)
        ).all()
    hour = dt.timedelta(hours=1)
    with session_scope(url) as session:  # noted after the first match will have begun
        reachability.note_offline(session, dialled, reachability.CAUSE_MATCH, "gone", now=utcnow() + hour)
    play(url, first)
    assert outage(url, dialled) is not None
    with session_scope(url) as session:  # noted before the second begins
        reachability.note_offline(session, dialled, reachability.CAUSE_MATCH, "gone", now=utcnow() - hour)
    play(url, second)
    assert outage(url, dialled) is None


def test_a_passed_registration_check_ends_an_outage(url: str, served: list[RunningServer]) -> None:
    served.append(start_server(RandomBot))
    [dialled] = grpc_bots(url, {"checked": served[0].address})
    with session_scope(url) as session:
        reachability.note_offline(session, dialled, reachability.CAUSE_HEALTH, "gone")
    with session_scope(url) as session:  # the arena's real checks: health, GetInfo, a match
        bot = session.get(Bot, dialled)
        assert bot is not None
        owner = session.get(Owner, bot.owner_id)
        assert owner is not None
        update_bot(session, owner, "checked", served[0].address, settings=SETTINGS)
    assert outage(url, dialled) is None
