"""One test (at least) per point of docs/rules.md, standard rule set, named after it.

Variants are in test_rules_variants.py, the rules text's examples of play in
test_rules_examples.py.
"""

from __future__ import annotations

import pytest
from helpers.positions import cards, deck_dealing, pass_turn, play, position

from bots.random_bot import RandomBot
from sdk.actions import Action, Discard, Draw, Drop, Layoff, Meld
from sdk.cards import Card
from sdk.dealing import deck_order
from sdk.engine import HandState, Phase
from sdk.errors import IllegalActionError, RecordError
from sdk.melds import make_meld
from sdk.referee import LocalPlayer, play_match
from sdk.rules import STANDARD, Rules


def refused(state: HandState, text: str, rule: str) -> None:
    with pytest.raises(IllegalActionError) as info:
        state.apply(Action.parse(text), state.to_act)
    assert info.value.rule == rule, str(info.value)


# -- Cards and values ---------------------------------------------------------------------------


def test_spreads_are_ace_low_with_no_ace_high_and_no_wrap_around() -> None:
    assert make_meld(0, cards("Ah 2h 3h"), STANDARD).kind == "spread"
    for text in ("Qh Kh Ah", "Kh Ah 2h", "Jh Qh Kh Ah"):
        with pytest.raises(IllegalActionError, match="aces are low: Q K A is not a spread"):
            make_meld(0, cards(text), STANDARD)
    spread = make_meld(0, cards("Jh Qh Kh"), STANDARD)
    assert not spread.accepts(Card.parse("Ah"), STANDARD)


# -- The deal ---------------------------------------------------------------------------------


@pytest.mark.parametrize("players", [1, 7])
def test_two_to_six_players(players: int) -> None:
    with pytest.raises(RecordError, match=f"Tonk is played by 2 to 6 players, not {players}"):
        HandState.deal(deck_order(1, 0), players)
    for ok in range(2, 7):
        assert HandState.deal(deck_order(1, 0), ok).players == ok


def test_five_cards_each_one_at_a_time_from_the_left_of_the_dealer_then_one_turned_up_rest_is_stock() -> None:
    deck = deck_order(3, 1)
    state = HandState.deal(deck, 4, dealer=1)
    # seats 2, 3, 0, 1 receive cards 0, 1, 2, 3, then round again
    assert state.hands[2] == [deck[0], deck[4], deck[8], deck[12], deck[16]]
    assert state.hands[1] == [deck[3], deck[7], deck[11], deck[15], deck[19]]
    assert state.discard == [deck[20]]
    assert state.stock == deck[21:] and state.stock_size == 31


def test_tonk_is_15_or_less_or_49_or_more_right_after_the_deal() -> None:
    for hand, tonk in [("Ac 2c 3c 4c 5c", True), ("Ac 2c 3c 4c 6c", False),
                       ("Kc Kd Kh Qc 9c", True), ("Kc Kd Kh Qc 8c", False), ("Kc Kd Kh Ks Qc", True)]:
        state = position([hand, "9d 9h 9s 2d 3d", "8d 8h 8s 2h 3h"], "7c", start="deal")
        assert (state.outcome is not None) == tonk, hand
        if tonk:
            assert state.outcome is not None and state.outcome.end == "tonk"
            assert state.phase is Phase.OVER and state.legal_actions() == []


def test_tonk_every_player_without_it_pays_every_player_with_it_2x() -> None:
    state = position(["Ac 2c 3c 4c 5c", "9d 9h 9s 2d 3d", "Kc Kd Kh Ks Qc", "8d 8h 8s 2h 3h"], "7c",
                     start="deal")
    assert state.outcome is not None
    assert state.outcome.winners == (0, 2)
    assert state.outcome.payoffs == (4, -4, 4, -4)
    assert state.outcome.totals == (15, 32, 50, 29)


def test_tonk_when_every_player_has_it_nobody_pays() -> None:
    state = position(["Ac 2c 3c 4c 5c", "Ad 2d 3d 4d 5d"], "7c", start="deal")
    assert state.outcome is not None
    assert state.outcome.winners == (0, 1) and state.outcome.payoffs == (0, 0)


def test_tonk_is_only_checked_right_after_the_deal() -> None:
    # A position under way is never checked, however low a hand is.
    assert position(["Ac 2c", "9d 9h 9s 2d 3d"], "7c").outcome is None
    # A total of 15 or less reached later is no TONK: the hand goes on.
    state = position(["Ac 2c 3c 4c Kc", "9d 9h 9s 2d 3d"], "7c", stock="Ad", start="deal")
    assert state.outcome is None
    play(state, "draw stock", "discard Kc")
    assert state.totals()[0] == 11 and state.outcome is None and state.to_act == 1


