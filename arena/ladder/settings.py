"""A ladder's settings, checked once when it is created and stored in ``tournaments.params``.

:meth:`LadderSettings.parse` is the strict reading of what an operator asks for (a clear
error quoting each bad value, nothing created); :meth:`LadderSettings.from_params` reads
what is stored.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from arena.errors import ArenaError
from arena.ratings.matchmaking import MatchmakingError, MatchmakingSettings
from sdk.rules import MAX_PLAYERS, MIN_PLAYERS

#: Bounds of the integer settings.
MAX_VERSIONS: Final = 100
MAX_TARGET: Final = 100_000
MAX_BACKLOG: Final = 100
#: The matchmaking settings an operator may set, and their types.
MATCHMAKING_FIELDS: Final = {f.name: f.type for f in dataclasses.fields(MatchmakingSettings)}


class InvalidLadderError(ArenaError):
    """A ladder that cannot be created as asked (the message quotes the bad value)."""

    code = "invalid_ladder"


@dataclass(frozen=True)
class LadderSettings:
    #: Who may play: None for every active bot, else these bot ids (still only active ones).
    pool: tuple[int, ...] | None
    table_size: int
    hands_per_match: int
    #: How many of each owner's bots play: the newest ones (by registration); the others keep
    #: their last rating on the board.
    versions_per_owner: int = 1
    #: The scheduler adds tables while fewer matches than this are pending or running
    #: (about twice the workers' slots keeps every slot busy between ticks).
    target: int = 16
    #: A bot joins another table only while it has fewer unfinished ladder matches than
    #: ``backlog`` x its capacity, so no bot's queue grows without bound.
    backlog: int = 2
    matchmaking: MatchmakingSettings = field(default_factory=MatchmakingSettings)

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> LadderSettings:
        """An operator's request: ``pool`` (None or bot ids), ``table_size``,
        ``hands_per_match``, and optionally ``versions_per_owner``, ``target``, ``backlog``,
        ``matchmaking`` (a mapping of MatchmakingSettings fields)."""
        unknown = sorted(set(raw) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise InvalidLadderError(f"unknown ladder setting {unknown[0]!r:.60}")
        pool = raw.get("pool")
        if pool is not None:
            if not isinstance(pool, list | tuple) or not all(type(b) is int and b > 0 for b in pool):
                raise InvalidLadderError(
                    f"a ladder's pool is a list of bot ids or none (every bot), got {pool!r:.80}"
                )
            if len(set(pool)) != len(pool):
                raise InvalidLadderError(f"a bot is in the pool twice: {list(pool)!r:.80}")
            pool = tuple(pool)
        size = _int(raw, "table_size", MIN_PLAYERS, MAX_PLAYERS, None)
        if pool is not None and len(pool) < size:
            raise InvalidLadderError(
                f"a table of {size} needs at least {size} bots in the pool, got {len(pool)}"
            )
        return cls(
            pool=pool,
            table_size=size,
            hands_per_match=_int(raw, "hands_per_match", 1, 10_000, None),
            versions_per_owner=_int(raw, "versions_per_owner", 1, MAX_VERSIONS, 1),
            target=_int(raw, "target", 1, MAX_TARGET, 16),
            backlog=_int(raw, "backlog", 1, MAX_BACKLOG, 2),
            matchmaking=parse_matchmaking(raw.get("matchmaking")),
        )

    @classmethod
    def from_params(cls, params: Mapping[str, Any] | None, table_size: int, hands: int) -> LadderSettings:
        params = params or {}
        pool = params.get("pool")
        return cls(
            pool=None if pool is None else tuple(int(b) for b in pool),
            table_size=table_size,
            hands_per_match=hands,
            versions_per_owner=int(params.get("versions_per_owner", 1)),
            target=int(params.get("target", 16)),
            backlog=int(params.get("backlog", 2)),
            matchmaking=MatchmakingSettings(**(params.get("matchmaking") or {})),
        )

    def to_params(self) -> dict[str, Any]:
        """What ``tournaments.params`` holds (table size and hands have their own columns)."""
        return {
            "pool": None if self.pool is None else list(self.pool),
            "versions_per_owner": self.versions_per_owner,
            "target": self.target,
            "backlog": self.backlog,
            "matchmaking": dataclasses.asdict(self.matchmaking),
        }


def parse_matchmaking(raw: object) -> MatchmakingSettings:
    if raw is None:
        return MatchmakingSettings()
    if not isinstance(raw, Mapping):
        raise InvalidLadderError(f"matchmaking settings are an object, got {raw!r:.80}")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in MATCHMAKING_FIELDS:
            raise InvalidLadderError(
                f"matchmaking setting {key!r:.60} is not one of {', '.join(sorted(MATCHMAKING_FIELDS))}"
            )
        kind = MATCHMAKING_FIELDS[key]
        if "bool" in str(kind):
            ok = type(value) is bool
        elif "int" in str(kind):
            ok = type(value) is int
        else:
            ok = type(value) in (int, float) and math.isfinite(value)
        if not ok:
            raise InvalidLadderError(f"matchmaking setting {key}={value!r:.60} has the wrong type ({kind})")
        values[key] = value
    try:
        return MatchmakingSettings(**values)
    except MatchmakingError as exc:
        raise InvalidLadderError(str(exc)) from None


def _int(raw: Mapping[str, Any], key: str, low: int, high: int, default: int | None) -> int:
    value = raw.get(key, default)
    if type(value) is not int or not low <= value <= high:
        raise InvalidLadderError(f"{key} must be an integer from {low} to {high}, got {value!r:.60}")
    return value
