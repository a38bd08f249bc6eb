"""Creating a ladder, and its pause and resume (the tournament life cycle's, for a ladder).

A ladder is a ``tournaments`` row of kind ``ladder``: ``table_sizes`` holds its one table
size, ``deals_per_table`` is 1 (each of its tables is one deal, played in duplicate) and
``params`` its :class:`~arena.ladder.settings.LadderSettings`. It has no matches when created:
arena/ladder/scheduler.py adds them table by table for as long as it runs, and it never
finishes by itself (arena.tournaments.lifecycle.finish_if_complete leaves it running).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.config import Settings
from arena.errors import NotFoundError
from arena.ladder.settings import InvalidLadderError, LadderSettings
from arena.store.models import Bot, Tournament
from arena.store.secrets import arena_secret
from arena.store.statuses import BotStatus, TournamentKind, TournamentStatus
from arena.text import clean_text
from arena.tournaments.layout import keyed_seed
from arena.tournaments.lifecycle import _check_seed_free, pause_tournament, start_tournament
from arena.tournaments.settings import TournamentSettings, rules_to_column
from sdk.dealing import SEED_LIMIT, new_seed
from sdk.rules import STANDARD

__all__ = ["LadderNotFoundError", "create_ladder", "get_ladder_row", "pause_ladder", "resume_ladder"]


class LadderNotFoundError(NotFoundError):
    code = "ladder_not_found"


def create_ladder(
    session: Session,
    *,
    name: str,
    raw: Mapping[str, Any],
    settings: Settings | None = None,
    config: Mapping[str, object] | None = None,
    seed: int | None = None,
    start: bool = True,
) -> Tournament:
    """Create a ladder from an operator's request (``raw``: LadderSettings.parse's keys),
    running unless ``start`` is False. ``config`` overrides the referee settings as for a
    tournament. Flushes, does not commit."""
    if (
        not isinstance(name, str)
        or not name.strip()
        or len(name) > 128
        or clean_text(name, 128) != name.strip()
    ):
        raise InvalidLadderError(
            f"a ladder name is 1 to 128 characters without control characters, got {name!r:.80}"
        )
    ladder = LadderSettings.parse(raw)
    if ladder.pool is not None:
        bots = select(Bot.id, Bot.status).where(Bot.id.in_(ladder.pool), Bot.person.is_(False))
        rows = dict(session.execute(bots).all())
        missing = [b for b in ladder.pool if b not in rows]
        if missing:
            raise InvalidLadderError(f"no bot with id {', '.join(map(repr, missing))}")
        retired = [b for b in ladder.pool if rows[b] != BotStatus.ACTIVE]
        if retired:
            raise InvalidLadderError(f"retired bots cannot enter: ids {', '.join(map(repr, retired))}")
    if seed is not None and (type(seed) is not int or not 0 <= seed < SEED_LIMIT):
        raise InvalidLadderError(f"a seed is an integer from 0 to 2**64 - 1, got {seed!r:.40}")
    # As a tournament's: the given seed keyed with the arena's deal secret, and dealt once
    # (docs/dealing.md, "Seeds in the arena").
    dealt = keyed_seed(arena_secret(session, "deal"), new_seed() if seed is None else seed)
    _check_seed_free(session, dealt, seed)
    referee = TournamentSettings.parse(config, settings or Settings())
    tournament = Tournament(
        name=name.strip(),
        seed=dealt,
        status=TournamentStatus.RUNNING if start else TournamentStatus.CREATED,
        table_sizes=[ladder.table_size],
        deals_per_table=1,
        hands_per_match=ladder.hands_per_match,
        rules=rules_to_column(STANDARD),
        config=referee.to_column(),
        deal_mode="auto",  # duplicate only among bots whose memory the arena controls
        kind=TournamentKind.LADDER,
        params=ladder.to_params(),
    )
    session.add(tournament)
    session.flush()
    return tournament


def get_ladder_row(session: Session, ladder_id: int) -> Tournament:
    row = session.get(Tournament, ladder_id)
    if row is None or row.kind != TournamentKind.LADDER:
        raise LadderNotFoundError(f"there is no ladder {ladder_id!r}")
    return row


def ladder_settings(row: Tournament) -> LadderSettings:
    return LadderSettings.from_params(row.params, int(row.table_sizes[0]), row.hands_per_match)


def pause_ladder(session: Session, ladder_id: int) -> Tournament:
    """No new tables, no new matches started (those in play finish and count)."""
    get_ladder_row(session, ladder_id)
    return pause_tournament(session, ladder_id)


def resume_ladder(session: Session, ladder_id: int) -> Tournament:
    get_ladder_row(session, ladder_id)
    return start_tournament(session, ladder_id)
