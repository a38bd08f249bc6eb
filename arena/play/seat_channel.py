"""The channel between a person's seat and the match being played for it (issue #39).

The worker playing a person's match (arena/play/person.py) and the web process serving the
person's page (dashboard/views/tables.py) are different processes, often on different
machines; they share the store and, when the arena has one, Redis. Each match with a person
has one channel holding:

- the seat's latest **view** (the JSON of docs/people.md, built by arena/play/seat_view.py:
  only what the seat has seen), whose ``version`` rises by one at every change, so a page
  that sends its version back can be told it is stale, and a reconnecting page can ask for
  what came after the version it last saw;
- the **decision** the seat is asked now (its decision id), and the one **action** the person
  sent for it. :meth:`SeatChannel.send` accepts an action only for the view the person saw
  (same version), only while the seat is asked, only once, and only a legal one; anything
  else is refused with nothing changed.

:class:`StoreChannel` keeps it in the ``seat_channels`` row (the arena without Redis: one
machine, the embedded pool); :class:`RedisChannel` in two Redis keys per match, changed in
WATCH/MULTI transactions, with the row still saying whose seat it is. Which one a match uses
is fixed when its table is made (``tournaments.params["channel"]``), so a web process and a
worker can never talk past each other.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Final, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.errors import ConflictError
from arena.store.db import lock_row, session_scope
from arena.store.models import SeatChannel as ChannelRow
from arena.store.models import utcnow

#: How often the worker looks for the person's move, and a page's wait for a newer view (a
#: person's round trip is dominated by the bot's reply and the browser, not these; each page
#: waiting costs its store or Redis one read a look).
POLL_S: Final = 0.02
WAIT_POLL_S: Final = 0.05
#: A page's wait looks again after this, then half as long again each time up to WAIT_POLL_S:
#: a wait begins just after the person's move, and the bot's reply most often comes within
#: tens of milliseconds, which a flat 50 ms poll added to half a round trip on average.
FIRST_WAIT_POLL_S: Final = 0.005
#: Redis keys of a finished table are kept this long for a late page, then expire.
REDIS_TTL_S: Final = 24 * 3600
CHANNELS: Final = ("store", "redis")


class ActionRefusedError(ConflictError):
    """An action the seat may not send now: the view it was chosen from is stale, the seat is
    not asked, an action was already sent for this decision, or it is not among the legal ones."""

    code = "action_refused"


class SeatChannel(Protocol):
    def publish(self, view: dict[str, Any], asked: str | None) -> dict[str, Any]: ...
    def read(self) -> dict[str, Any] | None: ...
    def send(self, version: int, action: str) -> dict[str, Any]: ...
    def take(self, asked: str, timeout_s: float) -> str | None: ...


def check_send(current: dict[str, Any] | None, asked: str | None, sent: str | None, version: int,
               action: str) -> dict[str, Any]:  # fmt: skip
    """The view after the person sends ``action`` for the view of ``version``, or
    ActionRefusedError saying why not. The new view is the old one waiting for the table."""
    if current is None or asked is None or current.get("status") != "your_turn":
        raise ActionRefusedError("it is not your turn: wait for the table to ask you")
    clock = current.get("clock")
    if isinstance(clock, dict) and "ends_at" in clock and time.time() * 1000 >= clock["ends_at"]:
        raise ActionRefusedError("your clock ran out: the table has played the fault for you")
    if version != current.get("version"):
        raise ActionRefusedError(
            f"your view is out of date (version {version}, the table is at {current.get('version')}): "
            "reload it and choose again"
        )
    if sent is not None:
        raise ActionRefusedError("you have already chosen an action for this turn")
    ids = [a.get("id") for a in current.get("legal", [])]
    if action not in ids:
        raise ActionRefusedError(f"{action!r:.60} is not one of your legal actions now")
    return {**current, "status": "waiting", "legal": [], "clock": None, "version": version + 1}


def wait_for(
    read: Callable[[], dict[str, Any] | None], after: int, timeout_s: float, poll_s: float = WAIT_POLL_S
) -> dict[str, Any] | None:
    """The view once its version is above ``after``, or the latest (None: none yet) when
    ``timeout_s`` passes first."""
    deadline = time.monotonic() + max(0.0, timeout_s)
    pause = min(FIRST_WAIT_POLL_S, poll_s)
    while True:
        view = read()
        if view is not None and int(view.get("version", 0)) > after:
            return view
        if time.monotonic() >= deadline:
            return view
        time.sleep(pause)
        pause = min(poll_s, pause * 1.5)


class StoreChannel:
    """The channel in the match's ``seat_channels`` row (each call its own transaction)."""

    def __init__(self, url: str, match_id: int):
        self.url = url
        self.match_id = match_id

    def _row(self, session: Session) -> ChannelRow:
        # The write lock first (SQLite ignores FOR UPDATE and pysqlite reads outside a
        # transaction, so two sends for one view would both pass their check there).
        lock_row(session, ChannelRow, self.match_id, key=ChannelRow.match_id)
        row = session.scalars(select(ChannelRow).where(ChannelRow.match_id == self.match_id)).first()
        if row is None:
            raise LookupError(f"match {self.match_id} has no seat channel")
        return row

    def publish(self, view: dict[str, Any], asked: str | None) -> dict[str, Any]:
        with session_scope(self.url) as session:
            row = self._row(session)
            row.version += 1
            row.view = {**view, "version": row.version}
            row.asked, row.action, row.updated_at = asked, None, utcnow()
            return row.view

    def read(self) -> dict[str, Any] | None:
        with session_scope(self.url) as session:
            view = session.scalar(select(ChannelRow.view).where(ChannelRow.match_id == self.match_id))
            return dict(view) if view else None

    def send(self, version: int, action: str) -> dict[str, Any]:
        with session_scope(self.url) as session:
            row = self._row(session)
            view = check_send(row.view, row.asked, row.action, version, action)
            row.view, row.version, row.action, row.updated_at = view, view["version"], action, utcnow()
            return view

    def take(self, asked: str, timeout_s: float) -> str | None:
        deadline = time.monotonic() + timeout_s
        mine = (ChannelRow.match_id == self.match_id) & (ChannelRow.asked == asked)
        query = select(ChannelRow.action).where(mine)
        while True:
            with session_scope(self.url) as session:
                action = session.scalar(query)
            if action is not None:
                return action
            if time.monotonic() >= deadline:
                return None
            time.sleep(POLL_S)


