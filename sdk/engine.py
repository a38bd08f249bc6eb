"""The referee's state machine for one hand of Tonk.

:class:`HandState` holds everything about a hand, hidden cards included; nothing it holds is
ever handed to a bot except through :meth:`HandState.observation`, which builds the frozen
per-seat view. Every action is checked (:meth:`verify`) before anything changes, and
:meth:`apply` returns the :class:`~sdk.actions.Event` it recorded.

As a library: :meth:`HandState.from_seed` deals a match's hand, :meth:`HandState.setup` builds a
position from card text (dealing the rest), :meth:`HandState.apply_text` plays ``"draw stock"``
and the like, and ``print(state)`` draws the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import sdk.settling as settling
from sdk.actions import (
    DISCARD_ACTIONS,
    DISCARD_EVENTS,
    DRAW_DISCARD,
    DRAW_DISCARD_EVENTS,
    DRAW_STOCK,
    DRAW_STOCK_EVENTS,
    DROP,
    DROP_EVENTS,
    Action,
    Draw,
    Drop,
    Event,
    Layoff,
    Meld,
)
from sdk.cards import DECK, Card, is_whole_deck
from sdk.errors import DeckError, IllegalActionError, NotationError, RecordError
from sdk.melds import TableMeld, hand_melds, make_meld
from sdk.outcome import EndKind, Outcome, Phase
from sdk.rules import HAND_SIZE, STANDARD, Rules, check_players

# sdk.dealing (hashlib, secrets), sdk.position_setup and sdk.table_text are imported by the
# methods that use them: replaying a record (``tonk record``) needs none of them.


def deal_from_deck(
    deck: Sequence[Card], players: int, dealer: int
) -> tuple[list[list[Card]], Card, list[Card]]:
    """Deal as docs/rules.md says: one card at a time from the top, starting left of the dealer;
    the next card is turned up; the rest is the stock, top first."""
    dealt = HAND_SIZE * players
    hands: list[list[Card]] = [[]] * players
    for k in range(players):  # cards k, k + n, k + 2n... go to seat dealer + 1 + k (mod n)
        hands[(dealer + 1 + k) % players] = list(deck[k:dealt:players])
    return hands, deck[dealt], list(deck[dealt + 1 :])


def check_deck(parts: Sequence[tuple[str, Sequence[Card]]]) -> None:
    """Raise :class:`DeckError` unless the named parts hold each of the 52 cards once."""
    where: dict[Card, str] = {}
    total = 0
    for name, cards in parts:
        for card in cards:
            if not isinstance(card, Card):
                raise DeckError(f"{name} holds {card!r}, which is not a card")
            total += 1
            if card in where:
                raise DeckError(f"card {card.text} appears twice: in {where[card]} and in {name}")
            where[card] = name
    if total != 52:
        missing = [c.text for c in DECK if c not in where]
        raise DeckError(f"a deck has 52 cards, these parts hold {total}; missing: {' '.join(missing)}")


def _check_cards(
    hands: Sequence[Sequence[Card]],
    discard: Sequence[Card],
    stock: Sequence[Card],
    table: Sequence[TableMeld],
) -> None:
    """:func:`check_deck` for a position, with a fast path for the usual case (a whole deck)."""
    cards: list[Card] = []
    for hand in hands:
        cards += hand
    cards += discard
    cards += stock
    for meld in table:
        cards += meld.cards
    if is_whole_deck(cards):
        return  # the usual case, checked in C
    parts = [(f"hands[{i}]", h) for i, h in enumerate(hands)]
    parts += [("discard", discard), ("stock", stock)]
    parts += [(f"table[{i}]", m.cards) for i, m in enumerate(table)]
    check_deck(parts)


# start, hands, discard, stock (top first), table, to_act; never mutated once built
_Initial = tuple[str, list[list[Card]], list[Card], list[Card], list[TableMeld], int]
_START = Phase.START
_PLAY = Phase.PLAY
_OVER = Phase.OVER


class HandState:
    """One hand, from the deal (or a recorded position) to its settlement."""

    __slots__ = (
        "_initial",
        "_stock",
        "_views",
        "dealer",
        "discard",
        "hands",
        "history",
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
    picked: Card | None  # the card the seat to act took from the discard pile this turn
    turns: int  # completed turns (ended by a discard)
    locked: set[int]  # hit_lock: seats that may not go down on their next turn
    history: list[Event]
    outcome: Outcome | None
    _initial: _Initial  # the starting position, for the hand's record (see :attr:`initial`)
    _views: list[list[Event]] | None  # each seat's view of the history, once asked for

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def deal(cls, deck: Sequence[Card], players: int, dealer: int = 0, rules: Rules = STANDARD) -> HandState:
        """A fresh hand dealt from ``deck`` (top first); TONK is checked at once."""
        check_players(players, dealer)
        if not is_whole_deck(deck):
            check_deck([("the deck", deck)])
        hands, turned, stock = deal_from_deck(deck, players, dealer)
        to_act = dealer + 1 if dealer + 1 < players else 0
        return cls._build(rules, players, dealer, "deal", hands, [turned], stock, [], to_act)

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
        """A hand from explicit cards (a record's start). ``start="deal"`` checks TONK.

        Every hand must hold a card: a player with none has already gone out."""
        players = len(hands)
        check_players(players, dealer)
        if to_act is None:
            to_act = (dealer + 1) % players
        elif type(to_act) is not int or not 0 <= to_act < players:
            raise RecordError(f"seat to act {to_act!r} is not a seat of this hand")
        _check_cards(hands, discard, stock, table)
        if not all(hands):
            i = next(i for i, h in enumerate(hands) if not h)
            raise RecordError(f"hands[{i}] is empty: a player with no cards has already gone out")
        hands_copy = list(map(list, hands))
        return cls._build(
            rules, players, dealer, start, hands_copy, list(discard), list(stock), list(table), to_act
        )

    @classmethod
    def from_seed(
        cls, seed: int, players: int, dealer: int | None = None, rules: Rules = STANDARD, *, hand: int = 0
    ) -> HandState:
        """Hand ``hand`` of a match with ``seed``, dealt as the referee deals it: from
        :func:`sdk.dealing.deck_order` (docs/dealing.md), with the dealer one seat left per
        hand from seat 0 unless ``dealer`` is given. TONK is checked at once."""
        if type(hand) is not int or hand < 0:
            raise NotationError(f"a hand index is an integer >= 0, got {hand!r}")
        from sdk.dealing import deck_order

        if dealer is None:
            check_players(players, 0)
            dealer = hand % players
        return cls.deal(deck_order(seed, hand), players, dealer, rules)

    @classmethod
    def setup(
        cls,
        hands: Mapping[int, str | Sequence[Card | str]] | Sequence[str | Sequence[Card | str]],
        discard: str | Sequence[Card | str] | None = None,
        stock: str | Sequence[Card | str] = "",
        table: Sequence[tuple[int, str | Sequence[Card | str]]] = (),
        *,
        players: int | None = None,
        dealer: int | None = None,
        to_act: int | None = None,
        seed: int = 0,
        rules: Rules = STANDARD,
    ) -> HandState:
        """A position from the cards you care about, the rest of the deck filled in from
        ``seed``: see :func:`sdk.position_setup.assemble_position`."""
        from sdk.position_setup import assemble_position

        p = assemble_position(
            hands, discard, stock, table,
            players=players, dealer=dealer, to_act=to_act, seed=seed, rules=rules,
        )  # fmt: skip
        return cls.from_position(
            p.hands, p.discard, p.stock, p.table, dealer=p.dealer, to_act=p.to_act, rules=rules
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
        self.phase = _START
        self.picked = None
        self.turns = 0
        self.locked = set()
        self.history = []
        self.outcome = None
        # ``stock`` itself is kept: _stock is a reversed copy, so nothing mutates it.
        self._initial = (start, list(map(list, hands)), discard[:], stock, table[:], to_act)
        self._views = None
        if start == "deal":
            self._check_tonk()
        return self

    def copy(self) -> HandState:
        """An independent copy (cards, melds and events are shared; they are immutable)."""
        other = object.__new__(HandState)
        other.rules = self.rules
        other.players = self.players
        other.dealer = self.dealer
        other.start = self.start
        other.hands = list(map(list, self.hands))
        other.discard = self.discard[:]
        other._stock = self._stock[:]
        other.table = self.table[:]
        other.to_act = self.to_act
        other.phase = self.phase
        other.picked = self.picked
        other.turns = self.turns
        other.locked = set(self.locked)
        other.history = self.history[:]
        other.outcome = self.outcome
        other._initial = self._initial
        other._views = None
        return other

    # -- read-only views ------------------------------------------------------------------

    def seat_history(self, seat: int) -> list[Event]:
        """The history as ``seat`` may see it: another seat's stock draw does not show its card.
        (The list is the engine's own; do not change it.)"""
        views = self._views
        if views is None:
            history = self.history
            views = [[e if e.seat == s else e.public() for e in history] for s in range(self.players)]
            self._views = views
        return views[seat]

    def _extend_views(self, event: Event) -> None:
        assert self._views is not None
        hidden = event.public()  # itself, unless it is a stock draw
        if hidden is not event:
            for seat, view in enumerate(self._views):
                view.append(event if seat == event.seat else hidden)
        else:
            for view in self._views:
                view.append(event)

    @property
    def initial(self) -> dict[str, Any]:
        """The position the hand started from (a fresh dict of fresh lists): ``start``,
        ``hands``, ``discard``, ``stock`` (top first), ``table`` and ``to_act``."""
        start, hands, discard, stock, table, to_act = self._initial
        return {
            "start": start,
            "hands": [list(h) for h in hands],
            "discard": list(discard),
            "stock": list(stock),
            "table": list(table),
            "to_act": to_act,
        }

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
        """Each seat's point total (ace 1, pips at face value, J Q K 10)."""
        out = []
        for hand in self.hands:  # plain loops: cheaper than comprehensions on CPython 3.11
            total = 0
            for card in hand:
                total += card.value
            out.append(total)
        return tuple(out)

    # -- display --------------------------------------------------------------------------

    def __str__(self) -> str:
        """The table in a few lines, as python-chess draws a board: see
        :func:`sdk.table_text.draw`."""
        from sdk.table_text import draw

        return draw(self)

    def __repr__(self) -> str:
        where = "over" if self.outcome is not None else f"seat {self.to_act} to act, {self.phase.value}"
        return f"<HandState {self.players} players, {where}, turn {self.turns}, {self.rules.name} rules>"

    # -- legality -------------------------------------------------------------------------

    def legal_actions(self) -> list[Action]:
        """Every legal action for the seat to act, in a stable order (the protocol's indices).

        At the start of a turn: drop, then draw stock, then draw discard. After the draw:
        every meld (:func:`~sdk.melds.hand_melds` order), every lay-off (by meld index, then
        card index), then every discard (by card index).
        """
        phase = self.phase
        if phase is _START:
            actions: list[Action] = []
            if self.to_act not in self.locked:
                actions.append(DROP)
            if self._stock:
                actions.append(DRAW_STOCK)
            if self.discard:
                actions.append(DRAW_DISCARD)
            return actions
        if phase is _OVER:
            return []
        hand = self.hands[self.to_act]
        rules = self.rules
        actions = [Meld(m) for m in hand_melds(hand, rules)] if len(hand) >= 3 else []
        if self.table:
            for i, meld in enumerate(self.table):
                for card in meld.layoff_cards(rules):
                    if card in hand:
                        actions.append(Layoff(card, i))
        picked = self.picked
        if picked is None or rules.discard_pickup_may_return or len(hand) == 1:
            actions += [DISCARD_ACTIONS[i] for i in sorted([c.index for c in hand])]
        else:
            actions += [DISCARD_ACTIONS[i] for i in sorted([c.index for c in hand if c is not picked])]
        return actions

    def verify(self, action: Action, seat: int | None = None) -> None:
        """Raise :class:`IllegalActionError` naming the rule ``action`` breaks, if it is illegal.

        ``seat`` (optional) is who claims to act; acting out of turn is illegal.
        """
        self._check(action, seat)

    def _check(self, action: Action, seat: int | None) -> TableMeld | None:
        """:meth:`verify`; for a meld, also return the :class:`TableMeld` it makes."""
        phase = self.phase
        if phase is _OVER:
            raise IllegalActionError("the hand is over", rule="hand_over")
        actor = self.to_act
        if seat is not None and seat != actor:
            raise IllegalActionError(f"it is seat {actor}'s turn, not seat {seat}'s", rule="turn")
        try:
            kind = action.kind
        except AttributeError:
            raise IllegalActionError(f"{action!r} is not an action", rule="unknown") from None
        if kind == "draw":
            if phase is not _START:
                raise IllegalActionError("a player draws once, at the start of the turn", rule="draw_once")
            source = action.source  # type: ignore[attr-defined]
            if not (self._stock if source == "stock" else self.discard):
                raise IllegalActionError(f"the {source} pile is empty", rule="empty_pile")
            return None
        if kind == "drop":
            if phase is not _START:
                raise IllegalActionError(
                    "going down is only allowed at the start of the turn, before drawing",
                    rule="drop_after_draw",
                )
            if actor in self.locked:
                raise IllegalActionError(
                    "a player whose spread was hit may not go down on their next turn (hit_lock)",
                    rule="hit_lock",
                )
            return None
        if phase is not _PLAY:
            raise IllegalActionError(
                f"{kind} comes after the draw: draw from the stock or the discard pile first (or go down)",
                rule="draw_first",
            )
        hand = self.hands[actor]
        if kind == "discard":
            card: Card = action.card  # type: ignore[attr-defined]
            if card not in hand:
                raise IllegalActionError(f"{_name(card)} is not in seat {actor}'s hand", rule="not_in_hand")
            if card is self.picked and len(hand) > 1 and not self.rules.discard_pickup_may_return:
                raise IllegalActionError(
                    f"{card.text} was just taken from the discard pile and may not be discarded "
                    "this turn while other cards remain",
                    rule="discard_pickup",
                )
            return None
        if kind == "meld":
            cards: tuple[Card, ...] = action.cards  # type: ignore[attr-defined]
            for c in cards:
                if c not in hand:
                    raise IllegalActionError(f"{_name(c)} is not in seat {actor}'s hand", rule="not_in_hand")
            return make_meld(actor, cards, self.rules)
        if kind == "layoff":
            card, onto = action.card, action.onto  # type: ignore[attr-defined]
            if card not in hand:
                raise IllegalActionError(f"{_name(card)} is not in seat {actor}'s hand", rule="not_in_hand")
            table = self.table
            if type(onto) is not int or not 0 <= onto < len(table):
                raise IllegalActionError(
                    f"there is no meld {onto!r} on the table (it holds {len(table)}, "
                    f"numbered from 0 in the order they were laid)",
                    rule="no_such_meld",
                )
            target = table[onto]
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
            return None
        raise IllegalActionError(f"unknown action {action!r}", rule="unknown")

    def can_apply(self, action: Action, seat: int | None = None) -> bool:
        try:
            self._check(action, seat)
        except IllegalActionError:
            return False
        return True

    # -- mutation -------------------------------------------------------------------------

    def apply(self, action: Action, seat: int | None = None) -> Event:
        """Check ``action`` and play it for the seat to act; return the recorded event.

        Nothing changes when it raises.
        """
        # Fast paths for the two commonest actions. Each guard is exactly the legality test
        # of :meth:`_check` for that kind; when a guard fails, the general path below calls
        # _check, which raises the precise reason (or, were a guard ever too strict, plays it).
        actor = self.to_act
        phase = self.phase
        if seat is None or seat == actor:
            try:
                kind = action.kind
            except AttributeError:
                kind = None
            if kind == "discard" and phase is _PLAY:
                card: Card = action.card  # type: ignore[attr-defined]
                hand = self.hands[actor]
                if card in hand and (
                    card is not self.picked or len(hand) == 1 or self.rules.discard_pickup_may_return
                ):
                    hand.remove(card)
                    self.discard.append(card)
                    event: Event = DISCARD_EVENTS[actor][card.index]
                    self.history.append(event)
                    if self._views is not None:
                        self._extend_views(event)
                    self._end_turn(actor, not hand)
                    return event
            elif kind == "draw" and phase is _START:
                if action.source == "stock":  # type: ignore[attr-defined]
                    if self._stock:
                        card = self._stock.pop()
                        self.picked = None
                        event = DRAW_STOCK_EVENTS[actor][card.index]
                        self.hands[actor].append(card)
                        self.phase = _PLAY
                        self.history.append(event)
                        if self._views is not None:
                            self._extend_views(event)
                        return event
                elif self.discard:
                    card = self.discard.pop()
                    self.picked = card
                    event = DRAW_DISCARD_EVENTS[actor][card.index]
                    self.hands[actor].append(card)
                    self.phase = _PLAY
                    self.history.append(event)
                    if self._views is not None:
                        self._extend_views(event)
                    return event
            elif kind == "drop" and phase is _START and actor not in self.locked:
                event = DROP_EVENTS[actor]
                self.history.append(event)
                if self._views is not None:
                    self._extend_views(event)
                self._settle_drop(actor)
                return event
        return self._apply_checked(action, seat)

    def apply_text(self, text: str, seat: int | None = None) -> Event:
        """:meth:`apply` for an action written as text: ``"drop"``, ``"draw stock"``,
        ``"draw discard"``, ``"meld 8h 8d 8s"``, ``"layoff 8s 0"``, ``"discard 10s"`` (the
        :meth:`Action.parse <sdk.actions.Action.parse>` form, which ``str(action)`` writes).

        Text that is not an action raises :class:`NotationError`; an action the rules do not
        allow now raises :class:`IllegalActionError` (with its ``rule``). Both quote ``text``,
        and nothing changes when either is raised.
        """
        try:
            action = Action.parse(text)
        except NotationError as exc:
            if str(exc).startswith("cannot read action"):
                raise
            raise NotationError(f"cannot read action {text!r}: {exc}") from None
        try:
            return self.apply(action, seat)
        except IllegalActionError as exc:
            raise IllegalActionError(f"cannot play {text!r}: {exc}", rule=exc.rule) from None

    def _apply_checked(self, action: Action, seat: int | None) -> Event:
        """:meth:`apply` for any action: check it with :meth:`_check`, then play it."""
        meld = self._check(action, seat)
        actor = self.to_act
        kind = action.kind
        hand = self.hands[actor]
        event: Event
        if kind == "draw":
            if action.source == "stock":  # type: ignore[attr-defined]
                card = self._stock.pop()
                self.picked = None
                event = DRAW_STOCK_EVENTS[actor][card.index]
            else:
                card = self.discard.pop()
                self.picked = card
                event = DRAW_DISCARD_EVENTS[actor][card.index]
            hand.append(card)
            self.phase = _PLAY
            self.history.append(event)
            if self._views is not None:
                self._extend_views(event)
        elif kind == "discard":
            card = action.card  # type: ignore[attr-defined]
            hand.remove(card)
            self.discard.append(card)
            event = DISCARD_EVENTS[actor][card.index]
            self.history.append(event)
            if self._views is not None:
                self._extend_views(event)
            self._end_turn(actor, went_out=not hand)
        elif kind == "meld":
            for card in action.cards:  # type: ignore[attr-defined]
                hand.remove(card)
            assert meld is not None
            self.table.append(meld)
            event = Event(actor, action)
            self.history.append(event)
            if self._views is not None:
                self._extend_views(event)
            if not hand:
                self._settle_out(actor, by_discard=False)
        elif kind == "layoff":
            card, onto = action.card, action.onto  # type: ignore[attr-defined]
            hand.remove(card)
            target = self.table[onto]
            self.table[onto] = target.extended(card)
            if self.rules.hit_lock and target.owner != actor and target.kind == "spread":
                self.locked.add(target.owner)  # a hit spread (never a book: docs/rules.md)
            event = Event(actor, action)
            self.history.append(event)
            if self._views is not None:
                self._extend_views(event)
            if not hand:
                self._settle_out(actor, by_discard=False)
        else:  # drop
            event = DROP_EVENTS[actor]
            self.history.append(event)
            if self._views is not None:
                self._extend_views(event)
            self._settle_drop(actor)
        return event

    def forfeit(self, seat: int) -> Outcome:
        """End the hand with ``seat`` penalised for a fault: it pays every other seat 2x."""
        if self.outcome is not None:
            return self.outcome
        return self._finish(settling.fault(self.totals(), seat))

    def _end_turn(self, actor: int, went_out: bool) -> None:
        self.turns += 1
        self.picked = None
        if self.locked:
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
        cap = self.rules.turn_cap
        if cap and self.turns >= cap:
            self._settle_showdown("cap")
            return
        self.to_act = actor + 1 if actor + 1 < self.players else 0
        self.phase = _START

    # -- settling (sdk.settling: who pays whom) -------------------------------------------

    def _finish(self, outcome: Outcome) -> Outcome:
        self.outcome = outcome
        self.phase = _OVER
        return outcome

    def _check_tonk(self) -> None:
        outcome = settling.tonk(self.totals(), self.rules)
        if outcome is not None:
            self._finish(outcome)

    def _settle_out(self, actor: int, by_discard: bool) -> None:
        self._finish(settling.out(self.totals(), actor, by_discard, self.rules))

    def _settle_drop(self, dropper: int) -> None:
        self._finish(settling.drop(self.totals(), dropper))

    def _settle_showdown(self, end: EndKind) -> None:
        self._finish(settling.showdown(self.totals(), end))


def _name(card: object) -> str:
    return card.text if isinstance(card, Card) else repr(card)


__all__ = ["Draw", "Drop", "HandState", "Outcome", "Phase", "check_deck", "deal_from_deck"]
