"""An owner's own sequential test: "is my V2 better than my V1?" asked through the API
(``POST /api/v1/sprt``, ``tonk sprt V2 V1 --arena URL``), within bounds the operator sets.

An owner may test two of their own active bots against each other; an operator any two. The
test is the arena's ``sprt`` tournament (arena/tournaments/sprt.py), recorded with the owner who
started it (``tournaments.owner_id``), so that:

- its size is bounded: ``max_pairs`` at most ``TONK_SPRT_MAX_PAIRS``, ``hands_per_match`` at
  most ``TONK_SPRT_MAX_HANDS`` (400 ``sprt_limit``, naming the bound);
- an owner runs at most ``TONK_SPRT_MAX_RUNNING`` tests at once and starts at most
  ``TONK_SPRT_MAX_PER_DAY`` in 24 hours (429 ``sprt_limit``);
- only its owner (or an operator) may stop it (:func:`stop_sprt`: the test pauses, keeping
  its pairs; ``stopped`` in its state).

Operators are not bound by these limits: they run the arena's hardware. A refusal changes
nothing: every check is made before the tournament is created, under a lock on the owner's
row, so two requests at once cannot both take the last running slot.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.config import Settings
from arena.errors import ArenaError, NotFoundError, PermissionDeniedError
from arena.store.db import lock_row
from arena.store.models import Bot, Owner, Tournament
from arena.store.statuses import BotStatus, TournamentKind, TournamentStatus
from arena.tournaments.layout import check_count, locked_tournament, owners_count
from arena.tournaments.lifecycle import (
    InvalidTournamentError,
    TournamentStateError,
    create_tournament,
    get_tournament_row,
    pause_tournament,
)
from arena.tournaments.settings import MAX_HANDS
from arena.tournaments.sprt import DEFAULT_MAX_PAIRS, sprt_params

__all__ = ["FIELDS", "SprtLimitError", "SprtNotFoundError", "SprtRateError", "start_sprt", "stop_sprt"]

#: The fields of ``POST /api/v1/sprt``: the two bots, then the test's parameters.
FIELDS = frozenset(("new", "old", "elo0", "elo1", "alpha", "beta", "batch", "hands_per_match", "max_pairs"))
#: What a field left out means (the operator's ``tonk sprt`` has the same defaults).
DEFAULTS: dict[str, Any] = {"elo0": 0.0, "elo1": 20.0, "alpha": 0.05, "beta": 0.05, "batch": 8,
                            "hands_per_match": 20}  # fmt: skip


class SprtLimitError(ArenaError):
    """A test larger than the operator allows (the bound is named)."""

    code = "sprt_limit"


class SprtRateError(ArenaError):
    """Too many tests running, or started today, for one owner."""

    status = 429
    code = "sprt_limit"


class SprtNotFoundError(NotFoundError):
    """No such bot among the caller's own (whether another owner has one is not said)."""

    code = "bot_not_found"


def _number(body: dict[str, Any], key: str, *, whole: bool = False) -> Any:
    value = body.get(key, DEFAULTS.get(key))
    ok = isinstance(value, int) if whole else isinstance(value, int | float)
    if isinstance(value, bool) or not ok:
        kind = "a whole number" if whole else "a number"
        raise InvalidTournamentError(f"'{key}' must be {kind}, got {value!r:.60}")
    return value


def _bot(session: Session, owner: Owner, body: dict[str, Any], key: str) -> Bot:
    name = body.get(key)
    if not isinstance(name, str) or not name.strip() or len(name) > 64 or "\x00" in name:
        raise InvalidTournamentError(f"'{key}' must be a bot name, got {name!r:.60}")
    query = select(Bot).where(Bot.name == name.strip(), Bot.status == BotStatus.ACTIVE, Bot.person.is_(False))
    if not owner.is_operator:  # another owner's bot is answered exactly as a missing one
        query = query.where(Bot.owner_id == owner.id)
    bot = session.scalars(query).first()
    if bot is None:
        whose = "" if owner.is_operator else "you have "
        raise SprtNotFoundError(f"{whose}no active bot named {name.strip()!r:.70}")
    return bot


