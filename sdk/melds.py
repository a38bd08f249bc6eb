"""Books and spreads: recognising them, enumerating them in a hand, and laying off onto them.

Ranks in a spread are "extended": an ace is 1, or 14 when it sits above a king under the
``ace_high_or_low`` variant. A spread never uses the ace both ways (no K A 2).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal

from sdk.cards import Card, parse_cards
from sdk.errors import IllegalActionError, NotationError, RecordError
from sdk.rules import Rules

MeldKind = Literal["book", "spread"]


@dataclass(frozen=True, slots=True)
class TableMeld:
    """A meld on the table. Immutable: a lay-off yields a new one (:meth:`extended`)."""

    owner: int
    kind: MeldKind
    cards: tuple[Card, ...]  # spreads low to high, books by suit
    lo: int = 0  # spreads: extended rank of the low end
    hi: int = 0  # spreads: extended rank of the high end

    def accepts(self, card: Card, rules: Rules) -> bool:
        """Whether ``card`` may be laid off here."""
        if self.kind == "book":
            return rules.book_layoff and len(self.cards) == 3 and card.rank == self.cards[0].rank
        if card.suit_index != self.cards[0].suit_index:
            return False
        rank = card.rank
        if rank == self.lo - 1 or rank == self.hi + 1:
            return True
        # An ace above a king, when the spread does not already start at the ace.
        return rank == 1 and self.hi == 13 and rules.ace_high_or_low and self.lo > 1

    def extended(self, card: Card) -> TableMeld:
        """A copy with ``card`` added (the caller has checked :meth:`accepts`)."""
        if self.kind == "book":
            return TableMeld(self.owner, "book", tuple(sorted((*self.cards, card), key=_suit_key)))
        if card.rank == self.lo - 1:
            return TableMeld(self.owner, "spread", (card, *self.cards), self.lo - 1, self.hi)
        return TableMeld(self.owner, "spread", (*self.cards, card), self.lo, self.hi + 1)

    def to_json(self) -> dict[str, Any]:
        return {"owner": self.owner, "cards": [c.text for c in self.cards]}

    def __str__(self) -> str:
        return " ".join(c.text for c in self.cards)


def _suit_key(card: Card) -> int:
    return card.suit_index


def make_meld(owner: int, cards: Sequence[Card], rules: Rules) -> TableMeld:
    """Classify ``cards`` as a book or spread, or raise :class:`IllegalActionError`."""
    text = " ".join(c.text for c in cards)
    if len(cards) < 3:
        raise IllegalActionError(
            f"meld {text!r} has {len(cards)} cards; a meld needs 3 or more", rule="meld_size"
        )
    if len(set(cards)) != len(cards):
        raise IllegalActionError(f"meld {text!r} names a card twice", rule="meld_duplicate")
    first = cards[0]
    if all(c.rank == first.rank for c in cards):
        if len(cards) > 4:
            raise IllegalActionError(f"book {text!r} has more than 4 cards", rule="meld_size")
        return TableMeld(owner, "book", tuple(sorted(cards, key=_suit_key)))
    if any(c.suit_index != first.suit_index for c in cards):
        raise IllegalActionError(
            f"{text!r} is neither a book (one rank) nor a spread (one suit in sequence)",
            rule="meld_shape",
        )
    ranks = sorted(c.rank for c in cards)
    if ranks == list(range(ranks[0], ranks[0] + len(ranks))):
        ordered = tuple(sorted(cards, key=lambda c: c.rank))
        return TableMeld(owner, "spread", ordered, ranks[0], ranks[-1])
    if rules.ace_high_or_low and ranks[0] == 1:
        high = sorted(14 if r == 1 else r for r in ranks)
        if high == list(range(high[0], high[0] + len(high))):
            ordered = tuple(sorted(cards, key=lambda c: 14 if c.rank == 1 else c.rank))
            return TableMeld(owner, "spread", ordered, high[0], high[-1])
    hint = "" if rules.ace_high_or_low else " (aces are low: Q K A is not a spread)"
    raise IllegalActionError(
        f"{text!r} is not a spread: its ranks are not in sequence{hint}", rule="meld_shape"
    )


def hand_melds(hand: Iterable[Card], rules: Rules) -> list[tuple[Card, ...]]:
    """Every book and spread that can be laid from ``hand``, in a stable order."""
    by_rank: dict[int, list[Card]] = {}
    by_suit: dict[int, dict[int, Card]] = {}
    for card in hand:
        by_rank.setdefault(card.rank, []).append(card)
        by_suit.setdefault(card.suit_index, {})[card.rank] = card
    found: list[tuple[Card, ...]] = []
    for rank in sorted(by_rank):
        group = by_rank[rank]
        if len(group) >= 3:
            group.sort(key=_suit_key)
            found.extend(combinations(group, 3))
            if len(group) == 4:
                found.append(tuple(group))
    for suit in sorted(by_suit):
        cards = by_suit[suit]
        if len(cards) < 3:
            continue
        ext = dict(cards)
        if rules.ace_high_or_low and 1 in cards:
            ext[14] = cards[1]
        for lo in range(1, 13):
            if lo not in ext:
                continue
            hi = lo
            while hi + 1 in ext and not (lo == 1 and hi + 1 == 14):
                hi += 1
                if hi - lo >= 2:
                    found.append(tuple(ext[r] for r in range(lo, hi + 1)))
    return found


def parse_table(data: Any, players: int, rules: Rules) -> list[TableMeld]:
    """Read a record's ``table``: ``[{"owner": seat, "cards": [...]}, ...]``."""
    if data is None:
        return []
    if not isinstance(data, list):
        raise RecordError(f"'table' must be a list of melds, got {data!r}")
    table = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict) or set(entry) != {"owner", "cards"}:
            raise RecordError(f'table[{i}] must be {{"owner": seat, "cards": [...]}}, got {entry!r}')
        owner = entry["owner"]
        if type(owner) is not int or not 0 <= owner < players:
            raise RecordError(f"table[{i}] owner {owner!r} is not a seat of this hand")
        try:
            table.append(make_meld(owner, parse_cards(entry["cards"]), rules))
        except IllegalActionError as exc:
            raise RecordError(f"table[{i}]: {exc}") from None
        except NotationError as exc:
            raise RecordError(f"table[{i}]: {exc}") from None
    return table
