"""Where connected bots are: gateways and their live connections, in the store.

Every gateway stamps its row every ``HEARTBEAT_S``; one silent for ``GATEWAY_LEASE_S`` is dead, and
its connections with it (they are not counted, and the next gateway to start deletes them).
Workers on any machine read this to find the gateway holding a bot; the scheduler reads
:func:`connected_capacity` to know how many of a bot's matches may be in flight.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from sqlalchemy import and_, delete, func, or_, select, update
from sqlalchemy.orm import Session

from arena.store.models import LinkConnection, LinkGateway, utcnow

#: Seconds between a gateway's heartbeats.
HEARTBEAT_S: Final = 2.0
#: A gateway whose heartbeat is older than this is dead.
GATEWAY_LEASE_S: Final = 10.0
#: Rows of gateways dead this long are deleted by the next gateway that starts.
FORGET_S: Final = 300.0


@dataclass(frozen=True, slots=True)
class GatewayRoute:
    """A live gateway holding connections of one bot."""

    gateway_id: str
    address: str
    secret: str | None
    capacity: int


@dataclass(frozen=True, slots=True)
class LinkStatus:
    """How a connected bot is connected right now (the dashboard shows it)."""

    connections: int
    capacity: int

    @property
    def online(self) -> bool:
        return self.connections > 0


def _live_since(now: dt.datetime | None = None) -> dt.datetime:
    return (now or utcnow()) - dt.timedelta(seconds=GATEWAY_LEASE_S)


def register_gateway(session: Session, gateway_id: str, address: str, secret: str | None) -> None:
    """Add (or re-add, after someone presumed it dead) the gateway's row; forget long-dead ones."""
    now = utcnow()
    forget = now - dt.timedelta(seconds=FORGET_S)
    # Another row at our address is a gateway we replaced (it cannot be listening there any
    # more): workers must not relay to it with its old secret, nor count its connections.
    dead = select(LinkGateway.id).where(
        or_(
            LinkGateway.heartbeat_at < forget,
            and_(LinkGateway.address == address, LinkGateway.id != gateway_id),
        )
    )
    session.execute(delete(LinkConnection).where(LinkConnection.gateway_id.in_(dead)))
    session.execute(
        delete(LinkGateway).where(
            or_(
                LinkGateway.heartbeat_at < forget,
                and_(LinkGateway.address == address, LinkGateway.id != gateway_id),
            )
        )
    )
    row = session.get(LinkGateway, gateway_id)
    if row is None:
        session.add(
            LinkGateway(id=gateway_id, address=address, secret=secret, started_at=now, heartbeat_at=now)
        )
    else:
        row.heartbeat_at = now
    session.flush()


def heartbeat(session: Session, gateway_id: str) -> bool:
    """Stamp the gateway; False when its row is gone (it must register again)."""
    done = session.execute(
        update(LinkGateway)
        .where(LinkGateway.id == gateway_id)
        .values(heartbeat_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return bool(done.rowcount)  # type: ignore[attr-defined]


def drop_gateway(session: Session, gateway_id: str) -> None:
    """A gateway stopping: its connections and row go at once."""
    session.execute(delete(LinkConnection).where(LinkConnection.gateway_id == gateway_id))
    session.execute(delete(LinkGateway).where(LinkGateway.id == gateway_id))


def add_connection(
    session: Session,
    connection_id: str,
    gateway_id: str,
    bot_id: int,
    owner_id: int,
    capacity: int,
    peer: str,
) -> None:
    session.merge(
        LinkConnection(
            id=connection_id,
            gateway_id=gateway_id,
            bot_id=bot_id,
            owner_id=owner_id,
            capacity=capacity,
            peer=peer[:128],
            connected_at=utcnow(),
        )
    )
    session.flush()


def remove_connection(session: Session, connection_id: str) -> None:
    session.execute(delete(LinkConnection).where(LinkConnection.id == connection_id))


def prune_connections(session: Session, gateway_id: str, keep: Iterable[str]) -> int:
    """Delete the gateway's connection rows but those in ``keep`` (the ones it holds open);
    how many went. A row younger than ``HEARTBEAT_S`` is left for the next time: it may be
    of a connection opened after ``keep`` was read."""
    young = utcnow() - dt.timedelta(seconds=HEARTBEAT_S)
    stale = delete(LinkConnection).where(
        LinkConnection.gateway_id == gateway_id, LinkConnection.connected_at < young
    )
    kept = list(keep)
    if kept:
        stale = stale.where(LinkConnection.id.not_in(kept))
    done = session.execute(stale.execution_options(synchronize_session=False))
    return int(done.rowcount or 0)  # type: ignore[attr-defined]


def owner_connections(session: Session, owner_id: int) -> int:
    """Live connections of the owner's bots, over every gateway."""
    return int(
        session.scalar(
            select(func.count(LinkConnection.id))
            .join(LinkGateway, LinkGateway.id == LinkConnection.gateway_id)
            .where(LinkConnection.owner_id == owner_id, LinkGateway.heartbeat_at >= _live_since())
        )
        or 0
    )


def connected_capacity(session: Session, bot_id: int) -> int:
    """How many matches the bot's live connections play at once, summed (0: offline).

    The hook for the scheduler's per-bot capacity (``arena.play.capacity.capacity_of``) for a
    connected bot."""
    total = session.scalar(
        select(func.coalesce(func.sum(LinkConnection.capacity), 0))
        .join(LinkGateway, LinkGateway.id == LinkConnection.gateway_id)
        .where(LinkConnection.bot_id == bot_id, LinkGateway.heartbeat_at >= _live_since())
    )
    return int(total or 0)


def connection_ids(session: Session, bot_id: int) -> set[str]:
    """The ids of the bot's live connections."""
    return set(
        session.scalars(
            select(LinkConnection.id)
            .join(LinkGateway, LinkGateway.id == LinkConnection.gateway_id)
            .where(LinkConnection.bot_id == bot_id, LinkGateway.heartbeat_at >= _live_since())
        )
    )


def routes(session: Session, bot_id: int) -> list[GatewayRoute]:
    """The live gateways holding the bot, most capacity first."""
    rows = session.execute(
        select(LinkGateway.id, LinkGateway.address, LinkGateway.secret, func.sum(LinkConnection.capacity))
        .join(LinkConnection, LinkConnection.gateway_id == LinkGateway.id)
        .where(LinkConnection.bot_id == bot_id, LinkGateway.heartbeat_at >= _live_since())
        .group_by(LinkGateway.id, LinkGateway.address, LinkGateway.secret)
    ).all()
    found = [GatewayRoute(gid, address, secret, int(cap or 0)) for gid, address, secret, cap in rows]
    return sorted(found, key=lambda r: (-r.capacity, r.gateway_id))


def link_status(session: Session, bot_ids: Iterable[int]) -> dict[int, LinkStatus]:
    """Connections and capacity per bot (bots with none are absent)."""
    ids = list(bot_ids)
    if not ids:
        return {}
    rows = session.execute(
        select(LinkConnection.bot_id, func.count(LinkConnection.id), func.sum(LinkConnection.capacity))
        .join(LinkGateway, LinkGateway.id == LinkConnection.gateway_id)
        .where(LinkConnection.bot_id.in_(ids), LinkGateway.heartbeat_at >= _live_since())
        .group_by(LinkConnection.bot_id)
    ).all()
    return {bot_id: LinkStatus(int(n), int(cap or 0)) for bot_id, n, cap in rows}
