"""A per-address bound on attempts at a route whose credential could be guessed (redeeming
an invite code, POST /api/v1/owners): at most ``attempts`` in any ``window_s`` seconds from
one client address, else ``429 too_many_requests`` with a ``Retry-After``.

The count is kept in this process (each dashboard process bounds its own clients), which is
all it needs to be: a code carries 256 random bits, so the bound is not what keeps guesses
from succeeding; it keeps one client from filling the store's logs and the CPU with them.
Behind a reverse proxy every client has the proxy's address unless the proxy's
X-Forwarded-For is trusted (docs/operator-guide.md).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Final

from flask import Flask, current_app, request

from arena.errors import ArenaError

_EXTENSION: Final = "tonk_join_limiter"
#: Addresses remembered at most; past it the idlest are forgotten (bounded memory).
MAX_CLIENTS: Final = 10_000


class TooManyAttemptsError(ArenaError):
    status = 429
    code = "too_many_requests"

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after  # seconds, sent as Retry-After


class RateLimiter:
    def __init__(self, attempts: int, window_s: float):
        if attempts < 1 or window_s <= 0:
            raise ValueError(f"a rate limit needs attempts >= 1 and a window > 0, got {attempts}, {window_s}")
        self.attempts = attempts
        self.window_s = window_s
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def hit(self, client: str, now: float | None = None) -> None:
        """Count an attempt by ``client``, or raise TooManyAttemptsError (not counted)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._seen.setdefault(client, deque())
            while times and times[0] <= now - self.window_s:
                times.popleft()
            if len(times) >= self.attempts:
                wait = max(1, int(times[0] + self.window_s - now) + 1)
                raise TooManyAttemptsError(
                    f"too many attempts from your address: at most {self.attempts} in "
                    f"{self.window_s:g} s; try again in {wait} s",
                    wait,
                )
            times.append(now)
            if len(self._seen) > MAX_CLIENTS:
                idlest = sorted(self._seen, key=lambda k: self._seen[k][-1] if self._seen[k] else 0.0)
                for key in idlest[: len(self._seen) - MAX_CLIENTS // 2]:
                    del self._seen[key]


def init_app(app: Flask) -> None:
    attempts, window_s = app.config.get("JOIN_RATE_LIMIT", (20, 60.0))
    app.extensions[_EXTENSION] = RateLimiter(int(attempts), float(window_s))


def limit_joins() -> None:
    """Count this request against its client's bound on invite redemptions."""
    limiter: RateLimiter = current_app.extensions[_EXTENSION]
    limiter.hit(request.remote_addr or "unknown")
