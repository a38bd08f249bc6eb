"""The PettingZoo environment (sdk/tonk_env.py) and the action numbering (sdk/action_index.py):
PettingZoo's own API and seed tests, every legal action numbered and back, masks that are
exactly the legal actions, payoffs that sum to zero, and no agent observing a card its seat
could not see."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk.action_index import (
    SIZE,
    ActionIndexError,
    ActionNotLegalError,
    action_index,
    action_mask,
    index_action,
    legal_action,
)
from sdk.engine import HandState
from sdk.errors import IllegalActionError, NotationError
from sdk.observation import observe

pettingzoo = pytest.importorskip("pettingzoo")
from pettingzoo.test import api_test, seed_test  # noqa: E402

from sdk.tonk_env import env, raw_env  # noqa: E402


# PettingZoo's classic card games warn alike: their observations are dicts with an action mask.
@pytest.mark.filterwarnings("ignore:Observation space for each agent probably:UserWarning")
@pytest.mark.filterwarnings("ignore:Observation is not a NumPy array:UserWarning")
@pytest.mark.parametrize("players", [2, 3, 5])
def test_pettingzoos_api_test_passes(players: int) -> None:
    api_test(env(players=players), num_cycles=300, verbose_progress=False)


def test_pettingzoos_seed_test_passes() -> None:
    seed_test(lambda: env(players=3), num_cycles=200)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), players=st.integers(2, 5), choices=st.randoms(use_true_random=False))
def test_every_legal_action_has_a_number_and_the_mask_is_the_legal_actions(
    seed: int, players: int, choices: random.Random
) -> None:
    state = HandState.from_seed(seed, players)
    while not state.is_over:
        legal = state.legal_actions()
        numbers = [action_index(a) for a in legal]
        assert len(set(numbers)) == len(numbers)  # no two legal actions share a number
        for action, number in zip(legal, numbers, strict=True):
            assert index_action(number) == action
        seen = observe(state, state.to_act)
        mask = action_mask(seen.legal_actions)
        assert sorted(i for i, m in enumerate(mask) if m) == sorted(numbers)
        pick = choices.choice(numbers)
        assert legal_action(seen, pick) in legal
        state.apply(legal_action(seen, pick), state.to_act)


def test_numbers_that_name_nothing_and_actions_not_legal_now_are_refused_apart() -> None:
    for bad in (-1, SIZE, "3", 2.0, True):
        with pytest.raises(ActionIndexError, match="an action number is 0 to 1311"):
            index_action(bad)  # type: ignore[arg-type]
    state = HandState.from_seed(11, 2)
    seen = observe(state, state.to_act)
    discard_now = action_index(index_action(3))  # a discard, before drawing: not legal
    with pytest.raises(ActionNotLegalError, match="is not legal now") as caught:
        legal_action(seen, discard_now)
    assert isinstance(caught.value, IllegalActionError) and not isinstance(caught.value, NotationError)


def test_an_agent_observes_only_what_its_seat_sees() -> None:
    """Every card an observation marks (hand, pile, its top, table, picked up) is the seat's
    own or public: never another seat's unseen card, nor the stock's."""
    game = raw_env(players=4)
    rng = random.Random(5)
    for episode in range(20):
        game.reset(seed=episode)
        while not all(game.terminations.values()):
            state = game.state
            assert state is not None
            public = {c.index for c in state.discard} | {c.index for m in state.table for c in m.cards}
            if state.picked is not None:
                public.add(state.picked.index)
            for agent in game.agents:
                seat = int(agent.split("_")[1])
                vector = game.observe(agent)["observation"]
                marked = {i % 52 for i in range(260) if vector[i] > 0}
                assert marked <= public | {c.index for c in state.hands[seat]}, (episode, agent)
                assert {i for i in range(52) if vector[i] > 0} == {c.index for c in state.hands[seat]}
            mask = game.observe(game.agent_selection)["action_mask"]
            game.step(int(rng.choice(mask.nonzero()[0])))


def test_a_hand_ends_every_agent_with_its_payoff_and_they_sum_to_zero() -> None:
    game = raw_env(players=3)
    rng = random.Random(2)
    tonks = 0
    for episode in range(300):
        game.reset(seed=100 + episode)
        tonks += all(game.terminations.values())
        total = dict(game.rewards)  # a TONK at the deal settles the hand in reset()
        while not all(game.terminations.values()):
            mask = game.observe(game.agent_selection)["action_mask"]
            game.step(int(rng.choice(mask.nonzero()[0])))
            for agent in game.agents:
                total[agent] += game.rewards[agent]
        assert game.state is not None and game.state.outcome is not None
        assert [total[a] for a in game.agents] == [float(p) for p in game.state.outcome.payoffs]
        assert sum(total.values()) == 0
    assert tonks  # the deals include a TONK at the deal, settled before anyone acts


def test_a_fixed_seed_deals_the_same_hands() -> None:
    first, second = raw_env(players=2), raw_env(players=2)
    first.reset(seed=42)
    second.reset(seed=42)
    assert first.deal_seed == second.deal_seed and str(first.state) == str(second.state)
    second.reset(seed=43)
    assert first.deal_seed != second.deal_seed


def test_bad_tables_are_refused() -> None:
    with pytest.raises(ValueError, match="2 to 5 players, got 6"):
        raw_env(players=6)
    with pytest.raises(ValueError, match="render_mode"):
        raw_env(render_mode="rgb_array")
