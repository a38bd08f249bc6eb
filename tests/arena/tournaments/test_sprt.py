"""Gauntlets and sequential tests (arena/tournaments/sprt.py): the LLR's arithmetic, and both kinds played
for real through the match jobs on the store, extending themselves until decided."""

from __future__ import annotations

import itertools
import math

import pytest
from helpers.arena import SETTINGS, InlineBackend, fix_deal_secret, hosted_bots
from sqlalchemy import select

from arena.ratings.terms import legend
from arena.runtime.driver import run_tournament
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Match, MatchSeat, Tournament
from arena.tournaments.lifecycle import InvalidTournamentError, create_tournament
from arena.tournaments.sprt import InvalidSprtError, bounds, llr, sprt_params, sprt_state
from bots.greedy import GreedyBot
from sdk.cli import main as tonk


class Twin(GreedyBot):
    """A copy of greedy under another name."""


def test_llr_by_hand() -> None:
    lower, upper = bounds(0.05, 0.05)
    assert (lower, upper) == pytest.approx((-math.log(19), math.log(19)))
    # Ten pairs scoring ¾ and ten scoring ¼: mean ½, so the evidence is for H0 (elo0 = 0).
    counts = [0, 10, 0, 10, 0]
    s0, s1 = 0.5, 1 / (1 + 10 ** (-20 / 400))
    reg = [c + 1e-3 for c in counts]
    mean = sum(c * x for c, x in zip(reg, (0, 0.25, 0.5, 0.75, 1), strict=True)) / sum(reg)
    var = sum(c * (x - mean) ** 2 for c, x in zip(reg, (0, 0.25, 0.5, 0.75, 1), strict=True)) / sum(reg)
    assert llr(counts, 0, 20) == pytest.approx(20 * (s1 - s0) * (2 * mean - s0 - s1) / (2 * var))
    assert llr(counts, 0, 20) < 0 < llr([0, 0, 0, 5, 15], 0, 20)
    assert llr([0] * 5, 0, 20) == 0.0


@pytest.mark.parametrize(
    ("args", "quoted"),
    [((20, 0), "elo1 (0)"), ((0, 20, 0.5), "alpha must be between 0 and 0.5, got 0.5"),
     ((0, 20, 0.05, 0.0), "beta must be between 0 and 0.5, got 0.0"), ((0, 20, 0.05, 0.05, 0), "batch"),
     ((0, 5000), "elo1 must be a number of Elo from -1000 to 1000, got 5000")],
)
def test_bad_sprt_parameters_are_refused(args: tuple[float, ...], quoted: str) -> None:
    with pytest.raises(InvalidSprtError) as err:
        sprt_params(*args)  # type: ignore[arg-type]
    assert quoted in str(err.value)


def sprt(url: str, bots: list[int], batch: int) -> int:
    with session_scope(url) as session:
        fix_deal_secret(session)
        return create_tournament(
            session, name="test", bot_ids=bots, table_sizes=[2], deals_per_table=batch,
            hands_per_match=6, seed=777, settings=SETTINGS, kind="sprt", sprt=sprt_params(0, 20, batch=batch),
        ).id


def state_of(url: str, tid: int) -> tuple[str, dict[str, object], int]:
    with session_scope(url) as session:
        t = session.get(Tournament, tid)
        assert t is not None
        matches = len(session.scalars(select(Match.id).where(Match.tournament_id == tid)).all())
        return t.status, sprt_state(session, t).to_json(), matches


def test_a_stronger_bot_is_accepted_within_one_batch(sqlite_url: str) -> None:
    heuristic, random = hosted_bots(sqlite_url, ["heuristic", "random"])
    tid = sprt(sqlite_url, [heuristic, random], batch=6)
    run_tournament(sqlite_url, tid, InlineBackend(sqlite_url))
    status, state, matches = state_of(sqlite_url, tid)
    assert status == "finished" and state["verdict"] == "H1"
    assert state["pairs"] == 6 and matches == 12  # decided by the first 6 pairs
    assert state["llr"] >= state["upper"]  # type: ignore[operator]
    dispose_engines()


def test_a_copy_is_rejected_pair_by_pair(sqlite_url: str) -> None:
    # Greedy and its copy are deterministic: every duplicate pair comes out exactly even, so
    # the test leans to H0 with each pair; one pair per batch shows it extending itself.
    greedy, twin = hosted_bots(sqlite_url, ["greedy", "test_sprt:Twin"])
    tid = sprt(sqlite_url, [twin, greedy], batch=1)
    run_tournament(sqlite_url, tid, InlineBackend(sqlite_url))
    status, state, matches = state_of(sqlite_url, tid)
    assert status == "finished" and state["verdict"] == "H0"
    assert state["counts"] == [0, 0, state["pairs"], 0, 0]
    assert state["pairs"] == 3 and matches == 6  # LLR -0.66, -2.65, -5.96 against -2.94
    assert state["llr"] <= state["lower"]  # type: ignore[operator]
    dispose_engines()


