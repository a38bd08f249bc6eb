"""The leaderboard: every bot's rating with its interval (arena.ratings.leaderboard's model) and its
playing record (arena.queries.stats), each kept in arena/queries/cache.py until another match
is done. The dashboard and ``tonk leaderboard`` / ``tonk tournament status`` read it here."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.queries import Paging
from arena.queries.cache import revalidated, throttled
from arena.queries.stats import BotStats, bot_stats, record
from arena.ratings.leaderboard import (
    Leaderboard,
    LeaderboardRow,
    VersionRating,
    board_page,
    current_leaderboard,
)
from arena.ratings.terms import rating_text, reason_text
from arena.store import tokens
from arena.store.db import session_scope
from arena.store.models import Bot, Owner
from arena.store.statuses import BotStatus


def done_token(session: Session, url: str) -> Hashable:
    """:func:`arena.store.tokens.done_token`, read at most once a refresh window (even that
    is an index scan: a page may be a second behind a finished match)."""
    return throttled(("done", url), lambda: tokens.done_token(session))


def _fresh_board(url: str) -> Leaderboard:
    with session_scope(url) as session:
        return current_leaderboard(session)


def _fresh_stats(url: str) -> dict[int, BotStats]:
    with session_scope(url) as session:
        return {s.bot_id: s for s in bot_stats(session)}


def versions_token(session: Session, url: str) -> Hashable:
    """:func:`arena.store.tokens.versions_token`, throttled as :func:`done_token`."""
    return throttled(("versions", url), lambda: tokens.versions_token(session))


def board(session: Session, url: str) -> Leaderboard:
    """arena.ratings.leaderboard's ratings, refitted (in the background, once there is a previous
    fit to show meanwhile) when the done matches changed, and its rows read again when a bot
    got a new version (its rating is its current version's)."""
    token = (done_token(session, url), versions_token(session, url))
    return revalidated(("board", url), token, lambda: _fresh_board(url))


def stats_by_bot(session: Session, url: str) -> dict[int, BotStats]:
    """Every bot's record over done matches: a GROUP BY over all seats, so kept until the
    set of done matches changes, like the ratings."""
    return revalidated(("bot_stats", url), done_token(session, url), lambda: _fresh_stats(url))


def rating_json(row: LeaderboardRow | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return rating_fields(row.elo, row.low, row.high, row.provisional, row.basis, row.reason) | {
        "matches": row.matches,
    }


def rating_fields(
    elo: float, low: float | None, high: float | None, provisional: bool, basis: str, reason: str | None
) -> dict[str, Any]:
    """A rating as the API gives it: the numbers (``low``/``high`` None on a bound's open
    side), how it was obtained, and the words of arena/ratings/terms.py."""
    return {
        "elo": round(elo, 1),
        "low": None if low is None else round(low, 1),
        "high": None if high is None else round(high, 1),
        "provisional": provisional,
        "basis": basis,
        "reason": reason,
        "why_provisional": reason_text(reason),
        "text": rating_text(elo, low, high),
    }


def ratings_by_bot(session: Session, url: str) -> dict[int, LeaderboardRow]:
    return {row.bot_id: row for row in board(session, url).rows}


def version_rating_json(rated: VersionRating | None) -> dict[str, Any] | None:
    """One version's own rating, as :func:`rating_json` gives a bot's."""
    if rated is None:
        return None
    return rating_fields(rated.elo, rated.low, rated.high, rated.provisional, rated.basis, rated.reason) | {
        "matches": rated.matches,
    }


def current_version_json(ratings: Leaderboard, bot_id: int) -> dict[str, Any] | None:
    """The bot's current version as a leaderboard row names it: its number, ``new`` while
    it has no rating of its own (it has not played, or not against rated bots), and the
    rating of its newest rated earlier version (``previous``, None if none) for reference."""
    current = ratings.current.get(bot_id)
    if current is None:
        return None
    version_id, number = current
    previous = next((v for v in ratings.by_bot.get(bot_id, ()) if v.number < number), None)
    return {
        "number": number,
        "new": version_id not in ratings.versions,
        "previous": None
        if previous is None
        else {"number": previous.number, "rating": version_rating_json(previous)},
    }


def leaderboard(session: Session, url: str) -> list[dict[str, Any]]:
    """Bots whose current version is rated, best first (its rating: each version is rated
    apart), then active bots whose current version has no rating yet (unranked: a new bot,
    or a new version that has not played)."""
    ratings = board(session, url)
    return _rows(session, url, ratings, _order(session, ratings))


def leaderboard_page(session: Session, url: str, page: Paging, q: str | None = None) -> dict[str, Any]:
    """One page of :func:`leaderboard` (ranks are the whole board's), of the rows whose bot
    or owner name holds ``q`` (lower case; checked by the caller), and where it is: ``page``,
    ``per_page``, ``total`` (rows found), ``pages``, ``q`` and ``bots`` (the whole board).
    Only the page's rows get their record and links read."""
    ratings = board(session, url)
    order = _order(session, ratings)
    shown, where = board_page(order, lambda e: (e[0][1], e[0][3]), q, page.page, page.per_page)
    return {"rows": _rows(session, url, ratings, list(shown)), **where}


#: A row's bot (id, name, status, owner name) and its rating (None: unranked).
Entry = tuple[Any, LeaderboardRow | None]


def _order(session: Session, ratings: Leaderboard) -> list[Entry]:
    bots = session.execute(
        select(Bot.id, Bot.name, Bot.status, Owner.name)
        .join(Owner, Owner.id == Bot.owner_id)
        .where(Bot.person.is_(False))  # a person's seat is on no bot board
    ).all()
    by_id = {row[0]: row for row in bots}
    order: list[Entry] = [(by_id[r.bot_id], r) for r in ratings.rows if r.bot_id in by_id]
    rated_ids = {r.bot_id for r in ratings.rows}
    order.extend(
        (bot, None)
        for bot in sorted(bots, key=lambda r: r[1])
        if bot[0] not in rated_ids and bot[2] == BotStatus.ACTIVE
    )
    return order


def _rows(session: Session, url: str, ratings: Leaderboard, entries: list[Entry]) -> list[dict[str, Any]]:
    stats = stats_by_bot(session, url)
    links = link_flags(session)
    rows: list[dict[str, Any]] = []
    for (bot_id, name, status, owner), rated in entries:
        rows.append({
            "rank": None if rated is None else rated.rank,
            "bot": name,
            "owner": owner,
            "status": status,
            "rating": rating_json(rated),
            "los_next": None if rated is None or rated.los_next is None else round(rated.los_next, 3),
            **links.get(bot_id, NOT_CONNECTED),
            **record(stats.get(bot_id)),
            "version": current_version_json(ratings, bot_id),
        })
    return rows


#: A bot that is dialled or hosted: always "online" as far as the leaderboard can tell.
NOT_CONNECTED: dict[str, Any] = {"connected": False, "online": None}


def link_flags(session: Session) -> dict[int, dict[str, Any]]:
    """For connected bots (arena/link): whether any gateway holds a connection now."""
    from arena.link.directory import link_status

    ids = list(session.scalars(select(Bot.id).where(Bot.connected.is_(True))))
    status = link_status(session, ids)
    return {i: {"connected": True, "online": i in status} for i in ids}

