"""The tonk-hand/1 record (docs/hand-record.md): lossless reading and writing, replay,
and verification. Bad input (records included) is tests/sdk/test_bad_input.py."""

from __future__ import annotations

import json

from helpers.records import EXAMPLE_1, EXAMPLE_2, changed, raises

from sdk.actions import Discard, Draw
from sdk.cards import Card
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.errors import (
    DeckError,
    IllegalActionError,
    OutcomeMismatchError,
)
from sdk.record import HandRecord
from sdk.rules import Rules

# -- reading and writing ----------------------------------------------------------------------


def test_reading_then_writing_is_lossless() -> None:
    for example in (EXAMPLE_1, EXAMPLE_2):
        assert HandRecord.from_json(example).to_json() == example
        assert json.loads(HandRecord.from_text(json.dumps(example)).to_text()) == example


def test_optional_fields_stay_as_written() -> None:
    data = changed(
        EXAMPLE_2,
        lambda d: d.update(
            rules={"name": "standard", "turn_cap": 200}, table=[], extra_field={"kept": [1, 2]}, note="hi"
        ),
    )
    assert HandRecord.from_json(data).to_json() == data
    nulls = changed(EXAMPLE_2, lambda d: d.update(note=None, table=None, rules=None, outcome=None))
    record = HandRecord.from_json(nulls)
    assert record.to_json() == nulls and record.rules == Rules() and record.table is None
    absent = changed(EXAMPLE_2, lambda d: [d.pop(k) for k in ("note", "to_act", "outcome")])
    assert HandRecord.from_json(absent).to_json() == absent


def test_cards_are_written_in_their_canonical_spelling() -> None:
    data = changed(
        EXAMPLE_1, lambda d: (d["hands"][0].__setitem__(0, "ts"), d["actions"][1].update(discard="TS"))
    )
    assert HandRecord.from_json(data).to_json() == EXAMPLE_1


def test_from_state_records_a_played_hand_and_it_replays() -> None:
    state = HandState.deal(deck_order(8, 2), 4, dealer=2, rules=Rules(hit_lock=True))
    while state.outcome is None:
        state.apply(state.legal_actions()[-1])  # always the last action: a long hand
    record = HandRecord.from_state(state, ["a", "b", "c", "d"])
    again = HandRecord.from_text(record.to_text())
    assert again.to_json() == record.to_json()
    assert again.rules == Rules(hit_lock=True) and again.to_json()["rules"] == {"hit_lock": True}
    assert again.verify() == state.outcome
    assert "to_act" not in record.to_json()  # left of the dealer is the default


def test_a_record_of_a_hand_begun_from_a_position_keeps_its_table_and_seat_to_act() -> None:
    record = HandRecord.from_json(EXAMPLE_2)
    state = record.replay()
    assert (
        HandRecord.from_state(state, record.players).to_json() | {"note": record.note, "to_act": 0}
        == EXAMPLE_2
    )
    mid = HandRecord.from_json(changed(EXAMPLE_2, lambda d: d["actions"].clear()))
    midgame = mid.initial_state()
    for seat, action in record.actions[:6]:
        midgame.apply(action, seat)
    # a record started from this mid-hand position: the table carries over, melds keep their indices
    hands = [list(h) for h in midgame.hands]
    later = HandState.from_position(hands, midgame.discard, midgame.stock, midgame.table, dealer=2, to_act=2)
    written = HandRecord.from_state(later).to_json()
    assert written["table"] == [
        {"owner": 0, "cards": ["9s", "10s", "Js"]},
        {"owner": 1, "cards": ["10c", "Jc", "Qc"]},
    ]
    assert written["to_act"] == 2


# -- replay and verification ------------------------------------------------------------------


def test_an_illegal_action_is_reported_with_its_index_and_a_plain_reason() -> None:
    data = changed(EXAMPLE_1, lambda d: d["actions"][3].update(discard="Qs"))
    record = HandRecord.from_json(data)
    error = raises(
        IllegalActionError, r"^action 3 \(discard Qs, seat 1\): Qs is not in seat 1's hand$", record.verify
    )
    assert isinstance(error, IllegalActionError) and error.action_index == 3 and error.rule == "not_in_hand"


