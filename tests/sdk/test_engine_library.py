"""HandState as a library: the table drawn by str(), states built from a seed or from the cards
a test cares about (HandState.from_seed, HandState.setup), and actions played from their text."""

from __future__ import annotations

import pytest
from helpers.positions import all_cards, cards, deck_dealing, play, snapshot

from bots.greedy import GreedyBot
from sdk.actions import Action
from sdk.cards import DECK, Card
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.errors import DeckError, IllegalActionError, NotationError, RecordError
from sdk.observation import observe

# -- str() draws the table ------------------------------------------------------------------


def test_str_draws_each_seat_its_cards_and_total_and_whose_turn_it_is() -> None:
    hands = ["Kh 9d 2s 3h 4d", "Ks 9h 2h 3s 4s", "Qc Jd 10h 9s 8c"]
    state = HandState.setup(hands, discard="7c 5d", dealer=0)
    text = str(state)
    lines = text.splitlines()
    assert lines[0] == "seat 0 D   4d 9d 3h Kh 2s   = 28"  # sorted by suit, dealer marked
    assert lines[1] == "seat 1  >  2h 9h 3s 4s Ks   = 28"  # the seat to act
    assert lines[2] == "seat 2     8c Qc Jd 10h 9s  = 47"
    assert lines[3] == f"stock {state.stock_size} cards, discard 5d (2 cards)"
    assert lines[4] == "table: no melds"
    assert lines[5] == "seat 1 to act, start of turn: drop, draw stock or draw discard"


def test_str_shows_the_melds_with_their_owners_and_the_phase_after_the_draw() -> None:
    state = HandState.setup(
        ["8h 8d 8s 2c", "9d 9h Kc"], discard="3c", stock="4c", table=[(1, "5s 6s 7s")], to_act=0
    )
    play(state, "draw discard", "meld 8h 8d 8s")
    lines = str(state).splitlines()
    assert lines[2] == f"stock {state.stock_size} cards, no discard pile"
    assert lines[3] == "table: [0] 5s 6s 7s (spread, seat 1), [1] 8d 8h 8s (book, seat 0)"
    took = "took 3c from the discard pile"
    assert lines[4] == f"seat 0 to act, after the draw ({took}): meld, lay off or discard"


def test_str_says_how_the_hand_ended() -> None:
    state = HandState.setup(["8h 8d 8s", "9d 9h Kc"], discard="2c", to_act=0)
    play(state, "draw discard", "meld 8h 8d 8s", "discard 2c")
    text = str(state)
    assert ">" not in text
    assert text.splitlines()[-1] == "over after 1 turn: seat 0 went out; payoffs by seat +1 -1"

    state = HandState.setup(["Ac 2c", "9d 9h"], to_act=1)
    play(state, "drop")
    last = str(state).splitlines()[-1]
    assert last == "over after 0 turns: seat 1 went down; lowest: seat 0; payoffs by seat +2 -2"

    tonk = HandState.deal(deck_dealing(["Ac 2c 3c 4c 5c", "Kd Qd Jd 10d 9d"], "7h"), 2)
    assert "TONK after the deal (seat 0 and seat 1)" in str(tonk)


def test_repr_is_a_short_summary() -> None:
    state = HandState.from_seed(1, 3)
    assert repr(state) == "<HandState 3 players, seat 1 to act, start, turn 0, standard rules>"


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
    listed = HandState.setup([[Card.parse("Ah"), "2c"], "Kd"], discard=["3h"], stock=(Card.parse("4h"),))
    assert listed.hands[0] == cards("Ah 2c") and listed.discard == cards("3h")
    assert listed.stock[0] == Card.parse("4h")


