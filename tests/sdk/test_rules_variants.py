"""The named variants of docs/rules.md, each against standard, and reading/writing a rule set."""

from __future__ import annotations

import dataclasses

import pytest
from helpers.positions import cards, illegal, pass_discards, pass_turn, play, position

from sdk.actions import Action, Discard, Draw, Drop, Layoff, Meld
from sdk.cards import DECK, Card
from sdk.engine import HandState
from sdk.errors import IllegalActionError, RulesError
from sdk.melds import make_meld
from sdk.record import HandRecord
from sdk.rules import STANDARD, Rules

# -- named variants: each against standard ----------------------------------------------------------


def test_variant_discard_pickup_may_return() -> None:
    hands = ["2c 9d Kh", "Kc"]
    standard = position(hands, discard="Qs")
    play(standard, "draw discard")
    illegal(standard, "discard Qs", "discard_pickup")
    variant = position(hands, discard="Qs", rules=Rules(discard_pickup_may_return=True))
    play(variant, "draw discard")
    assert Discard(Card.parse("Qs")) in variant.legal_actions()
    play(variant, "discard Qs")
    assert variant.discard[-1] is Card.parse("Qs") and variant.to_act == 1


@pytest.mark.parametrize(("rules", "stake"), [(STANDARD, 1), (Rules(meld_out_double=True), 2)])
def test_variant_meld_out_double(rules: Rules, stake: int) -> None:
    by_meld = position(["5h 6h", "Kc", "Kd"], discard="3c", stock="7h", rules=rules)
    play(by_meld, "draw stock", "meld 5h 6h 7h")
    assert by_meld.outcome is not None
    assert by_meld.outcome.payoffs == (2 * stake, -stake, -stake)
    by_layoff = position(["4h", "Kc", "Kd"], discard="3c", stock="8h", table=[(1, "5h 6h 7h")], rules=rules)
    play(by_layoff, "draw stock", "layoff 4h 0", "layoff 8h 0")
    assert by_layoff.outcome is not None
    assert by_layoff.outcome.payoffs == (2 * stake, -stake, -stake)
    # Going out with a final discard always pays 1x.
    by_discard = position(["Kd", "Kc", "Ks"], discard="3c", stock="4h", table=[(1, "5h 6h 7h")], rules=rules)
    play(by_discard, "draw stock", "layoff 4h 0", "discard Kd")
    assert by_discard.outcome is not None
    assert by_discard.outcome.payoffs == (2, -1, -1)


def test_variant_book_layoff() -> None:
    hands, table = ["9s 2c", "Kc"], [(1, "9c 9d 9h")]
    standard = position(hands, discard="3c", stock="Ah", table=table)
    play(standard, "draw stock")
    illegal(standard, "layoff 9s 0", "layoff_fit")
    variant = position(hands, discard="3c", stock="Ah", table=table, rules=Rules(book_layoff=True))
    play(variant, "draw stock")
    assert Layoff(Card.parse("9s"), 0) in variant.legal_actions()
    play(variant, "layoff 9s 0")
    assert [c.text for c in variant.table[0].cards] == ["9c", "9d", "9h", "9s"]
    assert variant.table[0].owner == 1
    assert variant.table[0].layoff_cards(variant.rules) == ()  # nothing fits a book of four
    # Only the fourth card of the rank: nothing else fits a book.
    other = position(["8s 2c", "Kc"], discard="3c", stock="Ah", table=table, rules=Rules(book_layoff=True))
    play(other, "draw stock")
    assert "fourth card" in str(illegal(other, "layoff 8s 0", "layoff_fit"))