def test_an_action_out_of_turn_is_illegal() -> None:
    data = changed(EXAMPLE_1, lambda d: d["actions"][2].update(seat=2))
    error = raises(
        IllegalActionError,
        r"^action 2 \(draw stock, seat 2\): it is seat 1's turn, not seat 2's",
        HandRecord.from_json(data).replay,
    )
    assert isinstance(error, IllegalActionError) and error.rule == "turn"


def test_an_action_after_the_hand_is_over_is_illegal() -> None:
    data = changed(EXAMPLE_1, lambda d: d["actions"].append({"seat": 1, "draw": "stock"}))
    error = raises(
        IllegalActionError,
        r"^action 14: the hand is already over \(drop\)$",
        HandRecord.from_json(data).replay,
    )
    assert isinstance(error, IllegalActionError) and error.action_index == 14


def test_a_stored_outcome_that_disagrees_with_the_replay_is_reported_naming_the_fields() -> None:
    data = changed(EXAMPLE_1, lambda d: d["outcome"].update(payoffs=[1, 0, -1], winners=[1]))
    raises(
        OutcomeMismatchError,
        r"winners: record says \[1\], replay gives \[0\]; "
        r"payoffs: record says \[1, 0, -1\], replay gives \[2, -1, -1\]",
        HandRecord.from_json(data).verify,
    )
    unfinished = changed(EXAMPLE_1, lambda d: d["actions"].pop())
    raises(
        OutcomeMismatchError,
        "the actions end before the hand is over",
        HandRecord.from_json(unfinished).verify,
    )
    bare = changed(EXAMPLE_1, lambda d: d.pop("outcome"))
    raises(OutcomeMismatchError, "no stored outcome", HandRecord.from_json(bare).verify)
    assert HandRecord.from_json(bare).replay().outcome is not None


def test_a_faulted_hand_replays_with_its_penalty() -> None:
    data = changed(
        EXAMPLE_1,
        lambda d: (
            d["actions"].__delitem__(slice(5, None)),
            d.update(
                outcome={
                    "end": "fault",
                    "winners": [0, 1],
                    "payoffs": [2, 2, -4],
                    "totals": [31, 17, 35],
                    "faulted": 2,
                }
            ),
        ),
    )
    assert HandRecord.from_json(data).verify().faulted == 2


def test_replay_follows_changes_made_to_a_record_after_it_was_read() -> None:
    record = HandRecord.from_json(EXAMPLE_1)
    assert record.verify().payoffs == (2, -1, -1)
    record.stock[0], record.stock[1] = record.stock[1], record.stock[0]  # Croaker now draws the Ac
    raises(IllegalActionError, r"^action 8 \(discard 6s, seat 0\): 6s is not in seat 0's hand", record.replay)
    record.stock[0] = record.stock[1]  # a card twice
    raises(DeckError, "card 6s appears twice", record.replay)
    record = HandRecord.from_json(EXAMPLE_1)
    record.actions.append((1, Draw("stock")))
    raises(IllegalActionError, "already over", record.replay)
    record = HandRecord.from_json(EXAMPLE_2)
    record.rules = Rules(turn_cap=1)  # the first discard now ends the hand
    raises(IllegalActionError, r"^action 3: the hand is already over \(cap\)$", record.replay)
    record = HandRecord.from_json(EXAMPLE_2)
    record.to_act = 1
    raises(IllegalActionError, "it is seat 1's turn, not seat 0's", record.replay)
    record = HandRecord.from_json(EXAMPLE_1)
    record.hands[0][0], record.hands[1][0] = record.hands[1][0], record.hands[0][0]
    raises(IllegalActionError, "action 1 .*10s is not in seat 0's hand", record.replay)


def test_replaying_twice_gives_two_independent_states() -> None:
    record = HandRecord.from_json(EXAMPLE_1)
    first, second = record.replay(), record.replay()
    assert first is not second and first.hands is not second.hands
    assert first.outcome == second.outcome
    assert record.initial_state().history == []


def test_discards_of_different_cards_differ() -> None:
    assert Discard(Card.parse("Ac")) != Discard(Card.parse("Ad"))
