"""Where a hand stands and how it ended: :class:`Phase` and :class:`Outcome`, the values
:class:`sdk.engine.HandState` reports. A module of their own, below the engine, so that what
only reads a hand (sdk.table_text draws one) need not import the engine. sdk.engine
re-exports both."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

EndKind = Literal["tonk", "drop", "out", "stock", "cap", "fault"]


class Phase(Enum):
    START = "start"  # the seat to act may go down or draw
    PLAY = "play"  # after the draw: meld, lay off, then discard
    OVER = "over"


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a hand ended. ``payoffs`` are in stake units and sum to zero.

    ``end == "fault"`` is the arena's extension of ``tonk-hand/1``: ``faulted`` lost the
    hand as a penalty and pays every other seat 2x.
    """

    end: EndKind
    winners: tuple[int, ...]
    payoffs: tuple[int, ...]
    totals: tuple[int, ...]
    faulted: int | None = None

    def __init__(
        self,
        end: EndKind,
        winners: tuple[int, ...],
        payoffs: tuple[int, ...],
        totals: tuple[int, ...],
        faulted: int | None = None,
    ) -> None:
        # Same as the generated frozen __init__, only faster (one per hand).
        _set_end(self, end)
        _set_winners(self, winners)
        _set_payoffs(self, payoffs)
        _set_totals(self, totals)
        _set_faulted(self, faulted)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "end": self.end,
            "winners": list(self.winners),
            "payoffs": list(self.payoffs),
            "totals": list(self.totals),
        }
        if self.faulted is not None:
            data["faulted"] = self.faulted
        return data


_set_end = Outcome.__dict__["end"].__set__  # the slots' descriptors
_set_winners = Outcome.__dict__["winners"].__set__
_set_payoffs = Outcome.__dict__["payoffs"].__set__
_set_totals = Outcome.__dict__["totals"].__set__
_set_faulted = Outcome.__dict__["faulted"].__set__


__all__ = ["EndKind", "Outcome", "Phase"]
