"""What a ladder looks like from outside: ``tonk ladder status``, the API and the ladder page.

The board is the arena's board (arena.ratings.leaderboard.current_leaderboard: the anchored
fit with intervals, brought up to date incrementally as matches finish), narrowed to the
bots of this ladder; each row adds the bot's ladder matches and whether it plays now. The
recent matches carry the reason they were scheduled. Nothing secret is shown: no seed, and
no score (a match's page shows it once its deal is done).

The board comes whole (``tonk ladder status``) or a page at a time, searched by name (the
dashboard: 10,000 bots are too many for one page), and only the page's rows get their ladder
matches counted; :func:`ladder_version` is the cheap fingerprint the page's poll is answered
304 against.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.bots.reachability import offline_among
from arena.ladder.lease import current_holder, lease_name
from arena.ladder.scheduler import active_pool
from arena.ladder.setup import get_ladder_row, ladder_settings
from arena.link.directory import link_status
from arena.ratings.leaderboard import LeaderboardRow, board_page, current_leaderboard
from arena.ratings.terms import rating_text
from arena.store import tokens
from arena.store.models import Bot, BotOutage, Match, MatchSeat, Owner, Tournament
from arena.store.statuses import MatchStatus, TournamentKind, TournamentStatus

#: Matches listed as recent.
RECENT: Final = 30


def list_ladders(session: Session) -> list[dict[str, Any]]:
    rows = session.execute(
        select(
            Tournament.id, Tournament.name, Tournament.status, Tournament.table_sizes, Tournament.created_at
        )
        .where(Tournament.kind == TournamentKind.LADDER)
        .order_by(Tournament.id.desc())
    ).all()
    counts = _counts(session, [r.id for r in rows])
    return [
        {
            "id": r.id,
            "name": r.name,
            "status": r.status,
            "state": ladder_state(r.status, _scheduler(session, r.id)),
            "table_size": int(r.table_sizes[0]),
            "matches": counts.get(r.id, _zero()),
            "created_at": r.created_at.isoformat(timespec="seconds"),
        }
        for r in rows
    ]


def ladder_detail(
    session: Session,
    ladder_id: int,
    *,
    recent: int = RECENT,
    page: int = 1,
    per_page: int | None = None,
    q: str | None = None,
    order: BoardOrder | None = None,
) -> dict[str, Any]:
    """The ladder with its board: every row (``per_page`` None: ``tonk ladder status``) or
    page ``page`` (from 1) of ``per_page`` rows, searched by ``q`` (a lower-case part of a
    bot's or its owner's name; checked by the caller). Ranks are the board's own whatever the
    page or search; ``board_page`` says which rows these are. ``order``: the board's
    :func:`board_order`, if the caller kept it (it reads every bot: 0.2 s at 10,000)."""
    row = get_ladder_row(session, ladder_id)
    settings = ladder_settings(row)
    scheduler = _scheduler(session, ladder_id)
    order = order or board_order(session, ladder_id)
    playing = order.playing
    entries = order.entries
    shown, where = board_page(entries, lambda e: (e[0].name, e[0].owner), q, page, per_page)
    per_bot = _per_bot(session, ladder_id, None if per_page is None else [bot.id for bot, _, _ in shown])
    offline = _offline(session, [bot.id for bot, _, _ in shown if bot.id in playing])
    board = [_board_row(bot, per_bot, playing, offline) | _rating(rated, rank) for bot, rated, rank in shown]
    matches = _counts(session, [ladder_id]).get(ladder_id, _zero())
    tables = session.execute(
        select(func.count(func.distinct(Match.table_index))).where(Match.tournament_id == ladder_id)
    ).scalar_one()
    reasons = Counter(
        dict(
            session.execute(
                select(Match.reason, func.count(func.distinct(Match.table_index)))
                .where(Match.tournament_id == ladder_id)
                .group_by(Match.reason)
            ).all()
        )
    )
    return {
        "id": row.id,
        "name": row.name,
        "kind": row.kind,
        "status": row.status,
        "table_size": settings.table_size,
        "hands_per_match": settings.hands_per_match,
        "versions_per_owner": settings.versions_per_owner,
        "target": settings.target,
        "backlog": settings.backlog,
        "pool": None if settings.pool is None else sorted(_names(session, settings.pool)),
        "matchmaking": {
            k: getattr(settings.matchmaking, k) for k in settings.matchmaking.__dataclass_fields__
        },
        "scheduler": scheduler,
        "state": ladder_state(row.status, scheduler),
        "matches": matches,
        "tables": int(tables),
        "reasons": [{"reason": k or "", "tables": v} for k, v in reasons.most_common()],
        "board": board,
        "board_page": where,
        "recent": recent_matches(session, ladder_id, recent),
        "created_at": row.created_at.isoformat(timespec="seconds"),
    }


def _scheduler(session: Session, ladder_id: int) -> str:
    """Whether a scheduler (``tonk ladder run``) holds the ladder's lease now."""
    return "running" if current_holder(session, lease_name(ladder_id)) else "stopped"