class RedisChannel:
    """The channel in Redis: ``<prefix>:view`` (the view's JSON, its version inside) and
    ``<prefix>:action`` (a list holding at most the one action sent, with its decision id)."""

    def __init__(self, client: Any, prefix: str):
        self.client = client
        self.view_key = f"{prefix}:view"
        self.action_key = f"{prefix}:action"

    def _change(self, make: Callable[[dict[str, Any] | None, Any], dict[str, Any]]) -> dict[str, Any]:
        from redis.exceptions import WatchError

        while True:
            with self.client.pipeline() as pipe:
                try:
                    pipe.watch(self.view_key, self.action_key)
                    raw = pipe.get(self.view_key)
                    current = json.loads(raw) if raw else None
                    pipe.multi()
                    view = make(current, pipe)
                    pipe.set(self.view_key, json.dumps(view), ex=REDIS_TTL_S)
                    pipe.execute()
                    return view
                except WatchError:  # changed under us: read it again
                    continue

    def publish(self, view: dict[str, Any], asked: str | None) -> dict[str, Any]:
        def make(current: dict[str, Any] | None, pipe: Any) -> dict[str, Any]:
            pipe.delete(self.action_key)
            version = int((current or {}).get("version", 0)) + 1
            return {**view, "version": version, "_asked": asked}

        return _public(self._change(make))

    def read(self) -> dict[str, Any] | None:
        raw = self.client.get(self.view_key)
        return _public(json.loads(raw)) if raw else None

    def send(self, version: int, action: str) -> dict[str, Any]:
        def make(current: dict[str, Any] | None, pipe: Any) -> dict[str, Any]:
            asked = (current or {}).get("_asked")
            sent = current.get("_sent") if current else None
            view = check_send(_public(current) if current else None, asked, sent, version, action)
            pipe.rpush(self.action_key, json.dumps({"asked": asked, "action": action}))
            pipe.expire(self.action_key, REDIS_TTL_S)
            return {**view, "_asked": asked, "_sent": action}

        return _public(self._change(make))

    def take(self, asked: str, timeout_s: float) -> str | None:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            popped = self.client.blpop([self.action_key], timeout=max(0.01, min(left, 5.0)))
            if popped is None:
                continue
            sent = json.loads(popped[1])
            if sent.get("asked") == asked:
                return str(sent["action"])


def _public(view: dict[str, Any]) -> dict[str, Any]:
    """The view without the channel's own bookkeeping keys."""
    return {k: v for k, v in view.items() if not k.startswith("_")}


def redis_prefix(queue_name: str, match_id: int) -> str:
    return f"tonk:{queue_name}:seat:{match_id}"


def open_channel(
    kind: str, url: str, match_id: int, *, redis_url: str = "", queue_name: str = ""
) -> SeatChannel:
    """The channel ``kind`` ("store" or "redis", as the table was made) of match ``match_id``."""
    if kind == "redis":
        if not redis_url:
            raise LookupError(f"match {match_id}'s seat talks through Redis; TONK_REDIS_URL is not set here")
        return RedisChannel(redis_client(redis_url), redis_prefix(queue_name, match_id))
    return StoreChannel(url, match_id)


_clients: dict[str, Any] = {}


def redis_client(redis_url: str) -> Any:
    """One client (and its connection pool) per URL per process."""
    client = _clients.get(redis_url)
    if client is None:
        from redis import Redis

        client = _clients[redis_url] = Redis.from_url(redis_url, socket_timeout=10, socket_connect_timeout=5)
    return client
