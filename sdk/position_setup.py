"""Building a hand from the cards one cares about (:meth:`sdk.engine.HandState.setup`): the
named cards where they are said to be, the rest of the deck dealt in a seeded order. Kept apart
from the engine, which plays hands; this only assembles the position (a :class:`Position`),
which the engine then builds and checks with :meth:`~sdk.engine.HandState.from_position`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from sdk.cards import Card, parse_cards
from sdk.dealing import deck_order
from sdk.errors import DeckError, IllegalActionError, NotationError, RecordError
from sdk.melds import TableMeld, make_meld
from sdk.rules import HAND_SIZE, MIN_PLAYERS, STANDARD, Rules, check_players


class Position(NamedTuple):
    """A position's cards and seats, as :meth:`sdk.engine.HandState.from_position` takes them."""

    hands: list[list[Card]]
    discard: list[Card]
    stock: list[Card]  # top first
    table: list[TableMeld]
    dealer: int
    to_act: int | None


def assemble_position(
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
) -> Position:
    """A position from the cards you care about; the rest of the deck is filled in.

    ``hands`` maps seats to their cards as text (``{0: "Ah 2c 8h 8d 8s"}``) or lists them by
    seat; a seat not named gets five cards. ``discard`` is the pile bottom to top (``None``
    turns up one card); ``stock`` names the top of the stock, top first; ``table`` holds
    ``(owner, cards)`` melds. Seat 0 acts first unless ``to_act`` or ``dealer`` says
    otherwise (the dealer defaults to the seat right of the one to act).

    The unnamed cards are dealt, in the order ``deck_order(seed, 0)`` puts them, to the
    seats not named, then to the discard pile (when ``None``), then under the stock.
    Unknown cards raise :class:`NotationError` and cards named twice :class:`DeckError`,
    both quoting the input. The position is not checked for TONK (docs/rules.md: a
    position already under way never is); the rest of its checks are
    :meth:`~sdk.engine.HandState.from_position`'s.
    """
    given: dict[int, str | Sequence[Card | str]]
    if isinstance(hands, Mapping):
        given = dict(hands)
        seats = [s for s in given if type(s) is int and s >= 0]
        if len(seats) != len(given):
            bad = next(s for s in given if s not in seats)
            raise RecordError(f"hands are keyed by seat number, got {bad!r}")
        if players is None:
            players = max(max(seats, default=0) + 1, MIN_PLAYERS)
    elif isinstance(hands, str):
        raise RecordError(f"hands is a list or a dict of seats' cards, got {hands!r}")
    else:
        given = dict(enumerate(hands))
        if players is None:
            players = len(given)
    if dealer is None:
        check_players(players, 0)
        if to_act is not None and type(to_act) is not int:
            raise RecordError(f"seat to act {to_act!r} is not a seat of this hand")
        dealer = ((to_act or 0) - 1) % players
    check_players(players, dealer)
    extra = [s for s in given if s >= players]
    if extra:
        raise RecordError(f"seat {extra[0]} is not a seat of a {players}-player hand")
    seen: dict[Card, str] = {}

    def read(name: str, cards: str | Sequence[Card | str]) -> list[Card]:
        if isinstance(cards, str):
            try:
                parsed = parse_cards(cards.replace(",", " ").split())
            except NotationError as exc:
                raise NotationError(f"{name} {cards!r}: {exc}") from None
        elif isinstance(cards, Sequence):
            try:
                parsed = [c if isinstance(c, Card) else Card.parse(c) for c in cards]
            except NotationError as exc:
                raise NotationError(f"{name} {cards!r}: {exc}") from None
        else:
            raise NotationError(f"{name} is cards as text like 'Ah 2c' or a list, got {cards!r}")
        for card in parsed:
            here = f"{name} {cards!r}"
            if card in seen:
                where = seen[card]
                also = f" in {here}" if where == here else f": in {where} and in {here}"
                raise DeckError(f"card {card.text} is named twice{also}")
            seen[card] = here
        return parsed

    hand_cards: dict[int, list[Card]] = {s: read(f"hands[{s}]", c) for s, c in sorted(given.items())}
    discard_cards = read("discard", discard) if discard is not None else None
    stock_cards = read("stock", stock)
    melds = []
    for i, (owner, cards) in enumerate(table):
        meld_cards = read(f"table[{i}]", cards)
        if type(owner) is not int or not 0 <= owner < players:
            raise RecordError(f"table[{i}] {cards!r}: owner {owner!r} is not a seat")
        try:
            melds.append(make_meld(owner, meld_cards, rules))
        except IllegalActionError as exc:
            raise RecordError(f"table[{i}] {cards!r}: {exc}") from None
    rest = [c for c in deck_order(seed, 0) if c not in seen]
    for seat in range(players):
        if seat not in hand_cards:
            hand_cards[seat], rest = rest[:HAND_SIZE], rest[HAND_SIZE:]
    if discard_cards is None:
        discard_cards, rest = rest[:1], rest[1:]
    return Position(
        [hand_cards[s] for s in range(players)], discard_cards, stock_cards + rest, melds, dealer, to_act
    )