def test_variant_ace_high_or_low() -> None:
    high = Rules(ace_high_or_low=True)
    for rules, ok in [(STANDARD, False), (high, True)]:
        state = position(["Qh Kh Ah 9c", "Kc"], discard="5c", stock="Jd", rules=rules)
        play(state, "draw stock")
        assert (Meld(tuple(cards("Qh Kh Ah"))) in state.legal_actions()) is ok
        assert state.can_apply(Action.parse("meld Ah Qh Kh")) is ok
    state = position(["Qh Kh Ah Jh", "Kc"], discard="5c", stock="Jd", rules=high)
    assert state.totals()[0] == 31  # the ace still counts 1 in a hand
    play(state, "draw stock", "meld Ah Kh Qh")
    assert [c.text for c in state.table[0].cards] == ["Qh", "Kh", "Ah"]
    play(state, "layoff Jh 0")
    assert [c.text for c in state.table[0].cards] == ["Jh", "Qh", "Kh", "Ah"]
    # An ace laid off above a king; still low below a two.
    lay = position(["Ac As 9c", "5d"], discard="5c", stock="Jd", table=[(1, "Jc Qc Kc"), (1, "2s 3s 4s")],
                   rules=high)
    play(lay, "draw stock", "layoff Ac 0", "layoff As 1")
    assert [c.text for c in lay.table[0].cards] == ["Jc", "Qc", "Kc", "Ac"]
    assert lay.table[0].layoff_cards(high) == (Card.parse("10c"),)  # nothing past the ace on top
    assert [c.text for c in make_meld(0, cards("Ah 2h 3h"), high).cards] == ["Ah", "2h", "3h"]
    assert [c.text for c in make_meld(0, cards("Ah Kh Qh"), high).cards] == ["Qh", "Kh", "Ah"]
    assert [c.text for c in lay.table[1].cards] == ["As", "2s", "3s", "4s"]


@pytest.mark.parametrize("rules", [STANDARD, Rules(ace_high_or_low=True)])
def test_variant_ace_high_or_low_never_both_ways(rules: Rules) -> None:
    state = position(["Kh Ah 2h Qh 3h", "Kc"], discard="5c", stock="Jd", rules=rules,
                     table=[(1, "Qs Ks As") if rules.ace_high_or_low else (1, "Js Qs Ks")])
    play(state, "draw stock")
    illegal(state, "meld Kh Ah 2h", "meld_shape")
    illegal(state, "meld Qh Kh Ah 2h", "meld_shape")
    assert not any(
        isinstance(a, Meld) and {c.rank for c in a.cards} >= {13, 1, 2} for a in state.legal_actions()
    )
    for text in ("Kh Ah 2h", "Qh Kh Ah 2h"):
        with pytest.raises(IllegalActionError, match="not a spread"):
            make_meld(0, cards(text), rules)
    if rules.ace_high_or_low:  # both ends of the ace are offered, never at once
        assert {Meld(tuple(cards("Qh Kh Ah"))), Meld(tuple(cards("Ah 2h 3h")))} <= set(state.legal_actions())
    if rules.ace_high_or_low:  # nothing wraps past an ace on top
        state2 = position(["2s 9c", "Kc"], discard="5c", stock="Jd", rules=rules, table=[(1, "Qs Ks As")])
        play(state2, "draw stock")
        illegal(state2, "layoff 2s 0", "layoff_fit")


def test_variant_hit_lock() -> None:
    def game(rules: Rules) -> HandState:
        state = position(["Kc Qc", "8s Kd", "Jh Kh"], discard="2c", stock="3d 4d 5d 6d 7d 8d",
                         table=[(0, "5s 6s 7s")], to_act=1, rules=rules)
        play(state, "draw stock", "layoff 8s 0", "discard Kd")  # seat 1 hits seat 0's spread
        play(state, "draw stock", "discard Kh")
        return state

    standard = game(STANDARD)
    assert standard.to_act == 0 and Drop() in standard.legal_actions()
    locked = game(Rules(hit_lock=True))
    assert locked.to_act == 0 and locked.locked == {0}
    assert Drop() not in locked.legal_actions()
    assert "hit_lock" in str(illegal(locked, "drop", "hit_lock"))
    pass_turn(locked)  # the locked turn passes, and the lock with it
    assert locked.locked == set()
    pass_turn(locked)
    pass_turn(locked)
    assert locked.to_act == 0 and Drop() in locked.legal_actions()
    # Laying off on one's own spread locks nobody.
    own = position(["8s Kc", "Kd", "Kh"], discard="2c", stock="3d 4d 5d", table=[(0, "5s 6s 7s")],
                   rules=Rules(hit_lock=True))
    play(own, "draw stock", "layoff 8s 0")
    assert own.locked == set()
    play(own, "discard Kc")
    pass_turn(own)
    pass_turn(own)
    assert own.to_act == 0 and Drop() in own.legal_actions()


