"""HandState's API: legal actions and their order, events, copies, checks that change nothing,
construction errors, and the per-seat observation."""

from __future__ import annotations

import random
from itertools import combinations

import pytest
from helpers.positions import cards, play, position, snapshot

from sdk.actions import (
    DRAW_DISCARD,
    DRAW_STOCK,
    DROP,
    Action,
    Discard,
    Draw,
    Drop,
    Event,
    Layoff,
    Meld,
)
from sdk.cards import DECK, Card
from sdk.dealing import deck_order
from sdk.engine import HandState, Outcome, Phase
from sdk.errors import DeckError, IllegalActionError, NotationError, RecordError
from sdk.melds import _hand_melds_general, completes_meld, fits_table, hand_melds, make_meld
from sdk.observation import Observation, observe
from sdk.rules import STANDARD, Rules

# -- legal actions ----------------------------------------------------------------------------


def test_legal_actions_at_the_start_of_a_turn_drop_then_draw_stock_then_draw_discard() -> None:
    state = position(["Ac 2c", "9d 9h"], "7c")
    assert state.legal_actions() == [DROP, DRAW_STOCK, DRAW_DISCARD]
    empty_stock = HandState.from_position(
        [cards("Ac 2c"), [c for c in DECK if c not in cards("Ac 2c 7c")]], cards("7c"), [], dealer=1
    )
    assert empty_stock.legal_actions() == [DROP, DRAW_DISCARD]


def test_legal_actions_after_the_draw_melds_then_layoffs_then_discards_in_a_stable_order() -> None:
    state = position(["5h 4h 6h 8s 8c", "9d 9h"], "7c", stock="8h", table=[(1, "9s 10s Js"), (1, "4d 5d 6d")])
    play(state, "draw stock")
    assert [str(a) for a in state.legal_actions()] == [
        "meld 8c 8h 8s",
        "meld 4h 5h 6h",
        "layoff 8s 0",
        "discard 8c",
        "discard 4h",
        "discard 5h",
        "discard 6h",
        "discard 8h",
        "discard 8s",
    ]


def test_no_legal_actions_once_the_hand_is_over() -> None:
    state = position(["Ac", "9d 9h"], "7c")
    play(state, "drop")
    assert state.legal_actions() == [] and state.phase is Phase.OVER and state.is_over
    with pytest.raises(IllegalActionError, match="the hand is over") as info:
        state.verify(DRAW_STOCK)
    assert info.value.rule == "hand_over"


# -- events -----------------------------------------------------------------------------------


def test_apply_returns_the_event_it_recorded_and_a_stock_draw_is_private() -> None:
    state = position(["Ac 2c", "9d 9h"], "7c", stock="Kd")
    event = state.apply(DRAW_STOCK, 0)
    assert event == Event(0, Draw("stock"), Card.parse("Kd")) and state.history == [event]
    assert event.public() == Event(0, Draw("stock"), None)
    assert event.to_json() == {"seat": 0, "draw": "stock", "card": "Kd"}
    event = state.apply(Discard(Card.parse("Kd")), 0)
    assert event == Event(0, Discard(Card.parse("Kd"))) and event.public() is event
    event = state.apply(DRAW_DISCARD, 1)
    assert event.card == Card.parse("Kd") and event.public() is event  # a pickup is public


def test_events_are_immutable() -> None:
    event = Event(0, DROP)
    with pytest.raises(AttributeError):
        event.seat = 1  # type: ignore[misc]


