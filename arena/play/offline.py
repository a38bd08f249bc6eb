"""A match whose connected bot is offline waits instead of faulting at once, and an absent
bot holds its tournament up for one grace period, not one per match.

When a worker is handed a match with a connected bot that no gateway holds, the match stays
``pending`` (unclaimed, so other matches play meanwhile) and ``matches.waiting_since``
records since when. The worker looks again for a few seconds, then hands the match back to
the driver, which queues it again on its next sweep. Once the tournament's
``offline_grace_s`` has passed since ``waiting_since`` the match is played anyway, and every
call to the absent bot faults as UNREACHABLE: the fault policy decides the rest.

The wait is the bot's, not each match's: when a bot is found offline, every pending match of
it in the tournament is stamped with the same ``waiting_since`` (the earliest any of them
has), so once its grace has run out for one match the others play at once, faulting, while
it stays offline (an offline bot's matches go to the jobs one at a time, arena.play.capacity:
16 matches would otherwise wait 16 graces one after another). A bot found online again
starts afresh: the stamps of its pending matches whose connected bots are all online are
cleared, so a later absence gets its whole grace. A match seats several bots, one stamp:
with two of them offline it is counted from the earlier absence.

The store can lag behind a gateway by a moment (a bot killed, its row not yet deleted), so
a match may be claimed for a bot that has just gone. Its StartMatch then finds the bot not
connected; within the grace period that is the same wait, not a fault: the seat's player
raises :class:`~arena.link.player.BotOfflineError` and ``MatchLife.hand_back``
(arena/play/lifecycle.py) makes it pending again.

A link that drops mid-match (a bot restarted, a network blip) is waited for too, briefly:
the seat's player looks for the bot for up to :func:`relink_wait` seconds (``RELINK_WAIT_S``,
at most the tournament's grace); back, the match is handed back the same way and replayed
from its start, uncharged, and dealt afresh, if the bot was well ahead at the drop; if not,
the match is scored as it stood and the bot forfeits the rest (arena/play/cuts.py: a bot must
gain nothing by cutting its own link). A rotation of a duplicate deal so replayed becomes a
deal of its own.

Each such replay leaves an uncharged notice (``RELINK_NOTICE_KIND``) on the match for the bot
whose link dropped, and the replays are bounded: ``RELINK_MAX_PER_MATCH`` per match (a bot
whose link drops in every try is then charged, as one that does not come back is) and
``RELINK_FREE_PER_BOT`` drops per bot and tournament (or ladder) a day (one drop, one notice,
however many matches its link carried). Other hand-backs (a gateway lost, a bot offline at
the start) count against neither.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Collection, Mapping
from typing import Any, Final

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session

from arena.link.directory import connected_capacity
from arena.store.db import session_scope
from arena.store.models import (
    RELINK_NOTICE_KIND,
    Bot,
    BotVersion,
    FaultRecord,
    Match,
    MatchSeat,
    Tournament,
    utcnow,
)
from arena.store.statuses import MatchStatus
from arena.tournaments.settings import TournamentSettings

#: Seconds a worker keeps looking for an offline bot before handing the match back.
WAIT_IN_JOB_S: Final = 10.0
POLL_S: Final = 0.5
#: Seconds a match waits for a connected bot whose link dropped mid-match (a restart, a blip).
RELINK_WAIT_S: Final = 10.0
#: Replays of one match after a dropped link; the next drop is charged.
RELINK_MAX_PER_MATCH: Final = 2
#: Replays after a dropped link a bot gets free in one tournament (or ladder) within
#: ``RELINK_WINDOW`` (by the replayed matches' latest start); the next drop is charged.
RELINK_FREE_PER_BOT: Final = 16
RELINK_WINDOW: Final = dt.timedelta(days=1)


def _connected_seats(session: Session, match_ids: Collection[int]) -> list[tuple[int, int]]:
    """(match id, bot id) of the seats of connected bot versions in ``match_ids``."""
    if not match_ids:
        return []
    rows = session.execute(
        select(MatchSeat.match_id, MatchSeat.bot_id)
        .join(BotVersion, BotVersion.id == MatchSeat.bot_version_id)
        .where(MatchSeat.match_id.in_(match_ids), BotVersion.connected.is_(True))
    ).all()
    return [(int(match_id), int(bot_id)) for match_id, bot_id in rows]


def _offline(session: Session, bot_ids: Collection[int]) -> set[int]:
    """Those of ``bot_ids`` (connected bots) with no live connection."""
    return {bot_id for bot_id in set(bot_ids) if connected_capacity(session, bot_id) == 0}


def offline_bots(session: Session, match_id: int) -> list[str]:
    """Names of the match's connected bots with no live connection."""
    away = _offline(session, [bot_id for _, bot_id in _connected_seats(session, [match_id])])
    if not away:
        return []
    return list(session.scalars(select(Bot.name).where(Bot.id.in_(away)).order_by(Bot.name)))


