"""The referee's state machine for one hand of Tonk.

:class:`HandState` holds everything about a hand, hidden cards included; nothing it holds is
ever handed to a bot except through :meth:`HandState.observation`, which builds the frozen
per-seat view. Every action is checked (:meth:`verify`) before anything changes, and
:meth:`apply` returns the :class:`~sdk.actions.Event` it recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from sdk.actions import (
    DRAW_DISCARD,
    DRAW_STOCK,
    DROP,
    Action,
    Discard,
    Draw,
    Drop,
    Event,
    Layoff,
    Meld,
)
from sdk.cards import DECK, Card, hand_value
from sdk.errors import DeckError, IllegalActionError, RecordError
from sdk.melds import TableMeld, hand_melds, make_meld
from sdk.rules import HAND_SIZE, MAX_PLAYERS, MIN_PLAYERS, STANDARD, Rules

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


def deal_from_deck(
    deck: Sequence[Card], players: int, dealer: int
) -> tuple[list[list[Card]], Card, list[Card]]:
    """Deal as RULES.md says: one card at a time from the top, starting left of the dealer;
    the next card is turned up; the rest is the stock, top first."""
    hands: list[list[Card]] = [[] for _ in range(players)]
    for k in range(HAND_SIZE * players):
        hands[(dealer + 1 + k) % players].append(deck[k])
    turned = deck[HAND_SIZE * players]
    return hands, turned, list(deck[HAND_SIZE * players + 1 :])


def check_deck(parts: Sequence[tuple[str, Sequence[Card]]]) -> None:
    """Raise :class:`DeckError` unless the named parts hold each of the 52 cards once."""
    where: dict[Card, str] = {}
    total = 0
    for name, cards in parts:
        for card in cards:
            total += 1
            if card in where:
                raise DeckError(f"card {card.text} appears twice: in {where[card]} and in {name}")
            where[card] = name
    if total != 52:
        missing = [c.text for c in DECK if c not in where]
        raise DeckError(f"a deck has 52 cards, these parts hold {total}; missing: {' '.join(missing)}")


class HandState:
    """One hand, from the deal (or a recorded position) to its settlement."""

    __slots__ = (
        "_stock",
        "dealer",
        "discard",
        "hands",
        "history",
        "initial",
        "locked",
        "outcome",
        "phase",
        "picked",
        "players",
        "rules",
        "start",
        "table",
        "to_act",
        "turns",
    )

    rules: Rules
    players: int
    dealer: int
    start: Literal["deal", "position"]
    hands: list[list[Card]]
    discard: list[Card]
    _stock: list[Card]  # top of the stock is the LAST element (cheap pops)
    table: list[TableMeld]
    to_act: int
    phase: Phase
    picked: Card | None
    turns: int
    locked: set[int]
    history: list[Event]
    outcome: Outcome | None
    initial: dict[str, Any]

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def deal(cls, deck: Sequence[Card], players: int, dealer: int = 0, rules: Rules = STANDARD) -> HandState:
        """A fresh hand dealt from ``deck`` (top first); TONK is checked at once."""
        _check_players(players, dealer)
        hands, turned, stock = deal_from_deck(deck, players, dealer)
        check_deck([("hands", [c for h in hands for c in h]), ("discard", [turned]), ("stock", stock)])
        return cls._build(rules, players, dealer, "deal", hands, [turned], stock, [], (dealer + 1) % players)

    @classmethod
    def from_position(
        cls,
        hands: Sequence[Sequence[Card]],
        discard: Sequence[Card],
        stock: Sequence[Card],
        table: Sequence[TableMeld] = (),
        dealer: int = 0,
        to_act: int | None = None,
        rules: Rules = STANDARD,
        start: Literal["deal", "position"] = "position",
    ) -> HandState:
        """A hand from explicit cards (a record's start). ``start="deal"`` checks TONK."""
        players = len(hands)
        _check_players(players, dealer)
        if to_act is None:
            to_act = (dealer + 1) % players
        if not 0 <= to_act < players:
            raise RecordError(f"seat to act {to_act!r} is not a seat of this hand")
        parts = [(f"hands[{i}]", list(h)) for i, h in enumerate(hands)]
        parts += [("discard", list(discard)), ("stock", list(stock))]
        parts += [(f"table[{i}]", list(m.cards)) for i, m in enumerate(table)]
        check_deck(parts)
        return cls._build(
            rules,
            players,
            dealer,
            start,
            [list(h) for h in hands],
            list(discard),
            list(stock),
            list(table),
            to_act,
        )

    @classmethod
    def _build(
        cls,
        rules: Rules,
        players: int,
        dealer: int,
        start: Literal["deal", "position"],
        hands: list[list[Card]],
        discard: list[Card],
        stock: list[Card],
        table: list[TableMeld],
        to_act: int,
    ) -> HandState:
        self = object.__new__(cls)
        self.rules = rules
        self.players = players
        self.dealer = dealer
        self.start = start
        self.hands = hands
        self.discard = discard
        self._stock = stock[::-1]
        self.table = table
        self.to_act = to_act
        self.phase = Phase.START
        self.picked = None
        self.turns = 0
        self.locked = set()
        self.history = []
        self.outcome = None
        self.initial = {
            "start": start,
            "hands": [list(h) for h in hands],
            "discard": list(discard),
            "stock": list(stock),
            "table": list(table),
            "to_act": to_act,
        }
        if start == "deal":
            self._check_tonk()
        return self

    def copy(self) -> HandState:
        """An independent copy (cards are shared; they are immutable)."""
        other = object.__new__(HandState)
        other.rules = self.rules
        other.players = self.players
        other.dealer = self.dealer
        other.start = self.start
        other.hands = [list(h) for h in self.hands]
        other.discard = list(self.discard)
        other._stock = list(self._stock)
        other.table = list(self.table)
        other.to_act = self.to_act
        other.phase = self.phase
        other.picked = self.picked
        other.turns = self.turns
        other.locked = set(self.locked)
        other.history = list(self.history)
        other.outcome = self.outcome
        other.initial = self.initial
        return other

    # -- read-only views ------------------------------------------------------------------

    @property
    def stock(self) -> list[Card]:
        """The stock, top first (a copy)."""
        return self._stock[::-1]

    @property
    def stock_size(self) -> int:
        return len(self._stock)

    @property
    def is_over(self) -> bool:
        return self.outcome is not None

    def totals(self) -> tuple[int, ...]:
        return tuple(hand_value(h) for h in self.hands)

    # -- legality -------------------------------------------------------------------------

    def legal_actions(self) -> list[Action]:
        """Every legal action for the seat to act, in a stable order (the protocol's indices).

        At the start of a turn: drop, then draw stock, then draw discard. After the draw:
        every meld, every lay-off, then every discard.
        """
        if self.phase is Phase.START:
            actions: list[Action] = []
            if self.to_act not in self.locked:
                actions.append(DROP)
            if self._stock:
                actions.append(DRAW_STOCK)
            if self.discard:
                actions.append(DRAW_DISCARD)
            return actions
        if self.phase is Phase.OVER:
            return []
        hand = sorted(self.hands[self.to_act], key=_index)
        rules = self.rules
        actions = [Meld(m) for m in hand_melds(hand, rules)]
        for i, meld in enumerate(self.table):
            for card in hand:
                if meld.accepts(card, rules):
                    actions.append(Layoff(card, i))
        picked = self.picked
        if picked is None or rules.discard_pickup_may_return or len(hand) == 1:
            actions.extend(Discard(c) for c in hand)
        else:
            actions.extend(Discard(c) for c in hand if c is not picked)
        return actions

    def verify(self, action: Action, seat: int | None = None) -> None:
        """Raise :class:`IllegalActionError` naming the rule ``action`` breaks, if it is illegal.

        ``seat`` (optional) is who claims to act; acting out of turn is illegal.
        """
        phase = self.phase
        if phase is Phase.OVER:
            raise IllegalActionError("the hand is over", rule="hand_over")
        actor = self.to_act
        if seat is not None and seat != actor:
            raise IllegalActionError(f"it is seat {actor}'s turn, not seat {seat}'s", rule="turn")
        kind = action.kind
        if kind == "draw":
            if phase is not Phase.START:
                raise IllegalActionError("a player draws once, at the start of the turn", rule="draw_once")
            pile = self._stock if action.source == "stock" else self.discard  # type: ignore[attr-defined]
            if not pile:
                raise IllegalActionError(
                    f"the {action.source} pile is empty",  # type: ignore[attr-defined]
                    rule="empty_pile",
                )
            return
        if kind == "drop":
            if phase is not Phase.START:
                raise IllegalActionError(
                    "going down is only allowed at the start of the turn, before drawing",
                    rule="drop_after_draw",
                )
            if actor in self.locked:
                raise IllegalActionError(
                    "a player whose spread was hit may not go down on their next turn (hit_lock)",
                    rule="hit_lock",
                )
            return
        if phase is not Phase.PLAY:
            raise IllegalActionError(
                f"{kind} comes after the draw: draw from the stock or the discard pile first (or go down)",
                rule="draw_first",
            )
        hand = self.hands[actor]
        if kind == "discard":
            card: Card = action.card  # type: ignore[attr-defined]
            if card not in hand:
                raise IllegalActionError(f"{card.text} is not in seat {actor}'s hand", rule="not_in_hand")
            if card is self.picked and len(hand) > 1 and not self.rules.discard_pickup_may_return:
                raise IllegalActionError(
                    f"{card.text} was just taken from the discard pile and may not be discarded "
                    "this turn while other cards remain",
                    rule="discard_pickup",
                )
            return
        if kind == "meld":
            cards: tuple[Card, ...] = action.cards  # type: ignore[attr-defined]
            for c in cards:
                if c not in hand:
                    raise IllegalActionError(f"{c.text} is not in seat {actor}'s hand", rule="not_in_hand")
            make_meld(actor, cards, self.rules)
            return
        if kind == "layoff":
            card, onto = action.card, action.onto  # type: ignore[attr-defined]
            if card not in hand:
                raise IllegalActionError(f"{card.text} is not in seat {actor}'s hand", rule="not_in_hand")
            if not 0 <= onto < len(self.table):
                raise IllegalActionError(
                    f"there is no meld {onto} on the table (it holds {len(self.table)})", rule="no_such_meld"
                )
            target = self.table[onto]
            if not target.accepts(card, self.rules):
                if target.kind == "book":
                    why = (
                        "a card may not be added to a book"
                        if not self.rules.book_layoff
                        else "only the fourth card of its rank may be added to a book"
                    )
                else:
                    why = "it does not extend either end of that spread"
                raise IllegalActionError(
                    f"{card.text} cannot be laid off on meld {onto} ({target}): {why}", rule="layoff_fit"
                )
            return
        raise IllegalActionError(f"unknown action {action!r}", rule="unknown")

    def can_apply(self, action: Action, seat: int | None = None) -> bool:
        try:
            self.verify(action, seat)
        except IllegalActionError:
            return False
        return True

    # -- mutation -------------------------------------------------------------------------

    def apply(self, action: Action, seat: int | None = None) -> Event:
        """Check ``action`` and play it for the seat to act; return the recorded event.

        Nothing changes when it raises.
        """
        self.verify(action, seat)
        actor = self.to_act
        kind = action.kind
        hand = self.hands[actor]
        event: Event
        if kind == "draw":
            if action.source == "stock":  # type: ignore[attr-defined]
                card = self._stock.pop()
                self.picked = None
            else:
                card = self.discard.pop()
                self.picked = card
            hand.append(card)
            self.phase = Phase.PLAY
            event = Event(actor, action, card)
            self.history.append(event)
        elif kind == "discard":
            card = action.card  # type: ignore[attr-defined]
            hand.remove(card)
            self.discard.append(card)
            event = Event(actor, action)
            self.history.append(event)
            self._end_turn(actor, went_out=not hand)
        elif kind == "meld":
            cards = action.cards  # type: ignore[attr-defined]
            for card in cards:
                hand.remove(card)
            self.table.append(make_meld(actor, cards, self.rules))
            event = Event(actor, action)
            self.history.append(event)
            if not hand:
                self._settle_out(actor, by_discard=False)
        elif kind == "layoff":
            card, onto = action.card, action.onto  # type: ignore[attr-defined]
            hand.remove(card)
            target = self.table[onto]
            self.table[onto] = target.extended(card)
            if self.rules.hit_lock and target.owner != actor:
                self.locked.add(target.owner)
            event = Event(actor, action)
            self.history.append(event)
            if not hand:
                self._settle_out(actor, by_discard=False)
        else:  # drop
            event = Event(actor, action)
            self.history.append(event)
            self._settle_drop(actor)
        return event

    def forfeit(self, seat: int) -> Outcome:
        """End the hand with ``seat`` penalised for a fault: it pays every other seat 2x."""
        if self.outcome is not None:
            return self.outcome
        payoffs = [2] * self.players
        payoffs[seat] = -2 * (self.players - 1)
        winners = tuple(s for s in range(self.players) if s != seat)
        return self._finish(Outcome("fault", winners, tuple(payoffs), self.totals(), seat))

    def _end_turn(self, actor: int, went_out: bool) -> None:
        self.turns += 1
        self.picked = None
        self.locked.discard(actor)
        if went_out:
            self._settle_out(actor, by_discard=True)
            return
        if not self._stock:
            if self.rules.stock_reshuffle and len(self.discard) > 1:
                # Turn the pile under the top card over: its bottom card becomes the top.
                self._stock = self.discard[-2::-1]
                self.discard = self.discard[-1:]
            else:
                self._settle_showdown("stock")
                return
        if self.rules.turn_cap and self.turns >= self.rules.turn_cap:
            self._settle_showdown("cap")
            return
        self.to_act = (actor + 1) % self.players
        self.phase = Phase.START

    # -- settling -------------------------------------------------------------------------

    def _finish(self, outcome: Outcome) -> Outcome:
        self.outcome = outcome
        self.phase = Phase.OVER
        return outcome

    def _check_tonk(self) -> None:
        rules = self.rules
        totals = self.totals()
        tonk = [s for s, t in enumerate(totals) if t <= rules.tonk_low or t >= rules.tonk_high]
        if not tonk:
            return
        payoffs = [0] * self.players
        for s in range(self.players):
            if s not in tonk:
                for w in tonk:
                    payoffs[s] -= 2
                    payoffs[w] += 2
        self._finish(Outcome("tonk", tuple(tonk), tuple(payoffs), totals))

    def _settle_out(self, actor: int, by_discard: bool) -> None:
        stake = 2 if (self.rules.meld_out_double and not by_discard) else 1
        payoffs = [-stake] * self.players
        payoffs[actor] = stake * (self.players - 1)
        self._finish(Outcome("out", (actor,), tuple(payoffs), self.totals()))

    def _settle_drop(self, dropper: int) -> None:
        totals = self.totals()
        mine = totals[dropper]
        others = [s for s in range(self.players) if s != dropper]
        low = min(totals[s] for s in others)
        payoffs = [0] * self.players
        if mine < low:
            for s in others:
                payoffs[s] -= 1
                payoffs[dropper] += 1
            self._finish(Outcome("drop", (dropper,), tuple(payoffs), totals))
            return
        for s in others:
            if totals[s] <= mine:
                payoffs[dropper] -= 2
                payoffs[s] += 2
        lowest = [s for s in others if totals[s] == low]
        for s in others:
            if s not in lowest:
                for w in lowest:
                    payoffs[s] -= 1
                    payoffs[w] += 1
        self._finish(Outcome("drop", tuple(lowest), tuple(payoffs), totals))

    def _settle_showdown(self, end: EndKind) -> None:
        totals = self.totals()
        low = min(totals)
        lowest = [s for s in range(self.players) if totals[s] == low]
        payoffs = [0] * self.players
        for s in range(self.players):
            if s not in lowest:
                for w in lowest:
                    payoffs[s] -= 1
                    payoffs[w] += 1
        self._finish(Outcome(end, tuple(lowest), tuple(payoffs), totals))


def _index(card: Card) -> int:
    return card.index


def _check_players(players: int, dealer: int) -> None:
    if not MIN_PLAYERS <= players <= MAX_PLAYERS:
        raise RecordError(f"Tonk is played by {MIN_PLAYERS} to {MAX_PLAYERS} players, not {players}")
    if type(dealer) is not int or not 0 <= dealer < players:
        raise RecordError(f"dealer {dealer!r} is not a seat of a {players}-player hand")


__all__ = ["Draw", "Drop", "HandState", "Outcome", "Phase", "check_deck", "deal_from_deck"]
