"""What one gateway holds, in memory: its bots' connections, from the hello that takes a place
for one until it is forgotten, and the match seats pinned to them. :class:`Holdings` is the
one owner of a connection's life at the gateway (the store's copy of it, for workers and the
scheduler, is arena/link/directory.py's)::

        hello                    admitted                   a newer version
    ─────────▶ admitting ─────────────────▶ held ──────────────────────────▶ draining
    take_place   (counted          hold       (takes new        drain          (no new seats;
    opened        against its                  seats: pin)                      closed once
                  owner's limit)                                                its seats end)
                   │ refused, closed            │ closed, retired                  │ closed
                   ▼                            ▼                                  ▼
                 forgotten ◀───────────────────────────────────────────────────────┘
                 (forget: its place, its seats and its version go with it)

A place counts against the owner's limit from the hello on, so a burst of connections cannot
all pass the check before any of them is admitted. A seat (a match's session key) is pinned
to one held connection, the least loaded, on its first call, and stays there until the
match's last call, the connection's end, or ``SESSION_IDLE_S`` without a call.

Everything here runs on the gateway's loop and never awaits: each method is one step that no
other task can interleave. The store, the streams and the status a connection ends with are
the callers' (arena/link/link_service.py, arena/link/relay_service.py, arena/link/gateway.py).
"""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass
from typing import Final

from arena.link import directory
from arena.link.connection import Connection

#: A session (a match seat) idle this long is forgotten (its referee went away).
SESSION_IDLE_S: Final = 900.0


@dataclass
class _Session:
    connection: Connection
    used: float


