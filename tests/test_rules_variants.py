"""The named variants of docs/rules.md, and reading/writing a rule set."""

from __future__ import annotations

import dataclasses

import pytest
from helpers.positions import cards, pass_turn, play, position

from sdk.actions import Action, Discard, Drop, Layoff, Meld
from sdk.cards import DECK, Card
from sdk.engine import HandState
from sdk.errors import IllegalActionError, RulesError
from sdk.melds import make_meld
from sdk.rules import STANDARD, Rules


def refused(state: HandState, text: str, rule: str) -> None:
    with pytest.raises(IllegalActionError) as info:
        state.apply(Action.parse(text), state.to_act)
    assert info.value.rule == rule, str(info.value)


def test_discard_pickup_may_return() -> None:
    rules = Rules(discard_pickup_may_return=True)
    state = position(["Ac 2c", "9d 9h"], "7c", rules=rules)
    play(state, "draw discard")
    assert Discard(Card.parse("7c")) in state.legal_actions()
    play(state, "discard 7c")
    assert state.discard[-1] == Card.parse("7c") and state.to_act == 1


def test_meld_out_double_pays_2x_for_emptying_the_hand_without_a_final_discard() -> None:
    rules = Rules(meld_out_double=True)
    state = position(["4h 5h", "9d 9h", "2d 3d"], "7c", stock="6h", rules=rules)
    play(state, "draw stock", "meld 4h 5h 6h")
    assert state.outcome is not None and state.outcome.payoffs == (4, -2, -2)
    state = position(["10h", "9d 9c", "2d 3d"], "7c", stock="6h", table=[(1, "7h 8h 9h")], rules=rules)
    play(state, "draw stock", "layoff 6h 0", "layoff 10h 0")
    assert state.outcome is not None and state.outcome.payoffs == (4, -2, -2)
    # going out with the final discard still pays 1x
    state = position(["2s", "9d 9h", "2d 3d"], "7c", stock="6h", table=[(1, "3s 4s 5s")], rules=rules)
    play(state, "draw stock", "layoff 2s 0", "discard 6h")
    assert state.outcome is not None and state.outcome.payoffs == (2, -1, -1)


def test_book_layoff_lets_the_fourth_card_of_a_rank_go_on_a_book_of_three() -> None:
    rules = Rules(book_layoff=True)
    state = position(["9c 2c", "5d 5h"], "7c", table=[(1, "9d 9h 9s")], rules=rules)
    play(state, "draw stock")
    assert Layoff(Card.parse("9c"), 0) in state.legal_actions()
    play(state, "layoff 9c 0")
    assert [c.text for c in state.table[0].cards] == ["9c", "9d", "9h", "9s"] and state.table[0].owner == 1
    assert state.table[0].layoff_cards(rules) == ()  # nothing fits a book of four


def test_ace_high_or_low_allows_q_k_a_but_never_k_a_2() -> None:
    rules = Rules(ace_high_or_low=True)
    assert [c.text for c in make_meld(0, cards("Ah Kh Qh"), rules).cards] == ["Qh", "Kh", "Ah"]
    assert [c.text for c in make_meld(0, cards("Ah 2h 3h"), rules).cards] == ["Ah", "2h", "3h"]
    for text in ("Kh Ah 2h", "Qh Kh Ah 2h"):
        with pytest.raises(IllegalActionError, match="not a spread"):
            make_meld(0, cards(text), rules)
    state = position(["Ah 2c", "5d 5s"], "7c", table=[(1, "Jh Qh Kh")], rules=rules)
    play(state, "draw stock")
    assert Layoff(Card.parse("Ah"), 0) in state.legal_actions()
    play(state, "layoff Ah 0")
    assert [c.text for c in state.table[0].cards] == ["Jh", "Qh", "Kh", "Ah"]
    assert state.table[0].layoff_cards(rules) == (Card.parse("10h"),)  # nothing past the ace on top
    assert Card.parse("Ah").value == 1  # still one point in the hand
    # Standard rules: the ace does not go above the king.
    state = position(["Ah 2c", "5d 5s"], "7c", table=[(1, "Jh Qh Kh")])
    play(state, "draw stock")
    refused(state, "layoff Ah 0", "layoff_fit")


def test_ace_high_or_low_melds_offered_include_the_high_ace() -> None:
    rules = Rules(ace_high_or_low=True)
    state = position(["Qh Kh Ah 2h 3h", "5d 5s"], "7c", rules=rules)
    play(state, "draw stock")
    melds = {frozenset(c.text for c in a.cards) for a in state.legal_actions() if isinstance(a, Meld)}
    assert {"Qh", "Kh", "Ah"} in melds and {"Ah", "2h", "3h"} in melds
    assert {"Kh", "Ah", "2h"} not in melds


