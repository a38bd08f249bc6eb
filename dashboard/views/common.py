"""Helpers shared by the page and API views."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import current_app, request
from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.bots.owners import authenticate, parse_bearer
from arena.config import Settings
from arena.play.capacity import capacities
from arena.queries.live import timing
from arena.queries.matches import STATUSES, MatchFilter
from arena.store.models import Bot, Owner, Tournament, TournamentEntry
from dashboard.errors import InvalidParameterError
from dashboard.params import MAX_ID, choice_arg, int_arg, name_arg


def db_url() -> str:
    url: str = current_app.config["DATABASE_URL"]
    return url


def tournament_timing(session: Session, tournament_id: int, progress: dict[str, Any]) -> dict[str, Any]:
    """arena.queries.live.timing with its entrants' capacities, so time left sees bottlenecks."""
    bots = session.scalars(
        select(TournamentEntry.bot_id).where(TournamentEntry.tournament_id == tournament_id)
    )
    return timing(session, tournament_id, progress, capacities(session, list(bots)))


def settings() -> Settings:
    value: Settings = current_app.config["SETTINGS"]
    return value


def match_filter(session: Session, args: Mapping[str, str]) -> MatchFilter:
    """``bot`` (a name), ``tournament`` (an id) and ``status``; unknown values are a 400."""
    bot_id = None
    name = name_arg(args, "bot")
    if name is not None:
        bot_id = session.scalar(select(Bot.id).where(Bot.name == name))
        if bot_id is None:
            raise InvalidParameterError(f"'bot': there is no bot named {name!r}")
    tournament_id = int_arg(args, "tournament", None, lo=1, hi=MAX_ID)
    if tournament_id is not None and session.get(Tournament, tournament_id) is None:
        raise InvalidParameterError(f"'tournament': there is no tournament {tournament_id}")
    status = choice_arg(args, "status", STATUSES)
    return MatchFilter(bot_id=bot_id, tournament_id=tournament_id, status=status)


def viewer(session: Session) -> Owner | None:
    """Who is asking, when the request carries a token (a wrong one is a 401), or on a page
    the owner signed in (dashboard/signin.py; never under /api, which takes tokens alone),
    else None."""
    header = request.headers.get("Authorization")
    if header is None or not header.strip():
        if request.path.startswith("/api/"):
            return None
        from dashboard.signin import signed_in

        return signed_in(session, settings())
    return authenticate(session, parse_bearer(header), settings())


def private_bot(session: Session, detail: dict[str, Any]) -> dict[str, Any]:
    """A bot's detail as the asker may see it: where the bot listens is shown only to its
    owner and operators (arena/bots/claims.py: an address is its owner's to enter)."""
    who = viewer(session)
    if who is not None and (who.is_operator or who.name == detail.get("owner")):
        return detail
    shown = {k: v for k, v in detail.items() if k != "address"}
    shown["versions"] = [{k: x for k, x in ver.items() if k != "address"} for ver in detail["versions"]]
    return shown
