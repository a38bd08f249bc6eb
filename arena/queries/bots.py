"""Bots: the list, and one bot's profile (rating history, head-to-head, faults, latency,
versions)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session, aliased

from arena.bots.registry import BotNotFoundError
from arena.queries import iso
from arena.queries.leaderboard import (
    board,
    current_version_json,
    rating_fields,
    rating_json,
    ratings_by_bot,
    stats_by_bot,
    version_rating_json,
)
from arena.queries.people import against_people
from arena.queries.stats import against_bots, bot_stats, people_kind, record, version_stats
from arena.ratings.fairplay import fair_play_check
from arena.ratings.leaderboard import rating_history
from arena.store.models import NOTICE_KINDS, Bot, BotVersion, FaultRecord, Match, MatchSeat, Owner
from arena.store.statuses import MatchStatus


def bot_list(session: Session, url: str) -> list[dict[str, Any]]:
    ratings = ratings_by_bot(session, url)
    stats = stats_by_bot(session, url)
    latest = select(BotVersion.bot_id, func.max(BotVersion.number)).group_by(BotVersion.bot_id)
    versions = dict(session.execute(latest).all())
    out = []
    for bot, owner in session.execute(
        # A person's own seat (Bot.person) is no bot to list.
        select(Bot, Owner.name)
        .join(Owner, Owner.id == Bot.owner_id)
        .where(Bot.person.is_(False))
        .order_by(Bot.name)
    ):
        rated = ratings.get(bot.id)
        out.append({
            "name": bot.name,
            "owner": owner,
            "status": bot.status,
            "hosted": bot.hosted is not None,
            "version": versions.get(bot.id),
            "rank": rated.rank if rated else None,
            "rating": rating_json(rated),
            "matches": stats[bot.id].matches if bot.id in stats else 0,
            "created_at": iso(bot.created_at),
        })
    return out


def get_bot(session: Session, name: str) -> Bot:
    bot = session.scalars(select(Bot).where(Bot.name == name)).first()
    if bot is None:
        raise BotNotFoundError(f"there is no bot named {name!r:.80}")
    return bot


def bot_detail(session: Session, url: str, name: str) -> dict[str, Any]:
    bot = get_bot(session, name)
    owner = session.get(Owner, bot.owner_id)
    ratings = board(session, url)
    rated = next((r for r in ratings.rows if r.bot_id == bot.id), None)
    by_version = version_stats(session, bot.id)
    current = ratings.current.get(bot.id)
    versions = [
        {
            "number": v.number,
            "address": v.address,
            "hosted": v.hosted,
            "connected": v.connected,
            "uploaded": v.upload_sha is not None,  # the arena runs it from its owner's upload
            "info": dict(v.info or {}),
            "created_at": iso(v.created_at),
            # Each version is rated apart; the bot's rating is its current version's.
            "current": current is not None and current[0] == v.id,
            "rating": version_rating_json(ratings.versions.get(v.id)),
            "record": record(by_version.get(v.id)),
        }
        for v in session.scalars(
            select(BotVersion).where(BotVersion.bot_id == bot.id).order_by(BotVersion.number.desc())
        )
    ]
    stats = bot_stats(session, bot_id=bot.id)
    return {
        "name": bot.name,
        "owner": owner.name if owner else None,
        "status": bot.status,
        "address": bot.address,
        "hosted": bot.hosted,
        "plays": "connected"
        if bot.connected
        else "hosted"
        if bot.hosted
        else "uploaded"
        if versions and versions[0]["uploaded"]
        else "dialled",
        "link": _link(session, bot),
        "accepts_challenges": bot.accepts_challenges,  # arena/tournaments/challenges.py
        "created_at": iso(bot.created_at),
        "rank": rated.rank if rated else None,
        "rating": rating_json(rated),  # its current version's
        "current_version": current_version_json(ratings, bot.id),
        "record": record(stats[0] if stats else None),  # every version's matches against bots
        # Its matches against people at the table, apart: unrated for bots (issue #39).
        "against_people": against_people(session, bot.id),
        "history": [
            {
                "tournament": {"id": h.tournament_id, "name": h.tournament_name},
                **rating_fields(h.elo, h.low, h.high, h.provisional, h.basis, h.reason),
                "matches": h.matches,
                "at": iso(h.finished_at),
                "version": h.version,  # the version rated (None: before ratings were per version)
            }
            for h in rating_history(session, bot_id=bot.id)
        ],
        "head_to_head": _head_to_head(session, bot.id),
        "fair_play": fair_play_check(session, bot.id).to_json(),
        "faults": _faults(session, bot.id),
        "notices": _notices(session, bot.id),
        "versions": versions,
    }


def _link(session: Session, bot: Bot) -> dict[str, Any] | None:
    """A connected bot's live connections (arena/link), None for others."""
    if not bot.connected:
        return None
    from arena.link.directory import link_status

    status = link_status(session, [bot.id]).get(bot.id)
    connections, capacity = (status.connections, status.capacity) if status else (0, 0)
    return {"online": connections > 0, "connections": connections, "capacity": capacity}


