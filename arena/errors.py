"""The arena's refusals, each carrying the HTTP status and the stable code the API answers with.

Every error a caller can cause (a bad token, a taken name, a bot that fails its checks) is a
subclass of :class:`ArenaError`, so the dashboard maps all of them with one handler::

    except ArenaError as exc:
        return jsonify(exc.to_json()), exc.status

and ``tonk submit`` prints ``message`` to the bot author as is. Messages therefore say what
was wrong and quote the input, but never echo a secret (tokens are never quoted).

The classes here are the generic kinds; arena/bots/owners.py, arena/bots/addresses.py and
arena/bots/registry.py define the specific ones (each also a :class:`ValueError`, so code that
validates input can catch them broadly).
"""

from __future__ import annotations

from typing import Any, ClassVar


class ArenaError(ValueError):
    """Base of every refusal. ``status`` is the HTTP status, ``code`` a stable identifier."""

    status: ClassVar[int] = 400
    code: ClassVar[str] = "bad_request"

    def __init__(self, message: str, *, details: Any = None):
        super().__init__(message)
        self.message = message
        #: Optional JSON-able detail (e.g. the faults of a failed conformance match).
        self.details = details

    def to_json(self) -> dict[str, Any]:
        """The API's error body: ``{"error": {"code": ..., "message": ...[, "details": ...]}}``."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            error["details"] = self.details
        return {"error": error}


class AuthenticationError(ArenaError):
    """No token, or one that belongs to nobody."""

    status = 401
    code = "unauthenticated"


class PermissionDeniedError(ArenaError):
    """A valid token that may not do this (not the bot's owner, not an operator)."""

    status = 403
    code = "forbidden"


class NotFoundError(ArenaError):
    status = 404
    code = "not_found"


class ConflictError(ArenaError):
    """The request clashes with what exists (a taken name, a retired bot)."""

    status = 409
    code = "conflict"


class UnprocessableError(ArenaError):
    """Well-formed, but refused on its merits (an internal address, a bot that fails its checks)."""

    status = 422
    code = "unprocessable"


# The read side's refusals (arena/queries), here so the write side (jobs, tournaments) can
# raise them without importing the query layer.


class TournamentNotFoundError(NotFoundError):
    code = "tournament_not_found"


class MatchNotFoundError(NotFoundError):
    code = "match_not_found"


class NotFinishedError(ConflictError):
    """Replays and seeds stay secret until the match (or tournament) is over."""

    code = "not_finished"


class InvalidQueryError(ArenaError):
    """A filter or paging value out of range (an unknown status, a negative offset)."""

    code = "invalid_query"


__all__ = [
    "ArenaError",
    "AuthenticationError",
    "ConflictError",
    "InvalidQueryError",
    "MatchNotFoundError",
    "NotFinishedError",
    "NotFoundError",
    "PermissionDeniedError",
    "TournamentNotFoundError",
    "UnprocessableError",
]