def test_the_player_left_of_the_dealer_acts_first() -> None:
    for players in range(2, 7):
        for dealer in range(players):
            state = HandState.deal(deck_order(11, 0), players, dealer)
            assert state.to_act == (dealer + 1) % players


def test_the_dealer_moves_one_seat_left_each_hand_of_a_match() -> None:
    result = play_match([LocalPlayer(RandomBot) for _ in range(3)], seed=5, hands=7, first_dealer=2)
    assert [h.record.dealer for h in result.hands] == [2, 0, 1, 2, 0, 1, 2]
    assert [h.record.stock for h in result.hands] == [
        HandState.deal(deck_order(5, i), 3, (2 + i) % 3).stock for i in range(7)
    ]


# -- A turn -----------------------------------------------------------------------------------


def test_go_down_only_at_the_start_of_the_turn_before_drawing() -> None:
    state = position(["Ac 2c", "9d 9h"], "7c")
    assert Drop() in state.legal_actions()
    play(state, "draw stock")
    assert Drop() not in state.legal_actions()
    refused(state, "drop", "drop_after_draw")


def test_go_down_is_allowed_on_the_very_first_turn() -> None:
    state = HandState.deal(deck_dealing(["10s 8d 8h 5s 4c", "Kc 10c 3c 2s Ah", "Qh 8c 6d 2d 2c"], "5c",
                                        dealer=2), 3, dealer=2)
    assert state.outcome is None and state.turns == 0
    assert state.legal_actions() == [Drop(), Draw("stock"), Draw("discard")]
    play(state, "drop")
    assert state.outcome is not None and state.outcome.end == "drop"


def test_draw_the_top_of_the_stock_or_the_top_of_the_discard_pile() -> None:
    state = position(["Ac 2c", "9d 9h"], "3s 7c", stock="Kd Qd")
    event = state.apply(Draw("stock"))
    assert event.card == Card.parse("Kd") and state.hands[0][-1] == Card.parse("Kd")
    play(state, "discard Kd")
    event = state.apply(Draw("discard"))
    assert event.card == Card.parse("Kd") and state.discard == cards("3s 7c")


def test_a_player_draws_once() -> None:
    state = position(["Ac 2c", "9d 9h"], "7c")
    play(state, "draw stock")
    refused(state, "draw stock", "draw_once")
    refused(state, "draw discard", "draw_once")


def test_lay_down_a_book_of_three_or_four_cards_of_one_rank() -> None:
    state = position(["8h 8d 8s 8c 2c 3d", "9d 9h"], "7c")
    play(state, "draw stock")
    moves = state.legal_actions()
    assert Meld(tuple(cards("8c 8d 8h 8s"))) in moves and Meld(tuple(cards("8h 8d 8s"))) in moves
    play(state, "meld 8s 8c 8h 8d")
    assert state.table[0].kind == "book"
    assert [c.text for c in state.table[0].cards] == ["8c", "8d", "8h", "8s"]
    assert state.totals()[0] == 2 + 3 + state.hands[0][-1].value


def test_lay_down_a_spread_of_three_or_more_of_one_suit_in_sequence() -> None:
    state = position(["9s Js 10s Qs 2c", "9d 9h"], "7c")
    play(state, "draw stock", "meld Js 9s Qs 10s")
    assert state.table[0].kind == "spread"
    assert [c.text for c in state.table[0].cards] == ["9s", "10s", "Js", "Qs"]
    state = position(["9s Js Ks 2c", "9d 9h"], "7c")
    play(state, "draw stock")
    refused(state, "meld 9s Js Ks", "meld_shape")  # a gap
    refused(state, "meld 9s Js", "meld_size")


def test_lay_off_a_single_card_at_either_end_of_anyones_spread() -> None:
    state = position(["8s Qs 2c", "9d 9h"], "7c", table=[(1, "9s 10s Js")])
    play(state, "draw stock", "layoff 8s 0", "layoff Qs 0")
    assert [c.text for c in state.table[0].cards] == ["8s", "9s", "10s", "Js", "Qs"]
    assert state.table[0].owner == 1  # a lay-off never changes the owner
    state = position(["7s Kd 2c", "9d 9h"], "7c", table=[(1, "9s 10s Js")])
    play(state, "draw stock")
    refused(state, "layoff 7s 0", "layoff_fit")  # not at an end
    refused(state, "layoff Kd 0", "layoff_fit")  # another suit


