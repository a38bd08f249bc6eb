"""A tournament's story: the headline of a finished one (winner, margin with its interval, how
sure, the biggest swings, the closest matches and hands), the time left from the bots that hold the
rest up, and a sequential test's LLR after each look."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.queries.matches import deal_finished
from arena.store.models import Bot, Match, MatchSeat, Tournament
from arena.store.statuses import MatchStatus, TournamentStatus
from arena.tournaments.sprt import OUTCOMES, look

#: Matches linked from a headline under each of "biggest swings" and "closest".
SHOWN = 3
_Z95 = 1.959964


def by_rate(standings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Standings best first by chips per 100 hands, not total chips: mid-tournament a bot with
    half the matches played would otherwise rank below a weaker one with twice as many."""
    rate = [r for r in standings if r["chips_per_100"] is not None]
    unplayed = [r for r in standings if r["chips_per_100"] is None]
    return sorted(rate, key=lambda r: (-r["chips_per_100"], -r["hands"], r["bot"])) + sorted(
        unplayed, key=lambda r: r["bot"]
    )


Seats = dict[int, list[tuple[str, int, int]]]


def _seats(session: Session, tournament_id: int) -> tuple[Seats, dict[int, Any]]:
    """Done matches: (bot, chips, hands of the match) per seat; and each match's deal, as
    (table, deal): the rotations of a deal play the same cards, so their results go together."""
    out: Seats = defaultdict(list)
    deal: dict[int, Any] = {}
    for match_id, table, deal_index, name, score, hands in session.execute(
        select(Match.id, Match.table_index, Match.deal_index, Bot.name, MatchSeat.score, Match.hands)
        .join(MatchSeat, MatchSeat.match_id == Match.id)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .where(Match.tournament_id == tournament_id, Match.status == MatchStatus.DONE)
        .order_by(Match.id, MatchSeat.seat)
    ):
        out[match_id].append((name, int(score or 0), int(hands)))
        deal[match_id] = (table, deal_index)
    return out, deal


def margin_and_se(
    matches: Mapping[int, list[tuple[str, int, int]]], deal: Mapping[int, Any], first: str, second: str
) -> tuple[float, float]:
    """``first``'s chips per 100 hands less ``second``'s, and the difference's standard
    error: each rate is a ratio (chips over hands), linearised per match as its chips less
    the rate times its hands; the two bots' terms are summed per deal (a match where they
    meet moves both, and a deal's rotations share their cards), and deals are taken as
    independent. Infinite with fewer than two deals."""
    hands = {b: sum(h for seats in matches.values() for n, _, h in seats if n == b) for b in (first, second)}
    rate = {b: sum(c for seats in matches.values() for n, c, _ in seats if n == b) / hands[b]
            for b in (first, second)}
    terms: dict[Any, float] = defaultdict(float)
    for match_id, seats in matches.items():
        for name, chips, played in seats:
            if name in rate:
                sign = 1 if name == first else -1
                terms[deal[match_id]] += sign * 100 * (chips - rate[name] * played) / hands[name]
    k = len(terms)
    margin = 100 * (rate[first] - rate[second])
    if k < 2:
        return margin, math.inf
    return margin, math.sqrt(sum(t * t for t in terms.values()) * k / (k - 1))


