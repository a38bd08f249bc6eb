"""The search bot: its sampled worlds agree with what the seat saw, it keeps to its time
budget, it is deterministic with an iteration budget, and it only plays legal actions."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from functools import partial

import pytest
from helpers.worlds import assert_consistent, observations, searched_observations
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bots.greedy import GreedyBot
from bots.heuristic import HeuristicBot
from bots.random_bot import RandomBot
from bots.search import BUDGET_ENV, Sampler, SearchBot
from sdk.actions import Action
from sdk.bot import Bot
from sdk.observation import Observation
from sdk.referee import LocalPlayer, play_match
from sdk.rules import Rules


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), players=st.integers(2, 6), which=st.integers(0, 2**16))
def test_every_sample_is_consistent(seed: int, players: int, which: int) -> None:
    seen = observations(players, seed)
    assume(seen)  # both hands ended as dealt (a Tonk each): no decision, nothing to sample
    rng = random.Random(which)
    for obs in seen[which % len(seen) :: 3]:
        sampler = Sampler(obs)
        for world in (sampler.sample(rng), sampler.sample_modelled(rng)):
            assert_consistent(obs, world)


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_consistent_at_every_decision_of_search_play(players: int) -> None:
    # Observations met by the search bot itself, mid-turn ones (after a pick-up) included.
    seen = searched_observations(SearchBot, players, 40 + players)
    assert any(obs.phase == "play" for obs in seen)
    rng = random.Random(players)
    for obs in seen:
        sampler = Sampler(obs)
        assert_consistent(obs, sampler.sample(rng))
        assert_consistent(obs, sampler.sample_modelled(rng))


def test_uniform_sampling_is_uniform() -> None:
    # An observation a few turns in, where the opponent has unknown cards and the stock is
    # large: each unseen card should land in the opponent's unknown slots with probability
    # slots / unseen cards.
    obs = next(o for o in observations(2, 7, hands=1) if o.turn >= 4 and o.phase == "start")
    opponent = 1 - obs.seat
    sampler = Sampler(obs)
    slots = sampler.missing[opponent]
    unseen = sampler.pool
    rng = random.Random(1)
    counts: Counter[object] = Counter()
    draws = 3000
    for _ in range(draws):
        world = sampler.sample(rng)
        counts.update(world.hands[opponent][len(sampler.known[opponent]) :])
    expected = draws * slots / len(unseen)
    assert set(counts) <= set(unseen)
    for card in unseen:  # about 5 standard deviations: a fixed seed, so this never flakes
        assert abs(counts[card] - expected) < 5 * expected**0.5


def test_budget_is_respected() -> None:
    # The budget logic runs on this thread's CPU clock here: on the wall clock a loaded machine
    # (CI, or several benches at once) preempts the process for tens of milliseconds at a
    # time, which no bot can prevent, and a test of that would only measure the load.
    budget_ms = 20.0

    class Timed(SearchBot):
        def __init__(self) -> None:
            super().__init__(budget_ms=budget_ms)
            self.clock = time.thread_time
            self.searched: list[int] = []

        def decide(self, obs: Observation) -> Action:
            action = super().decide(obs)
            self.searched.append(self.last_iterations)
            return action

    player = LocalPlayer(Timed)
    result = play_match([player, LocalPlayer(HeuristicBot)], seed=99, hands=6)
    assert result.faults == []
    bot = player.bot
    assert isinstance(bot, Timed)
    assert max(bot.searched) > 1, "the budget allowed no search at all"
    slowest = max(cpu for _, cpu in bot.timings) * 1000
    assert slowest <= budget_ms * 1.1, f"a decision took {slowest:.1f} ms of CPU time"


def test_budget_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BUDGET_ENV, "35")
    assert SearchBot().budget == pytest.approx(0.035)
    assert SearchBot(budget_ms=50).budget == pytest.approx(0.05)
    monkeypatch.delenv(BUDGET_ENV)
    assert SearchBot().budget == pytest.approx(SearchBot.budget_ms / 1000)
    with pytest.raises(ValueError):
        SearchBot(budget_ms=0)


def test_deterministic_with_an_iteration_budget() -> None:
    def records() -> list[dict[str, object]]:
        bots: list[Callable[[], Bot]] = [
            partial(SearchBot, budget_ms=0, iterations=6),
            HeuristicBot,
            partial(SearchBot, budget_ms=0, iterations=4),
        ]
        result = play_match([LocalPlayer(b) for b in bots], 4242, 4, match_id="det")
        return [h.record.to_json() for h in result.hands]

    assert records() == records()


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_only_legal_actions(players: int) -> None:
    table: list[Callable[[], Bot]] = [partial(SearchBot, budget_ms=0, iterations=3)]
    table += [RandomBot, HeuristicBot] * 3
    result = play_match([LocalPlayer(f) for f in table[:players]], 7 * players, 5)
    assert result.faults == []


@pytest.mark.parametrize(
    "rules",
    [
        Rules(discard_pickup_may_return=True, book_layoff=True, ace_high_or_low=True),
        Rules(hit_lock=True, stock_reshuffle=True, meld_out_double=True, turn_cap=40),
    ],
    ids=["pickup-book-acehigh", "hitlock-reshuffle-double"],
)
def test_legal_under_rule_variants(rules: Rules) -> None:
    bots: list[Callable[[], Bot]] = [partial(SearchBot, budget_ms=0, iterations=3), GreedyBot, HeuristicBot]
    result = play_match([LocalPlayer(b) for b in bots], 3, 6, rules=rules)
    assert result.faults == []
    for obs in observations(3, 5, hands=3, rules=rules):
        world = Sampler(obs).sample_modelled(random.Random(0))
        assert_consistent(obs, world, uniform_rules=not rules.stock_reshuffle)
