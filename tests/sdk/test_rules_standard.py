"""The rulebook, point by point, standard rule set: one or more tests for each point of
``docs/rules.md`` (the rules text's points and our rulings where it is silent), each named after
its rule. The named variants are in test_rules_variants.py, the rules text's examples of play
in test_rules_examples.py.

Positions are built from card text with tests/helpers/positions.py (the cards not named go to
the stock, or under the top of the discard pile) or dealt from a chosen deck. Payoffs for going
down were worked out by hand from the rule text.
"""

from __future__ import annotations

import itertools
import random

import pytest
from helpers.positions import MID, cards, deck_dealing, illegal, no_tonk_deck, pass_discards, play, position

from bots.random_bot import RandomBot
from sdk.actions import Action, Discard, Draw, Drop, Layoff, Meld
from sdk.cards import DECK, RANKS, SUITS, Card, hand_value
from sdk.dealing import deck_order, derive_seed
from sdk.engine import HandState, Phase
from sdk.errors import IllegalActionError, RecordError
from sdk.melds import make_meld
from sdk.record import HandRecord
from sdk.referee import LocalPlayer, play_match
from sdk.rules import STANDARD, Rules

# -- cards and values ---------------------------------------------------------------------


def test_card_values_ace_1_pips_face_value_jqk_10() -> None:
    for card in DECK:
        expected = 1 if card.rank == 1 else min(card.rank, 10)
        assert card.value == expected, card
    assert [c.value for c in cards("Ac 2d 5h 9s 10c Jd Qh Ks")] == [1, 2, 5, 9, 10, 10, 10, 10]
    assert hand_value(cards("Ac 2d 10h Js Qc Kd")) == 43
    state = position(["Ac 2d 10h", "Js Qc Kd"], discard="5c")
    assert state.totals() == (13, 30)


def test_card_text_canonical_output() -> None:
    assert len(DECK) == 52 and len(set(DECK)) == 52
    for card in DECK:
        assert card.text == RANKS[card.rank - 1] + card.suit
        assert str(card) == card.text
        assert Card.parse(card.text) is card
    assert [str(c) for c in cards("Ts qH aC 10D kS")] == ["10s", "Qh", "Ac", "10d", "Ks"]
    assert {c.suit for c in DECK} == set(SUITS)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [("Ts", "10s"), ("ts", "10s"), ("tS", "10s"), ("10S", "10s"), ("TH", "10h"), ("aH", "Ah"),
     ("AH", "Ah"), ("qd", "Qd"), ("jC", "Jc"), ("KS", "Ks"), ("7c", "7c")],
)
def test_card_text_lenient_input_t_and_any_case(text: str, canonical: str) -> None:
    assert Card.parse(text) is Card.parse(canonical)
    assert Card.parse(text).text == canonical


def test_card_text_lenient_input_written_back_canonical_in_records() -> None:
    state = position(["Ts 5h", "Qh 2c"], discard="Kd")
    play(state, "draw stock", "discard Ts")
    data = HandRecord.from_state(state).to_json()
    # The same record written with other spellings reads back to the canonical form.
    text = (
        HandRecord.from_state(state).to_text()
        .replace('"10s"', '"Ts"').replace('"Qh"', '"qH"').replace('"Kd"', '"KD"')
    )
    assert '"Ts"' in text and '"qH"' in text
    assert HandRecord.from_text(text).to_json() == data


# -- spreads are ace-low --------------------------------------------------------------------


def test_spreads_are_ace_low_a23_ok() -> None:
    state = position(["Ah 2h 3h 9c", "Kc"], discard="5c", stock="Jd")
    play(state, "draw stock")
    assert Meld(tuple(cards("Ah 2h 3h"))) in state.legal_actions()
    play(state, "meld 3h Ah 2h")
    assert state.table[0].kind == "spread"
    assert [c.text for c in state.table[0].cards] == ["Ah", "2h", "3h"]


