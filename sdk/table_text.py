"""A hand drawn in text: ``str(HandState)`` (:meth:`sdk.engine.HandState.__str__`), like
python-chess's ``str(board)``: each seat's cards and total, the piles, the melds, and whose turn
it is or how the hand ended. It reads a hand only through :class:`Table` (which
:class:`~sdk.engine.HandState` is), so it sits below the engine."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from sdk.actions import Action, Event
from sdk.cards import Card, sort_hand
from sdk.melds import TableMeld
from sdk.outcome import Outcome, Phase


class Table(Protocol):
    """What :func:`draw` reads of a hand: the attributes of :class:`sdk.engine.HandState`."""

    @property
    def hands(self) -> Sequence[Sequence[Card]]: ...
    @property
    def dealer(self) -> int: ...
    @property
    def to_act(self) -> int: ...
    @property
    def phase(self) -> Phase: ...
    @property
    def picked(self) -> Card | None: ...
    @property
    def locked(self) -> Collection[int]: ...
    @property
    def discard(self) -> Sequence[Card]: ...
    @property
    def stock(self) -> Sequence[Card]: ...
    @property
    def table(self) -> Sequence[TableMeld]: ...
    @property
    def turns(self) -> int: ...
    @property
    def history(self) -> Sequence[Event]: ...
    @property
    def outcome(self) -> Outcome | None: ...
    def totals(self) -> tuple[int, ...]: ...
    def legal_actions(self) -> list[Action]: ...


def draw(self: Table) -> str:
    """The table in a few lines: each seat's cards and total (``>`` marks the seat to act,
    ``D`` the dealer), the stock, the discard pile, the melds with their owners, and
    whose turn it is (or how the hand ended)::

        seat 0 D    4c 9d Jh 2s Qs  = 35
        seat 1 >    2c 5d 9h Js Kc  = 36
        stock 41 cards, discard 7c (1 card)
        table: no melds
        seat 1 to act, start of turn: drop, draw stock or draw discard
    """
    totals = self.totals()
    width = max(len(" ".join(c.text for c in hand)) for hand in self.hands)
    lines = []
    for seat, hand in enumerate(self.hands):
        marks = ("D" if seat == self.dealer else " ") + (
            ">" if seat == self.to_act and self.outcome is None else " "
        )
        cards = " ".join(c.text for c in sort_hand(hand))
        lock = "  (hit: may not drop)" if seat in self.locked else ""
        lines.append(f"seat {seat} {marks}  {cards:<{width}}  = {totals[seat]}{lock}")
    pile = self.discard
    top = f"discard {pile[-1].text} ({_count(len(pile))})" if pile else "no discard pile"
    lines.append(f"stock {_count(len(self.stock))}, {top}")
    if self.table:
        melds = ", ".join(f"[{i}] {m} ({m.kind}, seat {m.owner})" for i, m in enumerate(self.table))
        lines.append(f"table: {melds}")
    else:
        lines.append("table: no melds")
    lines.append(status(self))
    return "\n".join(lines)


def status(self: Table) -> str:
    """The last line: whose turn and what they may do, or how the hand ended."""
    outcome = self.outcome
    if outcome is None:
        if self.phase is Phase.START:
            moves = ", ".join(str(a) for a in self.legal_actions())
            return f"seat {self.to_act} to act, start of turn: {_or(moves)}"
        picked = f" (took {self.picked.text} from the discard pile)" if self.picked is not None else ""
        return f"seat {self.to_act} to act, after the draw{picked}: meld, lay off or discard"
    seats = " and ".join(f"seat {s}" for s in outcome.winners)
    if outcome.end == "tonk":
        how = f"TONK after the deal ({seats})"
    elif outcome.end == "drop":
        dropper = self.history[-1].seat
        how = f"seat {dropper} went down; lowest: {seats}"
    elif outcome.end == "out":
        how = f"{seats} went out"
    elif outcome.end == "fault":
        how = f"seat {outcome.faulted} faulted"
    else:
        why = "the stock ran out" if outcome.end == "stock" else "the turn cap was reached"
        how = f"{why}; lowest: {seats}"
    payoffs = " ".join(f"{p:+d}" for p in outcome.payoffs)
    turns = f"{self.turns} turn" if self.turns == 1 else f"{self.turns} turns"
    return f"over after {turns}: {how}; payoffs by seat {payoffs}"


def _count(n: int) -> str:
    return f"{n} card" if n == 1 else f"{n} cards"


def _or(moves: str) -> str:
    head, sep, last = moves.rpartition(", ")
    return f"{head} or {last}" if sep else moves
