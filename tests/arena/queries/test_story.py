"""A tournament's story against tournaments with known results: standings by chips per 100
hands, the finished tournament's headline, time left from the bottleneck bot, and a
sequential test's LLR line. Results are written into the store match by match (the way a
worker records them), so every number has a value worked out by hand."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from helpers.arena import InlineBackend, hosted_bots, new_tournament
from sqlalchemy import select, update

from arena.queries.live import timing
from arena.queries.matches import get_replay
from arena.queries.tournaments import tournament_detail
from arena.runtime.driver import run_tournament
from arena.store.db import session_scope
from arena.store.models import Bot, Match, MatchSeat, Tournament, utcnow
from arena.store.replays import closest_hand
from arena.store.statuses import MatchStatus, TournamentStatus
from arena.tournaments.lifecycle import start_tournament


def tables(url: str, tid: int) -> dict[frozenset[str], list[int]]:
    """The tournament's match ids by the names of the bots at their table."""
    with session_scope(url) as session:
        start_tournament(session, tid)
        rows = session.execute(
            select(Match.id, Bot.name).join(MatchSeat, MatchSeat.match_id == Match.id)
            .join(Bot, Bot.id == MatchSeat.bot_id).where(Match.tournament_id == tid).order_by(Match.id)
        ).all()
    seated: dict[int, set[str]] = {}
    for match_id, name in rows:
        seated.setdefault(match_id, set()).add(name)
    out: dict[frozenset[str], list[int]] = {}
    for match_id, names in seated.items():
        out.setdefault(frozenset(names), []).append(match_id)
    return out


def finish(url: str, match_id: int, chips: Mapping[str, int], seconds: float = 60.0,
           started: dt.datetime | None = None) -> None:
    """Record ``match_id`` as done with these chips per bot, played in ``seconds``."""
    with session_scope(url) as session:
        match = session.get(Match, match_id)
        assert match is not None
        start = started or utcnow() - dt.timedelta(seconds=seconds)
        match.status, match.hands_played = MatchStatus.DONE, match.hands
        match.duration_ms = int(seconds * 1000)
        match.started_at, match.finished_at = start, start + dt.timedelta(seconds=seconds)
        for seat in match.seats:
            seat.score = chips[session.get(Bot, seat.bot_id).name]  # type: ignore[union-attr]
        session.flush()


def detail(url: str, tid: int) -> dict[str, object]:
    with session_scope(url) as session:
        return tournament_detail(session, url, tid)


def test_standings_rank_by_chips_per_100_hands_not_total_chips(db_url: str) -> None:
    ids = hosted_bots(db_url, ["random", "greedy", "heuristic"])
    tid = new_tournament(db_url, ids, hands_per_match=5)
    by_table = tables(db_url, tid)
    # greedy plays 3 matches and wins +35 chips in all (+233/100); random only 1 match, +25
    # (+500/100): mid-tournament random leads, though its total is smaller.
    for match_id in by_table[frozenset({"greedy", "heuristic"})][:2]:
        finish(db_url, match_id, {"greedy": 30, "heuristic": -30})
    finish(db_url, by_table[frozenset({"random", "greedy"})][0], {"random": 25, "greedy": -25})
    rows = [(r["bot"], r["matches"], r["chips"], r["chips_per_100"])
            for r in detail(db_url, tid)["standings"]]  # type: ignore[attr-defined]
    assert rows == [("random", 1, 25, 500.0), ("greedy", 3, 35, 233.33), ("heuristic", 2, -60, -600.0)]


def test_a_finished_tournament_has_a_headline(db_url: str) -> None:
    ids = hosted_bots(db_url, ["random", "greedy"])
    tid = new_tournament(db_url, ids, hands_per_match=5, deals_per_table=2)
    (matches,) = tables(db_url, tid).values()
    with session_scope(db_url) as session:
        deals = [session.get(Match, m).deal_index for m in matches]  # type: ignore[union-attr]
    assert len(matches) == 4 and deals == [0, 0, 1, 1], deals  # two deals, two rotations each
    for match_id, won in zip(matches, (10, 20, 30, 40), strict=True):
        finish(db_url, match_id, {"greedy": won, "random": -won})
    assert detail(db_url, tid)["headline"] is None  # every match done, not yet finished
    with session_scope(db_url) as session:
        session.execute(update(Tournament).where(Tournament.id == tid)
                        .values(status=TournamentStatus.FINISHED, finished_at=utcnow()))
    head = detail(db_url, tid)["headline"]
    # greedy: 100 chips over 20 hands, +500/100; random -500/100. Per match 10..40 chips over
    # 5 hands against the rate's 25: greedy's residuals -15, -5, 5, 15, random's the opposite,
    # so each match moves the margin by 2 x 100 x residual / 20. Summed per deal: -200 and
    # +200; squared, x k/(k-1) = 2: a standard error of 400, so 1000 -/+ 1.96 x 400 and
    # "how sure" is Phi(2.5) = 0.9938.
    assert head["winner"] == "greedy" and head["runner_up"] == "random"  # type: ignore[index]
    assert head["margin"] == 1000.0 and head["chips_per_100"] == 500.0  # type: ignore[index]
    assert (head["low"], head["high"]) == (216.01, 1783.99)  # type: ignore[index]
    assert head["sure"] == 0.9938 and head["verdict"] == "clear"  # type: ignore[index]
    assert [m["id"] for m in head["swings"]] == [matches[3], matches[2], matches[1]]  # type: ignore[index]
    # Closest: the smallest gaps between first and second, 20, 40 and 60 chips.
    assert [m["id"] for m in head["closest"]] == [matches[0], matches[1], matches[2]]  # type: ignore[index]


