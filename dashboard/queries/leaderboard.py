"""The leaderboard: every bot's rating with its interval, and its playing record."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.models import Bot, Match, MatchSeat, Owner
from arena.ratings import Rating
from dashboard.queries import ratings
from dashboard.queries.cache import cached


def seat_stats(session: Session, bot_id: int | None = None) -> dict[int, dict[str, int]]:
    """Totals over finished matches per bot: one indexed GROUP BY, no replay opened."""
    query = (
        select(
            MatchSeat.bot_id,
            func.count(MatchSeat.id),
            func.coalesce(func.sum(Match.hands_played), 0),
            func.coalesce(func.sum(MatchSeat.hands_won), 0),
            func.coalesce(func.sum(MatchSeat.score), 0),
            func.coalesce(func.sum(MatchSeat.faults), 0),
            func.coalesce(func.sum(MatchSeat.decisions), 0),
            func.coalesce(func.sum(MatchSeat.latency_us_total), 0),
            func.coalesce(func.max(MatchSeat.latency_us_max), 0),
        )
        .join(Match, Match.id == MatchSeat.match_id)
        .where(Match.status == "done")
        .group_by(MatchSeat.bot_id)
    )
    if bot_id is not None:
        query = query.where(MatchSeat.bot_id == bot_id)
    out: dict[int, dict[str, int]] = {}
    for row in session.execute(query):
        out[int(row[0] or 0)] = {
            "matches": int(row[1] or 0),
            "hands": int(row[2] or 0),
            "hands_won": int(row[3] or 0),
            "chips": int(row[4] or 0),
            "faults": int(row[5] or 0),
            "decisions": int(row[6] or 0),
            "latency_us_total": int(row[7] or 0),
            "latency_us_max": int(row[8] or 0),
        }
    return out


def record(stats: dict[str, int] | None) -> dict[str, Any]:
    """A bot's playing record in the units the pages show."""
    s = stats or {}
    hands = s.get("hands", 0)
    decisions = s.get("decisions", 0)
    return {
        "matches": s.get("matches", 0),
        "hands": hands,
        "hands_won": s.get("hands_won", 0),
        "win_rate": round(s.get("hands_won", 0) / hands, 4) if hands else None,
        "chips": s.get("chips", 0),
        "chips_per_100": round(100 * s.get("chips", 0) / hands, 2) if hands else None,
        "faults": s.get("faults", 0),
        "decisions": decisions,
        "latency_ms_mean": round(s.get("latency_us_total", 0) / decisions / 1000, 3) if decisions else None,
        "latency_ms_max": round(s.get("latency_us_max", 0) / 1000, 3) if decisions else None,
    }


def rating_json(rating: Rating | None) -> dict[str, Any] | None:
    if rating is None:
        return None
    return {
        "elo": round(rating.elo, 1),
        "low": round(rating.low, 1),
        "high": round(rating.high, 1),
        "provisional": rating.provisional,
        "matches": rating.matches,
    }


def leaderboard(session: Session, url: str) -> list[dict[str, Any]]:
    """Rated bots best first, then bots with no finished match yet (unranked)."""
    token = ratings.done_token(session)
    current = cached(("ratings", url), token, lambda: ratings.compute(session))
    stats = cached(("seat_stats", url), token, lambda: seat_stats(session))
    bots = session.execute(
        select(Bot.id, Bot.name, Bot.status, Owner.name).join(Owner, Owner.id == Bot.owner_id)
    ).all()
    by_id = {row[0]: row for row in bots}
    rows: list[dict[str, Any]] = []
    for rank, bot_id in enumerate(current.order, start=1):
        bot = by_id.get(bot_id)
        if bot is None:
            continue
        rating = current.by_bot[bot_id]
        rows.append({
            "rank": rank,
            "bot": bot[1],
            "owner": bot[3],
            "status": bot[2],
            "rating": rating_json(rating),
            "los_next": round(current.los[rank - 1], 3) if rank - 1 < len(current.los) else None,
            **record(stats.get(bot_id)),
        })
    for bot_id, name, status, owner in sorted(bots, key=lambda r: r[1]):
        if bot_id not in current.by_bot and status == "active":
            rows.append({
                "rank": None, "bot": name, "owner": owner, "status": status, "rating": None,
                "los_next": None, **record(stats.get(bot_id)),
            })
    return rows


def scale(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """The Elo range an interval chart of ``rows`` should span (rounded out to 50s)."""
    rated = [r["rating"] for r in rows if r["rating"]]
    if not rated:
        return 1300.0, 1700.0
    lo = min(r["low"] for r in rated)
    hi = max(r["high"] for r in rated)
    lo, hi = 50 * ((lo - 10) // 50), 50 * (-(-(hi + 10) // 50))
    return float(lo), float(max(hi, lo + 100))
