"""The ladder's scheduler on a real store (SQLite and PostgreSQL): tables picked by the
matchmaker and added as duplicate deals with their reason, the target of unfinished matches
kept, new bots joining with a placement burst, retired and superseded bots getting no new
table, capacities respected, the lease held by one scheduler at a time, and two schedulers
racing never adding a table twice."""

from __future__ import annotations

import datetime as dt
import threading
from collections import Counter

import pytest
from helpers.ladder import add_bots, new_ladder, run_tick
from sqlalchemy import func, select, update

from arena.ladder.lease import current_holder, give_up, lease_name, take
from arena.ladder.scheduler import active_pool, tick
from arena.ladder.settings import InvalidLadderError, LadderSettings
from arena.ladder.setup import create_ladder, pause_ladder, resume_ladder
from arena.play.capacity import capacities, capacity_of
from arena.runtime.jobs import play_match_job
from arena.store.db import session_scope
from arena.store.models import Bot, BotVersion, Match, MatchSeat, SchedulerLease, TournamentEntry, utcnow
from arena.store.statuses import BotStatus, MatchStatus, TournamentStatus
from arena.tournaments.lifecycle import finish_if_complete
from arena.tournaments.seating import arrangements


def matches_of(url: str, ladder_id: int) -> list[tuple[int, str, int, str | None, str]]:
    with session_scope(url) as session:
        return [
            tuple(r)  # type: ignore[misc]
            for r in session.execute(
                select(Match.id, Match.key, Match.table_index, Match.reason, Match.status)
                .where(Match.tournament_id == ladder_id)
                .order_by(Match.id)
            ).all()
        ]


def play_all(url: str, ladder_id: int) -> int:
    played = 0
    for match_id, _key, _t, _r, status in matches_of(url, ladder_id):
        if status == MatchStatus.PENDING:
            assert play_match_job(match_id, url) == "done"
            played += 1
    return played


def test_a_tick_adds_duplicate_tables_up_to_the_target_with_their_reason(db_url: str) -> None:
    add_bots(db_url, 4)
    ladder = new_ladder(db_url, table_size=3, target=10)
    held, tables = run_tick(db_url, ladder)
    assert held and len(tables) == 2  # 6 matches a table: 6 < 10, then 12
    rows = matches_of(db_url, ladder)
    assert len(rows) == 12
    assert all(reason == "placement" for *_, reason, _s in rows)  # nobody is rated yet
    with session_scope(db_url) as session:
        for table, bots, _reason in tables:
            ids = [m for m, _k, t, _r, _s in rows if t == table]
            seats = session.execute(
                select(MatchSeat.match_id, MatchSeat.seat, MatchSeat.bot_id).where(
                    MatchSeat.match_id.in_(ids)
                )
            ).all()
            assert {b for _, _, b in seats} == set(bots)
            # Every bot holds every seat equally often: the deal in duplicate.
            assert Counter((b, s) for _, s, b in seats) == {(b, s): 2 for b in bots for s in range(3)}
            seeds = set(session.scalars(select(Match.seed).where(Match.id.in_(ids))))
            assert len(seeds) == 1
        entries = set(
            session.scalars(select(TournamentEntry.bot_id).where(TournamentEntry.tournament_id == ladder))
        )
        assert entries == {b for _, bots, _ in tables for b in bots}
    # At the target: the next tick adds nothing.
    assert run_tick(db_url, ladder) == (True, [])


def test_the_ladder_tops_up_as_matches_finish_and_never_finishes(db_url: str) -> None:
    bots = add_bots(db_url, 3)
    ladder = new_ladder(db_url, target=4)
    total = 0
    for _ in range(4):
        run_tick(db_url, ladder)
        total += play_all(db_url, ladder)
    assert total >= 12
    with session_scope(db_url) as session:
        assert not finish_if_complete(session, ladder)
        from arena.tournaments.lifecycle import get_tournament_row

        assert get_tournament_row(session, ladder).status == TournamentStatus.RUNNING
    rows = matches_of(db_url, ladder)
    assert [t for _m, _k, t, _r, _s in rows] == sorted(t for _m, _k, t, _r, _s in rows)
    played = Counter()
    with session_scope(db_url) as session:
        for (bot,) in session.execute(
            select(MatchSeat.bot_id)
            .join(Match, Match.id == MatchSeat.match_id)
            .where(Match.tournament_id == ladder)
        ):
            played[bot] += 1
    assert set(played) == set(bots)


