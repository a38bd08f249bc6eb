"""Helpers for the engine tests (no tests here): build positions and deals from card text,
play actions from their one-line text, and snapshot a whole HandState for comparisons."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import pytest

from sdk.actions import Action, Discard, Event
from sdk.cards import DECK, Card, parse_cards
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.errors import IllegalActionError
from sdk.melds import TableMeld, make_meld
from sdk.rules import STANDARD, Rules


def cards(text: str) -> list[Card]:
    """``"10s 8d 8h"`` -> the cards."""
    return parse_cards(text.split())


def position(
    hands: Sequence[str],
    discard: str = "",
    stock: str = "",
    table: Sequence[tuple[int, str]] = (),
    *,
    to_act: int | None = None,
    dealer: int | None = None,
    rules: Rules = STANDARD,
    leftover: Literal["stock", "discard"] = "stock",
    start: Literal["deal", "position"] = "position",
) -> HandState:
    """A hand from a position. Cards not named anywhere go under the stock (or under the
    discard pile), so a test names only the cards it cares about."""
    hand_cards = [cards(h) for h in hands]
    discard_cards = cards(discard)
    stock_cards = cards(stock)
    melds: list[TableMeld] = [make_meld(owner, cards(text), rules) for owner, text in table]
    named = {c for part in (*hand_cards, discard_cards, stock_cards) for c in part}
    named.update(c for m in melds for c in m.cards)
    rest = [c for c in DECK if c not in named]
    if leftover == "stock":
        stock_cards += rest
    else:
        discard_cards = rest + discard_cards
    if dealer is None:
        dealer = (to_act - 1) % len(hands) if to_act is not None else len(hands) - 1
    return HandState.from_position(
        hand_cards, discard_cards, stock_cards, melds, dealer=dealer, to_act=to_act, rules=rules, start=start
    )


def deck_dealing(hands: Sequence[str], turned: str, stock: str = "", dealer: int = 0) -> list[Card]:
    """A 52-card deck (top first) that deals ``hands`` (5 cards each, by seat) with ``dealer``
    dealing, turns up ``turned``, and has ``stock`` on top of the stock."""
    players = len(hands)
    by_seat = [cards(h) for h in hands]
    deck: list[Card] = []
    for k in range(5 * players):
        deck.append(by_seat[(dealer + 1 + k) % players][k // players])
    deck.append(Card.parse(turned))
    deck += cards(stock)
    deck += [c for c in DECK if c not in deck]
    assert len(deck) == 52 and len(set(deck)) == 52
    return deck


def play(state: HandState, *texts: str) -> list[Event]:
    """Apply actions written as text (``"draw stock"``, ``"meld 8h 8d 8s"``) for the seat to act;
    the events they made."""
    return [state.apply(Action.parse(text), state.to_act) for text in texts]


def pass_turn(state: HandState) -> None:
    """The seat to act draws from the stock and throws the card it drew straight back."""
    event = state.apply(Action.parse("draw stock"))
    assert event.card is not None
    state.apply(Action.parse(f"discard {event.card.text}"))


def snapshot(state: HandState) -> tuple[Any, ...]:
    """Everything a HandState holds, as plain values: equal snapshots mean equal states."""
    return (
        state.rules,
        state.players,
        state.dealer,
        state.start,
        tuple(tuple(h) for h in state.hands),
        tuple(state.discard),
        tuple(state.stock),
        tuple(state.table),
        state.to_act,
        state.phase,
        state.picked,
        state.turns,
        frozenset(state.locked),
        tuple(state.history),
        state.outcome,
        repr(state.initial),
    )


def all_cards(state: HandState) -> list[Card]:
    """Every card the state holds: hands, discard pile, stock and table."""
    out = [c for h in state.hands for c in h] + state.discard + state.stock
    return out + [c for m in state.table for c in m.cards]


def pass_discards(state: HandState, turns: int) -> None:
    """Each turn: take the top discard, throw another card (the stock is never touched)."""
    for _ in range(turns):
        play(state, "draw discard")
        throw = next(a for a in state.legal_actions() if isinstance(a, Discard))
        state.apply(throw, state.to_act)


def illegal(state: HandState, text: str, rule: str, seat: int | None = None) -> IllegalActionError:
    """``text`` is refused for breaking ``rule``, by can_apply, legal_actions and verify alike."""
    action = Action.parse(text)
    assert not state.can_apply(action, seat)
    assert action not in state.legal_actions()
    with pytest.raises(IllegalActionError) as info:
        state.verify(action, seat)
    assert info.value.rule == rule, str(info.value)
    return info.value


def no_tonk_deck(players: int, dealer: int) -> list[Card]:
    """The first seeded deck (hand 0 of seeds 0, 1, ...) that deals no TONK."""
    for seed in range(1000):
        deck = deck_order(seed, 0)
        if HandState.deal(deck, players, dealer).outcome is None:
            return deck
    raise AssertionError("no deck without TONK")  # pragma: no cover


MID = ("Kh 9d 2s 3h 4d", "Ks 9h 2h 3s 4s")  # 28 each: hands that are no TONK