def test_hit_lock_a_player_whose_spread_was_hit_may_not_go_down_on_the_next_turn() -> None:
    rules = Rules(hit_lock=True)
    state = position(["8s 2c", "Kd Qd", "5h 5c"], "7c", table=[(1, "9s 10s Js")], rules=rules)
    play(state, "draw stock", "layoff 8s 0")
    assert state.locked == {1}
    play(state, f"discard {state.hands[0][-1].text}")
    assert state.to_act == 1 and Drop() not in state.legal_actions()
    refused(state, "drop", "hit_lock")
    pass_turn(state)  # the lock lifts when that turn ends
    assert state.locked == set()
    pass_turn(state)
    pass_turn(state)
    assert state.to_act == 1 and Drop() in state.legal_actions()


def test_hit_lock_laying_off_on_your_own_spread_locks_nobody() -> None:
    state = position(["8s 2c", "Kd Qd"], "7c", table=[(0, "9s 10s Js")], rules=Rules(hit_lock=True))
    play(state, "draw stock", "layoff 8s 0")
    assert state.locked == set()


def test_hit_lock_is_for_a_spread_never_for_a_book() -> None:
    rules = Rules(hit_lock=True, book_layoff=True)
    state = position(["9c 2c", "Kd Qd", "5h 5c"], "7c", table=[(1, "9d 9h 9s")], rules=rules)
    play(state, "draw stock", "layoff 9c 0")
    assert state.locked == set()
    play(state, f"discard {state.hands[0][-1].text}")
    assert Drop() in state.legal_actions()


def test_stock_reshuffle_turns_the_discards_under_the_top_card_over_as_the_new_stock() -> None:
    rules = Rules(stock_reshuffle=True)
    # The leftover cards make the discard pile, bottom first in card order; the stock is one card.
    state = position(["Kc 2c", "9d 9h"], "Qs", stock="5s", leftover="discard", rules=rules)
    pile = list(state.discard)
    play(state, "draw stock", "discard Kc")
    assert state.outcome is None
    assert state.discard == [Card.parse("Kc")]  # the top card stays
    assert state.stock == pile  # turned over: the old bottom card is now the top of the stock
    assert state.stock[0] == pile[0]


def test_stock_reshuffle_with_nothing_under_the_top_card_ends_in_the_showdown() -> None:
    rules = Rules(stock_reshuffle=True)
    rest = [c for c in DECK if c not in cards("Kc 2c 5s")]  # seat 1 holds all the other cards
    state = HandState.from_position([cards("Kc 2c"), rest], [], cards("5s"), dealer=1, rules=rules)
    play(state, "draw stock", "discard Kc")  # the pile is the Kc alone: nothing to turn over
    assert state.outcome is not None and state.outcome.end == "stock"


def test_turn_cap_is_configurable() -> None:
    state = position(["Kc 2c", "9d 9h"], "7c", rules=Rules(turn_cap=5))
    for _ in range(5):
        play(state, "draw discard", f"discard {state.hands[state.to_act][0].text}")
    assert state.outcome is not None and state.outcome.end == "cap" and state.turns == 5


# -- the rule set as data -------------------------------------------------------------------


def test_standard_is_the_default_and_every_variant_is_named() -> None:
    assert Rules() == STANDARD and STANDARD.name == "standard"
    assert set(Rules.option_names()) >= {
        "discard_pickup_may_return", "meld_out_double", "book_layoff", "ace_high_or_low", "hit_lock",
        "stock_reshuffle", "turn_cap",
    }
    assert Rules(hit_lock=True).name == "custom"


def test_rules_json_round_trip() -> None:
    assert STANDARD.to_json() == "standard" and Rules.from_json("standard") is STANDARD
    assert Rules.from_json(None) is STANDARD
    rules = Rules(hit_lock=True, turn_cap=60)
    assert rules.to_json() == {"hit_lock": True, "turn_cap": 60}
    assert Rules.from_json(rules.to_json()) == rules
    assert Rules.from_json({"name": "standard", "book_layoff": True}) == Rules(book_layoff=True)
    assert STANDARD.with_options(meld_out_double=True) == Rules(meld_out_double=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rules.hit_lock = False  # type: ignore[misc]


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        ({"hit_lok": True}, "unknown rule option 'hit_lok'; known options: .*hit_lock"),
        ("house", "unknown rule set 'house'; known: standard"),
        ({"turn_cap": "200"}, "rule option 'turn_cap' must be int, got '200'"),
        ({"hit_lock": 1}, "rule option 'hit_lock' must be bool, got 1"),
        ({"turn_cap": -1}, "'turn_cap' must be 0 \\(no cap\\) or more"),
        ([1], "rules must be a rule-set name or an object of options"),
    ],
)
def test_bad_rules_are_refused_naming_the_problem(value: object, pattern: str) -> None:
    with pytest.raises(RulesError, match=pattern):
        Rules.from_json(value)
