"""Properties of random legal play at 2 to 6 seats under random variants (Hypothesis).

At every step: all 52 cards are accounted for; every listed legal action applies (on a copy);
the legal actions are exactly the well-formed candidates ``can_apply`` accepts, from a generated
superset; actions outside the list are refused by ``verify`` and ``apply`` and a refused
``apply`` changes nothing; no observation holds another seat's cards, the stock or the seed.
At the end: payoffs sum to zero, and the hand's record reads back losslessly and replays to the
same state. The same seed gives the same match.
"""

from __future__ import annotations

import dataclasses
import json
import random
from itertools import combinations
from typing import Any

from helpers.positions import all_cards, snapshot
from helpers.strategies import rules_st
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bots.random_bot import RandomBot
from sdk.actions import DRAW_DISCARD, DRAW_STOCK, DROP, Action, Discard, Draw, Drop, Event, Layoff, Meld
from sdk.cards import DECK, Card, hand_value
from sdk.dealing import deck_order
from sdk.engine import HandState, Phase
from sdk.errors import IllegalActionError
from sdk.melds import TableMeld, hand_melds, make_meld
from sdk.observation import Observation, observe
from sdk.record import HandRecord
from sdk.referee import LocalPlayer, play_match
from sdk.rules import Rules

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

seeds = st.integers(min_value=10**15, max_value=2**64 - 1)  # long: easy to spot in a text


# -- the checks made at every step ------------------------------------------------------------


def candidates(state: HandState) -> list[Action]:
    """A superset of the legal actions: every well-formed action worth trying now."""
    out: list[Action] = [DROP, DRAW_STOCK, DRAW_DISCARD]
    out += [Discard(c) for c in DECK]
    out += [Layoff(c, i) for c in DECK for i in range(len(state.table) + 2)]
    hand = sorted(state.hands[state.to_act], key=lambda c: c.index)
    outside = [c for c in DECK if c not in hand][:3]
    for size in range(1, len(hand) + 1):
        for cards in combinations(hand, size):
            out.append(Meld(cards))
            if size == 3:
                out += [Meld((*cards, o)) for o in outside]
    if hand:
        out.append(Meld((hand[0], hand[0], hand[0])))  # a card named three times
    return out


def check_step(state: HandState, rng: random.Random, seed: int | None) -> list[Action]:
    assert sorted(all_cards(state), key=lambda c: c.index) == list(DECK)
    legal = state.legal_actions()
    if state.phase is Phase.OVER:
        assert legal == []
        return legal
    assert legal and len(set(legal)) == len(legal)
    for action in legal:
        trial = state.copy()
        trial.apply(action, state.to_act)
    pool = candidates(state)
    accepted = {a for a in pool if state.can_apply(a, state.to_act)}
    assert accepted == set(legal)
    refused = [a for a in pool if a not in accepted]
    before = snapshot(state)
    for action in rng.sample(refused, min(8, len(refused))):
        for call in (state.verify, state.apply):
            try:
                call(action, state.to_act)
            except IllegalActionError:
                pass
            else:
                raise AssertionError(f"{action} was accepted")
        assert snapshot(state) == before
    other = (state.to_act + 1) % state.players  # acting out of turn
    assert not any(state.can_apply(a, other) for a in legal)
    for seat in range(state.players):
        check_observation(state, seat, seed)
    return legal


def public_cards(state: HandState) -> set[Card]:
    """Cards every seat has seen face up."""
    seen = set(state.discard) | {c for m in state.table for c in m.cards}
    for happened in state.history:
        action = happened.action
        if isinstance(action, Discard | Layoff):
            seen.add(action.card)
        elif isinstance(action, Meld):
            seen.update(action.cards)
        elif isinstance(action, Draw) and action.source == "discard" and happened.card is not None:
            seen.add(happened.card)
    seen.update(state.initial["discard"])
    seen.update(c for m in state.initial["table"] for c in m.cards)
    return seen


_LEAVES = (str, int, float, bool, type(None), Rules, Phase)


_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _field_names(kind: type) -> tuple[str, ...] | None:
    if kind not in _FIELDS:
        is_dataclass = dataclasses.is_dataclass(kind)
        _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind)) if is_dataclass else None
    return _FIELDS[kind]


def cards_in(value: Any) -> set[Card]:
    """Every Card object reachable from ``value`` (dataclasses, tuples, lists, dicts)."""
    found: set[Card] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is Card:
            found.add(item)
        elif kind is Event:  # the common cases, spelled out for speed
            if item.card is not None:
                found.add(item.card)
            stack.append(item.action)
        elif kind is Discard or kind is Layoff:
            found.add(item.card)
        elif kind is Meld or kind is TableMeld:
            found.update(item.cards)
        elif kind is Draw or kind is Drop:
            pass
        elif kind in (tuple, list, set, frozenset):
            stack.extend(item)
        elif kind is dict:
            stack.extend(item.values())
        elif not isinstance(item, _LEAVES):
            names = _field_names(kind)
            assert names is not None, f"cannot look inside {item!r}"
            stack.extend(getattr(item, name) for name in names)
    return found


