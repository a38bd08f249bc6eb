"""A tournament's settings, fixed when it is created and read by everything that plays it.

:class:`TournamentSettings` is the one typed reading of ``tournaments.config``: the referee's
deadlines and fault limit and how long a match waits for an offline connected bot.
:meth:`TournamentSettings.parse` is the strict reading of what an operator asks for (a
clear error per bad field); :meth:`TournamentSettings.from_column` reads what is stored,
falling back to defaults for a key an older release did not store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from arena.config import Settings
from arena.errors import ArenaError
from sdk.referee import RefereeConfig
from sdk.rules import Rules

MAX_DEALS: Final = 100_000
MAX_HANDS: Final = 10_000
#: How a tournament deals: every seat order of a deal from one seed (duplicate), a seed per
#: match (independent), or duplicate only at tables of bots whose memory the arena controls
#: and independent elsewhere (auto, the default: arena/bots/memory.py).
DEAL_MODES: Final = ("auto", "duplicate", "independent")

#: Bounds of the referee settings a tournament may set (they travel in int32 protocol fields).
REFEREE_LIMITS: Final[dict[str, tuple[int, int]]] = {
    "decision_deadline_ms": (1, 600_000),
    "time_bank_ms": (0, 3_600_000),
    "max_faults": (1, 1_000),
    # Optional (sdk.referee.RefereeConfig's default when absent): StartMatch/EndHand/EndMatch.
    "lifecycle_deadline_ms": (1, 60_000),
    # How long a match waits for an offline connected bot (arena/play/offline.py), in seconds.
    "offline_grace_s": (0, 7 * 24 * 3600),
}


class InvalidTournamentError(ArenaError):
    """A tournament that cannot be built as asked (bad sizes, too few bots, bad counts)."""

    code = "invalid_tournament"


@dataclass(frozen=True, slots=True)
class TournamentSettings:
    """The referee and offline-grace settings of one tournament (``None``: not set, the
    default of whoever reads it applies)."""

    decision_deadline_ms: int | None = None
    time_bank_ms: int | None = None
    max_faults: int | None = None
    lifecycle_deadline_ms: int | None = None
    offline_grace_s: int | None = None

    @classmethod
    def parse(cls, overrides: Mapping[str, object] | None, base: Settings) -> TournamentSettings:
        """What an operator asks for: the arena's defaults from ``base`` (deadline, time
        bank, fault limit), each key of ``overrides`` checked against REFEREE_LIMITS."""
        values: dict[str, Any] = {
            "decision_deadline_ms": base.decision_deadline_ms,
            "time_bank_ms": base.time_bank_ms,
            "max_faults": base.max_faults,
        }
        for key, value in (overrides or {}).items():
            if key not in REFEREE_LIMITS:
                raise InvalidTournamentError(
                    f"referee setting {key}={value!r:.40} is not one of {sorted(REFEREE_LIMITS)}"
                )
            low, high = REFEREE_LIMITS[key]
            if type(value) is not int or not low <= value <= high:
                raise InvalidTournamentError(
                    f"referee setting {key} must be an integer from {low} to {high}, got {value!r}"
                )
            values[key] = value
        return cls(**values)

    @classmethod
    def from_column(cls, config: Mapping[str, object] | None) -> TournamentSettings:
        """What is stored: a key that is absent, or not a non-negative integer, is not set."""
        config = config or {}

        def read(key: str) -> int | None:
            value = config.get(key)
            return value if type(value) is int and value >= 0 else None

        return cls(**{field.name: read(field.name) for field in dataclasses.fields(cls)})

    def to_column(self) -> dict[str, int]:
        """The stored form: the keys that are set."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    def referee(self, defaults: RefereeConfig | None = None) -> RefereeConfig:
        """The referee's configuration: these settings over ``defaults``."""
        d = defaults or RefereeConfig()
        return RefereeConfig(
            decision_deadline_ms=_or(self.decision_deadline_ms, d.decision_deadline_ms),
            time_bank_ms=_or(self.time_bank_ms, d.time_bank_ms),
            max_faults=max(1, _or(self.max_faults, d.max_faults)),
            lifecycle_deadline_ms=max(1, _or(self.lifecycle_deadline_ms, d.lifecycle_deadline_ms)),
        )

    def grace_s(self, default: int) -> int:
        """Seconds a match waits for an offline connected bot."""
        return _or(self.offline_grace_s, default)


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def rules_to_column(rules: Rules) -> dict[str, object]:
    """``Tournament.rules`` holds an object: the options that differ from standard."""
    as_json = rules.to_json()
    return {"name": as_json} if isinstance(as_json, str) else dict(as_json)
