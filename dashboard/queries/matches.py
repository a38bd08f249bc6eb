"""Matches: the filtered, paged list and one match's page, from arena.store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena import store
from arena.models import BotVersion, Tournament
from dashboard.params import Paging
from dashboard.queries import iso

STATUSES = store.MATCH_STATUSES


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


def summary(row: store.MatchRow, tournament_name: str | None) -> dict[str, Any]:
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
        "seats": [{"seat": s.seat, "bot": s.bot_name, "score": s.score} for s in row.seats],
    }


def _tournament_names(session: Session, ids: set[int]) -> dict[int, str]:
    if not ids:
        return {}
    rows = session.execute(select(Tournament.id, Tournament.name).where(Tournament.id.in_(ids)))
    return dict(rows.all())


def match_list(session: Session, where: MatchFilter, page: Paging) -> dict[str, Any]:
    result = store.list_matches(
        session,
        tournament_id=where.tournament_id,
        bot_id=where.bot_id,
        status=where.status,
        limit=page.per_page,
        offset=page.offset,
    )
    names = _tournament_names(session, {m.tournament_id for m in result.items})
    return {
        "matches": [summary(m, names.get(m.tournament_id)) for m in result.items],
        "page": page.page,
        "per_page": page.per_page,
        "total": result.total,
        "pages": max(1, -(-result.total // page.per_page)),
    }


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
        **summary(m, names.get(m.tournament_id)),
        "label": m.label,
        "deal": m.deal_index,
        "rotation": m.rotation,
        "decisions": m.decisions,
        "forfeited_seat": m.forfeited_seat,
        "attempts": m.attempts,
        "error": m.error,
        "duration_ms": m.duration_ms,
        "started_at": iso(m.started_at),
        "seed": m.seed,  # None until the match is done (the store sees to it)
        "seats": [seat_json(s, versions.get(s.bot_version_id)) for s in m.seats],
        "fault_records": [fault_json(f, m.id) for f in m.fault_records],
        "replay": m.has_replay,
    }