@pytest.mark.parametrize("meld", ["Qh Kh Ah", "Kh Ah 2h"])
def test_spreads_are_ace_low_no_qka_or_ka2_in_standard(meld: str) -> None:
    state = position([meld + " 9c", "Kc"], discard="5c", stock="Jd")
    play(state, "draw stock")
    error = illegal(state, "meld " + meld, "meld_shape")
    assert "aces are low: Q K A is not a spread" in str(error)
    with pytest.raises(IllegalActionError, match="aces are low: Q K A is not a spread"):
        make_meld(0, cards(meld), STANDARD)
    assert not [a for a in state.legal_actions() if isinstance(a, Meld)]


def test_spreads_are_ace_low_no_jqka_in_standard() -> None:
    state = position(["Jh Qh Kh Ah", "Kc"], discard="5c", stock="Jd")
    play(state, "draw stock")
    assert "aces are low: Q K A is not a spread" in str(illegal(state, "meld Jh Qh Kh Ah", "meld_shape"))
    assert [a for a in state.legal_actions() if isinstance(a, Meld)] == [Meld(tuple(cards("Jh Qh Kh")))]


def test_spreads_are_ace_low_ace_lays_off_below_the_two_never_above_the_king() -> None:
    state = position(["Ac As 9c", "5d"], discard="5c", stock="Jd",
                     table=[(1, "Jc Qc Kc"), (1, "2s 3s 4s")])
    play(state, "draw stock")
    illegal(state, "layoff Ac 0", "layoff_fit")
    assert not state.table[0].accepts(Card.parse("Ac"), STANDARD)
    play(state, "layoff As 1")
    assert [c.text for c in state.table[1].cards] == ["As", "2s", "3s", "4s"]


# -- players and the deal -------------------------------------------------------------------


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_two_to_six_players(players: int) -> None:
    state = HandState.deal(deck_order(1, 0), players)
    assert len(state.hands) == players
    assert all(len(h) == 5 for h in state.hands)
    assert state.stock_size == 52 - 5 * players - 1


@pytest.mark.parametrize("players", [1, 7])
def test_two_to_six_players_others_refused(players: int) -> None:
    with pytest.raises(RecordError, match=f"Tonk is played by 2 to 6 players, not {players}"):
        HandState.deal(list(DECK), players)


@pytest.mark.parametrize(("players", "dealer"), [(n, d) for n in range(2, 7) for d in range(n)])
def test_deal_one_at_a_time_from_left_of_dealer_then_turn_up_then_stock_top_first(
    players: int, dealer: int
) -> None:
    deck = deck_order(2024, players * 10 + dealer)
    state = HandState.deal(deck, players, dealer)
    for k in range(5 * players):
        seat = (dealer + 1 + k) % players
        assert state.hands[seat][k // players] is deck[k]
    assert state.discard == [deck[5 * players]]
    assert state.stock == deck[5 * players + 1 :]


def test_deal_stock_is_drawn_top_first() -> None:
    deck = deck_dealing(["10s 8d 8h 5s 4c", "Kc 10c 3c 2s Ah", "Qh 8c 6d 2d 2c"], "5c", "6s Ac 7s", dealer=2)
    state = HandState.deal(deck, 3, dealer=2)
    assert state.outcome is None
    drawn = []
    for _ in range(3):
        drawn.append(play(state, "draw stock")[0].card)
        play(state, f"discard {state.hands[state.to_act][0]}")
    assert drawn == cards("6s Ac 7s")


# -- TONK -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hand", "total", "tonk"),
    [
        ("Ac 2c 3d 4h 5s", 15, True),
        ("Ac 2c 3d 4h 6s", 16, False),
        ("Kc Qd Jh 10s 8c", 48, False),
        ("Kc Qd Jh 10s 9c", 49, True),
        ("Kc Qd Jh 10s 10c", 50, True),
    ],
)
def test_tonk_right_after_the_deal_at_15_or_less_or_49_or_more(hand: str, total: int, tonk: bool) -> None:
    state = position([hand, *MID], discard="5c", start="deal")
    assert state.totals()[0] == total
    if tonk:
        assert state.outcome is not None
        assert state.outcome.end == "tonk"
        assert state.outcome.winners == (0,)
        assert state.outcome.payoffs == (4, -2, -2)
        assert state.phase is Phase.OVER and state.legal_actions() == []
    else:
        assert state.outcome is None