def headline(session: Session, tournament_id: int, standings: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A finished tournament's headline, None before: the winner (first of ``standings``),
    its margin over the runner-up in chips per 100 hands with a 95% interval
    (:func:`margin_and_se`), how sure (the normal probability that the winner's true rate is
    ahead), the matches with the biggest swing (most chips won by one seat) and the
    closest (least between first and second), and the closest hands (:func:`closest_hands`)."""
    status = session.scalar(select(Tournament.status).where(Tournament.id == tournament_id))
    if status != TournamentStatus.FINISHED or not standings or standings[0]["chips_per_100"] is None:
        return None
    matches, deal = _seats(session, tournament_id)
    winner = standings[0]["bot"]
    out: dict[str, Any] = {"winner": winner, "chips_per_100": standings[0]["chips_per_100"],
                           "runner_up": None, "margin": None, "low": None, "high": None, "sure": None,
                           "verdict": None}
    if len(standings) > 1 and standings[1]["chips_per_100"] is not None:
        second = standings[1]["bot"]
        margin, se = margin_and_se(matches, deal, winner, second)
        finite = math.isfinite(se)
        sure = (NormalDist().cdf(margin / se) if se > 0 else 1.0) if finite else None
        out.update(
            runner_up=second, margin=round(margin, 2),
            low=round(margin - _Z95 * se, 2) if finite else None,
            high=round(margin + _Z95 * se, 2) if finite else None,
            sure=None if sure is None else round(sure, 4),
            verdict=None if sure is None
            else "clear" if sure >= 0.99 else "likely" if sure >= 0.9 else "close",
        )
    swing = sorted(matches, key=lambda m: (-max(c for _, c, _ in matches[m]), m))
    out["swings"] = [_linked(m, matches[m]) for m in swing[:SHOWN]]
    close = sorted((m for m in matches if len(matches[m]) > 1), key=lambda m: (_gap(matches[m]), m))
    out["closest"] = [_linked(m, matches[m]) for m in close[:SHOWN]]
    out["closest_hands"] = closest_hands(session, tournament_id, matches)
    return out


def closest_hands(session: Session, tournament_id: int, matches: Seats) -> list[dict[str, Any]]:
    """The tournament's closest hands: each match's closest hand as kept when it was
    recorded (arena.store.replays.closest_hand), fewest points first, one per match, from
    deals whose every match is done (their replays are public). Reads two columns of each
    match, never a replay: decoding a big tournament's replays takes seconds."""
    where = [Match.tournament_id == tournament_id, Match.close_points.is_not(None)]
    # Testing each match's deal costs 0.2 s at 10,000 matches; a finished tournament has every
    # match done (ix_matches_tournament_status says so at once), so its deals need no test.
    unfinished = session.execute(
        select(Match.id)
        .where(Match.tournament_id == tournament_id, Match.status != MatchStatus.DONE)
        .limit(1)
    ).first()
    if unfinished is not None:
        where.append(deal_finished())
    rows = session.execute(
        select(Match.id, Match.close_hand, Match.close_points)
        .where(*where)
        .order_by(Match.close_points, Match.id)
        .limit(SHOWN)
    ).all()
    return [{"match": m, "hand": int(hand or 0), "points": int(points or 0),
             "bots": [name for name, _, _ in matches.get(m, [])]} for m, hand, points in rows]


def _gap(seats: list[tuple[str, int, int]]) -> int:
    first, second = sorted((c for _, c, _ in seats), reverse=True)[:2]
    return first - second


def _linked(match_id: int, seats: list[tuple[str, int, int]]) -> dict[str, Any]:
    return {"id": match_id, "seats": [{"bot": name, "chips": chips} for name, chips, _ in seats]}


# -- time left ---------------------------------------------------------------------------------


def bottleneck(session: Session, tournament_id: int, capacity: Mapping[int, int]) -> dict[str, Any] | None:
    """The bot whose unfinished matches take longest to play at its capacity: its unfinished
    matches x its mean match time here / the matches it plays at once (``capacity``, from
    arena.play.capacity, passed in: play is a floor beside this one). The tail of a tournament
    is these bots playing their last matches at capacity while other bots idle, which a
    tournament-wide pace does not see. None until a match with a recorded time is done."""
    left = dict(
        session.execute(
            select(MatchSeat.bot_id, func.count(MatchSeat.id))
            .join(Match, Match.id == MatchSeat.match_id)
            .where(Match.tournament_id == tournament_id,
                   Match.status.in_([MatchStatus.PENDING, MatchStatus.RUNNING]))
            .group_by(MatchSeat.bot_id)
        ).all()
    )
    if not left:
        return None
    timed = MatchSeat.bot_id, func.avg(Match.duration_ms)
    done = (Match.tournament_id == tournament_id, Match.status == MatchStatus.DONE,
            Match.duration_ms.is_not(None))
    mean_ms = {b: float(ms) for b, ms in session.execute(
        select(*timed).join(Match, Match.id == MatchSeat.match_id).where(*done).group_by(MatchSeat.bot_id)
    )}
    overall = session.scalar(select(func.avg(Match.duration_ms)).where(*done))
    if overall is None:
        return None
    names = dict(session.execute(select(Bot.id, Bot.name).where(Bot.id.in_(list(left)))).all())
    worst: dict[str, Any] | None = None
    for bot, count in sorted(left.items()):
        slots = max(1, int(capacity.get(bot, 1)))
        seconds = int(count) * mean_ms.get(bot, float(overall)) / 1000 / slots
        if worst is None or seconds > worst["seconds"]:
            worst = {"bot": names.get(bot, str(bot)), "matches_left": int(count), "capacity": slots,
                     "match_s": round(mean_ms.get(bot, float(overall)) / 1000, 1), "seconds": seconds}
    assert worst is not None
    worst["seconds"] = round(worst["seconds"])
    return worst


# -- a sequential test's history ----------------------------------------------------------------


def sprt_history(session: Session, tournament: Tournament) -> dict[str, Any]:
    """The test's LLR and bounds after each look (every ``batch`` pairs, in the order the
    pairs were completed, and after the last pair), as fishtest draws its LLR line, and the
    Elo estimate of the challenger with its 95% interval from the pairs' mean score."""
    params = tournament.params or {}
    challenger, batch = params["challenger"], int(params["batch"])
    rows = session.execute(
        select(Match.id, Match.deal_index, MatchSeat.bot_id, MatchSeat.score)
        .join(MatchSeat, MatchSeat.match_id == Match.id)
        .where(Match.tournament_id == tournament.id, Match.status == MatchStatus.DONE)
        .order_by(Match.id)
    ).all()
    scores: dict[int, dict[int, int]] = defaultdict(dict)
    deal_of: dict[int, int] = {}
    for match_id, deal, bot, score in rows:
        scores[match_id][bot] = int(score or 0)
        deal_of[match_id] = deal
    per_deal: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for match_id, seats in scores.items():
        mine = seats.pop(challenger)
        (theirs,) = seats.values()
        result = 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0
        per_deal[deal_of[match_id]].append((result, match_id))
    # Pairs in the order they were scheduled (a later batch is created only once the earlier
    # one is done, so each look below sees exactly the pairs the test decided on then).
    pairs = sorted(
        (max(m for _, m in results), sum(x for x, _ in results) / 2)
        for results in per_deal.values() if len(results) == 2
    )
    counts = [0] * len(OUTCOMES)
    points = [{"pairs": 0, "llr": 0.0, **_bounds(counts, params)}]
    for n, (_, outcome) in enumerate(pairs, start=1):
        counts[OUTCOMES.index(outcome)] += 1
        if n % batch == 0 or n == len(pairs):
            value, lower, upper = look(counts, params["elo0"], params["elo1"], params["alpha"],
                                       params["beta"])
            points.append({"pairs": n, "llr": round(value, 4), "lower": round(lower, 4),
                           "upper": round(upper, 4)})
    return {"points": points}


def _bounds(counts: list[int], params: Mapping[str, Any]) -> dict[str, float]:
    _, lower, upper = look(counts, params["elo0"], params["elo1"], params["alpha"], params["beta"])
    return {"lower": round(lower, 4), "upper": round(upper, 4)}