def ladder_state(status: str, scheduler: str) -> str:
    """What a ladder is doing, in one word for its badge: ``running`` only while a scheduler
    holds it (a ladder whose ``tonk ladder run`` stopped is ``stopped``, though its status
    stays running), ``paused`` while paused (no scheduler takes a paused ladder's lease, so
    "scheduler stopped" there said nothing of the scheduler), else its status."""
    if status == TournamentStatus.RUNNING:
        return "running" if scheduler == "running" else "stopped"
    return str(status)


def ladder_version(session: Session, ladder_id: int) -> tuple[Hashable, ...]:
    """A cheap fingerprint of everything the ladder's page shows, for the live poll's ETag:
    it changes when the ladder's status or scheduler does, when one of its matches is added
    or changes status (its counts and newest id: the recent list, *now showing*), when any
    match is done (the ratings behind the board) and when a bot gets a version or changes
    status (who plays: the count and the sum of the ids of the bots of each status). A few
    index reads, where the board itself reads every seat. :func:`board_order` may be kept
    against it."""
    row = get_ladder_row(session, ladder_id)
    counts = _counts(session, [ladder_id]).get(ladder_id, _zero())
    newest = session.scalar(select(func.max(Match.id)).where(Match.tournament_id == ladder_id))
    bots = session.execute(
        select(Bot.status, func.count(), func.sum(Bot.id)).group_by(Bot.status).order_by(Bot.status)
    ).all()
    return (
        row.status,
        repr(row.params),
        current_holder(session, lease_name(ladder_id)) is not None,
        tuple(sorted(counts.items())),
        newest,
        tokens.done_token(session),
        tokens.versions_token(session),
        tuple((str(status), int(n), int(ids or 0)) for status, n, ids in bots),
        _reachability(session),
    )


def _reachability(session: Session) -> tuple[Hashable, ...]:
    """Which connected bots have a live connection and which dialled bots are down: a bot
    going offline or coming back changes who plays (the board's "Plays")."""
    connected = list(session.scalars(select(Bot.id).where(Bot.connected.is_(True))))
    down = session.scalars(select(BotOutage.bot_id).order_by(BotOutage.bot_id))
    return tuple(sorted(link_status(session, connected))), tuple(down)


def _offline(session: Session, ids: list[int]) -> set[int]:
    """Those of ``ids`` the scheduler gives no new table for want of an answer: a connected bot
    with no live connection, a dialled bot found offline (arena.play.capacity, live)."""
    if not ids:
        return set()
    connected = set(session.scalars(select(Bot.id).where(Bot.id.in_(ids), Bot.connected.is_(True))))
    return (connected - set(link_status(session, connected))) | offline_among(session, ids)


#: A board row's bot (id, name, status, owner), its rating and its rank on this ladder's board
#: (both None: unrated). The rank is kept beside the arena's row, not copied into it: a copy of
#: every row was 10,000 ``dataclasses.replace`` calls each time the board was read again.
Entry = tuple[Any, LeaderboardRow | None, int | None]


@dataclass(frozen=True)
class BoardOrder:
    """A ladder's whole board before paging: the bots that play now, and every row's bot and
    rating in the board's order. Plain rows (no ORM objects), so it may be kept."""

    playing: frozenset[int]
    entries: tuple[Entry, ...]


def board_order(session: Session, ladder_id: int) -> BoardOrder:
    settings = ladder_settings(get_ladder_row(session, ladder_id))
    playing = frozenset(b.bot_id for b in active_pool(session, settings))
    return BoardOrder(playing, tuple(_board_order(session, ladder_id, playing)))


