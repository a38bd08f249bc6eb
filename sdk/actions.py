"""Actions and the events they record.

Each action is a small frozen value with three spellings that round-trip:

* the object: ``Meld((Card.parse('8h'), Card.parse('8d'), Card.parse('8s')))``
* the record form (``tonk-hand/1``): ``{"meld": ["8h", "8d", "8s"]}`` (plus ``seat``)
* a one-line text: ``meld 8h 8d 8s``, ``draw stock``, ``layoff 8s 0``, ``discard 10s``, ``drop``
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal

from sdk.cards import DECK, Card, parse_cards
from sdk.errors import NotationError

Source = Literal["stock", "discard"]


class Action:
    """Base of the five actions."""

    __slots__ = ()
    kind: ClassVar[str]

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    def __str__(self) -> str:
        raise NotImplementedError

    @staticmethod
    def from_json(data: Any) -> Action:
        """Read an action from its record form (a ``seat`` key, if present, is ignored)."""
        if not isinstance(data, dict):
            raise NotationError(f"an action is a JSON object, got {data!r}")
        kinds = [k for k in _KINDS if k in data]
        if len(kinds) != 1:
            raise NotationError(
                f"an action names exactly one of draw, meld, layoff, discard, drop; got {data!r}"
            )
        kind = kinds[0]
        expected = 1 + ("seat" in data) + (kind == "layoff" and "onto" in data)
        if len(data) != expected:
            allowed = {"seat", kind, "onto"} if kind == "layoff" else {"seat", kind}
            extra = sorted(str(k) for k in data if k not in allowed)
            raise NotationError(f"unexpected field {extra[0]!r} in action {data!r}")
        value = data[kind]
        if kind == "discard":
            return discard_of(Card.parse(value))
        if kind == "draw":
            if value == "stock" and type(value) is str:
                return DRAW_STOCK
            if value == "discard" and type(value) is str:
                return DRAW_DISCARD
            raise NotationError(f"draw is 'stock' or 'discard', got {value!r}")
        if kind == "meld":
            return Meld(tuple(parse_cards(value)))
        if kind == "layoff":
            onto = data.get("onto")
            if type(onto) is not int or onto < 0:
                raise NotationError(f"layoff needs 'onto', a meld index >= 0, got {onto!r}")
            return Layoff(Card.parse(value), onto)
        if value is not True:
            raise NotationError(f'drop is written "drop": true, got {value!r}')
        return DROP

    @staticmethod
    def parse(text: str) -> Action:
        """Read the one-line text form."""
        if not isinstance(text, str):
            raise NotationError(f"an action is text like 'draw stock', got {text!r}")
        words = text.split()
        if not words:
            raise NotationError(f"empty action {text!r}")
        verb, args = words[0].lower(), words[1:]
        if verb == "drop" and not args:
            return DROP
        if verb == "draw" and len(args) == 1 and args[0].lower() in ("stock", "discard"):
            return DRAW_STOCK if args[0].lower() == "stock" else DRAW_DISCARD
        if verb == "meld" and args:
            return Meld(tuple(Card.parse(a) for a in args))
        if verb == "layoff" and len(args) == 2 and args[1].isdigit():
            return Layoff(Card.parse(args[0]), int(args[1]))
        if verb == "discard" and len(args) == 1:
            return discard_of(Card.parse(args[0]))
        raise NotationError(
            f"cannot read action {text!r}: expected 'drop', 'draw stock|discard', "
            "'meld CARD CARD CARD...', 'layoff CARD MELD_INDEX' or 'discard CARD'"
        )


@dataclass(frozen=True, slots=True)
class Drop(Action):
    """Go down: show the hand and end it, before drawing."""

    kind: ClassVar[str] = "drop"

    def to_json(self) -> dict[str, Any]:
        return {"drop": True}

    def __str__(self) -> str:
        return "drop"

    def __repr__(self) -> str:
        return "Drop()"


@dataclass(frozen=True, slots=True)
class Draw(Action):
    """Take the top card of the stock or of the discard pile."""

    source: Source
    kind: ClassVar[str] = "draw"

    def __post_init__(self) -> None:
        if self.source != "stock" and self.source != "discard":
            raise NotationError(f"draw is 'stock' or 'discard', got {self.source!r}")

    def to_json(self) -> dict[str, Any]:
        return {"draw": self.source}

    def __str__(self) -> str:
        return f"draw {self.source}"


@dataclass(frozen=True, slots=True)
class Meld(Action):
    """Lay down a book (3 or 4 of a rank) or a spread (3+ of a suit in sequence).

    The cards keep the order they were written in, so a record round-trips exactly;
    two melds of the same cards in another order are equal. Equality is as multisets: a
    meld naming a card twice is not the meld of its distinct cards (so a bot's reply that
    does is not found among the legal actions, and the engine says what is wrong with it).
    """

    cards: tuple[Card, ...]
    kind: ClassVar[str] = "meld"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Meld):
            return NotImplemented
        a, b = self.cards, other.cards
        if len(a) != len(b):
            return False
        cards = frozenset(a)
        if cards != frozenset(b):
            return False
        # Same cards, same length: equal, unless a card is named twice (then count them).
        return len(cards) == len(a) or sorted(c.index for c in a) == sorted(c.index for c in b)

    def __hash__(self) -> int:
        return hash(frozenset(self.cards))

    def to_json(self) -> dict[str, Any]:
        return {"meld": [c.text for c in self.cards]}

    def __str__(self) -> str:
        return "meld " + " ".join(c.text for c in self.cards)


@dataclass(frozen=True, slots=True)
class Layoff(Action):
    """Add one card at either end of a spread on the table (``onto`` = meld index)."""

    card: Card
    onto: int
    kind: ClassVar[str] = "layoff"

    def to_json(self) -> dict[str, Any]:
        return {"layoff": self.card.text, "onto": self.onto}

    def __str__(self) -> str:
        return f"layoff {self.card.text} {self.onto}"


@dataclass(frozen=True, slots=True)
class Discard(Action):
    """Put one card on the discard pile, ending the turn."""

    card: Card
    kind: ClassVar[str] = "discard"

    def to_json(self) -> dict[str, Any]:
        return {"discard": self.card.text}

    def __str__(self) -> str:
        return f"discard {self.card.text}"


_KINDS = ("draw", "meld", "layoff", "discard", "drop")
DRAW_STOCK: Final = Draw("stock")
DRAW_DISCARD: Final = Draw("discard")
DROP: Final = Drop()
DISCARD_ACTIONS: Final = tuple(Discard(card) for card in DECK)  # by card index


def discard_of(card: Card) -> Discard:
    """The (shared, immutable) :class:`Discard` of ``card``."""
    return DISCARD_ACTIONS[card.index]


@dataclass(frozen=True, slots=True)
class Event:
    """What :meth:`HandState.apply` recorded: who did what, and what it revealed.

    ``card`` is the card a draw took. A stock draw's card is private to the drawer:
    :meth:`public` hides it, and only the public form ever reaches another seat.
    """

    seat: int
    action: Action
    card: Card | None = None

    def __init__(self, seat: int, action: Action, card: Card | None = None) -> None:
        # Same as the generated frozen __init__, but about twice as fast (one per action).
        _set_seat(self, seat)
        _set_action(self, action)
        _set_card(self, card)

    def public(self) -> Event:
        action = self.action
        if self.card is not None and isinstance(action, Draw) and action.source == "stock":
            return _hidden_stock_draw(self.seat)
        return self

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"seat": self.seat, **self.action.to_json()}
        if self.card is not None:
            data["card"] = self.card.text
        return data


_set_seat = Event.__dict__["seat"].__set__  # the slots' descriptors
_set_action = Event.__dict__["action"].__set__
_set_card = Event.__dict__["card"].__set__
_HIDDEN_STOCK_DRAWS: dict[int, Event] = {}

# Events are immutable values, so the engine shares one per (seat, card) for draws and
# discards instead of building one per action: [seat][card index].
DRAW_STOCK_EVENTS: Final = tuple(tuple(Event(s, DRAW_STOCK, c) for c in DECK) for s in range(6))
DRAW_DISCARD_EVENTS: Final = tuple(tuple(Event(s, DRAW_DISCARD, c) for c in DECK) for s in range(6))
DISCARD_EVENTS: Final = tuple(tuple(Event(s, DISCARD_ACTIONS[c.index]) for c in DECK) for s in range(6))
DROP_EVENTS: Final = tuple(Event(s, DROP) for s in range(6))


def _hidden_stock_draw(seat: int) -> Event:
    event = _HIDDEN_STOCK_DRAWS.get(seat)
    if event is None:
        event = _HIDDEN_STOCK_DRAWS[seat] = Event(seat, DRAW_STOCK)
    return event
