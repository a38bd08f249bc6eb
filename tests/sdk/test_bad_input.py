"""Bad input gets a specific error that names the problem: the error class a caller can
catch narrowly (all are :class:`ValueError` subclasses) and a message a person can act on.
And an action that is refused changes nothing: the hand's record and every seat's
observation are the same before and after.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers.case_files import CASES
from helpers.positions import cards, position
from helpers.records import EXAMPLE_1, changed, raises

from bots.random_bot import RandomBot
from sdk.actions import Action, Discard, Drop, Layoff, Meld
from sdk.cards import DECK, Card, parse_cards
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.errors import (
    DeckError,
    IllegalActionError,
    NotationError,
    OutcomeMismatchError,
    RecordError,
    RulesError,
    TonkError,
)
from sdk.observation import observe
from sdk.record import HandRecord
from sdk.referee import LocalPlayer, play_match
from sdk.rules import Rules


def midgame() -> HandState:
    """Seat 0 to act, with a spread on the table, and the discard pile not empty."""
    return position(["5h 6h 7h 10h 2c Kd", "Qs Js 3d 4d", "9c 9d 9h 2s"], "Qd", table=[(1, "5s 6s 7s")])


# -- cards ------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["Xz", "11s", "", "10", "s", "1s", "AA", "Ah Kh"])
def test_unknown_card_text(text: str) -> None:
    error = raises(NotationError, "unknown card", lambda: Card.parse(text))
    assert repr(text) in str(error)  # quotes the input
    assert "rank" in str(error) and "suit" in str(error)  # and says what a card looks like


@pytest.mark.parametrize("value", [5, None, 10.0, ["Ah"], b"Ah"])
def test_a_card_that_is_not_text(value: object) -> None:
    error = raises(NotationError, r"a card is written as text like '10s', got",
                   lambda: Card.parse(value))  # type: ignore[arg-type]
    assert repr(value) in str(error)


@pytest.mark.parametrize("value", ["Xz", "11s", "", 5, None])
def test_unknown_card_in_a_record_names_where(value: object) -> None:
    data = changed(EXAMPLE_1, lambda d: d["hands"][1].__setitem__(2, value))
    error = raises(RecordError, r"^'hands\[1\]': ", lambda: HandRecord.from_json(data))
    assert repr(value) in str(error)


def test_unknown_card_in_an_action() -> None:
    raises(NotationError, "unknown card 'Xz'", lambda: Action.from_json({"discard": "Xz"}))
    raises(NotationError, "unknown card '11s'", lambda: Action.parse("discard 11s"))
    data = changed(EXAMPLE_1, lambda d: d["actions"][1].__setitem__("discard", "Xz"))
    raises(RecordError, "action 1: unknown card 'Xz'", lambda: HandRecord.from_json(data))


def test_an_unknown_card_in_a_record_says_how_to_write_one() -> None:
    data = changed(EXAMPLE_1, lambda d: d["stock"].__setitem__(4, "Xz"))
    raises(RecordError, r"^'stock': unknown card 'Xz': write a rank \(A 2-10 J Q K, or T\) then a suit",
           lambda: HandRecord.from_json(data))


def test_a_list_of_cards_that_is_a_string() -> None:
    raises(NotationError, "expected a list of cards", lambda: parse_cards("Ah Kh Qh"))


# -- the deck ---------------------------------------------------------------------------------


def test_duplicated_card() -> None:
    deck = list(DECK)
    deck[51] = deck[0]  # Ac twice, Ks missing
    raises(DeckError, "card Ac appears twice", lambda: HandState.deal(deck, 3))
    data = changed(EXAMPLE_1, lambda d: d["hands"][0].__setitem__(0, "8d"))  # Croaker: 8d 8d 8h 5s 4c
    raises(DeckError, r"card 8d appears twice: in hands\[0\] and in hands\[0\]",
           lambda: HandRecord.from_json(data))
    data = changed(EXAMPLE_1, lambda d: d["stock"].__setitem__(0, "8d"))
    raises(DeckError, r"^card 8d appears twice: in hands\[0\] and in stock$",
           lambda: HandRecord.from_json(data))
    data = changed(EXAMPLE_1, lambda d: d["stock"].append("Ah"))  # Ah is in Goblin's hand
    raises(DeckError, r"card Ah appears twice: in hands\[1\] and in stock",
           lambda: HandRecord.from_json(data))


def test_missing_card() -> None:
    data = changed(EXAMPLE_1, lambda d: d["stock"].remove("9c"))
    error = raises(DeckError, "a deck has 52 cards, these parts hold 51; missing: 9c$",
                   lambda: HandRecord.from_json(data))
    assert isinstance(error, RecordError)  # a DeckError is a kind of malformed record


def test_wrong_deck_size_51() -> None:
    raises(DeckError, "a deck has 52 cards, these parts hold 51; missing: Ks$",
           lambda: HandState.deal(list(DECK[:51]), 2))
    raises(DeckError, "^a deck has 52 cards, these parts hold 40; missing: ",
           lambda: HandState.deal(list(DECK[:40]), 2))


def test_wrong_deck_size_53() -> None:
    raises(DeckError, "card 5c appears twice", lambda: HandState.deal([*DECK, DECK[4]], 2))
    data = changed(EXAMPLE_1, lambda d: d["discard"].insert(0, "Ks"))
    raises(DeckError, "card Ks appears twice: in discard and in stock", lambda: HandRecord.from_json(data))


def test_a_deck_holding_something_that_is_not_a_card() -> None:
    deck: list[Any] = list(DECK)
    deck[7] = "8c"
    raises(DeckError, "holds '8c', which is not a card", lambda: HandState.deal(deck, 2))


# -- records: shape ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["{", '{"format": "tonk-hand/1",', "", "tonk", b"\xff\xfe"])
def test_malformed_json(text: str | bytes) -> None:
    raises(RecordError, "^not valid JSON: ", lambda: HandRecord.from_text(text))


def test_json_too_deeply_nested_or_cut_short() -> None:
    raises(RecordError, "^not valid JSON: nested too deeply", lambda: HandRecord.from_text("[" * 100_000))
    raises(RecordError, "^not valid JSON: Expecting",
           lambda: HandRecord.from_text('{"format": "tonk-hand/1",'))


@pytest.mark.parametrize(
    ("text", "kind"), [("[]", "list"), ("42", "int"), ("null", "NoneType"), ('"x"', "str")]
)
def test_record_not_an_object(text: str, kind: str) -> None:
    raises(RecordError, f"a hand record is a JSON object, got {kind}$", lambda: HandRecord.from_text(text))


@pytest.mark.parametrize(("tag", "shown"), [("tonk-hand/2", "'tonk-hand/2'"), (None, "None"), (1, "1")])
def test_wrong_format_tag(tag: object, shown: str) -> None:
    data = changed(EXAMPLE_1, lambda d: d.__setitem__("format", tag))
    raises(RecordError, f"'format' must be 'tonk-hand/1', got {shown}", lambda: HandRecord.from_json(data))
    data = changed(EXAMPLE_1, lambda d: d.pop("format"))
    raises(RecordError, "'format' must be 'tonk-hand/1', got None", lambda: HandRecord.from_json(data))


def test_missing_field() -> None:
    data = changed(EXAMPLE_1, lambda d: d.pop("stock"))
    raises(RecordError, "missing field 'stock'", lambda: HandRecord.from_json(data))


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        (lambda d: d.update(start="middle"), "^'start' must be 'deal' or 'position', got 'middle'"),
        (lambda d: d.update(to_act=-1), "^'to_act' must be a seat from 0 to 2, got -1"),
        (lambda d: d["hands"][0].pop(), "^a record that starts from a deal has 5 cards in each hand$"),
        (lambda d: d["hands"].pop(), r"^'hands' must hold one list of cards per player \(3\)"),
        (lambda d: d["hands"].__setitem__(0, {"10s": 1}), r"^'hands\[0\]': expected a list of cards"),
        (
            lambda d: d["discard"].append(d["stock"].pop()),
            "^a record that starts from a deal has one card in 'discard'",
        ),
        (
            lambda d: d["actions"][0].update(draw="deck"),
            "^action 0: draw is 'stock' or 'discard', got 'deck'",
        ),
        (lambda d: d["actions"][0].update(discard="5c"), "^action 0: an action names exactly one of"),
        (lambda d: d["actions"][0].update(card="6s"), "^action 0: unexpected field 'card'"),
        (
            lambda d: d["outcome"].update(end="win"),
            "^outcome 'end' must be tonk, drop, out, stock, cap or fault",
        ),
        (
            lambda d: d["outcome"].update(payoffs=[1, -1]),
            r"^outcome 'payoffs' needs one entry per player \(3\)",
        ),
        (lambda d: d.update(note=5), "^'note' must be text, got 5"),
        (lambda d: d.update(players="abc"), "^'players' must be a list of names"),
    ],
)
def test_a_malformed_record_gets_a_record_error_naming_the_problem(
    change: Callable[[dict[str, Any]], object], pattern: str
) -> None:
    raises(RecordError, pattern, lambda: HandRecord.from_json(changed(EXAMPLE_1, change)))


def test_a_deal_record_has_no_table() -> None:
    data = changed(EXAMPLE_1, lambda d: d.update(table=[]))
    HandRecord.from_json(data)  # an empty table is fine
    record = HandRecord.from_json(json.loads((CASES / "seed-example-2.json").read_text()))
    data = changed(EXAMPLE_1,
        lambda d: (
            d["stock"].remove("Qs"),
            d["stock"].remove("Ks"),
            d["stock"].remove("Js"),
            d.update(table=[{"owner": 0, "cards": ["Js", "Qs", "Ks"]}]),
        ),
    )
    raises(
        RecordError,
        "^a record that starts from a deal has no melds on the table$",
        lambda: HandRecord.from_json(data),
    )
    assert record.table is None


# -- rules ------------------------------------------------------------------------------------


def test_unknown_rule_set_name() -> None:
    raises(RulesError, "unknown rule set 'bogus'; known: standard", lambda: Rules.from_json("bogus"))
    data = changed(EXAMPLE_1, lambda d: d.__setitem__("rules", "bogus"))
    raises(RecordError, "^'rules': unknown rule set 'bogus'", lambda: HandRecord.from_json(data))


def test_unknown_rule_option() -> None:
    error = raises(RulesError, "unknown rule option 'hit_lok'", lambda: Rules.from_json({"hit_lok": True}))
    assert "hit_lock" in str(error)  # lists the known options
    data = changed(EXAMPLE_1, lambda d: d.__setitem__("rules", {"ace_high": True}))
    raises(RecordError, "^'rules': unknown rule option 'ace_high'", lambda: HandRecord.from_json(data))


@pytest.mark.parametrize(
    ("options", "pattern"),
    [
        ({"turn_cap": "200"}, "rule option 'turn_cap' must be int, got '200'"),
        ({"turn_cap": True}, "rule option 'turn_cap' must be int, got True"),
        ({"turn_cap": 1.5}, "rule option 'turn_cap' must be int, got 1.5"),
        ({"hit_lock": 1}, "rule option 'hit_lock' must be bool, got 1"),
        ({"stock_reshuffle": "yes"}, "rule option 'stock_reshuffle' must be bool, got 'yes'"),
        ({"turn_cap": -1}, "rule option 'turn_cap' must be 0 \\(no cap\\) or more, got -1"),
        ({"tonk_low": 50}, "rule options need 0 <= tonk_low < tonk_high, got 50, 49"),
    ],
)
def test_rule_option_of_the_wrong_type(options: dict[str, Any], pattern: str) -> None:
    raises(RulesError, pattern, lambda: Rules.from_json(options))
    data = changed(EXAMPLE_1, lambda d: d.__setitem__("rules", options))
    raises(RecordError, "^'rules': " + pattern, lambda: HandRecord.from_json(data))


def test_rules_that_are_neither_a_name_nor_an_object() -> None:
    raises(RulesError, "rules must be a rule-set name or an object of options, got 5",
           lambda: Rules.from_json(5))


# -- players and seats ------------------------------------------------------------------------


@pytest.mark.parametrize("players", [1, 7])
def test_seven_players_and_one(players: int) -> None:
    raises(RecordError, f"Tonk is played by 2 to 6 players, not {players}$",
           lambda: HandState.deal(list(DECK), players))
    hands = [cards(f"{r}c {r}d") for r in "23456789"[:players]]
    rest = [c for c in DECK if c not in {c for h in hands for c in h}]
    raises(RecordError, f"not {players}$", lambda: HandState.from_position(hands, rest[:1], rest[1:]))
    data = changed(EXAMPLE_1, lambda d: d.__setitem__("players", [f"p{i}" for i in range(players)]))
    raises(RecordError, f"Tonk is played by 2 to 6 players; this record has {players}$",
           lambda: HandRecord.from_json(data))
    raises(ValueError, f"a match has 2 to 6 players, got {players}",
           lambda: play_match([LocalPlayer(RandomBot) for _ in range(players)], seed=1, hands=1))


@pytest.mark.parametrize("dealer", [3, -1, 17])
def test_dealer_out_of_range(dealer: int) -> None:
    raises(RecordError, f"dealer {dealer} is not a seat of a 3-player hand",
           lambda: HandState.deal(list(DECK), 3, dealer))
    data = changed(EXAMPLE_1, lambda d: d.__setitem__("dealer", dealer))
    raises(RecordError, f"'dealer' must be a seat from 0 to 2, got {dealer}",
           lambda: HandRecord.from_json(data))


def test_seat_to_act_out_of_range() -> None:
    data = changed(EXAMPLE_1, lambda d: d.__setitem__("to_act", 3))
    raises(RecordError, "'to_act' must be a seat from 0 to 2, got 3", lambda: HandRecord.from_json(data))
    data = changed(EXAMPLE_1, lambda d: d["actions"][0].__setitem__("seat", 5))
    raises(RecordError, "action 0: 'seat' must be a seat from 0 to 2, got 5",
           lambda: HandRecord.from_json(data))


# -- actions ----------------------------------------------------------------------------------


def test_meld_index_that_does_not_exist() -> None:
    state = midgame()
    state.apply(Action.parse("draw stock"), 0)
    error = raises(IllegalActionError, r"there is no meld 7 on the table \(it holds 1\b",
                   lambda: state.apply(Layoff(Card.parse("2c"), 7), 0))
    assert isinstance(error, IllegalActionError) and error.rule == "no_such_meld"
    # In a record: Croaker lays his 6s onto meld 7 when only his book (meld 0) is down.
    data = changed(EXAMPLE_1, lambda d: d["actions"].__setitem__(8, {"seat": 0, "layoff": "6s", "onto": 7}))
    error = raises(IllegalActionError,
                   r"^action 8 \(layoff 6s 7, seat 0\): there is no meld 7 on the table \(it holds 1",
                   lambda: HandRecord.from_json(data).verify())
    assert isinstance(error, IllegalActionError) and error.action_index == 8
    data = changed(EXAMPLE_1, lambda d: d["actions"].__setitem__(8, {"seat": 0, "layoff": "6s", "onto": -1}))
    raises(RecordError, "^action 8: layoff needs 'onto', a meld index >= 0, got -1",
           lambda: HandRecord.from_json(data))


@pytest.mark.parametrize(
    "action",
    [
        {"seat": 0, "draw": "stock", "drop": True},
        {"seat": 0, "discard": "10s", "meld": ["8h", "8d", "8s"]},
        {"seat": 0},
        {"draw": "stock", "layoff": "8s", "onto": 0},
    ],
)
def test_action_naming_two_kinds_or_none(action: dict[str, Any]) -> None:
    raises(NotationError, "an action names exactly one of draw, meld, layoff, discard, drop",
           lambda: Action.from_json(action))
    data = changed(EXAMPLE_1, lambda d: d["actions"].__setitem__(0, {"seat": 0, **action}))
    raises(RecordError, "^action 0: an action names exactly one of", lambda: HandRecord.from_json(data))


@pytest.mark.parametrize(
    ("raw", "pattern"),
    [
        ({"draw": "deck"}, "draw is 'stock' or 'discard', got 'deck'"),
        ({"drop": False}, 'drop is written "drop": true, got False'),
        ({"layoff": "8s"}, "layoff needs 'onto', a meld index >= 0, got None"),
        ({"layoff": "8s", "onto": -1}, "got -1"),
        ({"discard": "8s", "card": "8s"}, "unexpected field 'card'"),
        ([1, 2], "an action is a JSON object"),
    ],
)
def test_malformed_actions(raw: Any, pattern: str) -> None:
    raises(NotationError, pattern, lambda: Action.from_json(raw))


@pytest.mark.parametrize("text", ["", "drwa stock", "draw", "layoff 8s", "discard", "meld", "drop now"])
def test_malformed_action_text(text: str) -> None:
    raises(NotationError, "action", lambda: Action.parse(text))


def test_seat_out_of_turn() -> None:
    state = midgame()
    error = raises(IllegalActionError, "it is seat 0's turn, not seat 1's", lambda: state.apply(Drop(), 1))
    assert isinstance(error, IllegalActionError) and error.rule == "turn"
    data = changed(EXAMPLE_1, lambda d: d["actions"][2].__setitem__("seat", 2))  # Elmo draws in Goblin's turn
    error = raises(IllegalActionError, r"^action 2 \(draw stock, seat 2\): it is seat 1's turn, not seat 2's",
                   lambda: HandRecord.from_json(data).replay())
    assert isinstance(error, IllegalActionError) and error.action_index == 2 and error.rule == "turn"


@pytest.mark.parametrize(
    ("meld", "pattern", "rule"),
    [
        ("5h 6h 2c", "neither a book \\(one rank\\) nor a spread", "meld_shape"),
        ("5h 6h", "has 2 cards; a meld needs 3 or more", "meld_size"),
        ("5h 7h Kd", "neither a book", "meld_shape"),
        ("5h 5h 6h", "names a card twice", "meld_duplicate"),
        ("5h 6h 10h", "is not a spread: its ranks are not in sequence", "meld_shape"),
    ],
)
def test_a_meld_that_is_not_one(meld: str, pattern: str, rule: str) -> None:
    state = midgame()
    state.apply(Action.parse("draw stock"), 0)  # Ac
    error = raises(IllegalActionError, pattern, lambda: state.apply(Meld(tuple(cards(meld))), 0))
    assert isinstance(error, IllegalActionError) and error.rule == rule


def test_a_meld_of_cards_not_held() -> None:
    state = midgame()
    state.apply(Action.parse("draw stock"), 0)
    error = raises(IllegalActionError, "8h is not in seat 0's hand",
                   lambda: state.apply(Action.parse("meld 6h 7h 8h"), 0))
    assert isinstance(error, IllegalActionError) and error.rule == "not_in_hand"


def test_discarding_a_card_not_held() -> None:
    state = midgame()
    state.apply(Action.parse("draw stock"), 0)
    error = raises(IllegalActionError, "Qs is not in seat 0's hand",
                   lambda: state.apply(Discard(Card.parse("Qs")), 0))
    assert isinstance(error, IllegalActionError) and error.rule == "not_in_hand"
    data = changed(EXAMPLE_1, lambda d: d["actions"][1].__setitem__("discard", "Kd"))
    error = raises(IllegalActionError, r"^action 1 \(discard Kd, seat 0\): Kd is not in seat 0's hand",
                   lambda: HandRecord.from_json(data).verify())
    assert isinstance(error, IllegalActionError) and error.action_index == 1


def test_a_thing_that_is_not_an_action() -> None:
    state = midgame()
    error = raises(IllegalActionError, "is not an action",
                   lambda: state.apply("drop", 0))  # type: ignore[arg-type]
    assert isinstance(error, IllegalActionError) and error.rule == "unknown"


def test_actions_after_the_hand_is_over() -> None:
    data = changed(EXAMPLE_1, lambda d: d["actions"].append({"seat": 1, "draw": "stock"}))
    error = raises(IllegalActionError, r"^action 14: the hand is already over \(drop\)",
                   lambda: HandRecord.from_json(data).verify())
    assert isinstance(error, IllegalActionError) and error.action_index == 14


def test_wrong_stored_outcome() -> None:
    data = changed(EXAMPLE_1, lambda d: d["outcome"].__setitem__("payoffs", [1, 0, -1]))
    raises(OutcomeMismatchError, r"payoffs: record says \[1, 0, -1\], replay gives \[2, -1, -1\]",
           lambda: HandRecord.from_json(data).verify())
    data = changed(EXAMPLE_1, lambda d: d["actions"].pop())
    raises(OutcomeMismatchError, "the actions end before the hand is over",
           lambda: HandRecord.from_json(data).verify())


# -- a refused action changes nothing ---------------------------------------------------------


def snapshot(state: HandState) -> tuple[object, ...]:
    return (
        HandRecord.from_state(state).to_json(),
        [observe(state, seat) for seat in range(state.players)],
        [observe(state, seat).to_json() for seat in range(state.players)],
        [list(h) for h in state.hands],
        state.stock,
        list(state.discard),
        list(state.table),
        (state.to_act, state.phase, state.picked, state.turns, set(state.locked), state.outcome),
        state.legal_actions(),
    )


ILLEGAL_AT_START = ["meld 5h 6h 7h", "discard 2c", "layoff 2c 0", "layoff 8s 0"]
ILLEGAL_IN_PLAY = [
    "drop", "draw stock", "draw discard", "discard Qs", "discard Qd", "meld 5h 6h 7h 8h", "meld 5h 6h 2c",
    "meld 5h 6h Ac", "meld 5h 6h", "layoff 4s 0", "layoff 2c 0", "layoff 5h 3", "layoff 9c 0",
]


def test_a_refused_action_changes_nothing() -> None:
    state = midgame()
    refused = 0
    for phase_actions in (ILLEGAL_AT_START, ILLEGAL_IN_PLAY):
        if phase_actions is ILLEGAL_IN_PLAY:
            state.apply(Action.parse("draw discard"), 0)  # takes the Qd: now after the draw
        before = snapshot(state)
        for text in phase_actions:
            action = Action.parse(text)
            for seat in (state.to_act, (state.to_act + 1) % state.players):
                with pytest.raises(IllegalActionError):
                    state.verify(action, seat)
                assert not state.can_apply(action, seat)
                with pytest.raises(IllegalActionError):
                    state.apply(action, seat)
                refused += 1
                assert snapshot(state) == before, text
        # A legal action out of turn is refused too.
        legal = state.legal_actions()[0]
        with pytest.raises(IllegalActionError, match="turn"):
            state.apply(legal, (state.to_act + 2) % state.players)
        assert snapshot(state) == before
    assert refused == 2 * (len(ILLEGAL_AT_START) + len(ILLEGAL_IN_PLAY))


def test_a_refused_action_after_the_hand_is_over_changes_nothing() -> None:
    state = midgame()
    state.apply(Drop(), 0)
    before = snapshot(state)
    for text in ["drop", "draw stock", "discard 2c"]:
        with pytest.raises(IllegalActionError, match="the hand is over"):
            state.apply(Action.parse(text), 0)
    assert snapshot(state) == before


def test_a_refused_record_changes_nothing() -> None:
    # Goblin takes the 6s...
    data = changed(EXAMPLE_1, lambda d: d["actions"][9].__setitem__("draw", "discard"))
    data["actions"][10]["discard"] = "6s"  # ...and throws it straight back
    record = HandRecord.from_json(data)
    before = record.to_json()
    error = raises(IllegalActionError,
                   r"^action 10 \(discard 6s, seat 1\): 6s was just taken from the discard pile",
                   record.verify)
    assert isinstance(error, IllegalActionError) and error.rule == "discard_pickup"
    assert record.to_json() == before == data


def test_every_engine_error_is_a_value_error() -> None:
    for kind in (NotationError, RulesError, RecordError, DeckError, IllegalActionError, OutcomeMismatchError):
        assert issubclass(kind, TonkError) and issubclass(kind, ValueError)
    assert issubclass(DeckError, RecordError)


def test_seed_and_hand_index_out_of_range() -> None:
    raises(NotationError, "a seed is an integer from 0 to 2\\*\\*64 - 1, got -1", lambda: deck_order(-1, 0))
    raises(NotationError, "a seed is an integer", lambda: deck_order(2**64, 0))
    raises(NotationError, "a hand index is an integer >= 0, got -1", lambda: deck_order(1, -1))