def test_tonk_from_a_real_deal() -> None:
    deck = deck_dealing(["Ac 2c 3d 4h 5s", *MID], "5c", dealer=2)
    state = HandState.deal(deck, 3, dealer=2)
    assert state.outcome is not None and state.outcome.end == "tonk"
    assert state.outcome.payoffs == (4, -2, -2)
    assert state.outcome.totals == (15, 28, 28)


def test_tonk_every_non_tonk_pays_every_tonk_2x() -> None:
    state = position(["Kh 9d 2s 3h 4d", "Ac 2c 3d 4h 5s", "Ks 9h 2h 3s 4s", "Kc Qd Jh 10s 10c"],
                     discard="5c", start="deal")
    assert state.outcome is not None
    assert state.outcome.winners == (1, 3)
    assert state.outcome.payoffs == (-4, 4, -4, 4)
    assert state.outcome.totals == (28, 15, 28, 50)


@pytest.mark.parametrize("hands", [["Ac 2c 3d 4h 5s", "Kc Qd Jh 10s 10c"],
                                   ["Ac 2c 3d 4h 5s", "Ad 2d 3c 4c 5c", "Kc Qd Jh 10s 10c"]])
def test_tonk_all_tonk_pays_nobody(hands: list[str]) -> None:
    state = position(hands, discard="6c", start="deal")
    assert state.outcome is not None
    assert state.outcome.end == "tonk"
    assert state.outcome.winners == tuple(range(len(hands)))
    assert state.outcome.payoffs == (0,) * len(hands)


def test_tonk_only_after_the_deal_a_total_of_9_mid_game_is_not_tonk() -> None:
    state = position(["5h 6h 7h 4c 5c", *MID], discard="Qc", stock="8d 9c Jc Qs", start="deal")
    assert state.outcome is None
    play(state, "draw stock", "meld 5h 6h 7h", "discard 8d")
    assert state.totals()[0] == 9
    assert state.outcome is None and state.to_act == 1
    play(state, "draw stock", "discard 9c", "draw stock", "discard Jc")
    assert state.outcome is None
    play(state, "drop")
    assert state.outcome is not None
    assert state.outcome.end == "drop"
    assert state.outcome.payoffs == (2, -1, -1)


def test_tonk_no_check_for_a_hand_recorded_from_a_position() -> None:
    state = position(["Ac 2c", "Kc Qd Jh 10s 10c", "3d"], discard="5c", start="position")
    assert state.outcome is None
    assert Drop() in state.legal_actions()


# -- who acts first, and turns ----------------------------------------------------------------


@pytest.mark.parametrize(("players", "dealer"), [(n, d) for n in range(2, 7) for d in range(n)])
def test_first_to_act_is_left_of_the_dealer(players: int, dealer: int) -> None:
    state = HandState.deal(no_tonk_deck(players, dealer), players, dealer)
    assert state.to_act == (dealer + 1) % players
    hands = ["Kc", "Kd", "Kh", "Ks", "Qc", "Qd"][:players]
    assert position(hands, discard="2c", dealer=dealer).to_act == (dealer + 1) % players


def test_turns_go_left_seat_plus_one_wrapping_round() -> None:
    state = position(["Kc", "Kd", "Kh", "Ks"], discard="2c", dealer=1)
    seats = []
    for _ in range(6):
        seats.append(state.to_act)
        play(state, "draw stock", f"discard {state.hands[state.to_act][0]}")
    assert seats == [2, 3, 0, 1, 2, 3]


def test_a_turn_is_exactly_one_of_drop_or_draw_then_play_then_discard() -> None:
    state = position(["5h 6h 7h 9c", "Kc Qc"], discard="Jd", stock="2s")
    assert state.legal_actions() == [Drop(), Draw("stock"), Draw("discard")]
    play(state, "draw stock")
    assert state.phase is Phase.PLAY
    assert not [a for a in state.legal_actions() if isinstance(a, Drop | Draw)]
    illegal(state, "drop", "drop_after_draw")
    illegal(state, "draw stock", "draw_once")
    illegal(state, "draw discard", "draw_once")
    play(state, "meld 5h 6h 7h")
    assert state.to_act == 0 and state.phase is Phase.PLAY  # a meld does not end the turn
    illegal(state, "drop", "drop_after_draw")
    play(state, "discard 2s")
    assert (state.to_act, state.phase, state.turns) == (1, Phase.START, 1)
    play(state, "drop")
    assert state.outcome is not None and state.outcome.end == "drop"
    illegal(state, "draw stock", "hand_over")