def _head_to_head(session: Session, bot_id: int) -> list[dict[str, Any]]:
    me, other = aliased(MatchSeat), aliased(MatchSeat)
    rows = session.execute(
        select(
            Bot.name,
            func.count(me.id),
            func.sum(case((me.score > other.score, 1), else_=0)),
            func.sum(case((me.score == other.score, 1), else_=0)),
            func.sum(case((me.score < other.score, 1), else_=0)),
            func.coalesce(func.sum(me.score - other.score), 0),
        )
        .select_from(me)
        .join(other, (other.match_id == me.match_id) & (other.seat != me.seat))
        .join(Match, Match.id == me.match_id)
        .join(Bot, Bot.id == other.bot_id)
        # Matches against bots only, as its record (stats.against_bots): by the match's kind,
        # not the opponent's, since a person's table seats bots beside the person, and those
        # matches are the record against people (arena/queries/people.py).
        .where(me.bot_id == bot_id, Match.status == MatchStatus.DONE, other.bot_id != bot_id, against_bots())
        .group_by(Bot.name)
        .order_by(Bot.name)
    ).all()
    out = []
    for name, n, wins, draws, losses, diff in rows:
        n = int(n)
        out.append({
            "opponent": name,
            "matches": n,
            "wins": int(wins or 0),
            "draws": int(draws or 0),
            "losses": int(losses or 0),
            "score": round((int(wins or 0) + 0.5 * int(draws or 0)) / n, 4) if n else None,
            "chip_difference": int(diff),
        })
    return out


def _faults(session: Session, bot_id: int) -> dict[str, Any]:
    """The bot's charged faults: the same count as its record's (MatchSeat.faults) and the
    leaderboard's. Notices are not faults: :func:`_notices`."""
    charged = (FaultRecord.bot_id == bot_id) & FaultRecord.kind.not_in(NOTICE_KINDS)
    # As its record: against bots (a person's matches are apart, arena/queries/people.py).
    charged = charged & FaultRecord.match_id.not_in(select(Match.id).where(people_kind()))
    kinds = dict(
        session.execute(
            select(FaultRecord.kind, func.count(FaultRecord.id)).where(charged).group_by(FaultRecord.kind)
        ).all()
    )
    by_kind = {k: int(v) for k, v in sorted(kinds.items())}
    return {"by_kind": by_kind, "total": sum(by_kind.values()), "recent": _recent(session, charged)}


def _notices(session: Session, bot_id: int) -> dict[str, Any]:
    """The bot's notices, never charged: slow lifecycle calls (StartMatch, EndHand, EndMatch
    over half their deadline; a busy host can cause them) and matches replayed after its link
    dropped (kind ``relink``)."""
    slow = (FaultRecord.bot_id == bot_id) & FaultRecord.kind.in_(NOTICE_KINDS)
    total = session.execute(select(func.count(FaultRecord.id)).where(slow)).scalar_one()
    return {"total": int(total), "charged": False, "recent": _recent(session, slow)}


def _recent(session: Session, where: ColumnElement[bool]) -> list[dict[str, Any]]:
    return [
        {
            "match": f.match_id, "hand": f.hand_index, "decision": f.decision, "kind": f.kind,
            "reason": f.reason,
        }
        for f in session.scalars(select(FaultRecord).where(where).order_by(FaultRecord.id.desc()).limit(20))
    ]