def must_wait(session: Session, match_id: int, default_grace_s: int, now: dt.datetime | None = None) -> bool:
    """True while the (pending) match should wait for an offline connected bot. The first time
    a bot is found offline its wait starts, shared by all its pending matches of the tournament
    (the module's docstring); a match whose connected bots are all online clears those bots'
    stamps. The caller commits."""
    seated = {bot_id for _, bot_id in _connected_seats(session, [match_id])}
    if not seated:
        return False  # no connected bot: one query, for most matches
    row = _grace_row(session, match_id)
    if row is None or row.status != MatchStatus.PENDING:
        return False  # the claim decides what happens to it
    away = _offline(session, seated)
    if not away:
        _start_afresh(session, row.tournament_id, seated, match_id)
        return False
    now = now or utcnow()
    since = _share_wait(session, row.tournament_id, away, now)
    return grace_left(since, row.config, default_grace_s, now)


def _of_bots(tournament_id: int, bot_ids: Collection[int]) -> Any:
    """The condition: a pending match of the tournament seating one of ``bot_ids``."""
    seated = select(MatchSeat.match_id).where(MatchSeat.bot_id.in_(bot_ids))
    return and_(
        Match.tournament_id == tournament_id, Match.status == MatchStatus.PENDING, Match.id.in_(seated)
    )


def _share_wait(session: Session, tournament_id: int, away: Collection[int], now: dt.datetime) -> dt.datetime:
    """Since when the absent bots ``away`` are awaited in the tournament: the earliest stamp
    of their pending matches there, or ``now``; every one of those matches is stamped with it."""
    of_bots = _of_bots(tournament_id, away)
    earliest = session.scalar(select(func.min(Match.waiting_since)).where(of_bots))
    since: dt.datetime = earliest or now
    session.execute(
        update(Match)
        .where(of_bots, or_(Match.waiting_since.is_(None), Match.waiting_since > since))
        .values(waiting_since=since)
        .execution_options(synchronize_session=False)
    )
    return since


def _start_afresh(session: Session, tournament_id: int, online: Collection[int], match_id: int) -> None:
    """The bots ``online`` are connected: clear the stamps of their other pending matches in
    the tournament whose connected bots are all online, so a later absence waits its whole
    grace. Not ``match_id``'s own: its claim clears it, unless its bot turns out gone at its
    StartMatch (the store lagging), and then it waits on from that stamp (start_grace)."""
    stamped = list(
        session.scalars(
            select(Match.id).where(
                _of_bots(tournament_id, online), Match.waiting_since.is_not(None), Match.id != match_id
            )
        )
    )
    if not stamped:
        return
    seats = _connected_seats(session, stamped)
    away = _offline(session, {bot_id for _, bot_id in seats} - set(online))
    waiting = {match_id for match_id, bot_id in seats if bot_id in away}
    ready = [match_id for match_id in stamped if match_id not in waiting]
    if ready:
        session.execute(
            update(Match)
            .where(Match.id.in_(ready), Match.status == MatchStatus.PENDING)
            .values(waiting_since=None)
            .execution_options(synchronize_session=False)
        )


def _grace_row(session: Session, match_id: int) -> Any:
    """The match's status, ``waiting_since`` and tournament, with its tournament's config, or None."""
    return session.execute(
        select(Match.status, Match.waiting_since, Match.tournament_id, Tournament.config)
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


def relink_wait(session: Session, match_id: int, default_grace_s: int) -> dict[int, float]:
    """After the claim: how long each connected bot of the match (by id) is waited for when
    its link drops mid-match, in seconds (0 or absent: a drop is charged at once)."""
    row = session.execute(
        select(Match.tournament_id, Tournament.config)
        .join(Tournament, Tournament.id == Match.tournament_id)
        .where(Match.id == match_id)
    ).first()
    if row is None:
        return {}
    replays = session.scalar(
        select(func.count(FaultRecord.id)).where(
            FaultRecord.match_id == match_id, FaultRecord.kind == RELINK_NOTICE_KIND
        )
    )
    if (replays or 0) >= RELINK_MAX_PER_MATCH:
        return {}
    bots = {bot for _match, bot in _connected_seats(session, [match_id])}
    used = dict(
        session.execute(
            select(FaultRecord.bot_id, func.count(FaultRecord.id))
            .join(Match, Match.id == FaultRecord.match_id)
            .where(
                Match.tournament_id == row.tournament_id,
                Match.started_at >= utcnow() - RELINK_WINDOW,
                FaultRecord.kind == RELINK_NOTICE_KIND,
                FaultRecord.bot_id.in_(bots),
            )
            .group_by(FaultRecord.bot_id)
        ).all()
    )
    wait = float(min(RELINK_WAIT_S, TournamentSettings.from_column(row.config).grace_s(default_grace_s)))
    return {bot: wait for bot in bots if used.get(bot, 0) < RELINK_FREE_PER_BOT}


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