def _board_order(session: Session, ladder_id: int, playing: frozenset[int]) -> list[Entry]:
    """The ladder's bots (those that play now and those that have played on it) in the
    board's order: rated ones as the arena's board ranks them, ranked again 1 to n among
    themselves, then the unrated by name."""
    seated = set(
        session.scalars(
            select(MatchSeat.bot_id)
            .join(Match, Match.id == MatchSeat.match_id)
            .where(Match.tournament_id == ladder_id)
            .distinct()
        )
    )
    members = playing | seated
    # Every bot, filtered here: an IN list of every member would pass 10,000 parameters.
    bots = {
        b.id: b
        for b in session.execute(
            select(Bot.id, Bot.name, Bot.status, Owner.name.label("owner"))
            .join(Owner, Owner.id == Bot.owner_id)
        )
        if b.id in members
    }
    order: list[Entry] = []
    for r in current_leaderboard(session).rows:
        if r.bot_id in bots:
            # The ladder's own rank, 1 to n down its board: the arena's read 1, 2, 5, 6, 7 on
            # a ladder without the arena's 3rd and 4th (issue #40); `/` shows the arena's.
            order.append((bots.pop(r.bot_id), r, len(order) + 1))
    order.extend((bot, None, None) for bot in sorted(bots.values(), key=lambda b: b.name))
    return order


def _per_bot(session: Session, ladder_id: int, ids: list[int] | None) -> dict[int, Counter[str]]:
    """Each bot's ladder matches by status: of the bots ``ids`` (a page), or of all."""
    query = (
        select(MatchSeat.bot_id, Match.status, func.count())
        .join(Match, Match.id == MatchSeat.match_id)
        .where(Match.tournament_id == ladder_id)
        .group_by(MatchSeat.bot_id, Match.status)
    )
    if ids is not None:
        if not ids:
            return {}
        query = query.where(MatchSeat.bot_id.in_(ids))
    per_bot: dict[int, Counter[str]] = {}
    for bot, status, count in session.execute(query):
        per_bot.setdefault(bot, Counter())[status] += count
    return per_bot


def _rating(r: LeaderboardRow | None, rank: int | None) -> dict[str, Any]:
    if r is None:
        return {"rank": None, "elo": None, "low": None, "high": None, "provisional": True,
                "rating_text": "unrated"}  # fmt: skip
    return {
        "rank": rank,
        "elo": round(r.elo, 1),
        "low": None if r.low is None else round(r.low, 1),
        "high": None if r.high is None else round(r.high, 1),
        "provisional": r.provisional,
        "rating_text": rating_text(r.elo, r.low, r.high),
    }


def recent_matches(session: Session, ladder_id: int, limit: int = RECENT) -> list[dict[str, Any]]:
    """The ladder's latest matches, newest first, with their seats and reason (no scores)."""
    rows = session.execute(
        select(Match.id, Match.table_index, Match.rotation, Match.status, Match.reason, Match.finished_at)
        .where(Match.tournament_id == ladder_id)
        .order_by(Match.id.desc())
        .limit(limit)
    ).all()
    seats: dict[int, list[str]] = {r.id: [] for r in rows}
    for match_id, name in session.execute(
        select(MatchSeat.match_id, Bot.name)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .where(MatchSeat.match_id.in_(list(seats)))
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    ):
        seats[match_id].append(name)
    return [
        {
            "id": r.id,
            "table": r.table_index,
            "rotation": r.rotation,
            "status": r.status,
            "reason": r.reason,
            "seats": seats[r.id],
            "finished_at": None if r.finished_at is None else r.finished_at.isoformat(timespec="seconds"),
        }
        for r in rows
    ]


def _board_row(
    bot: Any, per_bot: dict[int, Counter[str]], playing: frozenset[int], offline: set[int]
) -> dict[str, Any]:
    counts = per_bot.get(bot.id, Counter())
    return {
        "bot": bot.name,
        "owner": bot.owner,
        "status": bot.status,
        # In the pool and answering: it gets new tables. In the pool but unreachable: none
        # until it answers again (its tables already made still play).
        "playing": bot.id in playing and bot.id not in offline,
        "offline": bot.id in playing and bot.id in offline,
        "ladder_matches": sum(counts.values()),
        "ladder_done": counts.get(MatchStatus.DONE, 0),
        "ladder_waiting": counts.get(MatchStatus.PENDING, 0) + counts.get(MatchStatus.RUNNING, 0),
    }


def _zero() -> dict[str, int]:
    return {"total": 0, **{s.value: 0 for s in MatchStatus}}


def _counts(session: Session, ids: list[int]) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    if not ids:
        return out
    for tid, status, count in session.execute(
        select(Match.tournament_id, Match.status, func.count())
        .where(Match.tournament_id.in_(ids))
        .group_by(Match.tournament_id, Match.status)
    ):
        entry = out.setdefault(tid, _zero())
        entry[status] = entry.get(status, 0) + count
        entry["total"] += count
    return out


def _names(session: Session, ids: tuple[int, ...]) -> list[str]:
    return list(session.scalars(select(Bot.name).where(Bot.id.in_(list(ids)))))