def check_observation(state: HandState, seat: int, seed: int | None) -> None:
    obs = observe(state, seat)
    mine = set(state.hands[seat]) | {e.card for e in state.history if e.seat == seat and e.card is not None}
    secret = {c for s, h in enumerate(state.hands) if s != seat for c in h} | set(state.stock)
    secret -= public_cards(state) | mine
    assert not cards_in(obs) & secret
    if len(secret) < 5:
        event("an observation with fewer than 5 secret cards")
    assert set(obs.hand) == set(state.hands[seat])
    text = json.dumps(obs.to_json())
    assert not [c.text for c in secret if f'"{c.text}"' in text]
    if seed is not None:
        assert str(seed) not in text and str(seed) not in repr(obs)
    assert "stock" not in {f.name for f in dataclasses.fields(Observation)}
    assert obs.stock_size == state.stock_size
    assert bool(obs.legal_actions) == (seat == state.to_act and state.phase is not Phase.OVER)
    assert obs.history == tuple(e if e.seat == seat else e.public() for e in state.history)


def choose(legal: list[Action], rng: random.Random, patience: float) -> Action:
    """Random, but it goes down only now and then and likes melds, so hands run long."""
    if legal[0] == DROP and len(legal) > 1 and rng.random() < patience:
        legal = legal[1:]
    plays = [a for a in legal if isinstance(a, Meld | Layoff)]
    if plays and rng.random() < 0.6:
        return rng.choice(plays)
    return rng.choice(legal)


def check_end(state: HandState) -> None:
    outcome = state.outcome
    assert outcome is not None and state.phase is Phase.OVER
    assert sum(outcome.payoffs) == 0 and outcome.winners
    assert list(outcome.winners) == sorted(set(outcome.winners))
    assert outcome.totals == tuple(hand_value(h) for h in state.hands)
    record = HandRecord.from_state(state, [f"p{i}" for i in range(state.players)])
    text = record.to_text()
    again = HandRecord.from_text(text)
    assert again.to_json() == record.to_json() == json.loads(text)
    assert again.verify() == outcome
    assert snapshot(again.replay()) == snapshot(state)


# -- the properties -------------------------------------------------------------------------


@given(
    seats=st.integers(2, 6),
    seed=seeds,
    hand_index=st.integers(0, 10_000),
    rules=rules_st,
    play_seed=st.integers(0, 2**32),
    patience=st.floats(0.9, 0.995),
)
@settings(SETTINGS, max_examples=40)
def test_random_legal_play(
    seats: int, seed: int, hand_index: int, rules: Rules, play_seed: int, patience: float
) -> None:
    rng = random.Random(play_seed)
    state = HandState.deal(deck_order(seed, hand_index), seats, hand_index % seats, rules)
    steps = 0
    while state.outcome is None and steps < 400:
        legal = check_step(state, rng, seed)
        recorded = state.apply(choose(legal, rng, patience), state.to_act)
        assert state.history[-1] is recorded and isinstance(recorded, Event)
        steps += 1
    if state.outcome is None:  # a long hand without a cap: stop it here
        event("stopped after 400 actions")
        return
    event(f"ended by {state.outcome.end}")
    event(f"actions: {'<10' if steps < 10 else '<50' if steps < 50 else '50+'}")
    check_step(state, rng, seed)
    check_end(state)


@st.composite
def positions(draw: st.DrawFn) -> HandState:
    """A random position under way: hands of 1 to 9 cards, melds on the table, any discard pile."""
    rules = draw(rules_st)
    rng = random.Random(draw(st.integers(0, 2**32)))
    deck = list(DECK)
    rng.shuffle(deck)
    seats = draw(st.integers(2, 6))
    table: list[TableMeld] = []
    for _ in range(draw(st.integers(0, 4))):
        found = hand_melds(deck[:14], rules)
        if found:
            meld = rng.choice(found)
            table.append(make_meld(rng.randrange(seats), meld, rules))
            deck = [c for c in deck if c not in meld]
        rng.shuffle(deck)
    hands = []
    for _ in range(seats):
        size = draw(st.integers(1, 9))
        hands.append(deck[:size])
        deck = deck[size:]
    split = draw(st.integers(0, len(deck)))
    return HandState.from_position(hands, deck[:split], deck[split:], table, dealer=0,
                                   to_act=draw(st.integers(0, seats - 1)), rules=rules)


@given(state=positions(), play_seed=st.integers(0, 2**32))
@settings(SETTINGS, max_examples=40)
def test_random_play_from_random_positions(state: HandState, play_seed: int) -> None:
    rng = random.Random(play_seed)
    for _ in range(30):
        if state.outcome is not None:
            break
        legal = check_step(state, rng, None)
        state.apply(choose(legal, rng, 0.9), state.to_act)
    if state.outcome is not None:
        check_end(state)


@given(seats=st.integers(2, 6), seed=st.integers(0, 2**64 - 1), rules=rules_st)
@settings(SETTINGS, max_examples=12)
def test_the_same_seed_gives_the_same_match(seats: int, seed: int, rules: Rules) -> None:
    def match() -> list[str]:
        result = play_match([LocalPlayer(RandomBot) for _ in range(seats)], seed, 3, rules=rules)
        return [h.record.to_text() for h in result.hands]

    first = match()
    assert first == match()
    assert [HandRecord.from_text(t).hands for t in first] == [
        HandState.deal(deck_order(seed, i), seats, i % seats, rules).initial["hands"] for i in range(3)
    ]
