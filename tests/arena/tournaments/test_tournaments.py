"""Tournament shape (tables, duplicate rotations, seeds), extend, pause/resume and status."""

from __future__ import annotations

import itertools

import pytest
from helpers.arena import SETTINGS, TEST_DEAL_SECRET, hosted_bots, new_tournament, seats_by_key
from sqlalchemy import select

from arena.play.lifecycle import MatchLife
from arena.play.plan import load_plan, run_match
from arena.queries.tournaments import get_tournament, tournament_progress
from arena.runtime.backends import EmbeddedBackend
from arena.runtime.driver import run_tournament
from arena.runtime.jobs import play_match_job
from arena.store.db import session_scope
from arena.store.models import Match, MatchSeat, Tournament, TournamentEntry
from arena.store.secrets import arena_secret
from arena.tournaments.layout import keyed_seed
from arena.tournaments.lifecycle import (
    InvalidTournamentError,
    TournamentNotFoundError,
    TournamentStateError,
    UnknownBotError,
    create_tournament,
    extend_tournament,
    finish_if_complete,
    pause_tournament,
    resolve_bots,
    start_tournament,
)
from arena.tournaments.seating import arrangements
from sdk.dealing import derive_seed


def bots_by_key(url: str, tid: int) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v) for k, v in seats_by_key(url, tid, MatchSeat.bot_id).items()}


def test_round_robin_in_duplicate(db_url: str) -> None:
    ids = hosted_bots(db_url, ["random", "greedy", "heuristic", "helpers.arena:CrashBot"])
    seed = 2**64 - 1  # the largest seed: stored in a signed column and read back unsigned
    tid = new_tournament(db_url, ids, table_sizes=[3, 2], deals_per_table=2, hands_per_match=7, seed=seed)
    tables = [c for n in (2, 3) for c in itertools.combinations(ids, n)]
    seats = bots_by_key(db_url, tid)
    # Every combination at every size, every seat arrangement of every deal: 6*2 + 4*6 per deal.
    assert len(seats) == 2 * (6 * 2 + 4 * 6)
    for t, combo in enumerate(tables):
        for d in range(2):
            played = {seats[f"t{t}/d{d}/r{r}"] for r in range(len(arrangements(len(combo))))}
            assert played == set(itertools.permutations(combo))  # all orders at 2 and 3 seats
    with session_scope(db_url) as session:
        tournament = session.get(Tournament, tid)
        # The seed given is keyed with the arena's deal secret (stored signed, read back unsigned).
        dealt = keyed_seed(arena_secret(session, "deal"), seed)
        assert dealt != seed and tournament is not None and tournament.seed == dealt
        versions = session.execute(
            select(TournamentEntry.bot_id, TournamentEntry.bot_version_id).where(
                TournamentEntry.tournament_id == tid
            )
        ).all()
        assert sorted(b for b, _ in versions) == sorted(ids)
        matches = session.scalars(select(Match).where(Match.tournament_id == tid)).all()
        for m in matches:  # one seed per deal, shared by its rotations
            assert m.seed == derive_seed(dealt, f"table{m.table_index}/deal{m.deal_index}")
            assert m.hands == 7 and m.status == "pending"
            assert m.public_id and str(seed) not in m.public_id
        assert len({m.public_id for m in matches}) == len(matches)
        assert tournament_progress(session, tid).to_json() == {
            "pending": 72,
            "running": 0,
            "done": 0,
            "failed": 0,
            "total": 72,
        }
        view = get_tournament(session, tid)
        assert view.seed is None  # secret until finished
        assert [e.bot_id for e in view.entries] == ids
        assert view.config == {"decision_deadline_ms": 2000, "time_bank_ms": 5000, "max_faults": 3}


def test_extend_adds_only_new_matches_and_reopens(db_url: str) -> None:
    ids = hosted_bots(db_url)
    tid = new_tournament(db_url, ids, deals_per_table=1, hands_per_match=3)
    with session_scope(db_url) as session:
        start_tournament(session, tid)
        first = session.scalars(select(Match.id).where(Match.tournament_id == tid)).all()
    for match_id in first:
        assert play_match_job(match_id, db_url) == "done"
    with session_scope(db_url) as session:
        t = session.get(Tournament, tid)
        assert t is not None and t.status == "finished" and t.finished_at is not None
        assert get_tournament(session, tid).seed == keyed_seed(TEST_DEAL_SECRET, 12345)  # as dealt
        before = bots_by_key(db_url, tid)
        assert extend_tournament(session, tid, 2) == 4
        assert t.status == "paused" and t.deals_per_table == 3 and t.finished_at is None
    after = bots_by_key(db_url, tid)
    assert set(after) == set(before) | {f"t0/d{d}/r{r}" for d in (1, 2) for r in (0, 1)}
    with session_scope(db_url) as session:
        progress = tournament_progress(session, tid)
        assert (progress.done, progress.pending) == (2, 4)
        assert get_tournament(session, tid).seed is None  # secret again until finished


