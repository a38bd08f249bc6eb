"""HandState as a library: states built from a seed or from the cards a test cares about
(HandState.from_seed, HandState.setup)."""

from __future__ import annotations

import pytest
from helpers.positions import all_cards, cards, snapshot

from sdk.cards import DECK, Card
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.errors import DeckError, NotationError, RecordError

# -- built from a seed ----------------------------------------------------------------------


def test_from_seed_deals_the_referees_hand() -> None:
    for hand in range(4):
        state = HandState.from_seed(7, 3, hand=hand)
        # docs/rules.md: hand h is dealt from deck_order(seed, h), the dealer moving left each hand
        assert snapshot(state) == snapshot(HandState.deal(deck_order(7, hand), 3, hand % 3))
    assert HandState.from_seed(7, 4, dealer=2).dealer == 2
    with pytest.raises(NotationError, match="a seed is an integer"):
        HandState.from_seed(-1, 2)
    with pytest.raises(NotationError, match="a hand index"):
        HandState.from_seed(1, 2, hand=-1)
    with pytest.raises(RecordError, match="2 to 6 players, not 7"):
        HandState.from_seed(1, 7)


# -- built from a partial position ----------------------------------------------------------


def test_setup_fills_in_the_unnamed_cards_from_the_seed() -> None:
    state = HandState.setup({0: "Ah 2c 8h 8d 8s", 2: "Kc"}, discard="5h 9c", stock="Qs",
                            table=[(1, "7c 7d 7h")], seed=5)
    assert state.players == 3 and state.start == "position" and state.outcome is None
    assert [c.text for c in state.hands[0]] == ["Ah", "2c", "8h", "8d", "8s"]
    assert [c.text for c in state.hands[2]] == ["Kc"]
    named = set(cards("Ah 2c 8h 8d 8s Kc 5h 9c Qs 7c 7d 7h"))
    rest = [c for c in deck_order(5, 0) if c not in named]
    assert state.hands[1] == rest[:5]  # the seat not named is dealt five cards
    assert [c.text for c in state.discard] == ["5h", "9c"]  # bottom to top
    assert state.stock == [Card.parse("Qs"), *rest[5:]]
    assert sorted(all_cards(state), key=lambda c: c.index) == list(DECK)
    assert snapshot(state) == snapshot(HandState.setup({0: "Ah 2c 8h 8d 8s", 2: "Kc"}, discard="5h 9c",
                                                       stock="Qs", table=[(1, "7c 7d 7h")], seed=5))
    assert HandState.setup({0: "Ah"}, seed=6).hands[1] != HandState.setup({0: "Ah"}, seed=5).hands[1]


def test_setup_turns_up_a_discard_and_takes_players_dealer_and_seat_to_act() -> None:
    state = HandState.setup({1: "Ah"}, players=4, dealer=3, to_act=1, seed=2)
    assert state.players == 4 and state.dealer == 3 and state.to_act == 1
    assert [len(h) for h in state.hands] == [5, 1, 5, 5]
    assert len(state.discard) == 1 and state.stock_size == 52 - 16 - 1
    assert HandState.setup(["Ah", "2c"], discard="").discard == []


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"hands": {0: "Ah Zz"}}, NotationError, "hands[0] 'Ah Zz': unknown card 'Zz'"),
        ({"hands": ["Ah", "2c"], "stock": "Qs 11h"}, NotationError, "stock 'Qs 11h': unknown card '11h'"),
        ({"hands": ["Ah 2c", "2c"]}, DeckError, "2c is named twice: in hands[0] 'Ah 2c' and in hands[1]"),
        ({"hands": ["Ah Ah", "2c"]}, DeckError, "card Ah is named twice in hands[0] 'Ah Ah'"),
        ({"hands": ["Ah", "2c"], "discard": "Ah"}, DeckError, "in hands[0] 'Ah' and in discard 'Ah'"),
        ({"hands": ["Ah", "2c"], "table": [(0, "Ah 2h 3h")]}, DeckError, "card Ah is named twice"),
        ({"hands": ["Ah", "2c"], "table": [(0, "5s 6s 8s")]}, RecordError, "table[0] '5s 6s 8s': "),
        ({"hands": ["Ah", "2c"], "table": [(2, "5s 6s 7s")]}, RecordError, "owner 2 is not a seat"),
        ({"hands": {0: "Ah", 3: "2c"}, "players": 3}, RecordError, "seat 3 is not a seat of a 3-player hand"),
        ({"hands": ["Ah", ""]}, RecordError, "hands[1] is empty"),
        ({"hands": "Ah 2c"}, RecordError, "hands is a list or a dict"),
    ],
)
def test_setup_refuses_bad_cards_quoting_them(kwargs: dict, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        HandState.setup(**kwargs)
    assert message in str(info.value)
