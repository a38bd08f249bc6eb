"""Gauntlets and sequential tests (arena/tournaments/sprt.py): the LLR's arithmetic, and both kinds played
for real through the match jobs on the store, extending themselves until decided."""

from __future__ import annotations

import itertools
import math
import re

import pytest
from helpers.arena import SETTINGS, InlineBackend, fix_deal_secret, hosted_bots
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from arena.ratings.terms import legend
from arena.runtime.driver import run_tournament
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Match, MatchSeat, Tournament
from arena.tournaments.lifecycle import InvalidTournamentError, create_tournament
from arena.tournaments.sprt import (
    OUTCOMES,
    InvalidSprtError,
    bounds,
    llr,
    llr_logistic,
    look,
    mle,
    sprt_params,
    sprt_state,
)
from bots.greedy import GreedyBot
from sdk.cli import main as tonk
from sdk.compare import elo_estimate


class Twin(GreedyBot):
    """A copy of greedy under another name."""


def test_llr_by_hand() -> None:
    lower, upper = bounds(0.05, 0.05)
    assert (lower, upper) == pytest.approx((math.log(0.05), math.log(20)))  # Ville's: ln beta, ln 1/alpha
    # Ten pairs scoring ¾ and ten scoring ¼: mean ½, so the evidence is for H0 (elo0 = 0).
    assert llr([0, 10, 0, 10, 0], 0, 20) < 0 < llr([0, 0, 0, 5, 15], 0, 20)
    assert llr([0] * 5, 0, 20) == 0.0
    # Trinomial by hand: 3 wins, 1 loss, no draws at s0 = ½ and s1 = ¾. With two outcomes the
    # fit is forced (p(win) = s); the pseudo-count on draws moves it by a hair.
    freqs = [1 / 4, 3 / 4]
    pairs = zip(freqs, (0.5, 0.5), (0.25, 0.75), strict=True)
    by_hand = 4 * sum(f * math.log(p1 / p0) for f, p0, p1 in pairs)
    elo1 = -400 * math.log10(1 / 0.75 - 1)
    assert llr([1, 0, 3], 0, elo1, outcomes=(0.0, 0.5, 1.0)) == pytest.approx(by_hand, abs=1e-3)


def test_a_batch_of_even_pairs_is_weak_evidence_not_a_verdict() -> None:
    # Issue #26: eight pairs all split at ½ have nearly zero variance; the logistic formula
    # read them as LLR -42 and accepted H0 at once. The exact GSPRT gives -0.47.
    assert llr([0, 0, 8, 0, 0], 0, 20) == pytest.approx(-0.467, abs=1e-3)
    assert llr_logistic([0, 0, 8, 0, 0], 0, 20) < -40
    value, lower, upper = look([0, 0, 8, 0, 0], 0, 20, 0.05, 0.05)
    assert lower < value < upper
    # The bounds are fixed: the same at every look, whatever the pairs (issue #38: moving them
    # inward by the expected overshoot made the test reject H0 wrongly 5.5-6.1% of the time).
    for counts in ([2, 6, 4, 6, 2], [0, 1, 40, 1, 0], [0, 0, 0, 0, 300]):
        assert look(counts, 0, 20, 0.05, 0.05)[1:] == bounds(0.05, 0.05)


@settings(max_examples=200, deadline=None)
@given(
    counts=st.lists(st.integers(0, 60), min_size=5, max_size=5).filter(lambda c: sum(c) > 0),
    elo=st.floats(-300, 300),
    direction=st.lists(st.floats(-1, 1), min_size=5, max_size=5),
)
def test_the_fit_is_the_most_likely_distribution_with_that_mean(
    counts: list[int], elo: float, direction: list[float]
) -> None:
    from arena.tournaments.sprt import _regularised

    freqs = _regularised(counts)
    s = 1 / (1 + 10 ** (-elo / 400))
    fitted = mle(freqs, OUTCOMES, s)
    assert sum(fitted) == pytest.approx(1.0)
    assert sum(p * x for p, x in zip(fitted, OUTCOMES, strict=True)) == pytest.approx(s, abs=1e-9)
    # Any small move that keeps the total and the mean lowers the likelihood.
    d = [v - sum(direction) / 5 for v in direction]
    shift = sum(v * x for v, x in zip(d, OUTCOMES, strict=True))
    d = [v - shift * (x - 0.5) / 0.625 for v, x in zip(d, OUTCOMES, strict=True)]
    step = 1e-3 * min(fitted)
    moved = [p + step * v for p, v in zip(fitted, d, strict=True)]
    loglik = sum(f * math.log(p) for f, p in zip(freqs, fitted, strict=True))
    assert sum(f * math.log(p) for f, p in zip(freqs, moved, strict=True)) <= loglik + 1e-12


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