def test_pause_stops_new_matches_and_resume_continues(db_url: str) -> None:
    ids = hosted_bots(db_url)
    tid = new_tournament(db_url, ids, deals_per_table=2, hands_per_match=3)
    with session_scope(db_url) as session:
        match_ids = session.scalars(select(Match.id).where(Match.tournament_id == tid)).all()
    assert play_match_job(match_ids[0], db_url) == "not-running"  # created, not started
    with session_scope(db_url) as session:
        start_tournament(session, tid)
    assert play_match_job(match_ids[0], db_url) == "done"
    with session_scope(db_url) as session:
        pause_tournament(session, tid)
    assert play_match_job(match_ids[1], db_url) == "not-running"
    with session_scope(db_url) as session:
        assert tournament_progress(session, tid).pending == 3
        start_tournament(session, tid)
    for match_id in match_ids[1:]:
        assert play_match_job(match_id, db_url) == "done"
    with session_scope(db_url) as session:
        assert get_tournament(session, tid).status == "finished"
        with pytest.raises(TournamentStateError, match="is finished"):
            pause_tournament(session, tid)
        with pytest.raises(TournamentStateError, match="is finished"):
            start_tournament(session, tid)
        assert not finish_if_complete(session, tid)  # only once


def test_bad_tournaments_are_refused_with_the_input_quoted(sqlite_url: str) -> None:
    ids = hosted_bots(sqlite_url, ["random", "greedy", "heuristic"])

    def create(**changes: object) -> None:
        fields: dict[str, object] = {
            "name": "x",
            "bot_ids": ids,
            "table_sizes": [2],
            "deals_per_table": 1,
            "hands_per_match": 1,
            "settings": SETTINGS,
            **changes,
        }
        with session_scope(sqlite_url) as session:
            create_tournament(session, **fields)  # type: ignore[arg-type]

    with pytest.raises(InvalidTournamentError, match=r"got \[2, 7\]"):
        create(table_sizes=[2, 7])
    with pytest.raises(InvalidTournamentError, match="a table of 4 needs at least 4 bots"):
        create(table_sizes=[4])
    with pytest.raises(InvalidTournamentError, match="entered twice"):
        create(bot_ids=[ids[0], ids[0]])
    with pytest.raises(InvalidTournamentError, match="deals_per_table must be an integer from 1"):
        create(deals_per_table=0)
    with pytest.raises(InvalidTournamentError, match=r"got -1"):
        create(seed=-1)
    with pytest.raises(InvalidTournamentError, match="referee setting bogus=1"):
        create(config={"bogus": 1})
    with pytest.raises(UnknownBotError, match="no bot with id 999"):
        create(bot_ids=[ids[0], 999])
    create(seed=5)
    with pytest.raises(InvalidTournamentError, match="seed 5 was already dealt in tournament 1"):
        create(seed=5)
    with session_scope(sqlite_url) as session:
        with pytest.raises(UnknownBotError, match="'nobody', 'ghost'"):
            resolve_bots(session, ["random", "nobody", "ghost"])
        with pytest.raises(TournamentNotFoundError, match="no tournament 42"):
            pause_tournament(session, 42)
        with pytest.raises(TournamentNotFoundError, match="no tournament 42"):
            get_tournament(session, 42)
        assert isinstance(InvalidTournamentError("x"), ValueError)


def test_resuming_a_paused_tournament_whose_matches_are_all_done_finishes_it(sqlite_url: str) -> None:
    ids = hosted_bots(sqlite_url)
    tid = new_tournament(sqlite_url, ids, hands_per_match=3)
    with session_scope(sqlite_url) as session:
        start_tournament(session, tid)
        first, last = session.scalars(select(Match.id).where(Match.tournament_id == tid)).all()
    assert play_match_job(first, sqlite_url) == "done"
    with session_scope(sqlite_url) as session:  # the last match is being played when we pause
        plan = load_plan(session, last)
        pause_tournament(session, tid)
    assert MatchLife(sqlite_url, plan.match_id, "elsewhere:1").record(plan, run_match(plan), 5)
    backend = EmbeddedBackend(sqlite_url, 1)
    try:
        progress = run_tournament(sqlite_url, tid, backend, wait=False)
    finally:
        backend.close()
    assert progress.done == 2
    with session_scope(sqlite_url) as session:
        assert get_tournament(session, tid).status == "finished"
