"""Matches: the filtered, paged list and one match's page, from arena.store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from arena import store
from arena.models import Bot, BotVersion, Match, MatchSeat, Tournament
from arena.statuses import MATCH_STATUSES, MatchStatus
from dashboard.params import Paging
from dashboard.queries import iso
from dashboard.queries.cache import throttled

STATUSES = MATCH_STATUSES


@dataclass(frozen=True)
class MatchFilter:
    bot_id: int | None = None
    tournament_id: int | None = None
    status: str | None = None


def _ms(us: float | None) -> float | None:
    return None if us is None else round(us / 1000, 3)


def seat_json(seat: store.SeatRow, version: int | None = None) -> dict[str, Any]:
    return {
        "seat": seat.seat,
        "bot": seat.bot_name,
        "version": version,
        "score": seat.score,  # None until the match is done (the store sees to it)
        "hands_won": seat.hands_won,
        "decisions": seat.decisions,
        "faults": seat.faults,
        "latency_ms_mean": _ms(seat.latency_us_mean),
        "latency_ms_max": _ms(seat.latency_us_max) if seat.decisions else None,
    }


def summary(
    row: store.MatchRow | Match, tournament_name: str | None, seats: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "id": row.id,
        "tournament": {"id": row.tournament_id, "name": tournament_name},
        "key": row.key,
        "table": row.table_index,
        "status": row.status,
        "hands": row.hands,
        "hands_played": row.hands_played,
        "faults": row.faults,
        "finished_at": iso(row.finished_at),
        "seats": seats,
    }


def _seats_of(session: Session, matches: list[Match]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {m.id: [] for m in matches}
    done = {m.id for m in matches if m.status == MatchStatus.DONE}
    rows = session.execute(
        select(MatchSeat.match_id, MatchSeat.seat, Bot.name, MatchSeat.score)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .where(MatchSeat.match_id.in_(list(out)))
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    )
    for match_id, seat, name, score in rows:
        # Scores are results: hidden until the match is done.
        out[match_id].append({"seat": seat, "bot": name, "score": score if match_id in done else None})
    return out


def _tournament_names(session: Session, ids: set[int]) -> dict[int, str]:
    if not ids:
        return {}
    rows = session.execute(select(Tournament.id, Tournament.name).where(Tournament.id.in_(ids)))
    return dict(rows.all())


def _page_query(where: MatchFilter) -> Select[Any]:
    """The ids of the filtered matches, newest first, read from an index where possible:
    by bot, ix_match_seats_bot (bot_id, match_id) is already in that order."""
    if where.bot_id is not None:
        query: Select[Any] = (
            select(MatchSeat.match_id.label("id"))
            .where(MatchSeat.bot_id == where.bot_id)
            .order_by(MatchSeat.match_id.desc())
        )
        if where.status is not None or where.tournament_id is not None:
            query = query.join(Match, Match.id == MatchSeat.match_id)
    else:
        query = select(Match.id).order_by(Match.id.desc())
    if where.status is not None:
        query = query.where(Match.status == where.status)
    if where.tournament_id is not None:
        query = query.where(Match.tournament_id == where.tournament_id)
    return query


def _count(session: Session, where: MatchFilter) -> int:
    # count(*) (not count(id)) lets SQLite count index entries: 4x faster at 100,000 rows.
    query = _page_query(where).order_by(None).with_only_columns(func.count(), maintain_column_froms=True)
    return int(session.scalar(query) or 0)


def match_list(session: Session, url: str, where: MatchFilter, page: Paging) -> dict[str, Any]:
    """A page of matches, newest first.

    It reads the page's ids from an index first, then loads only those rows, and caches the
    total for a second (cache.throttled): counting with count(id) and filtering bots with an
    IN subquery took ~55 ms a page on SQLite at 100,000 matches."""
    total = throttled(("count", url, where), lambda: _count(session, where))
    ids = list(session.scalars(_page_query(where).limit(page.per_page).offset(page.offset)))
    rows: list[Match] = []
    if ids:
        matches = {m.id: m for m in session.scalars(select(Match).where(Match.id.in_(ids)))}
        rows = [matches[i] for i in ids if i in matches]
    seats = _seats_of(session, rows)
    names = _tournament_names(session, {m.tournament_id for m in rows})
    published = _deal_done(session, [m.id for m in rows if m.status == MatchStatus.DONE])
    return {
        "matches": [
            {**summary(m, names.get(m.tournament_id), seats[m.id]), "deal_done": m.id in published}
            for m in rows
        ],
        "page": page.page,
        "per_page": page.per_page,
        "total": total,
        "pages": max(1, -(-total // page.per_page)),
    }


def _deal_done(session: Session, ids: list[int]) -> set[int]:
    """The matches among ``ids`` whose whole deal is done (their replays are published)."""
    if not ids:
        return set()
    return set(session.scalars(select(Match.id).where(Match.id.in_(ids), store.deal_done_clause())))


def fault_json(f: store.FaultRow, match_id: int) -> dict[str, Any]:
    return {
        "match": match_id, "seat": f.seat, "hand": f.hand_index, "decision": f.decision,
        "kind": f.kind, "reason": f.reason,
    }


def match_detail(session: Session, match_id: int) -> dict[str, Any]:
    m = store.get_match(session, match_id)
    versions = dict(
        session.execute(
            select(BotVersion.id, BotVersion.number).where(
                BotVersion.id.in_([s.bot_version_id for s in m.seats])
            )
        ).all()
    )
    names = _tournament_names(session, {m.tournament_id})
    return {
        **summary(m, names.get(m.tournament_id), []),
        "public_id": m.public_id,  # the match id its bots were given: None until its deal is done
        "label": m.public_id,  # alias: its old name
        # Replays, the seed and the public id wait for every match dealt from the same seed.
        "deal_done": m.seed is not None,
        "deal": m.deal_index,
        "rotation": m.rotation,
        "decisions": m.decisions,
        "forfeited_seat": m.forfeited_seat,
        "attempts": m.attempts,
        "error": m.error,
        "duration_ms": m.duration_ms,
        "started_at": iso(m.started_at),
        "seed": m.seed,  # None until its deal is done (the store sees to it)
        "seats": [seat_json(s, versions.get(s.bot_version_id)) for s in m.seats],
        "fault_records": [fault_json(f, m.id) for f in m.fault_records],
        "replay": m.has_replay,
    }
