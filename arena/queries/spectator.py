"""What the spectator's charts and lists read: a bot's per-match samples and recent
matches, every bot's rating history, and a match's payments per hand."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.queries import iso
from arena.queries.cache import cached
from arena.queries.leaderboard import board
from arena.queries.matches import deal_finished
from arena.ratings.leaderboard import rating_history
from arena.store.models import Bot, BotVersion, Match, MatchSeat, RatingSnapshot, Tournament

#: Matches a bot's distributions are drawn from (its most recent ones).
SAMPLE_MATCHES = 500
RECENT_MATCHES = 10


def bot_samples(session: Session, bot_name: str) -> tuple[list[int], list[float]]:
    """Chips and mean decision time (ms) in each of the bot's latest matches whose deal is
    done (a score from a deal still being played would hint at its cards)."""
    rows = session.execute(
        select(MatchSeat.score, MatchSeat.latency_us_total, MatchSeat.decisions)
        .join(Match, Match.id == MatchSeat.match_id)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .where(Bot.name == bot_name, deal_finished())
        .order_by(Match.id.desc())
        .limit(SAMPLE_MATCHES)
    ).all()
    scores = [int(score or 0) for score, _, _ in rows]
    times = [total / decisions / 1000 for _, total, decisions in rows if decisions]
    return scores, times


def recent_matches(session: Session, bot_id: int) -> list[dict[str, Any]]:
    """The bot's latest matches whose whole deal is done (their replays are public), newest
    first: ``{id, tournament, finished_at, seats: [{bot, score}], score, version, reason}``
    (``score`` and ``version``: the bot's in that match; ``reason``: why the ladder scheduled
    it, None for a tournament's match)."""
    rows = session.execute(
        select(Match.id, Tournament.name, Match.finished_at, Match.reason)
        .join(Tournament, Tournament.id == Match.tournament_id)
        .where(deal_finished(), Match.id.in_(select(MatchSeat.match_id).where(MatchSeat.bot_id == bot_id)))
        .order_by(Match.id.desc())
        .limit(RECENT_MATCHES)
    ).all()
    seats: dict[int, list[dict[str, Any]]] = {r.id: [] for r in rows}
    mine: dict[int, int | None] = {}
    version: dict[int, int] = {}
    for match_id, seat_bot, name, score, number in session.execute(
        select(MatchSeat.match_id, MatchSeat.bot_id, Bot.name, MatchSeat.score, BotVersion.number)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .join(BotVersion, BotVersion.id == MatchSeat.bot_version_id)
        .where(MatchSeat.match_id.in_(list(seats)))
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    ):
        seats[match_id].append({"bot": name, "score": score})
        if seat_bot == bot_id:
            mine[match_id] = score
            version[match_id] = number
    return [
        {"id": r.id, "tournament": r.name, "finished_at": iso(r.finished_at), "seats": seats[r.id],
         "score": mine.get(r.id), "version": version.get(r.id), "reason": r.reason}
        for r in rows
    ]


#: The last point of the ratings over time: the board as it is now.
NOW = "now"


def ratings_over_time(session: Session, url: str) -> list[dict[str, Any]]:
    """Every snapshot as ``{tournament, order, bot, elo}``, ``order`` counting the rated
    tournaments in the order they finished (cached until a snapshot is added), and then, when
    the board has moved since (ladder matches and unfinished tournaments are rated but never
    snapshotted: a bot rated only on a ladder had no point at all), every rated bot's rating
    now, as a last point named :data:`NOW`. A one-sided bound is no rating and gets no point."""
    token = session.execute(select(func.count(RatingSnapshot.id), func.max(RatingSnapshot.id))).one()

    def compute() -> list[dict[str, Any]]:
        order: dict[int, int] = {}
        out = []
        for row in rating_history(session):
            index = order.setdefault(row.tournament_id, len(order))
            out.append({"tournament": row.tournament_name, "order": index, "bot": row.name, "elo": row.elo})
        return out

    history: list[dict[str, Any]] = cached(("ratings-over-time", url), tuple(token), compute)
    latest = {row["bot"]: row["elo"] for row in history}  # in order: each bot's last snapshot
    now = [r for r in board(session, url).rows if r.low is not None and r.high is not None]
    if all(r.name in latest and abs(latest[r.name] - r.elo) < 0.5 for r in now):
        return history
    last = max((row["order"] for row in history), default=-1) + 1
    return history + [{"tournament": NOW, "order": last, "bot": r.name, "elo": r.elo} for r in now]