def test_a_stronger_bot_is_accepted_after_a_few_batches(sqlite_url: str) -> None:
    heuristic, random = hosted_bots(sqlite_url, ["heuristic", "random"])
    tid = sprt(sqlite_url, [heuristic, random], batch=6)
    run_tournament(sqlite_url, tid, InlineBackend(sqlite_url))
    status, state, matches = state_of(sqlite_url, tid)
    assert status == "finished" and state["verdict"] == "H1"
    # Heuristic wins (almost) every pair; each is worth ln(s1/s0) = 0.056 of LLR however lopsided it is
    # (the test weighs 20 Elo against 0, not "how much better"), so 54 pairs reach ln 20 = 3.00.
    assert state["pairs"] == 54 and state["counts"][4] >= 50 and matches == 108, state
    assert state["llr"] >= state["upper"]  # type: ignore[operator]
    # The verdict says only "at least 20"; the estimate says by how much, from the same pairs.
    estimate = state["estimate"]
    counts = state["counts"]
    assert isinstance(estimate, dict) and isinstance(counts, list)
    assert estimate == getattr(elo_estimate(counts), "to_json", dict)()
    assert 20 < estimate["low"] < estimate["elo"] < estimate["high"], estimate
    dispose_engines()


def test_a_copy_is_rejected_pair_by_pair(sqlite_url: str) -> None:
    # Greedy and its copy are deterministic: every duplicate pair comes out exactly even, so
    # the test leans to H0 with each pair, slowly (an even pair is weak evidence); batches of
    # 10 show it extending itself.
    greedy, twin = hosted_bots(sqlite_url, ["greedy", "test_sprt:Twin"])
    tid = sprt(sqlite_url, [twin, greedy], batch=10)
    run_tournament(sqlite_url, tid, InlineBackend(sqlite_url))
    status, state, matches = state_of(sqlite_url, tid)
    assert status == "finished" and state["verdict"] == "H0"
    assert state["counts"] == [0, 0, state["pairs"], 0, 0]
    assert state["pairs"] == 60 and matches == 120  # LLR -0.59 per 10 pairs: -2.95 at 50, -3.54 at 60
    assert state["llr"] <= state["lower"]  # type: ignore[operator]
    assert state["estimate"] == {"pairs": 60, "elo": 0.0, "low": 0.0, "high": 0.0}  # every pair even
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
    # elo1 300 so that one batch decides: each pair heuristic wins is worth ln(s1/s0) = 0.53.
    assert tonk(["sprt", "heuristic", "random", "--elo0", "0", "--elo1", "300", "--hands", "6",
                 "--batch", "6", "--seed", "777", "--quiet"]) == 0  # the seed of the test above
    out = capsys.readouterr().out
    # The line tonk sprt --arena prints while it watches, and its verdict.
    line = (r"^  6 pairs, LLR \d+\.\d\d in \[-\d+\.\d\d, \d+\.\d\d\]; "
            r"V2 - V1 = \+\d+ \+/- \d+ Elo \[\+\d+, \+\d+\]: ")
    assert re.search(line + r"accepted H1 \(better by >= 300 Elo\)$", out, re.MULTILINE), out
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
    tid = sprt(pg_url, [twin, greedy], batch=10)
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
    # Undecided: the state says when the test next looks (the end of the batch scheduled).
    assert state["next_look"] == 6
    run_tournament(sqlite_url, tid, InlineBackend(sqlite_url))  # what `resume` does
    status, state, matches = state_of(sqlite_url, tid)
    assert (status, state["verdict"], matches, state["next_look"]) == ("finished", "H1", 108, None)
    dispose_engines()


def test_racing_callers_extend_a_test_by_one_batch(db_url: str) -> None:
    """Workers finishing the last matches of a batch at once each ask whether the test goes on:
    one batch is added, once, and nobody fails (on SQLite, which ignores FOR UPDATE, a caller
    that read before taking the write lock numbered its deals from a stale start)."""
    import threading

    from sqlalchemy import update

    from arena.store.statuses import MatchStatus
    from arena.tournaments.lifecycle import finish_if_complete, start_tournament

    greedy, twin = hosted_bots(db_url, ["greedy", "test_sprt:Twin"])
    tid = sprt(db_url, [twin, greedy], batch=2)
    with session_scope(db_url) as session:
        start_tournament(session, tid)
        ids = session.scalars(select(Match.id).where(Match.tournament_id == tid)).all()
        session.execute(update(Match).where(Match.id.in_(ids)).values(status=MatchStatus.DONE))
        session.execute(update(MatchSeat).where(MatchSeat.match_id.in_(ids)).values(score=0))
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def finish() -> None:
        try:
            barrier.wait()
            with session_scope(db_url) as session:
                finish_if_complete(session, tid)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=finish) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    status, state, matches = state_of(db_url, tid)
    assert status == "running" and state["verdict"] is None
    assert matches == 2 * len(ids)  # exactly one more batch
    dispose_engines()