def test_variant_hit_lock_is_for_a_spread_not_a_book() -> None:
    state = position(["Kc Qc", "9s Kd", "Jh Kh"], discard="2c", stock="3d 4d 5d 6d 7d 8d",
                     table=[(0, "9c 9d 9h")], to_act=1, rules=Rules(hit_lock=True, book_layoff=True))
    play(state, "draw stock", "layoff 9s 0")  # seat 1 adds the fourth 9 to seat 0's book
    assert state.locked == set()
    play(state, "discard Kd")
    pass_turn(state)
    assert state.to_act == 0
    assert Drop() in state.legal_actions()


def test_variant_stock_reshuffle() -> None:
    hands = ["Kc 5d", "7h", "Kh"]
    standard = position(hands, discard="9c", stock="2c", leftover="discard")
    pile = list(standard.discard)
    play(standard, "draw stock", "discard Kc")
    assert standard.outcome is not None and standard.outcome.end == "stock"

    variant = position(hands, discard="9c", stock="2c", leftover="discard", rules=Rules(stock_reshuffle=True))
    play(variant, "draw stock", "discard Kc")
    assert variant.outcome is None
    # The pile under the new top card, turned over without shuffling: its bottom card on top.
    assert variant.discard == cards("Kc")
    assert variant.stock == pile
    (event,) = play(variant, "draw stock")
    assert event.card is pile[0]


def test_variant_stock_reshuffle_with_nothing_under_the_top_card_is_a_showdown() -> None:
    # A recorded position with an empty stock: after the draw from the discard pile and a
    # discard, the pile holds only its top card, so there is nothing to turn over.
    rest = " ".join(c.text for c in DECK if c.text not in {"Kc", "5d", "7h", "9c"})
    state = position(["Kc 5d", "7h", rest], discard="9c", stock="", rules=Rules(stock_reshuffle=True))
    assert state.stock_size == 0
    assert state.legal_actions() == [Drop(), Draw("discard")]
    play(state, "draw discard", "discard Kc")
    assert state.outcome is not None and state.outcome.end == "stock"


def test_variant_turn_cap_differs_from_standard() -> None:
    standard = position(["Kc Kd", "Qc 2d"], discard="Jh")
    capped = position(["Kc Kd", "Qc 2d"], discard="Jh", rules=Rules(turn_cap=10))
    pass_discards(standard, 10)
    pass_discards(capped, 10)
    assert standard.outcome is None
    assert capped.outcome is not None and capped.outcome.end == "cap"
    assert Rules.from_json({"turn_cap": 10}) == Rules(turn_cap=10)
    assert Rules(turn_cap=10).to_json() == {"turn_cap": 10}


def test_variant_rules_are_recorded_with_the_hand() -> None:
    rules = Rules(hit_lock=True, stock_reshuffle=True)
    state = position(["Kc Kd", "Qc 2d"], discard="Jh", rules=rules)
    data = HandRecord.from_state(state).to_json()
    assert data["rules"] == {"hit_lock": True, "stock_reshuffle": True}
    assert HandRecord.from_json(data).rules == rules
    assert "rules" not in HandRecord.from_state(position(["Kc", "Qc"], discard="Jh")).to_json()


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