def test_the_headline_names_the_closest_hands_of_deals_all_played(db_url: str) -> None:
    """Played by the worker's own code: the hands named are the narrowest wins on points over
    every replay of the tournament (decoded here, which the headline never does), linked to
    their match and hand; and a deal with a match not done is left out, even once finished."""
    ids = hosted_bots(db_url, ["random", "greedy", "heuristic"])
    tid = new_tournament(db_url, ids, hands_per_match=8, deals_per_table=2)
    run_tournament(db_url, tid, InlineBackend(db_url))
    with session_scope(db_url) as session:
        match_ids = list(session.scalars(select(Match.id).where(Match.tournament_id == tid)))
        truth = {}
        for match_id in match_ids:
            replay = get_replay(session, match_id)
            assert replay is not None
            found = closest_hand([hand.get("outcome") for hand in replay])
            if found is not None:
                truth[match_id] = found
    expected = sorted(truth, key=lambda m: (truth[m][1], m))[:3]
    assert len(expected) == 3, truth
    head = detail(db_url, tid)["headline"]
    closest = head["closest_hands"]  # type: ignore[index]
    assert [(c["match"], c["hand"], c["points"]) for c in closest] == [(m, *truth[m]) for m in expected]
    assert all(len(c["bots"]) == 2 for c in closest)
    # The first one's deal gets a match that is not done (as if it were being played again):
    # none of that deal's hands may be named while it is.
    with session_scope(db_url) as session:
        first = session.get(Match, expected[0])
        assert first is not None
        same_deal = select(Match.id).where(Match.tournament_id == tid, Match.seed == first.seed)
        deal = set(session.scalars(same_deal))
        session.execute(update(Match).where(Match.id == max(deal - {first.id}))
                        .values(status=MatchStatus.RUNNING))
    named = [c["match"] for c in detail(db_url, tid)["headline"]["closest_hands"]]  # type: ignore[index]
    assert named and not set(named) & deal, (named, deal)
    rest = [m for m in sorted(truth, key=lambda m: (truth[m][1], m)) if m not in deal]
    assert named == rest[:3]


def test_time_left_comes_from_the_bottleneck_bot(db_url: str) -> None:
    ids = hosted_bots(db_url, ["random", "greedy", "heuristic"])
    random_id = ids[0]
    tid = new_tournament(db_url, ids, hands_per_match=5)
    by_table = tables(db_url, tid)
    start = utcnow() - dt.timedelta(seconds=30)
    finish(db_url, by_table[frozenset({"greedy", "heuristic"})][0], {"greedy": 5, "heuristic": -5}, 60, start)
    finish(db_url, by_table[frozenset({"random", "greedy"})][0], {"random": 5, "greedy": -5}, 120, start)
    with session_scope(db_url) as session:
        progress = detail(db_url, tid)["progress"]
        # 10 of 30 hands in about 30 s: the pace says about a minute left. But random plays one
        # match at a time, 120 s each, and has 3 left: 360 s. greedy (90 s, 2 left, 4 at a
        # time) and heuristic (60 s, 3 left, 4 at a time) need 45 s.
        capacity = {random_id: 1, ids[1]: 4, ids[2]: 4}
        tm = timing(session, tid, progress, capacity)  # type: ignore[arg-type]
        assert tm["eta_s"] == 360, tm
        assert tm["bottleneck"] == {"bot": "random", "matches_left": 3, "capacity": 1, "match_s": 120.0,
                                    "seconds": 360}
        # With room to spare everywhere, the pace is the longer and nobody is named.
        roomy = timing(session, tid, progress, dict.fromkeys(ids, 100))  # type: ignore[arg-type]
        assert roomy["bottleneck"] is None and roomy["eta_s"] is not None and roomy["eta_s"] < 360
