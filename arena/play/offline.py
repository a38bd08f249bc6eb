"""A match whose connected bot is offline waits instead of faulting at once.

When a worker is handed a match with a connected bot that no gateway holds, the match stays
``pending`` (unclaimed, so other matches play meanwhile) and ``matches.waiting_since``
records since when. The worker looks again for a few seconds, then hands the match back to
the driver, which queues it again on its next sweep. Once the tournament's
``offline_grace_s`` has passed since ``waiting_since`` the match is played anyway, and every
call to the absent bot faults as UNREACHABLE: the fault policy decides the rest.

The store can lag behind a gateway by a moment (a bot killed, its row not yet deleted), so
a match may be claimed for a bot that has just gone. Its StartMatch then finds the bot not
connected; within the grace period that is the same wait, not a fault: the seat's player
raises :class:`~arena.link.player.BotOfflineError` and ``MatchLife.hand_back``
(arena/play/lifecycle.py) makes it pending again.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping
from typing import Any, Final

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from arena.link.directory import connected_capacity
from arena.store.db import session_scope
from arena.store.models import Bot, BotVersion, Match, MatchSeat, Tournament, utcnow
from arena.store.statuses import MatchStatus
from arena.tournaments.settings import TournamentSettings

#: Seconds a worker keeps looking for an offline bot before handing the match back.
WAIT_IN_JOB_S: Final = 10.0
POLL_S: Final = 0.5


def offline_bots(session: Session, match_id: int) -> list[str]:
    """Names of the match's connected bots with no live connection."""
    rows = session.execute(
        select(Bot.id, Bot.name)
        .join(MatchSeat, MatchSeat.bot_id == Bot.id)
        .join(BotVersion, BotVersion.id == MatchSeat.bot_version_id)
        .where(MatchSeat.match_id == match_id, BotVersion.connected.is_(True))
    ).all()
    return [name for bot_id, name in rows if connected_capacity(session, bot_id) == 0]


def must_wait(session: Session, match_id: int, default_grace_s: int, now: dt.datetime | None = None) -> bool:
    """True while the (pending) match should wait for an offline connected bot; starts its
    grace period the first time. The caller commits."""
    if not offline_bots(session, match_id):
        return False
    row = _grace_row(session, match_id)
    if row is None or row.status != MatchStatus.PENDING:
        return False  # the claim decides what happens to it
    now = now or utcnow()
    if row.waiting_since is None:
        session.execute(
            update(Match)
            .where(Match.id == match_id, Match.waiting_since.is_(None))
            .values(waiting_since=now)
            .execution_options(synchronize_session=False)
        )
    return grace_left(row.waiting_since, row.config, default_grace_s, now)


def _grace_row(session: Session, match_id: int) -> Any:
    """The match's status and ``waiting_since`` with its tournament's config, or None."""
    return session.execute(
        select(Match.status, Match.waiting_since, Tournament.config)
        .join(Tournament, Tournament.id == Match.tournament_id)
        .where(Match.id == match_id)
    ).first()


def grace_left(
    waiting_since: dt.datetime | None,
    config: Mapping[str, Any] | None,
    default_grace_s: int,
    now: dt.datetime | None = None,
) -> bool:
    """True while a match that began waiting at ``waiting_since`` (None: not yet) may still
    wait for an offline bot, under its tournament's ``config``."""
    grace = TournamentSettings.from_column(config).grace_s(default_grace_s)
    if waiting_since is None:
        return grace > 0
    return bool(((now or utcnow()) - waiting_since).total_seconds() < grace)


def start_grace(session: Session, match_id: int, default_grace_s: int) -> tuple[bool, dt.datetime]:
    """Before a claim (which clears ``waiting_since``): whether the match may still wait for
    an offline bot, and since when it would be waiting (now, if it never has)."""
    row = _grace_row(session, match_id)
    now = utcnow()
    if row is None:
        return False, now
    return grace_left(row.waiting_since, row.config, default_grace_s, now), row.waiting_since or now


def wait_for_bots(database_url: str, match_id: int, default_grace_s: int) -> bool:
    """Look for the match's connected bots for up to ``WAIT_IN_JOB_S``: False as soon as the
    match may be played, True if it should be handed back to wait more."""
    give_up = time.monotonic() + WAIT_IN_JOB_S
    while True:
        with session_scope(database_url) as session:
            if not must_wait(session, match_id, default_grace_s):
                return False
        if time.monotonic() >= give_up:
            return True
        time.sleep(POLL_S)