def test_drop_only_before_drawing_first_turn_included() -> None:
    deck = deck_dealing(["10s 8d 8h 5s 4c", "Kc 10c 3c 2s Ah", "Qh 8c 6d 2d 2c"], "5c", dealer=2)
    state = HandState.deal(deck, 3, dealer=2)
    assert Drop() in state.legal_actions()
    play(state, "drop")  # the very first action of the hand
    assert state.outcome is not None
    assert state.outcome.end == "drop"
    assert state.outcome.totals == (35, 26, 28)


@pytest.mark.parametrize("source", ["stock", "discard"])
def test_draw_from_stock_or_discard(source: str) -> None:
    state = position(["Kc Qc", "Kd"], discard="3h 4h", stock="9s 8s")
    (event,) = play(state, f"draw {source}")
    expected = Card.parse("9s" if source == "stock" else "4h")
    assert event.card is expected
    assert expected in state.hands[0]
    if source == "stock":
        assert state.stock[0] is Card.parse("8s")
        assert state.discard[-1] is Card.parse("4h")
        assert state.picked is None
    else:
        assert state.discard == cards("3h")
        assert state.picked is expected


# -- melds and lay-offs ---------------------------------------------------------------------


def test_melds_books_of_three_or_four() -> None:
    state = position(["8h 8d 8s 2d", "Kc"], discard="Qd", stock="8c")
    play(state, "draw stock")
    books = [a for a in state.legal_actions() if isinstance(a, Meld)]
    assert len(books) == 5  # four books of three and the book of four
    assert Meld(tuple(cards("8c 8d 8h 8s"))) in books
    illegal(state, "meld 8h 8d", "meld_size")
    illegal(state, "meld 8h 8d 2d", "meld_shape")
    play(state, "meld 8s 8h 8d 8c")
    assert state.table[0].kind == "book" and len(state.table[0].cards) == 4
    assert [c.text for c in state.table[0].cards] == ["8c", "8d", "8h", "8s"]  # sorted on the table
    assert state.totals()[0] == 2


def test_melds_spreads_of_three_or_more_same_suit_in_sequence() -> None:
    state = position(["5h 6h 7h 8h 9h 5d", "Kc"], discard="Qd", stock="6d")
    play(state, "draw stock")
    legal = state.legal_actions()
    for ok in ["5h 6h 7h", "7h 8h 9h", "5h 6h 7h 8h 9h", "7h 5h 6h", "9h 7h 8h 6h 5h"]:
        assert Meld(tuple(cards(ok))) in legal, ok
        assert state.can_apply(Action.parse("meld " + ok))
    illegal(state, "meld 5h 6h 8h", "meld_shape")  # a gap
    illegal(state, "meld 5h 6d 7h", "meld_shape")  # mixed suits
    illegal(state, "meld 5h 6h", "meld_size")
    play(state, "meld 9h 8h 7h 6h 5h")
    assert state.table[0].kind == "spread"
    assert [c.text for c in state.table[0].cards] == ["5h", "6h", "7h", "8h", "9h"]


def test_layoff_single_card_either_end_of_any_spread_anyones() -> None:
    state = position(["4s 8s Qd 8d 2c", "Kc", "Kh"], discard="3c", stock="Ah",
                     table=[(1, "5s 6s 7s"), (0, "9d 10d Jd")])
    play(state, "draw stock")
    layoffs = {a for a in state.legal_actions() if isinstance(a, Layoff)}
    assert layoffs == {Layoff(Card.parse(c), i) for c, i in [("4s", 0), ("8s", 0), ("8d", 1), ("Qd", 1)]}
    play(state, "layoff 4s 0", "layoff 8s 0", "layoff Qd 1", "layoff 8d 1")
    assert [c.text for c in state.table[0].cards] == ["4s", "5s", "6s", "7s", "8s"]
    assert [c.text for c in state.table[1].cards] == ["8d", "9d", "10d", "Jd", "Qd"]
    assert state.table[0].owner == 1  # laying off never changes whose meld it is
    assert state.totals()[0] == 3  # 2c and the ace drawn


