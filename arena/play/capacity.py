"""How many matches a bot may have in flight, and the leases that hold it to that number.

The hook
    :func:`capacity_of` ``(session, bot_id) -> int`` is the ONE place the scheduler
    (arena.runtime.scheduling) and the match job (arena.play.lifecycle, when it claims a match) ask how many
    matches a bot may play at once *now*. For a dialled bot it is what the bot declared in
    GetInfo ``max_concurrent_matches`` (stored in its latest version's info at registration;
    a hosted bot's class attribute of the same name), capped at :data:`MAX_CAPACITY`; a bot
    that declared nothing (0) gets the operator's default, ``TONK_BOT_CAPACITY``. A bot kind
    whose capacity changes while it runs (e.g. connect-out bots: the sum over their open
    connections, 0 while offline, so their matches wait) answers here too; 0 means "none
    now", never an error.

The leases
    A match in flight holds one slot of each of its bots: a ``bot_leases`` row keyed by
    (bot, slot) with ``0 <= slot < capacity``. :func:`acquire` takes a free slot of every
    bot of the match in the caller's transaction, or none (the caller rolls back); two
    workers taking the same slot collide on the primary key, so the bound holds across
    every worker and machine sharing the store, without locks. The match heartbeat renews
    the rows (:func:`renew`); recording the match, failing it or resetting an abandoned one
    frees them (:func:`release`); the rows of a worker that died free themselves when
    ``expires_at`` passes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any, Final

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.bots.reachability import offline_among
from arena.config import load_settings
from arena.store.models import BotLease, BotVersion, utcnow

#: The most matches at once any bot gets, whatever it declares.
MAX_CAPACITY: Final = 256
#: Bots asked about at once beyond which :func:`capacities` reads every bot's latest version
#: and keeps those asked: the IN list of a 1,000-bot ladder's pool, sent at every tick, cost
#: its scheduler more in the driver's conversion of a thousand parameters than the rows saved.
IN_LIST_MAX: Final = 200
#: Seconds a slot's lease lasts without renewal. The match heartbeat renews it
#: (arena/play/heartbeat.py), so it lasts as long as the match lease, MATCH_LEASE_S.
SLOT_LEASE_S: Final = 30.0


def capacity_of(session: Session, bot_id: int) -> int:
    """Matches bot ``bot_id`` may have in flight now (0: none; its matches wait).

    A connected bot (arena/link) has what its live connections declared, summed. While it is
    offline that is 0, but one match at a time still goes to the job: the job holds it pending
    through the tournament's grace period (arena.play.offline) and then plays it, so the bot
    is charged UNREACHABLE instead of the tournament waiting for it forever."""
    row = session.execute(
        select(BotVersion.info, BotVersion.connected)
        .where(BotVersion.bot_id == bot_id)
        .order_by(BotVersion.number.desc())
        .limit(1)
    ).first()
    if row is not None and row[1]:
        from arena.link.directory import connected_capacity

        return max(1, min(connected_capacity(session, bot_id), MAX_CAPACITY))
    return declared_capacity(row[0] if row is not None else None)


def declared_capacity(info: Mapping[str, Any] | None, default: int | None = None) -> int:
    """The capacity a version's info declares, or the default when it declares none."""
    value = (info or {}).get("max_concurrent_matches")
    if type(value) is int and value > 0:
        return min(value, MAX_CAPACITY)
    if default is None:
        default = load_settings().bot_capacity
    return max(1, min(default, MAX_CAPACITY))