def test_a_new_bot_gets_its_placement_and_a_retired_one_no_new_table(db_url: str) -> None:
    bots = add_bots(db_url, 4)
    ladder = new_ladder(db_url, target=4)
    for _ in range(6):
        run_tick(db_url, ladder)
        play_all(db_url, ladder)
    (newcomer,) = add_bots(db_url, 1, start=10)
    with session_scope(db_url) as session:
        session.execute(update(Bot).where(Bot.id == bots[0]).values(status=BotStatus.RETIRED))
    before = {m for m, *_ in matches_of(db_url, ladder)}
    _, tables = run_tick(db_url, ladder)
    assert tables and newcomer in tables[0][1] and tables[0][2] == "placement"
    for _ in range(3):
        play_all(db_url, ladder)
        _, more = run_tick(db_url, ladder)
        tables += more
    assert all(bots[0] not in bots_ for _, bots_, _ in tables)
    with session_scope(db_url) as session:
        new = (
            select(MatchSeat.bot_id)
            .join(Match, Match.id == MatchSeat.match_id)
            .where(Match.tournament_id == ladder, Match.id.not_in(before))
        )
        assert bots[0] not in set(session.scalars(new))


def test_only_each_owners_newest_bots_play(db_url: str) -> None:
    add_bots(db_url, 2, owner="alice")
    add_bots(db_url, 2, start=2)
    with session_scope(db_url) as session:
        one = active_pool(session, LadderSettings(pool=None, table_size=2, hands_per_match=1))
        two = active_pool(
            session, LadderSettings(pool=None, table_size=2, hands_per_match=1, versions_per_owner=2)
        )
        names = dict(session.execute(select(Bot.id, Bot.name)).all())
    assert sorted(names[b.bot_id] for b in one) == ["b1", "b2", "b3"]  # alice's newest only
    assert sorted(names[b.bot_id] for b in two) == ["b0", "b1", "b2", "b3"]


def test_capacity_bounds_a_bots_queue(db_url: str) -> None:
    bots = add_bots(db_url, 2)
    with session_scope(db_url) as session:
        room = min(capacity_of(session, b) for b in bots)
    ladder = new_ladder(db_url, target=10_000, backlog=1)
    _, tables = run_tick(db_url, ladder)
    # Backlog 1: a table of 2 matches while fewer than its capacity are waiting.
    assert len(tables) == (room + 1) // 2
    assert run_tick(db_url, ladder)[1] == []
    # A bot's queue is one across ladders (and tournaments).
    ladder = new_ladder(db_url, target=10_000, backlog=3)
    assert len(run_tick(db_url, ladder)[1]) == (3 * room - 2 * len(tables) + 1) // 2


def test_a_paused_ladder_gets_no_tables_and_resumes(db_url: str) -> None:
    add_bots(db_url, 2)
    ladder = new_ladder(db_url)
    with session_scope(db_url) as session:
        pause_ladder(session, ladder)
    assert run_tick(db_url, ladder) == (True, [])
    with session_scope(db_url) as session:
        resume_ladder(session, ladder)
    assert run_tick(db_url, ladder)[1]


def test_one_scheduler_holds_the_lease_until_it_expires(db_url: str) -> None:
    add_bots(db_url, 2)
    ladder = new_ladder(db_url)
    assert run_tick(db_url, ladder, "a")[0]
    assert run_tick(db_url, ladder, "b") == (False, [])
    with session_scope(db_url) as session:
        assert current_holder(session, lease_name(ladder)) == "a"
        past = utcnow() - dt.timedelta(seconds=1)
        session.execute(update(SchedulerLease).values(expires_at=past))
    assert run_tick(db_url, ladder, "b")[0]  # a died: b takes over
    assert run_tick(db_url, ladder, "a") == (False, [])
    with session_scope(db_url) as session:
        give_up(session, lease_name(ladder), "b")
        assert take(session, lease_name(ladder), "a")