def test_layoff_must_extend_an_end() -> None:
    state = position(["9s 8h Kd", "Kc"], discard="3c", stock="Ah", table=[(1, "5s 6s 7s")])
    play(state, "draw stock")
    assert "does not extend" in str(illegal(state, "layoff 9s 0", "layoff_fit"))
    illegal(state, "layoff 8h 0", "layoff_fit")


def test_layoff_never_onto_a_book() -> None:
    state = position(["9s 2c", "Kc"], discard="3c", stock="Ah", table=[(1, "9c 9d 9h")])
    play(state, "draw stock")
    assert "may not be added to a book" in str(illegal(state, "layoff 9s 0", "layoff_fit"))


def test_melding_and_laying_off_only_after_the_draw() -> None:
    state = position(["5h 6h 7h 4s", "Kc"], discard="3c", table=[(1, "5s 6s 7s")])
    assert "after the draw" in str(illegal(state, "meld 5h 6h 7h", "draw_first"))
    illegal(state, "layoff 4s 0", "draw_first")
    illegal(state, "discard 4s", "draw_first")
    assert state.legal_actions() == [Drop(), Draw("stock"), Draw("discard")]


def test_discard_ends_the_turn() -> None:
    state = position(["Kc Qc", "Kd", "Kh"], discard="3c", stock="2s 3s")
    play(state, "draw stock")
    assert state.to_act == 0
    play(state, "discard Kc")
    assert (state.to_act, state.phase, state.turns) == (1, Phase.START, 1)
    assert state.discard[-1] is Card.parse("Kc")
    assert state.legal_actions() == [Drop(), Draw("stock"), Draw("discard")]


def test_card_just_taken_from_the_discard_pile_may_not_be_discarded_that_turn() -> None:
    state = position(["2c 9d Kh", "Kc"], discard="Qs", stock="Js")
    play(state, "draw discard")
    error = illegal(state, "discard Qs", "discard_pickup")
    assert "just taken from the discard pile" in str(error)
    assert {a for a in state.legal_actions() if isinstance(a, Discard)} == {
        Discard(c) for c in cards("2c 9d Kh")
    }
    play(state, "discard 9d")
    # A card drawn from the stock may be discarded at once (the second example's 10h).
    play(state, "draw stock", "discard Js")


def test_card_just_taken_may_be_discarded_when_it_is_the_only_card_left() -> None:
    state = position(["5h 6h 7h", "Kc", "Kd"], discard="Qs", stock="Js")
    play(state, "draw discard", "meld 5h 6h 7h")
    assert state.legal_actions() == [Discard(Card.parse("Qs"))]
    play(state, "discard Qs")
    assert state.outcome is not None
    assert (state.outcome.end, state.outcome.winners, state.outcome.payoffs) == ("out", (0,), (2, -1, -1))


# -- going out --------------------------------------------------------------------------------


@pytest.mark.parametrize("players", [3, 4])
def test_going_out_when_the_hand_empties_after_a_meld(players: int) -> None:
    state = position(["5h 6h", *["Kc", "Kd", "Ks"][: players - 1]], discard="3c", stock="7h")
    play(state, "draw stock", "meld 5h 6h 7h")
    assert state.outcome is not None
    assert state.outcome.end == "out" and state.outcome.winners == (0,)
    assert state.outcome.payoffs == (players - 1, *[-1] * (players - 1))
    assert state.outcome.totals == (0, *[10] * (players - 1))
    assert state.hands[0] == [] and state.legal_actions() == []


def test_going_out_when_the_hand_empties_after_a_layoff() -> None:
    state = position(["4h", "Kc", "Kd"], discard="3c", stock="8s", table=[(1, "5h 6h 7h"), (2, "9s 10s Js")])
    play(state, "draw stock", "layoff 4h 0")
    assert state.outcome is None
    play(state, "layoff 8s 1")
    assert state.outcome is not None
    assert (state.outcome.end, state.outcome.payoffs) == ("out", (2, -1, -1))
    assert state.legal_actions() == [] and state.turns == 0  # out before any discard