def test_setup_lets_seat_0_act_first_unless_told_otherwise() -> None:
    hands = ["Ah", "2c", "3d"]
    assert (HandState.setup(hands).to_act, HandState.setup(hands).dealer) == (0, 2)
    assert (HandState.setup(hands, to_act=2).to_act, HandState.setup(hands, to_act=2).dealer) == (2, 1)
    assert (HandState.setup(hands, dealer=0).to_act, HandState.setup(hands, dealer=0).dealer) == (1, 0)
    with pytest.raises(RecordError, match="seat to act 3 is not a seat"):
        HandState.setup(hands, to_act=3)
    with pytest.raises(RecordError, match="seat to act 'x' is not a seat"):
        HandState.setup(hands, to_act="x")  # type: ignore[arg-type]


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
        ({"hands": [["Ah", "Xx"], "2c"]}, NotationError, "hands[0] ['Ah', 'Xx']: unknown card 'Xx'"),
        ({"hands": [["Ah", 3], "2c"]}, NotationError, "hands[0] ['Ah', 3]: a card is written as text"),
        ({"hands": ["Ah", "2c"], "stock": 5}, NotationError, "stock is cards as text"),
    ],
)
def test_setup_refuses_bad_cards_quoting_them(kwargs: dict, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        HandState.setup(**kwargs)
    assert message in str(info.value)


# -- actions from their text ------------------------------------------------------------------


def test_apply_text_plays_each_kind_of_action_and_returns_its_event() -> None:
    state = HandState.setup(["8h 8d 5s 6s 2c", "8s 9d 9h Kc Qc"], discard="4c", stock="7s", to_act=0)
    event = state.apply_text("draw stock")
    assert (event.seat, event.action, event.card) == (0, Action.parse("draw stock"), Card.parse("7s"))
    event = state.apply_text("meld 7s 5s 6s")
    assert event.action == Action.parse("meld 5s 6s 7s") and state.table[0].kind == "spread"
    assert state.apply_text("discard 2c", seat=0).action == Action.parse("discard 2c")
    assert state.apply_text("draw discard").card == Card.parse("2c")
    assert state.apply_text("layoff 8s 0").action == Action.parse("layoff 8s 0")
    assert [str(e.action) for e in state.history] == [
        "draw stock", "meld 7s 5s 6s", "discard 2c", "draw discard", "layoff 8s 0",
    ]
    state.apply_text("discard 9d")
    assert state.apply_text("drop").seat == 0 and state.outcome is not None


def test_apply_text_is_lenient_like_the_parser() -> None:
    state = HandState.setup(["8h 8d 5s 6s 10c", "8s 9d 9h Kc Qc"], to_act=0)
    state.apply_text("  Draw   STOCK ")
    assert state.apply_text("discard tc").action == Action.parse("discard 10c")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty action ''"),
        ("draw deck", "cannot read action 'draw deck'"),
        ("discard", "cannot read action 'discard'"),
        ("layoff 8s", "cannot read action 'layoff 8s'"),
        ("meld 8h 8d Zz", "cannot read action 'meld 8h 8d Zz': unknown card 'Zz'"),
        ("discard 11h", "cannot read action 'discard 11h': unknown card '11h'"),
    ],
)
def test_apply_text_refuses_text_that_is_not_an_action(text: str, message: str) -> None:
    state = HandState.setup(["8h 8d 5s 6s 2c", "8s 9d 9h Kc Qc"], to_act=0)
    before = snapshot(state)
    with pytest.raises(NotationError) as info:
        state.apply_text(text)
    assert message in str(info.value)
    assert not isinstance(info.value, IllegalActionError)
    assert snapshot(state) == before


@pytest.mark.parametrize(
    ("texts", "text", "seat", "rule", "message"),
    [
        ((), "discard 2c", None, "draw_first", "cannot play 'discard 2c': discard comes after the draw"),
        ((), "draw stock", 1, "turn", "cannot play 'draw stock': it is seat 0's turn, not seat 1's"),
        (("draw stock",), "draw discard", None, "draw_once", "a player draws once"),
        (("draw stock",), "drop", None, "drop_after_draw", "cannot play 'drop': going down is only allowed"),
        (("draw stock",), "discard Kc", None, "not_in_hand", "cannot play 'discard Kc': Kc is not in"),
        (("draw stock",), "meld 8h 8d 5s", None, "meld_shape", "cannot play 'meld 8h 8d 5s': "),
        (("draw stock",), "layoff 8h 0", None, "no_such_meld", "cannot play 'layoff 8h 0': there is no"),
    ],
)
def test_apply_text_refuses_an_action_that_is_not_legal_now(
    texts: tuple[str, ...], text: str, seat: int | None, rule: str, message: str
) -> None:
    state = HandState.setup(["8h 8d 5s 6s 2c", "8s 9d 9h Kc Qc"], to_act=0)
    play(state, *texts)
    before = snapshot(state)
    with pytest.raises(IllegalActionError) as info:
        state.apply_text(text, seat)
    assert info.value.rule == rule
    assert message in str(info.value)
    assert snapshot(state) == before


def test_a_set_up_position_is_one_a_bot_can_be_asked_about() -> None:
    # docs/bot-author-guide.md: build a position, observe it, hand it to act
    state = HandState.setup({0: "8h 8d 8s 2c", 1: "9d 9h"}, discard="Kd", seed=7)
    state.apply_text("draw stock")
    assert GreedyBot().act(observe(state, state.to_act)) == Action.parse("meld 8h 8d 8s")
