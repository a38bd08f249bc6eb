"""Current ratings of every bot: :func:`arena.ratings.fit` over all finished matches.

The fit over every match is the expensive part of the leaderboard (about a second for
100,000 matches), so its result is cached until another match finishes
(:func:`done_token`).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.models import Match, MatchSeat
from arena.ratings import MatchResult, Rating, fit
from dashboard.queries.cache import cached


@dataclass(frozen=True)
class Ratings:
    by_bot: dict[int, Rating] = field(default_factory=dict)
    #: Bot ids best first, and the likelihood of superiority of each over the next one.
    order: list[int] = field(default_factory=list)
    los: list[float] = field(default_factory=list)


def done_token(session: Session) -> Hashable:
    """Fingerprint of the finished matches: changes whenever one more is done."""
    row = session.execute(
        select(func.count(Match.id), func.max(Match.id)).where(Match.status == "done")
    ).one()
    return (int(row[0]), row[1])


def match_results(session: Session, tournament_id: int | None = None) -> list[MatchResult]:
    query = (
        select(MatchSeat.match_id, MatchSeat.bot_id, MatchSeat.score)
        .join(Match, Match.id == MatchSeat.match_id)
        .where(Match.status == "done", MatchSeat.score.is_not(None))
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    )
    if tournament_id is not None:
        query = query.where(Match.tournament_id == tournament_id)
    results: list[MatchResult] = []
    current: int | None = None
    bots: list[str] = []
    scores: list[int] = []  # rows with no score are filtered out by the query

    def flush() -> None:
        # A bot seated twice cannot be rated against itself; such a match is skipped.
        if current is not None and len(bots) >= 2 and len(set(bots)) == len(bots):
            results.append(MatchResult(current, tuple(bots), tuple(scores)))

    for match_id, bot_id, score in session.execute(query):
        if match_id != current:
            flush()
            current, bots, scores = match_id, [], []
        bots.append(str(bot_id))
        scores.append(score or 0)
    flush()
    return results


def compute(session: Session) -> Ratings:
    table = fit(match_results(session))
    by_bot = {int(r.bot): r for r in table.ratings}
    return Ratings(by_bot, [int(r.bot) for r in table.ratings], list(table.los))


def current(session: Session, url: str) -> Ratings:
    return cached(("ratings", url), done_token(session), lambda: compute(session))