# -- checks -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setup", "action", "seat", "rule"),
    [
        ([], "discard Ac", None, "draw_first"),
        ([], "meld Ac 2c 3c", None, "draw_first"),
        ([], "draw stock", 1, "turn"),
        (["draw stock"], "draw discard", None, "draw_once"),
        (["draw stock"], "drop", None, "drop_after_draw"),
        (["draw stock"], "discard Kh", None, "not_in_hand"),
        (["draw stock"], "meld Jh Qh Kh", None, "not_in_hand"),
        (["draw stock"], "meld Ac 2c", None, "meld_size"),
        (["draw stock"], "meld Ac 2c 4c", None, "meld_shape"),
        (["draw stock"], "layoff Ac 3", None, "no_such_meld"),
        (["draw stock"], "layoff Ac 0", None, "layoff_fit"),
        (["draw discard"], "discard 7c", None, "discard_pickup"),
    ],
)
def test_a_refused_action_names_its_rule_and_changes_nothing(
    setup: list[str], action: str, seat: int | None, rule: str
) -> None:
    state = position(["Ac 2c 4c", "9d 9h"], "7c", table=[(1, "9s 10s Js")])
    play(state, *setup)
    before = snapshot(state)
    assert not state.can_apply(Action.parse(action), seat)
    with pytest.raises(IllegalActionError) as info:
        state.verify(Action.parse(action), seat)
    assert info.value.rule == rule
    with pytest.raises(IllegalActionError) as info:
        state.apply(Action.parse(action), seat)
    assert info.value.rule == rule
    assert snapshot(state) == before


def test_the_no_such_meld_message_names_the_index_and_the_table_size() -> None:
    state = position(["Ac 2c 4c", "9d 9h"], "7c", table=[(1, "9s 10s Js")])
    play(state, "draw stock")
    with pytest.raises(IllegalActionError, match="there is no meld 3 on the table \\(it holds 1"):
        state.apply(Layoff(Card.parse("Ac"), 3))


def test_something_that_is_not_an_action_is_refused() -> None:
    state = position(["Ac 2c", "9d 9h"], "7c")
    before = snapshot(state)
    for thing in ("draw stock", None, 3, Card.parse("Ac")):
        assert not state.can_apply(thing)  # type: ignore[arg-type]
        with pytest.raises(IllegalActionError) as info:
            state.apply(thing)  # type: ignore[arg-type]
        assert info.value.rule == "unknown"
    assert snapshot(state) == before
    with pytest.raises(NotationError, match="draw is 'stock' or 'discard', got 'deck'"):
        Draw("deck")  # type: ignore[arg-type]


def test_a_copy_is_independent() -> None:
    state = position(["Ac 2c 3c", "9d 9h"], "7c", table=[(1, "9s 10s Js")], rules=Rules(hit_lock=True))
    play(state, "draw stock")
    copy = state.copy()
    assert snapshot(copy) == snapshot(state)
    play(copy, "meld Ac 2c 3c")
    assert len(state.table) == 1 and len(copy.table) == 2
    assert state.hands[0] != copy.hands[0] and state.history != copy.history
    assert snapshot(state) != snapshot(copy)


def test_forfeit_charges_the_faulted_seat_2x_to_every_other_seat() -> None:
    state = position(["Ac 2c", "9d 9h", "Kc"], "7c")
    outcome = state.forfeit(1)
    assert outcome == Outcome("fault", (0, 2), (2, -4, 2), (3, 18, 10), 1)
    assert state.forfeit(0) is outcome  # a finished hand keeps its outcome
    assert outcome.to_json()["faulted"] == 1


def test_initial_and_stock_are_fresh_copies() -> None:
    deck = deck_order(4, 4)
    state = HandState.deal(deck, 2)
    state.initial["hands"][0].clear()
    state.stock.clear()
    assert len(state.initial["hands"][0]) == 5 and state.stock == deck[11:] and state.stock_size == 41


# -- construction ---------------------------------------------------------------------------


def test_a_deck_that_is_not_52_distinct_cards_is_refused() -> None:
    with pytest.raises(DeckError, match="a deck has 52 cards, these parts hold 51; missing: Ks"):
        HandState.deal(DECK[:51], 2)
    with pytest.raises(DeckError, match="card Ac appears twice: in the deck and in the deck"):
        HandState.deal([*DECK, DECK[0]], 2)
    with pytest.raises(DeckError, match="the deck holds '2c', which is not a card"):
        HandState.deal([DECK[0], "2c", *DECK[2:]], 2)  # type: ignore[list-item]
    with pytest.raises(DeckError, match="hold 10; missing"):
        HandState.deal(DECK[:10], 2)  # too short to deal: still a DeckError