def test_two_schedulers_racing_never_add_a_table_twice(db_url: str) -> None:
    add_bots(db_url, 5)
    ladder = new_ladder(db_url, target=40)
    errors: list[BaseException] = []

    def race(holder: str) -> None:
        try:
            for _ in range(5):
                run_tick(db_url, ladder, holder)
        except Exception as exc:  # an IntegrityError would mean a table added twice
            errors.append(exc)

    threads = [threading.Thread(target=race, args=(h,)) for h in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    rows = matches_of(db_url, ladder)
    per_table = Counter(t for _m, _k, t, _r, _s in rows)
    assert set(per_table.values()) == {len(arrangements(2))}
    assert sorted(per_table) == list(range(len(per_table)))


def test_bad_settings_are_refused_with_the_value_quoted(db_url: str) -> None:
    with pytest.raises(InvalidLadderError, match=r"table_size .* got 7"):
        LadderSettings.parse({"table_size": 7, "hands_per_match": 1})
    with pytest.raises(InvalidLadderError, match="'nope'"):
        LadderSettings.parse({"table_size": 2, "hands_per_match": 1, "matchmaking": {"nope": 1}})
    with pytest.raises(InvalidLadderError, match="min_share"):
        LadderSettings.parse({"table_size": 2, "hands_per_match": 1, "matchmaking": {"min_share": 3.0}})
    with pytest.raises(InvalidLadderError, match="no bot with id 999"), session_scope(db_url) as session:
        create_ladder(session, name="x", raw={"pool": [999, 998], "table_size": 2, "hands_per_match": 1})


def test_capacities_of_a_pool_at_once_are_each_bots_capacity(db_url: str) -> None:
    bots = add_bots(db_url, 3)
    with session_scope(db_url) as session:
        version = session.scalar(select(BotVersion).where(BotVersion.bot_id == bots[0]))
        assert version is not None
        version.info = {**version.info, "max_concurrent_matches": 3}
        session.flush()
        assert capacities(session, [*bots, 999]) == {b: capacity_of(session, b) for b in [*bots, 999]}
        assert capacities(session, bots)[bots[0]] == 3


def test_a_leaving_bots_unstarted_tables_are_withdrawn_and_started_ones_played(db_url: str) -> None:
    bots = add_bots(db_url, 3)
    ladder = new_ladder(db_url, target=40)
    _, tables = run_tick(db_url, ladder)
    leaving = bots[0]
    theirs = [t for t, seated, _ in tables if leaving in seated]
    assert len(theirs) >= 2
    rows = matches_of(db_url, ladder)
    started = min(m for m, _k, t, _r, _s in rows if t == theirs[0])
    assert play_match_job(started, db_url) == "done"  # one of its tables is under way
    unstarted = [m for m, _k, t, _r, _s in rows if t in theirs[1:]]
    with session_scope(db_url) as session:
        session.execute(update(Bot).where(Bot.id == leaving).values(status=BotStatus.RETIRED))
    with session_scope(db_url) as session:
        result = tick(session, ladder, "me", capacities)
    assert result.withdrawn == theirs[1:]
    assert all(leaving not in seated for _, seated, _ in result.tables)
    after = matches_of(db_url, ladder)
    assert not {t for _m, _k, t, _r, _s in after} & set(theirs[1:])  # gone, numbers not reused
    # The table under way is played to its end; a job queued for a withdrawn match says so.
    assert {s for _m, _k, t, _r, s in after if t == theirs[0]} == {"done", "pending"}
    if unstarted[0] not in {m for m, *_ in after}:  # SQLite may give its id to a new match
        assert play_match_job(unstarted[0], db_url) == "withdrawn"
    assert play_match_job(10**9, db_url) == "withdrawn"
    with session_scope(db_url) as session:
        pending = session.scalars(
            select(Match.id)
            .join(MatchSeat, MatchSeat.match_id == Match.id)
            .where(Match.tournament_id == ladder, MatchSeat.bot_id == leaving, Match.status == "pending")
        ).all()
    assert {t for m, _k, t, _r, _s in after if m in set(pending)} <= {theirs[0]}
    assert_counts_kept(db_url, ladder)


def assert_counts_kept(url: str, ladder: int) -> None:
    """Each entry's count of its bot's matches on the ladder (kept as tables are added and
    withdrawn, so a tick need not count them) is the count of its seats there."""
    with session_scope(url) as session:
        kept = dict(session.execute(
            select(TournamentEntry.bot_id, TournamentEntry.matches)
            .where(TournamentEntry.tournament_id == ladder)
        ).all())  # fmt: skip
        seats = dict(session.execute(
            select(MatchSeat.bot_id, func.count())
            .join(Match, Match.id == MatchSeat.match_id)
            .where(Match.tournament_id == ladder)
            .group_by(MatchSeat.bot_id)
        ).all())  # fmt: skip
    assert kept == {**{bot: 0 for bot in kept}, **seats}


def test_an_offline_connected_bot_gets_no_new_table_until_it_is_back(db_url: str) -> None:
    # A connected bot with no live connection: a tournament still sends it one match at a time
    # (to wait out its grace, then fault), but a ladder must not keep feeding it forfeits.
    b0, b1, gone = add_bots(db_url, 3)
    with session_scope(db_url) as session:
        session.execute(update(BotVersion).where(BotVersion.bot_id == gone).values(connected=True))
        assert capacity_of(session, gone) == 1 and capacities(session, [gone], live=True) == {gone: 0}
    ladder = new_ladder(db_url, target=40)
    _, tables = run_tick(db_url, ladder)
    assert tables, "the online bots play"
    assert all(gone not in bots for _, bots, _ in tables)
    assert {b for _, bots, _ in tables for b in bots} == {b0, b1}
