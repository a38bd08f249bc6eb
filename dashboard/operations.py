"""Operator actions on tournaments, and an owner's own sequential test: the dashboard
authenticates, checks the request body and reports; arena/tournaments/lifecycle.py builds and
steps tournaments (arena/tournaments/owner_sprt.py an owner's test), arena/runtime/driver.py
runs them.

Matches go to the app's backend (``TOURNAMENT_BACKEND`` in the config, else RQ when
``TONK_REDIS_URL`` is set, else a local process pool), made once per process. Nobody stays
to drive a tournament started here, so the process that started one keeps sweeping the
running tournaments (arena.runtime.driver.Sweeper; ``tonk dashboard`` from the start, so that one
restarted takes up what its predecessor left). ``TOURNAMENT_SWEEP_S`` sets its period (0:
none; the default is none for a ``TOURNAMENT_BACKEND`` passed in, which is the caller's).
"""

from __future__ import annotations

import threading
from typing import Any

from flask import Flask
from sqlalchemy.orm import Session

from arena.config import Settings
from arena.queries.tournaments import get_tournament
from arena.runtime.backends import Backend, make_backend
from arena.runtime.driver import RECOVER_S, Sweeper, run_tournament
from arena.store.models import Owner
from arena.store.statuses import TournamentKind, TournamentStatus
from arena.tournaments import lifecycle as tournaments
from arena.tournaments import owner_sprt
from arena.tournaments.sprt import sprt_params, sprt_state
from dashboard.errors import InvalidParameterError
from sdk.errors import RulesError
from sdk.rules import Rules

_backend_lock = threading.Lock()
SPRT_FIELDS = frozenset(("elo0", "elo1", "alpha", "beta", "batch", "max_pairs"))
CREATE_FIELDS = frozenset(
    (
        "name", "bots", "table_sizes", "deals_per_table", "hands_per_match", "seed", "rules", "config",
        "deal_mode", "kind", "sprt",
    )
)

#: Field names older clients send, and what they mean now.
FIELD_ALIASES = {"matches_per_table": "deals_per_table"}  # alias: it always counted deals


def backend(app: Flask, settings: Settings) -> Backend:
    with _backend_lock:
        made: Backend | None = app.extensions.get("tonk_backend")
        if made is None:
            made = app.config.get("TOURNAMENT_BACKEND") or make_backend(settings)
            app.extensions["tonk_backend"] = made
        return made


def start_sweeper(app: Flask, settings: Settings) -> Sweeper | None:
    """The app's Sweeper, started on first use (None when the config turns it off)."""
    default = 0.0 if app.config.get("TOURNAMENT_BACKEND") else RECOVER_S
    interval = float(app.config.get("TOURNAMENT_SWEEP_S", default))
    if interval <= 0:
        return None
    with _backend_lock:
        sweeper: Sweeper | None = app.extensions.get("tonk_sweeper")
        if sweeper is None:
            sweeper = Sweeper(app.config["DATABASE_URL"], lambda: backend(app, settings), interval).start()
            app.extensions["tonk_sweeper"] = sweeper
        return sweeper


def close_backend(app: Flask) -> None:
    """Stop the app's Sweeper and the backend this app made (its pool's processes; matches
    under way are abandoned and replayed when the tournament is resumed). A backend passed
    in the config is the caller's to close."""
    with _backend_lock:
        sweeper: Sweeper | None = app.extensions.pop("tonk_sweeper", None)
    if sweeper is not None:
        sweeper.stop()
    with _backend_lock:
        made: Backend | None = app.extensions.pop("tonk_backend", None)
    if made is not None and made is not app.config.get("TOURNAMENT_BACKEND"):
        made.close(cancel=True)


def _field(body: dict[str, Any], key: str, kind: type, *, required: bool = True) -> Any:
    value = body.get(key)
    if value is None and not required:
        return None
    if kind is int and (type(value) is not int):
        raise InvalidParameterError(f"'{key}' must be a whole number, got {value!r:.60}")
    if kind is not int and not isinstance(value, kind):
        raise InvalidParameterError(f"'{key}' must be a {kind.__name__}, got {value!r:.60}")
    return value