def test_a_position_is_checked() -> None:
    with pytest.raises(DeckError, match="card Ac appears twice: in hands\\[0\\] and in discard"):
        HandState.from_position([cards("Ac"), DECK[1:]], cards("Ac"), [])
    with pytest.raises(RecordError, match="hands\\[1\\] is empty: a player with no cards has already gone"):
        HandState.from_position([list(DECK), []], [], [])
    with pytest.raises(RecordError, match="seat to act 2 is not a seat of this hand"):
        HandState.from_position([DECK[:20], DECK[20:]], [], [], to_act=2)
    with pytest.raises(RecordError, match="dealer 5 is not a seat of a 2-player hand"):
        HandState.from_position([DECK[:20], DECK[20:]], [], [], dealer=5)
    with pytest.raises(RecordError, match="Tonk is played by 2 to 6 players, not 7"):
        HandState.from_position([DECK[i * 7 : i * 7 + 7] for i in range(7)], DECK[49:], [])


# -- the fast paths against their references -----------------------------------------------


@pytest.mark.parametrize("rules", [STANDARD, Rules(ace_high_or_low=True)])
def test_hand_melds_matches_the_general_enumeration(rules: Rules) -> None:
    rng = random.Random(3)
    pool = [c for c in DECK if c.rank <= 5 or c.rank >= 11]  # books, low and high spreads are common
    for _ in range(1500):
        hand = rng.sample(pool, rng.randint(0, 8))
        got = hand_melds(hand, rules)
        assert got == _hand_melds_general(sorted(hand, key=lambda c: c.index), rules)
        every = {frozenset(m) for k in range(3, len(hand) + 1) for m in combinations(hand, k)
                 if _is_meld(m, rules)}
        assert {frozenset(m) for m in got} == every


def _is_meld(cards_: tuple[Card, ...], rules: Rules) -> bool:
    try:
        make_meld(0, cards_, rules)
    except IllegalActionError:
        return False
    return True


@pytest.mark.parametrize("rules", [STANDARD, Rules(ace_high_or_low=True, book_layoff=True)])
def test_layoff_cards_are_exactly_the_cards_a_meld_accepts(rules: Rules) -> None:
    rng = random.Random(5)
    melds = []
    for _ in range(400):
        hand = rng.sample(DECK, 9)
        melds += [make_meld(0, m, rules) for m in hand_melds(hand, rules)]
    assert len(melds) > 100
    for meld in melds:
        fits = tuple(c for c in DECK if c not in meld.cards and meld.accepts(c, rules))
        assert meld.layoff_cards(rules) == fits, meld


# -- observations -----------------------------------------------------------------------------


def test_an_observation_shows_the_seat_its_own_hand_and_hides_other_stock_draws() -> None:
    state = position(["Ac 2c", "9d 9h", "Kc"], "7c", stock="Kd Qd")
    play(state, "draw stock", "discard 2c")
    mine, theirs = observe(state, 0), observe(state, 1)
    assert mine.hand == tuple(cards("Ac Kd")) and theirs.hand == tuple(cards("9d 9h"))
    assert mine.history[0].card == Card.parse("Kd") and theirs.history[0].card is None
    assert theirs.legal_actions == tuple(state.legal_actions()) and mine.legal_actions == ()
    assert theirs.my_turn and not mine.my_turn
    assert theirs.hand_sizes == (2, 2, 1) and theirs.stock_size == state.stock_size
    assert Card.parse("Kd") not in observe(state, 2).cards_seen()


