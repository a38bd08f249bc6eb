"""Matches: the filtered, paged list and one match's page (seats, faults, replay)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.models import Bot, BotVersion, FaultRecord, Match, MatchSeat, Replay, Tournament
from dashboard.errors import NotFinishedError, NotFoundError
from dashboard.params import Paging
from dashboard.queries import iso

STATUSES = ("pending", "running", "done", "failed")


@dataclass(frozen=True)
class MatchFilter:
    bot_id: int | None = None
    tournament_id: int | None = None
    status: str | None = None


def _filtered(query: Any, where: MatchFilter) -> Any:  # any Select over matches
    if where.tournament_id is not None:
        query = query.where(Match.tournament_id == where.tournament_id)
    if where.status is not None:
        query = query.where(Match.status == where.status)
    if where.bot_id is not None:
        # ix_match_seats_bot (bot_id, match_id) answers this without touching the seats table.
        query = query.where(
            Match.id.in_(select(MatchSeat.match_id).where(MatchSeat.bot_id == where.bot_id))
        )
    return query


def _ms(us: float) -> float:
    return round(us / 1000, 3)


def fault_json(f: FaultRecord) -> dict[str, Any]:
    return {
        "match": f.match_id, "seat": f.seat, "hand": f.hand_index, "decision": f.decision,
        "kind": f.kind, "reason": f.reason,
    }


def summary(row: Any, seats: list[dict[str, Any]]) -> dict[str, Any]:
    done = row.status == "done"
    return {
        "id": row.id,
        "tournament": {"id": row.tournament_id, "name": row.tournament_name},
        "key": row.key,
        "table": row.table_index,
        "status": row.status,
        "hands": row.hands,
        "hands_played": row.hands_played,
        "faults": row.faults,
        "finished_at": iso(row.finished_at),
        "seats": [
            {**s, "score": s["score"] if done else None} for s in seats
        ],
    }


def _seats_of(session: Session, match_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {m: [] for m in match_ids}
    if not match_ids:
        return out
    rows = session.execute(
        select(MatchSeat.match_id, MatchSeat.seat, Bot.name, MatchSeat.score)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .where(MatchSeat.match_id.in_(match_ids))
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    )
    for match_id, seat, name, score in rows:
        out[match_id].append({"seat": seat, "bot": name, "score": score})
    return out


_COLUMNS = (
    Match.id, Match.tournament_id, Tournament.name.label("tournament_name"), Match.key,
    Match.table_index, Match.status, Match.hands, Match.hands_played, Match.faults,
    Match.finished_at,
)


def match_list(session: Session, where: MatchFilter, page: Paging) -> dict[str, Any]:
    total = session.execute(_filtered(select(func.count(Match.id)), where)).scalar_one()
    listing = select(*_COLUMNS).join(Tournament, Tournament.id == Match.tournament_id)
    query = (
        _filtered(listing, where)
        .order_by(Match.id.desc())
        .limit(page.per_page)
        .offset(page.offset)
    )
    rows = session.execute(query).all()
    seats = _seats_of(session, [r.id for r in rows])
    pages = max(1, -(-total // page.per_page))
    return {
        "matches": [summary(r, seats[r.id]) for r in rows],
        "page": page.page,
        "per_page": page.per_page,
        "total": total,
        "pages": pages,
    }


def get_match(session: Session, match_id: int) -> Match:
    match = session.get(Match, match_id)
    if match is None:
        raise NotFoundError(f"there is no match {match_id}")
    return match


def match_detail(session: Session, match_id: int) -> dict[str, Any]:
    match = get_match(session, match_id)
    done = match.status == "done"
    tournament = session.get(Tournament, match.tournament_id)
    seat_rows = session.execute(
        select(MatchSeat, Bot.name, BotVersion.number)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .join(BotVersion, BotVersion.id == MatchSeat.bot_version_id)
        .where(MatchSeat.match_id == match_id)
        .order_by(MatchSeat.seat)
    ).all()
    seats = []
    for seat, name, version in seat_rows:
        seats.append({
            "seat": seat.seat,
            "bot": name,
            "version": version,
            "score": seat.score if done else None,
            "hands_won": seat.hands_won,
            "decisions": seat.decisions,
            "faults": seat.faults,
            "latency_ms_mean": _ms(seat.latency_us_total / seat.decisions) if seat.decisions else None,
            "latency_ms_max": _ms(seat.latency_us_max) if seat.decisions else None,
        })
    faults = []
    if done:
        for f in session.scalars(
            select(FaultRecord).where(FaultRecord.match_id == match_id).order_by(FaultRecord.id)
        ):
            faults.append(fault_json(f))
    has_replay = done and session.get(Replay, match_id) is not None
    return {
        "id": match.id,
        "tournament": {"id": match.tournament_id, "name": tournament.name if tournament else None},
        "key": match.key,
        "table": match.table_index,
        "deal": match.deal_index,
        "rotation": match.rotation,
        "status": match.status,
        "hands": match.hands,
        "hands_played": match.hands_played,
        "decisions": match.decisions,
        "faults": match.faults,
        "forfeited_seat": match.forfeited_seat,
        "error": match.error if match.status == "failed" else None,
        "duration_ms": match.duration_ms,
        "created_at": iso(match.created_at),
        "started_at": iso(match.started_at),
        "finished_at": iso(match.finished_at),
        # Seeds re-deal every hand: secret until the match is over.
        "seed": match.seed if done else None,
        "seats": seats,
        "fault_records": faults,
        "replay": has_replay,
    }


def require_done(match: Match) -> None:
    if match.status != "done":
        raise NotFinishedError(
            f"match {match.id} is {match.status}; its replay is published when it is done"
        )