def test_a_gauntlet_seats_the_challenger_at_every_table(sqlite_url: str) -> None:
    ids = hosted_bots(sqlite_url, ["heuristic", "random", "greedy", "test_sprt:Twin"])
    with session_scope(sqlite_url) as session:
        tid = create_tournament(
            session, name="g", bot_ids=ids, table_sizes=[2, 3], deals_per_table=1, hands_per_match=3,
            seed=5, settings=SETTINGS, kind="gauntlet",
        ).id
        seats = session.execute(
            select(Match.id, MatchSeat.bot_id).join(MatchSeat).where(Match.tournament_id == tid)
        ).all()
    by_match: dict[int, set[int]] = {}
    for match_id, bot in seats:
        by_match.setdefault(match_id, set()).add(bot)
    assert all(ids[0] in bots for bots in by_match.values())
    tables = {frozenset(b) for b in by_match.values()}
    expected = {frozenset((ids[0], *o)) for n in (1, 2) for o in itertools.combinations(ids[1:], n)}
    assert tables == expected and len(by_match) == 3 * 2 + 3 * 6
    with session_scope(sqlite_url) as session, pytest.raises(InvalidTournamentError, match="two bots"):
        create_tournament(session, name="s", bot_ids=ids[:3], table_sizes=[2], deals_per_table=1,
                          hands_per_match=3, settings=SETTINGS, kind="sprt", sprt=sprt_params(0, 20))
    dispose_engines()


def test_the_cli_creates_a_gauntlet_and_runs_a_sequential_test(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hosted_bots(sqlite_url, ["heuristic", "random", "greedy"])
    with session_scope(sqlite_url) as session:
        fix_deal_secret(session)  # the sequential test below decides as the one above did
    monkeypatch.setenv("TONK_DATABASE_URL", sqlite_url)
    monkeypatch.delenv("TONK_REDIS_URL", raising=False)
    assert tonk(["tournament", "create", "--name", "g", "--gauntlet", "heuristic", "--vs", "random,greedy",
                 "--tables", "2", "--deals", "1", "--hands", "2"]) == 0
    assert "tournament 1 created: 4 matches" in capsys.readouterr().out
    assert tonk(["tournament", "create", "--name", "g", "--gauntlet", "heuristic", "--tables", "2",
                 "--deals", "1", "--hands", "2"]) == 2
    assert "--gauntlet BOT with --vs" in capsys.readouterr().err
    assert tonk(["sprt", "heuristic", "random", "--elo0", "0", "--elo1", "20", "--hands", "6",
                 "--batch", "6", "--seed", "777", "--quiet"]) == 0  # the seed of the test above
    out = capsys.readouterr().out
    assert "accepted H1: better by at least 20 Elo" in out and "6 pairs" in out, out
    assert tonk(["tournament", "status", "2"]) == 0
    status = capsys.readouterr().out
    assert "6 pairs, LLR" in status and "Elo [95% interval]" in status
    assert all(line in status for line in legend())  # the same words as every rating table
    assert tonk(["sprt", "heuristic", "random", "--elo0", "30", "--elo1", "20"]) == 2
    assert "elo1 (20.0) must be greater than elo0 (30.0)" in capsys.readouterr().err
    dispose_engines()



def test_on_rq_workers_the_test_goes_on_with_nobody_driving_it(
    pg_url: str, redis_url: str, redis_prefix: str
) -> None:
    from redis import Redis
    from rq import Queue, SimpleWorker

    from arena.runtime.rq_backend import RqBackend

    greedy, twin = hosted_bots(pg_url, ["greedy", "test_sprt:Twin"])
    tid = sprt(pg_url, [twin, greedy], batch=1)
    queue = f"{redis_prefix}-matches"
    backend = RqBackend(pg_url, redis_url, queue)
    run_tournament(pg_url, tid, backend, wait=False)  # queues the first pair, returns
    backend.close()
    connection = Redis.from_url(redis_url)
    try:  # a worker plays the queue dry: each batch's last job queues the next one
        SimpleWorker([Queue(queue, connection=connection)], connection=connection,
                     name=f"{queue}-w").work(burst=True, logging_level="WARNING")
    finally:
        for key in ("rq:queues", "rq:workers"):
            members = [m for m in connection.smembers(key) if redis_prefix.encode() in m]
            if members:
                connection.srem(key, *members)
    status, state, matches = state_of(pg_url, tid)
    assert status == "finished" and state["verdict"] == "H0" and state["pairs"] >= 2, state
    assert matches == 2 * state["pairs"]  # type: ignore[operator]
    dispose_engines()


def test_a_test_interrupted_before_deciding_decides_on_resume(sqlite_url: str) -> None:
    from arena.play.lifecycle import MatchLife
    from arena.play.plan import load_plan
    from arena.tournaments.lifecycle import start_tournament

    heuristic, random = hosted_bots(sqlite_url, ["heuristic", "random"])
    tid = sprt(sqlite_url, [heuristic, random], batch=6)
    with session_scope(sqlite_url) as session:
        start_tournament(session, tid)
        ids = session.scalars(select(Match.id).where(Match.tournament_id == tid)).all()
    for match_id in ids:  # the job's steps, but the worker dies before the finishing step
        with session_scope(sqlite_url) as session:
            assert MatchLife(sqlite_url, match_id, "w:1").claim(session) is None
            plan = load_plan(session, match_id)
        life = MatchLife(sqlite_url, match_id, "w:1")
        result, ms = life.play_claimed(plan)
        assert life.record(plan, result, ms)
    status, state, matches = state_of(sqlite_url, tid)
    assert (status, state["verdict"], state["pairs"], matches) == ("running", None, 6, 12)
    run_tournament(sqlite_url, tid, InlineBackend(sqlite_url))  # what `resume` does
    status, state, matches = state_of(sqlite_url, tid)
    assert (status, state["verdict"], matches) == ("finished", "H1", 12)
    dispose_engines()