def capacities(session: Session, bot_ids: Iterable[int], *, live: bool = False) -> dict[int, int]:
    """:func:`capacity_of` for many bots at once: one query for their latest versions (a
    ladder's scheduler asks about its whole pool at every tick), then connected bots one by
    one. With ``live``, a connected bot with no live connection has 0, not the one match a
    tournament still sends it to wait out its grace: a ladder gives it no new table (once its
    grace ran out, each would be a forfeit). So has a dialled bot found offline (it forfeited a
    match as unreachable, or failed its health check) until it answers again
    (arena/bots/reachability.py); its matches already made still play."""
    ids = sorted(set(bot_ids))
    if not ids:
        return {}
    newest = select(BotVersion.bot_id, func.max(BotVersion.number).label("number"))
    if len(ids) <= IN_LIST_MAX:
        newest = newest.where(BotVersion.bot_id.in_(ids))
    latest = newest.group_by(BotVersion.bot_id).subquery()
    rows = session.execute(
        select(BotVersion.bot_id, BotVersion.info, BotVersion.connected).join(
            latest, (latest.c.bot_id == BotVersion.bot_id) & (latest.c.number == BotVersion.number)
        )
    ).all()
    default = load_settings().bot_capacity
    out = {bot: declared_capacity(None, default) for bot in ids}  # no version: the default
    for bot, info, connected in rows:
        if bot not in out:  # read with every bot's: a whole pool is more than IN_LIST_MAX
            continue
        if connected and live:
            from arena.link.directory import connected_capacity

            out[bot] = min(connected_capacity(session, bot), MAX_CAPACITY)
        else:
            out[bot] = capacity_of(session, bot) if connected else declared_capacity(info, default)
    if live:
        for bot in offline_among(session, ids):
            out[bot] = 0
    return out


def in_flight(
    session: Session, bot_ids: Iterable[int] | None = None, *, now: dt.datetime | None = None
) -> dict[int, int]:
    """Live leases per bot (bots with none are absent)."""
    query = (
        select(BotLease.bot_id, func.count())
        .where(BotLease.expires_at > (now or utcnow()))
        .group_by(BotLease.bot_id)
    )
    if bot_ids is not None:
        query = query.where(BotLease.bot_id.in_(list(set(bot_ids))))
    return {bot: count for bot, count in session.execute(query).all()}


def acquire(
    session: Session, match_id: int, bot_ids: Iterable[int], holder: str, *, now: dt.datetime | None = None
) -> bool:
    """Take one free slot of each bot for ``match_id`` in the session's transaction. False
    when a bot has none free (or another worker took it first): the caller must roll back
    its transaction, which frees the slots already taken here."""
    now = now or utcnow()
    expires = now + dt.timedelta(seconds=SLOT_LEASE_S)
    for bot in sorted(set(bot_ids)):  # one order everywhere: PostgreSQL row waits cannot cycle
        capacity = capacity_of(session, bot)
        rows = session.execute(
            select(BotLease.slot, BotLease.expires_at).where(BotLease.bot_id == bot, BotLease.slot < capacity)
        ).all()
        held = {slot: when for slot, when in rows}
        free = next((s for s in range(capacity) if s not in held or held[s] <= now), None)
        if free is None:
            return False
        values = {"match_id": match_id, "holder": holder[:128], "expires_at": expires}
        if free in held:  # an expired row: take it over only if nobody did meanwhile
            taken = session.execute(
                update(BotLease)
                .where(BotLease.bot_id == bot, BotLease.slot == free, BotLease.expires_at == held[free])
                .values(**values)
                .execution_options(synchronize_session=False)
            )
            if taken.rowcount != 1:  # type: ignore[attr-defined]
                return False
            continue
        try:
            with session.begin_nested():
                session.execute(insert(BotLease).values(bot_id=bot, slot=free, **values))
        except IntegrityError:  # another worker took this slot first
            return False
    return True


def renew(session: Session, match_id: int, holder: str, *, now: dt.datetime | None = None) -> None:
    expires = (now or utcnow()) + dt.timedelta(seconds=SLOT_LEASE_S)
    session.execute(
        update(BotLease)
        .where(BotLease.match_id == match_id, BotLease.holder == holder[:128])
        .values(expires_at=expires)
        .execution_options(synchronize_session=False)
    )


def release(session: Session, match_id: int, holder: str | None = None) -> None:
    """Free the slots ``match_id`` holds (only ``holder``'s, when given)."""
    query = delete(BotLease).where(BotLease.match_id == match_id)
    if holder is not None:
        query = query.where(BotLease.holder == holder[:128])
    session.execute(query.execution_options(synchronize_session=False))

