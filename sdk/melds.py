"""Books and spreads: recognising them, enumerating them in a hand, and laying off onto them.

Ranks in a spread are "extended": an ace is 1, or 14 when it sits above a king under the
``ace_high_or_low`` variant. A spread never uses the ace both ways (no K A 2).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from operator import attrgetter
from typing import Any, Literal

from sdk.cards import DECK, Card, parse_cards
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

    def __init__(self, owner: int, kind: MeldKind, cards: tuple[Card, ...], lo: int = 0, hi: int = 0) -> None:
        # Same as the generated frozen __init__, about four times as fast (one per meld and
        # lay-off played).
        _set_owner(self, owner)
        _set_kind(self, kind)
        _set_cards(self, cards)
        _set_lo(self, lo)
        _set_hi(self, hi)

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

    def layoff_cards(self, rules: Rules) -> tuple[Card, ...]:
        """The cards that :meth:`accepts`, in card-index order (at most two)."""
        if self.kind == "book":
            if not (rules.book_layoff and len(self.cards) == 3):
                return ()
            held = {c.suit_index for c in self.cards}
            rank0 = self.cards[0].rank - 1
            return tuple(DECK[s * 13 + rank0] for s in range(4) if s not in held)
        base = self.cards[0].suit_index * 13
        lo, hi = self.lo, self.hi
        fits = []
        if hi == 13 and lo > 2 and rules.ace_high_or_low:
            fits.append(DECK[base])  # an ace above the king (at lo == 2 it is the low end)
        if lo > 1:
            fits.append(DECK[base + lo - 2])
        if hi < 13:
            fits.append(DECK[base + hi])
        return tuple(fits)

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


_set_owner = TableMeld.__dict__["owner"].__set__  # the slots' descriptors
_set_kind = TableMeld.__dict__["kind"].__set__
_set_cards = TableMeld.__dict__["cards"].__set__
_set_lo = TableMeld.__dict__["lo"].__set__
_set_hi = TableMeld.__dict__["hi"].__set__


# Sort keys and field readers that run in C (a key function in Python is a call per card).
_suit_key = attrgetter("suit_index")
_index = attrgetter("index")
_rank = attrgetter("rank")


def make_meld(owner: int, cards: Sequence[Card], rules: Rules) -> TableMeld:
    """Classify ``cards`` as a book or spread, or raise :class:`IllegalActionError`."""
    n = len(cards)
    if n < 3:
        raise IllegalActionError(
            f"meld {_text(cards)!r} has {n} cards; a meld needs 3 or more", rule="meld_size"
        )
    if len(set(map(_index, cards))) != n:  # the index names the card
        raise IllegalActionError(f"meld {_text(cards)!r} names a card twice", rule="meld_duplicate")
    if len(set(map(_rank, cards))) == 1:
        if n > 4:  # unreachable with distinct cards, kept as a guard
            raise IllegalActionError(f"book {_text(cards)!r} has more than 4 cards", rule="meld_size")
        return TableMeld(owner, "book", tuple(sorted(cards, key=_suit_key)))
    if len(set(map(_suit_key, cards))) != 1:
        raise IllegalActionError(
            f"{_text(cards)!r} is neither a book (one rank) nor a spread (one suit in sequence)",
            rule="meld_shape",
        )
    ordered = sorted(cards, key=_index)  # one suit: index order is rank order
    lo = ordered[0].rank
    if ordered[-1].rank - lo == n - 1:  # distinct ranks spanning n: a sequence
        return TableMeld(owner, "spread", tuple(ordered), lo, lo + n - 1)
    if rules.ace_high_or_low and lo == 1 and ordered[1].rank - 1 + n - 1 == 13:
        # 2nd lowest .. K plus the ace on top (Q K A, J Q K A, ...)
        return TableMeld(owner, "spread", (*ordered[1:], ordered[0]), ordered[1].rank, 14)
    hint = "" if rules.ace_high_or_low else " (aces are low: Q K A is not a spread)"
    raise IllegalActionError(
        f"{_text(cards)!r} is not a spread: its ranks are not in sequence{hint}", rule="meld_shape"
    )


def _text(cards: Sequence[Card]) -> str:
    return " ".join(c.text for c in cards)


def hand_melds(hand: Iterable[Card], rules: Rules) -> list[tuple[Card, ...]]:
    """Every book and spread that can be laid from ``hand``, in a stable order: books by rank
    (3-card combinations in suit order, then the 4-card book), then spreads by suit, low end,
    length."""
    if rules.ace_high_or_low:
        return _hand_melds_general(hand, rules)
    cards = sorted(hand, key=_index)
    n = len(cards)
    found: list[tuple[Card, ...]] = []
    ranks = [c.rank for c in cards]
    if len(set(ranks)) <= n - 2:  # some rank may appear 3+ times
        for rank in sorted({r for r in ranks if ranks.count(r) >= 3}):
            group = [c for c in cards if c.rank == rank]  # in suit order
            found.extend(combinations(group, 3))
            if len(group) == 4:
                found.append(tuple(group))
    idx = [c.index for c in cards]
    k = 0
    while k < n - 2:
        # A maximal run of consecutive indices within one suit starts at k.
        j = k
        while j + 1 < n and idx[j + 1] == idx[j] + 1 and idx[j + 1] % 13:
            j += 1
        for lo in range(k, j - 1):
            for hi in range(lo + 3, j + 2):
                found.append(tuple(cards[lo:hi]))
        k = j + 1
    return found


def completes_meld(card: Card, hand: Sequence[Card], rules: Rules) -> bool:
    """Whether ``card`` and cards of ``hand`` make a book or a spread: the one test the house
    bots, the search bot's rollouts and ``tonk check``'s sparring partners share. Only cards of
    its rank or suit can meld with it, so the rest are not searched."""
    partners = [c for c in hand if c.rank == card.rank or c.suit_index == card.suit_index]
    if len(partners) < 2:
        return False
    return any(card in meld for meld in hand_melds([*partners, card], rules))


def fits_table(card: Card, table: Sequence[TableMeld], rules: Rules) -> bool:
    """Whether ``card`` could be laid off on some meld on the table."""
    return any(meld.accepts(card, rules) for meld in table)


def _hand_melds_general(hand: Iterable[Card], rules: Rules) -> list[tuple[Card, ...]]:
    """:func:`hand_melds` for any rules (the reference the fast path is tested against)."""
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