def test_never_lay_off_onto_a_book() -> None:
    state = position(["9c 2c", "5d 5h"], "7c", table=[(1, "9d 9h 9s")])
    play(state, "draw stock")
    assert not [a for a in state.legal_actions() if isinstance(a, Layoff)]
    with pytest.raises(IllegalActionError, match="a card may not be added to a book"):
        state.apply(Layoff(Card.parse("9c"), 0))


def test_discard_one_card_to_end_the_turn() -> None:
    state = position(["Ac 2c", "9d 9h"], "7c", stock="Kd")
    play(state, "draw stock")
    assert state.to_act == 0
    play(state, "discard 2c")
    assert state.to_act == 1 and state.phase is Phase.START and state.discard[-1] == Card.parse("2c")
    assert state.turns == 1


def test_the_card_taken_from_the_discard_pile_may_not_be_discarded_the_same_turn() -> None:
    state = position(["Ac 2c", "9d 9h"], "7c")
    play(state, "draw discard")
    assert Discard(Card.parse("7c")) not in state.legal_actions()
    refused(state, "discard 7c", "discard_pickup")
    play(state, "discard 2c")  # any other card may go


def test_unless_the_card_taken_from_the_discard_pile_is_the_only_card_left() -> None:
    state = position(["4h 5h Kc", "9d 9h"], "Kd")
    play(state, "draw discard")
    refused(state, "discard Kd", "discard_pickup")  # other cards remain
    state = position(["Qd", "2s 3s"], "Kc", table=[(1, "9d 10d Jd")])
    play(state, "draw discard", "layoff Qd 0")
    assert state.legal_actions() == [Discard(Card.parse("Kc"))]  # the pickup, alone: it may go
    play(state, "discard Kc")
    assert state.outcome is not None and state.outcome.end == "out" and state.outcome.winners == (0,)


def test_going_out_by_a_lay_down() -> None:
    state = position(["4h 5h", "9d 9h", "2d 3d"], "7c", stock="6h")
    play(state, "draw stock", "meld 4h 5h 6h")
    assert state.outcome is not None and state.outcome.end == "out"
    assert state.outcome.winners == (0,) and state.outcome.payoffs == (2, -1, -1)
    assert state.hands[0] == [] and state.legal_actions() == []


def test_going_out_by_a_lay_off() -> None:
    state = position(["10h", "9d 9c", "2d 3d"], "7c", stock="6h", table=[(1, "7h 8h 9h")])
    play(state, "draw stock", "layoff 6h 0", "layoff 10h 0")
    assert state.outcome is not None and state.outcome.end == "out"
    assert state.outcome.payoffs == (2, -1, -1) and state.turns == 0


def test_going_out_by_the_discard() -> None:
    state = position(["2s", "9d 9h", "2d 3d"], "7c", stock="6h", table=[(1, "3s 4s 5s")])
    play(state, "draw stock", "layoff 2s 0", "discard 6h")
    assert state.outcome is not None and state.outcome.end == "out"
    assert state.outcome.payoffs == (2, -1, -1) and state.turns == 1


def test_melding_and_laying_off_only_after_the_draw() -> None:
    state = position(["4h 5h 6h 8s", "9d 9h"], "7c", table=[(1, "9s 10s Js")])
    refused(state, "meld 4h 5h 6h", "draw_first")
    refused(state, "layoff 8s 0", "draw_first")
    refused(state, "discard 8s", "draw_first")
    play(state, "draw stock", "meld 4h 5h 6h", "layoff 8s 0")


# -- Settling ---------------------------------------------------------------------------------


def test_out_every_other_player_pays_the_winner_1x() -> None:
    state = position(["2s", "9d 9h", "2d 3d", "Kc"], "7c", stock="5d", table=[(2, "3s 4s 5s")])
    play(state, "draw stock", "layoff 2s 0", "discard 5d")
    assert state.outcome is not None
    assert state.outcome.payoffs == (3, -1, -1, -1) and state.outcome.totals == (0, 18, 5, 10)


@pytest.mark.parametrize(
    ("hands", "dropper", "payoffs", "winners"),
    [
        (["3c", "Kd", "9h"], 0, (2, -1, -1), (0,)),  # strictly lowest
        (["10c", "7d", "Kh Qh"], 0, (-2, 3, -1), (1,)),  # caught: pays the 7 2x, the 20 pays 1x
        (["10c", "10d", "Kh Qh"], 0, (-2, 3, -1), (1,)),  # a tie with the lowest loses
        (["10c", "10d", "10h"], 0, (-4, 2, 2), (1, 2)),  # two lowest pay each other nothing
        (["5c", "Qd 2d", "Qh 2h", "Kh Qs Jh"], 1, (4, -4, 1, -1), (0,)),
        (["8c", "8d", "Kh Qh", "Kc Qc 5c"], 2, (3, 3, -4, -2), (0, 1)),
        (["10c", "Kd Qd", "Kh Qh Js", "Kc Qc Jc"], 3, (4, 1, 1, -6), (0,)),
    ],
)
def test_going_down_settles_as_rules_md_says(
    hands: list[str], dropper: int, payoffs: tuple[int, ...], winners: tuple[int, ...]
) -> None:
    state = position(hands, "7s", to_act=dropper)
    play(state, "drop")
    assert state.outcome is not None and state.outcome.end == "drop"
    assert state.outcome.payoffs == payoffs
    assert state.outcome.winners == winners
    assert sum(state.outcome.payoffs) == 0