class Holdings:
    """One gateway's connections and the seats pinned to them."""

    def __init__(self) -> None:
        #: When the gateway started: a bot not connected since is not yet the bot's fault.
        self.started = time.monotonic()
        #: Admitted connections that take new seats, by bot id.
        self.by_bot: dict[int, list[Connection]] = {}
        self.sessions: dict[str, _Session] = {}
        #: Places taken per owner by connections being admitted, and those connections' ids.
        self.admitting: collections.Counter[int] = collections.Counter()
        self.holding: set[str] = set()
        #: Bots that have connected since this gateway started.
        self.seen: set[int] = set()
        #: The bot version each connection here plays (by connection id).
        self.versions: dict[str, int] = {}
        #: Connections of a superseded version: out of ``by_bot`` (no new seats), each
        #: closed with its message once the seats it plays end.
        self.draining: dict[str, tuple[Connection, str]] = {}
        #: Ids of the connections this gateway holds open (admitted or not yet): the store
        #: may list no others of it (the heartbeat prunes them).
        self.open_ids: set[str] = set()

    # -- a connection's life ---------------------------------------------------------------

    def take_place(self, owner_id: int, elsewhere: int, limit: int) -> bool:
        """Take a place for a connection of ``owner_id`` being admitted, unless the owner
        already has ``limit`` (here or, ``elsewhere``, over every gateway, with those being
        admitted here). Check and take are one step: a burst of connections, each past its
        awaits at once, must not all see the same free places (issue 29: 40 at once got 19
        welcomes against 16). The place is held until the connection is admitted (then it
        is counted in ``by_bot``) or refused."""
        here = sum(1 for cs in self.by_bot.values() for c in cs if c.owner_id == owner_id)
        if max(here, elsewhere) + self.admitting[owner_id] >= limit:
            return False
        self.admitting[owner_id] += 1
        return True

    def opened(self, connection: Connection) -> None:
        """``connection`` is open and holds the place :meth:`take_place` took for it."""
        self.holding.add(connection.id)
        self.open_ids.add(connection.id)

    def release(self, connection: Connection) -> None:
        """Give back the place taken for ``connection`` (once)."""
        if connection.id in self.holding:
            self.holding.discard(connection.id)
            self.admitting[connection.owner_id] -= 1

    def hold(self, connection: Connection, version: int) -> None:
        """``connection`` is admitted, playing ``version`` of its bot: it takes new seats
        from now on, and counts in ``by_bot`` instead of its place, in the same step."""
        self.by_bot.setdefault(connection.bot_id, []).append(connection)
        self.release(connection)
        self.versions[connection.id] = version
        self.seen.add(connection.bot_id)

    def version(self, connection: Connection) -> int | None:
        """The bot version ``connection`` plays (None: not admitted, or forgotten)."""
        return self.versions.get(connection.id)

    def drain(self, connection: Connection, message: str) -> None:
        """Take held ``connection`` out of play (a newer version of its bot was admitted):
        no new seats; it is to close with ``message`` once its seats end (:meth:`drained`)."""
        self.by_bot[connection.bot_id].remove(connection)
        if not self.by_bot[connection.bot_id]:
            del self.by_bot[connection.bot_id]
        self.draining[connection.id] = (connection, message)

    def forget(self, connection: Connection) -> None:
        """``connection`` has ended: it goes from everywhere, with the seats pinned to it."""
        self.open_ids.discard(connection.id)
        held = self.by_bot.get(connection.bot_id)
        if held and connection in held:
            held.remove(connection)
            if not held:
                del self.by_bot[connection.bot_id]
        self.versions.pop(connection.id, None)
        self.draining.pop(connection.id, None)
        for key, session in list(self.sessions.items()):
            if session.connection is connection:
                del self.sessions[key]

    # -- what is held ------------------------------------------------------------------------

    def connections(self) -> list[Connection]:
        """The admitted connections that take new seats."""
        return [c for cs in self.by_bot.values() for c in cs]

    def held(self, bot_id: int) -> list[Connection]:
        """The bot's connections that take new seats."""
        return list(self.by_bot.get(bot_id, ()))

    def bot_ids(self) -> set[int]:
        """Every bot with a connection here, draining ones included."""
        return {c.bot_id for cs in self.by_bot.values() for c in cs} | {
            c.bot_id for c, _ in self.draining.values()
        }

    def of_bot(self, bot_id: int) -> list[Connection]:
        """Every connection of the bot here, draining ones included."""
        return self.held(bot_id) + [c for c, _ in self.draining.values() if c.bot_id == bot_id]

    def drained(self) -> list[tuple[Connection, str]]:
        """The draining connections whose seats have all ended, with their closing message."""
        return [(c, message) for c, message in list(self.draining.values()) if c.sessions <= 0]

    # -- seats -------------------------------------------------------------------------------

    def route(self, bot_id: int, key: str) -> tuple[Connection | None, str, bool]:
        """The connection a session's call goes to, or None with why and whether it is
        about the bot (True) or this gateway (False)."""
        connection = self.pin(bot_id, key)
        if connection is not None:
            return connection, "", True
        fresh = time.monotonic() - self.started < directory.GATEWAY_LEASE_S
        if fresh and bot_id not in self.seen:
            # Just (re)started and the bot has not reconnected yet: not the bot's fault; the
            # worker plays the match again later (arena/link/player.GatewayLostError).
            return None, "the gateway has just started", False
        return None, "the bot is not connected to the arena", True

    def pin(self, bot_id: int, key: str) -> Connection | None:
        """The connection seat ``key`` plays on: the one it is pinned to while that is open,
        else the bot's least loaded open one, pinned from now on (None: the bot has none)."""
        held = self.sessions.get(key)
        if held is not None and not held.connection.closed:
            held.used = time.monotonic()
            return held.connection
        if held is not None:
            self.unpin(key)
        live = [c for c in self.by_bot.get(bot_id, ()) if not c.closed]
        if not live:
            return None
        connection = min(live, key=lambda c: (c.sessions / c.capacity, len(c.pending)))
        connection.sessions += 1
        self.sessions[key] = _Session(connection, time.monotonic())
        return connection

    def unpin(self, key: str) -> None:
        """Seat ``key`` has ended (its match's last call): its connection is a seat lighter."""
        held = self.sessions.pop(key, None)
        if held is not None:
            held.connection.sessions -= 1

    def sweep(self, now: float) -> None:
        """Unpin the seats without a call for ``SESSION_IDLE_S`` (their referee went away)."""
        for key, held in list(self.sessions.items()):
            if now - held.used > SESSION_IDLE_S:
                self.unpin(key)