def test_going_out_when_the_hand_empties_after_the_discard() -> None:
    state = position(["Kd", "Kc", "Ks"], discard="3c", stock="4h", table=[(1, "5h 6h 7h")])
    play(state, "draw stock", "layoff 4h 0")
    assert state.outcome is None
    play(state, "discard Kd")
    assert state.outcome is not None and state.turns == 1
    assert (state.outcome.end, state.outcome.winners, state.outcome.payoffs) == ("out", (0,), (2, -1, -1))


# -- settling a drop ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hands", "dropper", "payoffs"),
    [
        (["3c", "Kd", "9h"], 0, (2, -1, -1)),
        (["5c", "Kd", "3h", "Ks Qs"], 2, (-1, -1, 3, -1)),
        (["Ac", "2d"], 0, (1, -1)),
    ],
)
def test_settling_drop_strictly_lowest_every_other_pays_dropper_1x(
    hands: list[str], dropper: int, payoffs: tuple[int, ...]
) -> None:
    state = position(hands, discard="4c", to_act=dropper)
    play(state, "drop")
    assert state.outcome is not None
    assert (state.outcome.end, state.outcome.winners, state.outcome.payoffs) == ("drop", (dropper,), payoffs)


# Worked out by hand. "dropper pays 2x to each player with a total <= his; every player who
# is neither the dropper nor among the lowest pays each lowest 1x; the lowest pay each other
# nothing".
CAUGHT = [
    pytest.param(["10c", "7d", "Kh Qh"], 0, (1,), (-2, 3, -1), id="3p-lower-other"),
    # totals 10 10 20: a tie with the lowest loses; s1 gets 2 from the dropper, 1 from s2
    pytest.param(["10c", "10d", "Kh Qh"], 0, (1,), (-2, 3, -1), id="3p-tie-loses"),
    # totals 10 3 9, seat 2 drops: pays s1 2; s0 (10, above the dropper) still pays s1 1
    pytest.param(["Kd", "3d", "9c"], 2, (1,), (-1, 3, -2), id="3p-dropper-middle"),
    # totals 10 10 10: the dropper pays both 2x; the two lowest pay each other nothing
    pytest.param(["10c", "10d", "10h"], 0, (1, 2), (-4, 2, 2), id="3p-all-tied"),
    # totals 5 12 12 30, seat 1 drops: pays s0 and s2 2x each; s2 and s3 pay s0 1x each
    pytest.param(["5c", "Qd 2d", "Kh 2h", "Ks Qs Js"], 1, (0,), (4, -4, 1, -1), id="4p-tie-above-lowest"),
    # totals 8 8 20 25, seat 2 drops: pays s0 s1 2x; s3 pays s0 and s1 1x each
    pytest.param(["8c", "8d", "Kh Qh", "Ks Qs 5s"], 2, (0, 1), (3, 3, -4, -2), id="4p-two-lowest"),
    # totals 10 20 30 30, seat 3 drops: pays everyone 2x; s1 s2 pay s0 1x
    pytest.param(["10c", "Kd Qd", "Kh Qh Jh", "Ks Qs Js"], 3, (0,), (4, 1, 1, -6), id="4p-all-at-or-below"),
    # totals 20 6 6 6, seat 0 drops: pays all three 2x; nobody else pays (all are lowest)
    pytest.param(["Kc Qc", "6d", "6h", "6s"], 0, (1, 2, 3), (-6, 2, 2, 2), id="4p-three-lowest"),
    pytest.param(["10c", "10d"], 0, (1,), (-2, 2), id="2p-tie"),
]


@pytest.mark.parametrize(("hands", "dropper", "winners", "payoffs"), CAUGHT)
def test_settling_drop_not_strictly_lowest_including_ties(
    hands: list[str], dropper: int, winners: tuple[int, ...], payoffs: tuple[int, ...]
) -> None:
    state = position(hands, discard="4c", to_act=dropper)
    play(state, "drop")
    assert state.outcome is not None
    assert state.outcome.end == "drop"
    assert state.outcome.winners == winners
    assert state.outcome.payoffs == payoffs
    assert sum(payoffs) == 0


# -- zero-sum, and what is legal is what verify accepts ----------------------------------------