def test_stock_exhausted_at_the_end_of_a_turn_ends_in_a_showdown() -> None:
    state = position(["Kc 2c", "9d 9h", "3d 4d"], "", stock="5s", leftover="discard")
    assert state.stock_size == 1
    play(state, "draw stock")
    assert state.outcome is None  # drawing the last card does not end the hand: the turn does
    play(state, "discard Kc")
    assert state.outcome is not None and state.outcome.end == "stock"
    assert state.outcome.totals == (7, 18, 7)
    assert state.outcome.winners == (0, 2) and state.outcome.payoffs == (1, -2, 1)


def test_the_player_who_draws_the_last_card_may_still_go_out() -> None:
    state = position(["4h 5h", "9d 9h"], "", stock="6h", leftover="discard")
    play(state, "draw stock", "meld 4h 5h 6h")
    assert state.outcome is not None and state.outcome.end == "out"


def test_turn_cap_200_completed_turns_ends_in_a_showdown() -> None:
    assert STANDARD.turn_cap == 200
    state = position(["Kc 2c", "9d 9h"], "7c")
    for _ in range(199):  # two players pass the discard back and forth
        play(state, "draw discard", f"discard {state.hands[state.to_act][0].text}")
        assert state.outcome is None
    assert state.turns == 199
    play(state, "draw discard", f"discard {state.hands[state.to_act][0].text}")
    assert state.turns == 200
    assert state.outcome is not None and state.outcome.end == "cap"


def test_turns_are_completed_by_a_discard_and_counted_from_the_start_of_the_record() -> None:
    rules = Rules(turn_cap=3)
    state = position(["4h 5h 6h Kc", "9d 9h 9s 2c", "3d 4d"], "7c", rules=rules)
    play(state, "draw stock", "meld 4h 5h 6h")
    assert state.turns == 0  # a meld does not complete a turn
    play(state, "discard Kc")
    assert state.turns == 1 and state.to_act == 1
    pass_turn(state)
    pass_turn(state)
    assert state.turns == 3 and state.outcome is not None and state.outcome.end == "cap"


def test_the_stock_out_showdown_is_checked_before_the_turn_cap() -> None:
    state = position(["Kc 2c", "9d 9h"], "", stock="5s 6s", leftover="discard", rules=Rules(turn_cap=2))
    pass_turn(state)
    pass_turn(state)  # the stock is empty and the cap is reached at the same discard
    assert state.outcome is not None and state.outcome.end == "stock"


def test_a_turn_cap_of_0_means_no_cap() -> None:
    state = position(["Kc 2c", "9d 9h"], "7c", rules=Rules(turn_cap=0))
    for _ in range(500):
        play(state, "draw discard", f"discard {state.hands[state.to_act][0].text}")
    assert state.outcome is None and state.turns == 500


def test_payoffs_are_units_of_the_stake_and_always_sum_to_zero() -> None:
    for hand_index in range(40):
        result = play_match([LocalPlayer(RandomBot) for _ in range(2 + hand_index % 5)], hand_index, 3)
        for log in result.hands:
            assert log.record.outcome is not None
            assert sum(log.record.outcome["payoffs"]) == 0


# -- Matches ----------------------------------------------------------------------------------


def test_a_match_score_is_the_sum_of_the_payoffs_and_the_seed_determines_every_deal() -> None:
    first = play_match([LocalPlayer(RandomBot) for _ in range(4)], seed=99, hands=6)
    again = play_match([LocalPlayer(RandomBot) for _ in range(4)], seed=99, hands=6)
    assert [h.record.to_json() for h in first.hands] == [h.record.to_json() for h in again.hands]
    assert first.scores == [sum(h.record.outcome["payoffs"][s] for h in first.hands if h.record.outcome)
                            for s in range(4)]
    for index, log in enumerate(first.hands):
        assert log.record.hands == HandState.deal(deck_order(99, index), 4, index % 4).initial["hands"]
