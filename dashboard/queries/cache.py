"""A tiny per-process cache for results that only change when a match finishes.

Each entry is stored with a *token* (a cheap fingerprint of the rows it was computed from,
e.g. the number and the largest id of finished matches); a lookup with a different token
recomputes. Gunicorn workers each keep their own copy, which is fine: a stale worker
notices the new token on its next request.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_entries: OrderedDict[Hashable, tuple[Hashable, Any]] = OrderedDict()
MAX_ENTRIES = 256


def cached(key: Hashable, token: Hashable, compute: Callable[[], T]) -> T:
    with _lock:
        hit = _entries.get(key)
        if hit is not None and hit[0] == token:
            _entries.move_to_end(key)
            value: T = hit[1]
            return value
    value = compute()  # outside the lock: two requests may compute the same thing once each
    with _lock:
        _entries[key] = (token, value)
        _entries.move_to_end(key)
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
    return value


def clear() -> None:
    with _lock:
        _entries.clear()