def test_opponent_known_cards_are_the_pickups_still_held_in_deck_order() -> None:
    state = position(["Ac 3d", "9d 9h", "Kc 4s"], "Kh", stock="5c 6c 7c 8c")
    play(state, "draw stock", "discard 3d", "draw discard", "discard 9d", "draw discard", "discard 4s")
    play(state, "draw stock", "discard Ac", "draw discard", "discard 9h")
    # Seat 1 took 3d, then Ac: a list in deck order (a set's order would change per process).
    known = observe(state, 2).opponent_known_cards(1)
    assert known == sorted(cards("3d Ac"), key=lambda c: c.index) and isinstance(known, list)
    assert observe(state, 0).opponent_known_cards(2) == cards("9d")
    play(state, "draw stock", "discard Kc", "draw stock", "discard 5c", "draw stock", "discard 3d")
    assert observe(state, 2).opponent_known_cards(1) == cards("Ac")  # 3d went back out


def test_an_observation_round_trips_through_json() -> None:
    state = position(["Ac 2c 3c", "9d 9h"], "7c", table=[(1, "9s 10s Js")], rules=Rules(hit_lock=True))
    play(state, "draw discard", "meld Ac 2c 3c")
    obs = observe(state, 0, ("a", "b"), scores=(3, -3), hand_index=2, hands_in_match=5)
    again = Observation.from_json(obs.to_json())
    assert again.to_json() == obs.to_json()
    assert again.legal_actions == obs.legal_actions and again.picked_up == Card.parse("7c")
    with pytest.raises(RecordError, match="malformed observation"):
        Observation.from_json({**obs.to_json(), "seat": "x"})


def test_observe_refuses_a_seat_that_is_not_at_the_table() -> None:
    with pytest.raises(ValueError, match="seat 3 is not a seat of this hand"):
        observe(position(["Ac", "9d"], "7c"), 3)


# -- actions ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "action",
    [Drop(), Draw("stock"), Draw("discard"), Meld(tuple(cards("8h 8d 8s"))), Layoff(Card.parse("8s"), 2),
     Discard(Card.parse("10s"))],
)
def test_an_action_round_trips_through_its_record_form_and_its_text(action: Action) -> None:
    assert Action.from_json({"seat": 1, **action.to_json()}) == action
    assert Action.parse(str(action)) == action


def test_a_meld_is_equal_whatever_the_order_of_its_cards_but_keeps_the_order_written() -> None:
    one, two = Meld(tuple(cards("8h 8d 8s"))), Meld(tuple(cards("8s 8h 8d")))
    assert one == two and hash(one) == hash(two)
    assert one.to_json() == {"meld": ["8h", "8d", "8s"]}


def test_melds_compare_as_multisets_so_naming_a_card_twice_makes_another_meld() -> None:
    legal = Meld(tuple(cards("8h 8d 8s")))
    twice = Meld(tuple(cards("8h 8h 8d 8s")))
    assert twice != legal and twice not in [legal]
    assert twice == Meld(tuple(cards("8d 8h 8s 8h")))  # still order-blind, and reflexive
    assert Meld(tuple(cards("8h 8h 8d"))) != Meld(tuple(cards("8h 8d 8d")))


@pytest.mark.parametrize("rules", [STANDARD, Rules(ace_high_or_low=True)], ids=["standard", "ace-high"])
def test_completes_meld_is_a_meld_of_the_card_with_the_hand(rules: Rules) -> None:
    # Against its definition: some meld of hand + card holds the card (completes_meld only
    # searches the cards of the card's rank or suit).
    rng = random.Random(7)
    seen = set()
    for _ in range(400):
        card, *hand = rng.sample(DECK, rng.randrange(3, 9))
        expected = any(card in meld for meld in hand_melds([*hand, card], rules))
        assert completes_meld(card, hand, rules) == expected, (card, hand)
        seen.add(expected)
    assert seen == {True, False}
    table = [make_meld(0, cards("5s 6s 7s"), rules), make_meld(1, cards("9c 9d 9h"), rules)]
    assert fits_table(Card.parse("8s"), table, rules) and not fits_table(Card.parse("9s"), table, rules)
