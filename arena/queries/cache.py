"""A tiny per-process cache for results that only change when matches change.

``cached(key, token, compute)``: an entry is stored with a *token* (a cheap fingerprint of
the rows it was computed from, e.g. the number and the largest id of done matches); a
lookup with another token recomputes.

``throttled(key, compute)``: a value (typically such a token, or a row count) recomputed at
most once every ``refresh_seconds`` (default 1 s). Even a cheap fingerprint is a scan of an
index, 5 ms on SQLite at 100,000 matches; a dashboard may be a second behind a finished match.

The settings come from :func:`configure`: the dashboard hands it its app's
``CACHE_REFRESH_SECONDS`` and ``CACHE_STALE_OK`` (tests set 0 and False); anything else, the
``tonk`` commands included, gets current answers (:class:`Settings`). Nothing here knows Flask.

Gunicorn workers each keep their own copy, which is fine: each notices changes on its own.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

REFRESH_SECONDS = 1.0
FRESH_WAIT_SECONDS = 1.0
MAX_ENTRIES = 256

_lock = threading.Lock()
_entries: OrderedDict[Hashable, tuple[Hashable, Any]] = OrderedDict()
_recent: dict[Hashable, tuple[float, Any]] = {}
_refreshing: dict[Hashable, threading.Event] = {}


@dataclass(frozen=True)
class Settings:
    """Outside a dashboard (the ``tonk`` commands, ``tonk demo``'s summary) every answer is
    current: a command that has just played matches must not print the board from before
    them. The dashboard asks for throttling and stale answers (REFRESH_SECONDS, stale_ok)."""

    refresh_seconds: float = 0.0
    #: False: a changed value is computed at once, never answered stale.
    stale_ok: bool = False
    #: With stale_ok: how long a request waits for a value being recomputed before it
    #: answers the old one.
    fresh_wait_seconds: float = FRESH_WAIT_SECONDS


_settings: Callable[[], Settings] = Settings


def configure(settings: Callable[[], Settings]) -> None:
    """Where the settings come from, asked at each lookup (the dashboard: the current app's
    config, so two apps in one process each keep their own)."""
    global _settings
    _settings = settings


def _store(key: Hashable, token: Hashable, value: Any) -> None:
    with _lock:
        _entries[key] = (token, value)
        _entries.move_to_end(key)
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)


def cached(key: Hashable, token: Hashable, compute: Callable[[], T]) -> T:
    with _lock:
        hit = _entries.get(key)
        if hit is not None and hit[0] == token:
            _entries.move_to_end(key)
            value: T = hit[1]
            return value
    value = compute()  # outside the lock: two requests may compute the same thing once each
    _store(key, token, value)
    return value


def revalidated(key: Hashable, token: Hashable, compute: Callable[[], T]) -> T:
    """Like :func:`cached`, but once a value exists a changed token makes nobody wait long:
    one background thread computes the new value, and the request waits for it at most
    ``fresh_wait_seconds``, then answers the old value.

    For the ratings fit (5 s at 100,000 matches): during a tournament another match is done
    every few seconds, and no page should wait for a refit each time; in a small arena the
    fit takes milliseconds and the page right after a tournament shows its result.
    ``compute`` runs outside the request, so it must open its own session. With ``stale_ok``
    false (tests, commands), it runs at once, like :func:`cached`."""
    settings = _settings()
    stale_ok = settings.stale_ok
    done: threading.Event | None = None
    with _lock:
        hit = _entries.get(key)
        if hit is not None and hit[0] == token:
            value: T = hit[1]
            return value
        if hit is not None and stale_ok:
            done = _refreshing.get(key)
            if done is None:
                done = _refreshing[key] = threading.Event()
                threading.Thread(target=_refresh, args=(key, token, compute, done), daemon=True).start()
            stale: T = hit[1]
    if hit is not None and done is not None:
        if done.wait(settings.fresh_wait_seconds):
            with _lock:
                now = _entries.get(key)
            if now is not None and now[0] == token:
                fresh: T = now[1]
                return fresh
        return stale
    value = compute()
    _store(key, token, value)
    return value


def _refresh(key: Hashable, token: Hashable, compute: Callable[[], Any], done: threading.Event) -> None:
    try:
        _store(key, token, compute())
    except Exception:  # the old value stays; the next request tries again
        logging.getLogger(__name__).exception("refreshing %r failed", key)
    finally:
        with _lock:
            _refreshing.pop(key, None)
        done.set()


def throttled(key: Hashable, compute: Callable[[], T]) -> T:
    now = time.monotonic()
    seconds = _settings().refresh_seconds
    with _lock:
        hit = _recent.get(key)
        if hit is not None and now - hit[0] < seconds:
            value: T = hit[1]
            return value
    value = compute()
    with _lock:
        if len(_recent) > MAX_ENTRIES * 4:
            _recent.clear()
        _recent[key] = (now, value)
    return value


def clear() -> None:
    with _lock:
        _entries.clear()
        _recent.clear()