def _unalias(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with old field names under their new ones; both given is an error."""
    out = dict(body)
    for old, new in FIELD_ALIASES.items():
        if old in out:
            if new in out:
                raise InvalidParameterError(f"give {new!r} or its old name {old!r}, not both")
            out[new] = out.pop(old)
    return out


def create(session: Session, body: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """``{name, bots: [names], table_sizes: [n...], deals_per_table, hands_per_match,
    seed?, rules?, config?, deal_mode?, kind?, sprt?}`` -> the new tournament (created, not
    started). ``deal_mode``: ``auto`` (default), ``duplicate`` or ``independent``. ``kind``:
    ``round-robin`` (default), ``gauntlet`` (``bots[0]`` at every table) or ``sprt`` (``bots``
    = [V2, V1], ``table_sizes`` [2], ``sprt`` = {elo0, elo1, alpha?, beta?, batch?, max_pairs?})."""
    body = _unalias(body)
    unknown = sorted(set(body) - CREATE_FIELDS)
    if unknown:
        raise InvalidParameterError(
            f"unknown field {unknown[0]!r}; known fields: {', '.join(sorted(CREATE_FIELDS))}"
        )
    bots = _field(body, "bots", list)
    if not all(isinstance(b, str) for b in bots):
        raise InvalidParameterError("'bots' must be a list of bot names")
    sizes = _field(body, "table_sizes", list)
    try:
        rules = Rules.from_json(body.get("rules"))
    except RulesError as exc:
        raise InvalidParameterError(f"'rules': {exc}") from None
    config = _field(body, "config", dict, required=False)
    kind = _field(body, "kind", str, required=False) or TournamentKind.ROUND_ROBIN
    test = _field(body, "sprt", dict, required=False)
    sprt = None
    if kind == TournamentKind.SPRT:
        fields = test or {}
        unknown = sorted(set(fields) - SPRT_FIELDS)
        if unknown:
            known = ", ".join(sorted(SPRT_FIELDS))
            raise InvalidParameterError(f"unknown sprt field {unknown[0]!r}; known: {known}")
        missing = sorted({"elo0", "elo1"} - set(fields))
        if missing:
            raise InvalidParameterError(f"'sprt' needs {' and '.join(missing)}, got {fields!r:.80}")
        sprt = sprt_params(**fields)
    tournament = tournaments.create_tournament(
        session,
        name=_field(body, "name", str),
        bot_ids=tournaments.resolve_bots(session, bots),
        table_sizes=sizes,
        deals_per_table=_field(body, "deals_per_table", int),
        hands_per_match=_field(body, "hands_per_match", int),
        seed=_field(body, "seed", int, required=False),
        rules=rules,
        settings=settings,
        config=config,
        deal_mode=_field(body, "deal_mode", str, required=False) or "auto",
        kind=kind,
        sprt=sprt,
    )
    return summary(session, tournament.id)


def start_sprt(app: Flask, session: Session, owner: Owner, body: dict[str, Any], settings: Settings) -> int:
    """An owner's own sequential test (arena/tournaments/owner_sprt.py), created and started at
    once, as the operator's ``run`` does; its tournament id."""
    tournament = owner_sprt.start_sprt(session, owner, body, settings)
    run(app, session, tournament.id, settings, resume=False)
    return tournament.id


def sprt_summary(session: Session, tournament_id: int) -> dict[str, Any]:
    """A test's summary with its state (LLR, bounds, estimate, verdict)."""
    row = tournaments.get_tournament_row(session, tournament_id)
    return {**summary(session, tournament_id), "sprt": sprt_state(session, row).to_json()}


def summary(session: Session, tournament_id: int) -> dict[str, Any]:
    t = get_tournament(session, tournament_id)
    return {"id": t.id, "name": t.name, "status": t.status, "matches": t.progress.to_json()}


def pause(session: Session, tournament_id: int) -> dict[str, Any]:
    tournaments.pause_tournament(session, tournament_id)
    return summary(session, tournament_id)


def run(
    app: Flask, session: Session, tournament_id: int, settings: Settings, *, resume: bool
) -> dict[str, Any]:
    """Start (or resume) the tournament and queue its unfinished matches; returns at once."""
    t = tournaments.get_tournament_row(session, tournament_id)
    if resume and t.status != TournamentStatus.PAUSED:
        raise tournaments.TournamentStateError(
            f"tournament {tournament_id} is {t.status}, not paused; there is nothing to resume"
        )
    if t.status == TournamentStatus.FINISHED:
        raise tournaments.TournamentStateError(
            f"tournament {tournament_id} is finished; extend it to play more"
        )
    session.commit()  # run_tournament uses its own sessions
    run_tournament(app.config["DATABASE_URL"], tournament_id, backend(app, settings), wait=False)
    start_sweeper(app, settings)  # no driver stays: this process keeps it going
    session.expire_all()
    return summary(session, tournament_id)
