"""The rule set a hand is played under: the ``standard`` defaults of docs/rules.md plus the named
variants real tables play. One immutable object, recorded with every hand."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Final

from sdk.errors import RecordError, RulesError

MIN_PLAYERS: Final = 2
MAX_PLAYERS: Final = 6
HAND_SIZE: Final = 5
MAX_TURN_CAP: Final = 100_000
MAX_TONK_TOTAL: Final = 1000  # far above any hand total: tonk_high=999 switches TONK-high off


def check_players(players: int, dealer: int) -> None:
    """Raise :class:`RecordError` unless ``players`` may play a hand and ``dealer`` is a seat."""
    if not MIN_PLAYERS <= players <= MAX_PLAYERS:
        raise RecordError(f"Tonk is played by {MIN_PLAYERS} to {MAX_PLAYERS} players, not {players}")
    if type(dealer) is not int or not 0 <= dealer < players:
        raise RecordError(f"dealer {dealer!r} is not a seat of a {players}-player hand")


@dataclass(frozen=True, slots=True)
class Rules:
    """Rule options. ``Rules()`` is the ``standard`` rule set."""

    #: The card just taken from the discard pile may be discarded again in the same turn.
    discard_pickup_may_return: bool = False
    #: Emptying the hand by melding or laying off (no final discard) pays 2x.
    meld_out_double: bool = False
    #: A fourth card may be laid off on a book of three.
    book_layoff: bool = False
    #: Aces may also rank above the king in spreads (Q K A); never both ways (no K A 2).
    ace_high_or_low: bool = False
    #: A player whose spread another player laid off on ("hit") may not go down on their next
    #: turn; the lock lifts when that turn ends. A lay-off on a book locks nobody.
    hit_lock: bool = False
    #: When the stock is empty at the end of a turn, the discards under the top card become the
    #: new stock instead of a showdown: the pile is turned over, not shuffled (its bottom card
    #: becomes the top of the stock), so a record replays exactly. The top card stays as the
    #: discard pile. With nothing under the top card, the hand ends in the showdown after all.
    stock_reshuffle: bool = False
    #: Completed turns (ended by a discard) after which the hand ends in a showdown; 0 = none.
    turn_cap: int = 200
    #: Hands at or below this total have TONK right after the deal.
    tonk_low: int = 15
    #: Hands at or above this total have TONK right after the deal.
    tonk_high: int = 49

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            expected = bool if field.type in ("bool", bool) else int
            if type(value) is not expected:
                raise RulesError(f"rule option {field.name!r} must be {expected.__name__}, got {value!r}")
        # Bounded so every option fits the protocol's int32 fields with room to spare.
        if self.turn_cap < 0:
            raise RulesError(f"rule option 'turn_cap' must be 0 (no cap) or more, got {self.turn_cap!r}")
        if self.turn_cap > MAX_TURN_CAP:
            raise RulesError(f"rule option 'turn_cap' must be at most {MAX_TURN_CAP}, got {self.turn_cap!r}")
        if not 0 <= self.tonk_low < self.tonk_high:
            raise RulesError(
                f"rule options need 0 <= tonk_low < tonk_high, got {self.tonk_low!r}, {self.tonk_high!r}"
            )
        if self.tonk_high > MAX_TONK_TOTAL:
            raise RulesError(
                f"rule option 'tonk_high' must be at most {MAX_TONK_TOTAL}, got {self.tonk_high!r}"
            )

    @property
    def name(self) -> str:
        """``standard`` for the defaults, else ``custom``."""
        return "standard" if self == STANDARD else "custom"

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_json(cls, value: Any) -> Rules:
        """Read the record form: a rule-set name, or an object of options over ``standard``.

        An object may name its base with ``"name": "standard"``.
        """
        if value is None:
            return STANDARD
        if isinstance(value, str):
            preset = PRESETS.get(value)
            if preset is None:
                raise RulesError(f"unknown rule set {value!r}; known: {', '.join(sorted(PRESETS))}")
            return preset
        if not isinstance(value, dict):
            raise RulesError(f"rules must be a rule-set name or an object of options, got {value!r}")
        options = dict(value)
        base_name = options.pop("name", "standard")
        base = cls.from_json(base_name) if base_name != "custom" else STANDARD
        known = set(cls.option_names())
        unknown = sorted(set(options) - known)
        if unknown:
            raise RulesError(f"unknown rule option {unknown[0]!r}; known options: {', '.join(sorted(known))}")
        return dataclasses.replace(base, **options)

    def to_json(self) -> str | dict[str, Any]:
        """The record form: ``"standard"``, or the options that differ from it."""
        if self == STANDARD:
            return "standard"
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != getattr(STANDARD, f.name)
        }

    def with_options(self, **options: Any) -> Rules:
        """A copy with some options changed (this object is never mutated)."""
        return Rules.from_json({**_as_dict(self), **options})


def _as_dict(rules: Rules) -> dict[str, Any]:
    return {f.name: getattr(rules, f.name) for f in dataclasses.fields(rules)}


STANDARD: Final = Rules()
PRESETS: Final[dict[str, Rules]] = {"standard": STANDARD}