def _check_bounds(session: Session, owner: Owner, pairs: int, hands: int, settings: Settings) -> None:
    if pairs > settings.sprt_max_pairs:
        raise SprtLimitError(
            f"'max_pairs' {pairs} is over this arena's limit of {settings.sprt_max_pairs} pairs "
            "per test (TONK_SPRT_MAX_PAIRS)"
        )
    if hands > settings.sprt_max_hands:
        raise SprtLimitError(
            f"'hands_per_match' {hands} is over this arena's limit of {settings.sprt_max_hands} "
            "hands per match (TONK_SPRT_MAX_HANDS)"
        )
    lock_row(session, Owner, owner.id)  # two requests at once are counted one after the other
    running = owners_count(session, owner.id, TournamentKind.SPRT, live=True)
    if running >= settings.sprt_max_running:
        raise SprtRateError(
            f"you have {running} test(s) running; this arena allows {settings.sprt_max_running} at once "
            "(TONK_SPRT_MAX_RUNNING): wait for it to decide, or stop it (tonk sprt --stop ID)"
        )
    if settings.sprt_max_per_day:
        today = owners_count(session, owner.id, TournamentKind.SPRT, since_hours=24)
        if today >= settings.sprt_max_per_day:
            raise SprtRateError(
                f"you have started {today} tests in the last 24 hours; this arena allows "
                f"{settings.sprt_max_per_day} (TONK_SPRT_MAX_PER_DAY)"
            )


def start_sprt(session: Session, owner: Owner, body: dict[str, Any], settings: Settings) -> Tournament:
    """Create (not start) the test ``body`` asks for, ``new`` (V2) against ``old`` (V1), both
    the owner's active bots; refused with nothing written when a field or a bound is wrong.
    Flushes, does not commit."""
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        known = ", ".join(sorted(FIELDS))
        raise InvalidTournamentError(f"unknown field {unknown[0]!r:.40}; known fields: {known}")
    new, old = _bot(session, owner, body, "new"), _bot(session, owner, body, "old")
    if new.id == old.id:
        raise InvalidTournamentError(f"'new' and 'old' are the same bot ({new.name!r}): test two versions")
    hands = _number(body, "hands_per_match", whole=True)
    check_count("hands_per_match", hands, MAX_HANDS)  # before the owner's bound is weighed
    # ``max_pairs`` left out: the default, or the operator's bound if lower.
    cap = DEFAULT_MAX_PAIRS if owner.is_operator else min(DEFAULT_MAX_PAIRS, settings.sprt_max_pairs)
    batch = _number(body, "batch", whole=True)
    max_pairs = body.get("max_pairs", max(cap, batch) if isinstance(batch, int) else cap)
    params = sprt_params(
        _number(body, "elo0"), _number(body, "elo1"), _number(body, "alpha"), _number(body, "beta"),
        batch, max_pairs,
    )
    if not owner.is_operator:
        _check_bounds(session, owner, params["max_pairs"], hands, settings)
    tournament = create_tournament(
        session,
        name=f"{new.name} vs {old.name}",
        bot_ids=[new.id, old.id],
        table_sizes=[2],
        deals_per_table=params["batch"],
        hands_per_match=hands,
        settings=settings,
        kind=TournamentKind.SPRT,
        sprt=params,
    )
    tournament.owner_id = owner.id
    session.flush()
    return tournament


def stop_sprt(session: Session, owner: Owner, tournament_id: int) -> Tournament:
    """Stop a test: no more pairs start (those being played finish and count); it stays
    paused, with ``stopped`` in its parameters. Its owner or an operator only; a test already
    stopped or paused is left as it is."""
    tournament = get_tournament_row(session, tournament_id)
    if tournament.kind != TournamentKind.SPRT:
        raise InvalidTournamentError(f"tournament {tournament_id} is not a sequential test")
    if not owner.is_operator and tournament.owner_id != owner.id:
        raise PermissionDeniedError(f"tournament {tournament_id} is not a test you started")
    tournament = locked_tournament(session, tournament_id)
    if tournament.status == TournamentStatus.FINISHED:
        raise TournamentStateError(f"test {tournament_id} has finished: there is nothing to stop")
    if tournament.status != TournamentStatus.PAUSED:
        pause_tournament(session, tournament_id)
    tournament.params = {**(tournament.params or {}), "stopped": True}
    session.flush()
    return tournament
