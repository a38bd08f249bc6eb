"""Cards and their notation.

A card is written rank then suit, as the rules text writes them: ``10s``, ``Qh``, ``Ac``.
Parsing is lenient (``T`` for ten, any letter case); output is always canonical.

There are exactly 52 :class:`Card` objects. They are interned, so identity is equality (the
cheap object default). The hash is the card's index, not the default identity hash: a set of
cards then iterates in the same order in every process, so a bot that loops over one plays the
same match the same way wherever it runs (``tonk check`` replays in a fresh process to see it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from typing import Final

from sdk.errors import NotationError

SUITS: Final = "cdhs"
RANKS: Final = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
_RANK_BY_TEXT: Final = {text: number for number, text in enumerate(RANKS, start=1)}
_RANK_BY_TEXT["T"] = 10


class Card:
    """One of the 52 cards. Build it with :meth:`parse` or :meth:`from_index`.

    ``index`` is ``suit * 13 + rank - 1`` with suits in the order ``c d h s`` and
    ranks ``A=1 .. K=13``; the deal derivation (docs/dealing.md) is defined on it.
    """

    __slots__ = ("index", "rank", "suit", "suit_index", "text", "value")

    index: int
    rank: int
    suit: str
    suit_index: int
    value: int
    text: str

    def __new__(cls, text: str) -> Card:
        return cls.parse(text)

    @classmethod
    def _make(cls, index: int) -> Card:
        card = object.__new__(cls)
        card.index = index
        card.suit_index, rank0 = divmod(index, 13)
        card.rank = rank0 + 1
        card.suit = SUITS[card.suit_index]
        card.value = min(card.rank, 10)
        card.text = RANKS[rank0] + card.suit
        return card

    @classmethod
    def parse(cls, text: str) -> Card:
        """Parse ``10s``, ``Ts``, ``qH``...; raise :class:`NotationError` quoting the input."""
        if type(text) is str:
            card = _CANONICAL.get(text)
            if card is not None:
                return card
        elif not isinstance(text, str):
            raise NotationError(f"a card is written as text like '10s', got {text!r}")
        card = _BY_TEXT.get(text.strip().upper())
        if card is None:
            raise NotationError(
                f"unknown card {text!r}: write a rank (A 2-10 J Q K, or T) then a suit (c d h s)"
            )
        return card

    @classmethod
    def from_index(cls, index: int) -> Card:
        if not 0 <= index < 52:
            raise NotationError(f"card index {index!r} is outside 0..51")
        return DECK[index]

    def __repr__(self) -> str:
        return f"Card.parse({self.text!r})"

    def __str__(self) -> str:
        return self.text

    def __hash__(self) -> int:
        return self.index

    def __reduce__(self) -> tuple[object, tuple[int]]:
        # Unpickled and deep-copied cards must be the interned objects.
        return (Card.from_index, (self.index,))

    def __copy__(self) -> Card:
        return self

    def __deepcopy__(self, memo: object) -> Card:
        return self

    def __lt__(self, other: Card) -> bool:
        return (self.rank, self.suit_index) < (other.rank, other.suit_index)


DECK: Final[tuple[Card, ...]] = tuple(Card._make(i) for i in range(52))
"""The 52 cards in index order: clubs A..K, diamonds, hearts, spades."""

DECK_SET: Final[frozenset[Card]] = frozenset(DECK)
# The interned cards' identities: checking a deck by them hashes ints in C, where hashing the
# cards themselves calls Card.__hash__ 52 times (a deal's check was most of its hashing).
_DECK_IDS: Final[frozenset[int]] = frozenset(map(id, DECK))

_CANONICAL: Final[dict[str, Card]] = {card.text: card for card in DECK}
_BY_TEXT: Final[dict[str, Card]] = {}
for _card in DECK:
    _BY_TEXT[_card.text.upper()] = _card
    if _card.rank == 10:
        _BY_TEXT["T" + _card.suit.upper()] = _card


def is_whole_deck(cards: Sequence[object]) -> bool:
    """Whether ``cards`` are the 52 cards, each once, in any order."""
    return len(cards) == 52 and frozenset(map(id, cards)) == _DECK_IDS


def parse_cards(texts: Iterable[str]) -> list[Card]:
    """Parse a list of card texts. A bare string, a mapping (a JSON object) or a set is
    refused: reading one as cards is almost always a bug."""
    if type(texts) is list:
        try:  # fast path: every card in its canonical spelling
            return [_CANONICAL[t] for t in texts]
        except (KeyError, TypeError):
            return [Card.parse(t) for t in texts]
    if isinstance(texts, str | bytes | Mapping | Set) or not isinstance(texts, Iterable):
        raise NotationError(f"expected a list of cards, got {texts!r}")
    return [Card.parse(t) for t in texts]


def format_cards(cards: Iterable[Card]) -> list[str]:
    return [c.text for c in cards]


def hand_value(cards: Iterable[Card]) -> int:
    """Point total: ace 1, pips at face value, J Q K 10."""
    return sum([c.value for c in cards])


def sort_hand(cards: Iterable[Card]) -> list[Card]:
    """Display order: by suit, then rank."""
    return sorted(cards, key=lambda c: c.index)