VARIANTS = [
    STANDARD,
    Rules(discard_pickup_may_return=True, meld_out_double=True),
    Rules(book_layoff=True, hit_lock=True),
    Rules(ace_high_or_low=True),
    Rules(stock_reshuffle=True, turn_cap=60),
    Rules(turn_cap=25),
]


def candidate_actions(state: HandState) -> set[Action]:
    """Every action worth asking about: all draws and drops, and after the draw every
    discard, every lay-off of a held card onto every meld, and every 3+ card subset."""
    hand = state.hands[state.to_act]
    found: set[Action] = {Drop(), Draw("stock"), Draw("discard")}
    found |= {Discard(c) for c in DECK}
    found |= {Layoff(c, i) for c in hand for i in range(len(state.table) + 1)}
    for size in range(3, len(hand) + 1):
        found |= {Meld(combo) for combo in itertools.combinations(hand, size)}
    return found


def random_hand(seed: int, players: int, rules: Rules, check_legality: bool) -> HandState:
    rng = random.Random(seed)
    state = HandState.deal(deck_order(seed, 0), players, rng.randrange(players), rules)
    while state.outcome is None:
        legal = state.legal_actions()
        assert len(set(legal)) == len(legal), "legal_actions lists an action twice"
        if check_legality:
            accepted = {a for a in candidate_actions(state) if state.can_apply(a, state.to_act)}
            assert accepted == set(legal)
        melds: list[Action] = [a for a in legal if isinstance(a, Meld | Layoff)]
        action: Action
        if melds and rng.random() < 0.7:
            action = rng.choice(melds)
        elif Drop() in legal and len(legal) > 1 and rng.random() < 0.9:
            action = rng.choice([a for a in legal if a != Drop()])
        else:
            action = rng.choice(legal)
        state.apply(action, state.to_act)
    return state


def test_payoffs_always_zero_sum() -> None:
    ends: set[str] = set()
    for seed in range(300):
        players = 2 + seed % 5
        state = random_hand(seed, players, VARIANTS[seed % len(VARIANTS)], check_legality=False)
        assert state.outcome is not None
        assert sum(state.outcome.payoffs) == 0
        assert len(state.outcome.payoffs) == players
        assert state.outcome.totals == state.totals()
        assert state.outcome.winners
        ends.add(state.outcome.end)
    assert ends == {"tonk", "drop", "out", "stock", "cap"}


def test_legal_actions_are_exactly_the_actions_verify_accepts() -> None:
    for seed in range(30):
        random_hand(1000 + seed, 2 + seed % 5, VARIANTS[seed % len(VARIANTS)], check_legality=True)


# -- stock exhausted, and the turn cap ------------------------------------------------------------


def test_stock_exhausted_at_end_of_turn_is_a_showdown() -> None:
    state = position(["Kc 5d", "7h", "Kh"], discard="9c", stock="2c", leftover="discard")
    play(state, "draw stock")
    assert state.stock_size == 0 and state.outcome is None  # the turn is not over yet
    play(state, "discard Kc")
    assert state.outcome is not None
    assert state.outcome.end == "stock"
    assert state.outcome.totals == (7, 7, 10)
    # every player not tied for the lowest pays each lowest 1x
    assert state.outcome.winners == (0, 1)
    assert state.outcome.payoffs == (1, 1, -2)


@pytest.mark.parametrize(
    ("hands", "winners", "payoffs"),
    [
        (["Kc 5d", "9h", "Kh", "Qs"], (0,), (3, -1, -1, -1)),
        (["Kc 5d", "9h", "7s", "7h"], (0, 2, 3), (1, -3, 1, 1)),
        (["Kc 5d", "7h"], (0, 1), (0, 0)),
    ],
)
def test_stock_exhausted_showdown_not_tied_for_lowest_pays_each_lowest_1x(
    hands: list[str], winners: tuple[int, ...], payoffs: tuple[int, ...]
) -> None:
    state = position(hands, discard="9c", stock="2c", leftover="discard")
    play(state, "draw stock", "discard Kc")
    assert state.outcome is not None
    assert (state.outcome.end, state.outcome.winners, state.outcome.payoffs) == ("stock", winners, payoffs)


