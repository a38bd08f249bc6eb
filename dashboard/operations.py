"""Operator actions on tournaments, delegated to arena/tournaments.py (arena core).

The dashboard only authenticates, parses and reports; creating, scheduling and running
tournaments is the arena's job. While that module is missing, these answer 503.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from arena.config import Settings
from arena.models import Owner
from dashboard.errors import UnavailableError
from dashboard.queries.tournaments import get_tournament, progress


def _arena_tournaments() -> Any:
    try:
        from arena import tournaments
    except ImportError:
        raise UnavailableError("tournament management is not installed on this arena") from None
    return tournaments


def create_tournament(
    session: Session, operator: Owner, spec: dict[str, Any], settings: Settings
) -> dict[str, Any]:
    module = _arena_tournaments()
    tournament = module.create_tournament(session, spec, settings=settings)
    return {"id": tournament.id, "name": tournament.name, "status": tournament.status}


def tournament_action(
    session: Session, tournament_id: int, action: str, settings: Settings
) -> dict[str, Any]:
    tournament = get_tournament(session, tournament_id)
    module = _arena_tournaments()
    getattr(module, f"{action}_tournament")(session, tournament, settings=settings)
    session.flush()
    return progress(session, tournament_id)