def test_stock_exhausted_going_out_on_the_last_turn_still_wins() -> None:
    state = position(["Kd", "7c", "Kh"], discard="9c", stock="4h", table=[(1, "5h 6h 7h")],
                     leftover="discard")
    play(state, "draw stock", "layoff 4h 0", "discard Kd")
    assert state.outcome is not None
    assert (state.outcome.end, state.outcome.payoffs) == ("out", (2, -1, -1))


def test_turn_cap_default_200_completed_turns_then_showdown() -> None:
    assert STANDARD.turn_cap == 200
    state = position(["Kc Kd", "Qc 2d"], discard="Jh")
    pass_discards(state, 199)
    assert state.outcome is None and state.turns == 199
    pass_discards(state, 1)
    assert state.turns == 200
    assert state.outcome is not None
    assert state.outcome.end == "cap"
    low = min(state.outcome.totals)
    lowest = tuple(s for s, t in enumerate(state.outcome.totals) if t == low)
    assert state.outcome.winners == lowest
    assert state.outcome.payoffs == ((1, -1) if lowest == (0,) else (-1, 1) if lowest == (1,) else (0, 0))


def test_turn_cap_configurable() -> None:
    state = position(["Kc Kd", "Qc 2d", "Jc 3d"], discard="Jh", rules=Rules(turn_cap=3))
    pass_discards(state, 2)
    assert state.outcome is None
    pass_discards(state, 1)
    assert state.outcome is not None
    assert state.outcome.end == "cap"
    assert state.outcome.totals == tuple(hand_value(h) for h in state.hands)
    uncapped = position(["Kc Kd", "Qc 2d"], discard="Jh", rules=Rules(turn_cap=0))
    pass_discards(uncapped, 250)
    assert uncapped.outcome is None


def test_turn_cap_counted_from_the_start_of_a_recorded_position() -> None:
    state = position(["Kc Kd", "Qc 2d"], discard="Jh", rules=Rules(turn_cap=2))
    pass_discards(state, 2)
    assert state.outcome is not None and state.outcome.end == "cap"
    record = HandRecord.from_state(state)
    assert record.replay().outcome == state.outcome


def test_turn_cap_stock_out_is_checked_first() -> None:
    state = position(["Kc 5d", "7h"], discard="9c", stock="2c", leftover="discard", rules=Rules(turn_cap=1))
    play(state, "draw stock", "discard Kc")
    assert state.outcome is not None
    assert state.outcome.end == "stock"


# -- matches ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("players", "first_dealer"), [(3, 0), (4, 2), (2, 1)])
def test_dealer_moves_one_seat_left_each_hand_and_match_score_is_sum_of_payoffs(
    players: int, first_dealer: int
) -> None:
    hands = 7
    result = play_match([LocalPlayer(RandomBot) for _ in range(players)], seed=31 + players, hands=hands,
                        first_dealer=first_dealer)
    assert [h.record.dealer for h in result.hands] == [(first_dealer + i) % players for i in range(hands)]
    for index, log in enumerate(result.hands):
        dealt = HandState.deal(deck_order(31 + players, index), players, log.record.dealer)
        assert log.record.hands == dealt.hands
        assert log.record.discard == dealt.discard
        assert log.record.stock == dealt.stock
    assert result.scores == [
        sum(h.record.outcome["payoffs"][s] for h in result.hands if h.record.outcome) for s in range(players)
    ]
    assert sum(result.scores) == 0
    assert all(sum(h.record.outcome["payoffs"]) == 0 for h in result.hands if h.record.outcome)


def test_seeded_deals_are_reproducible() -> None:
    assert deck_order(12345, 3) == deck_order(12345, 3)
    assert sorted(deck_order(12345, 3), key=lambda c: c.index) == list(DECK)
    assert deck_order(12345, 3) != deck_order(12345, 4)
    assert deck_order(12345, 3) != deck_order(12346, 3)
    assert derive_seed(7, "match-1") == derive_seed(7, "match-1") != derive_seed(7, "match-2")

    def match(seed: int) -> list[str]:
        result = play_match([LocalPlayer(RandomBot) for _ in range(3)], seed=seed, hands=5)
        return [h.record.to_text() for h in result.hands]

    assert match(99) == match(99)
    assert match(99) != match(100)
