"""The search bot: its sampled worlds agree with what the seat saw, it keeps to its time
budget, it is deterministic with an iteration budget, and it only plays legal actions."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from functools import partial

import pytest
from helpers.clocks import still
from helpers.worlds import assert_consistent, observations, searched_observations
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bots.greedy import GreedyBot
from bots.heuristic import HeuristicBot
from bots.random_bot import RandomBot
from bots.search import BUDGET_ENV, RolloutPolicy, Sampler, SearchBot
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


class _Ticks:
    """A clock that moves ``step`` seconds each time it is read: the search's stopping logic,
    tested without measuring a machine's speed or load (that is bench/strength.py's job)."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step
        self.readings: list[float] = []

    def __call__(self) -> float:
        self.now += self.step
        self.readings.append(self.now)
        return self.now


class _Recording(SearchBot):
    """Records each search: (worlds, work, candidates) and, on a :class:`_Ticks` clock, the
    clock time it took."""

    ticks: float | None = None  # a _Ticks step to swap in for the clock

    def __init__(self, budget_ms: float) -> None:
        super().__init__(budget_ms=budget_ms)
        if self.ticks is not None:
            self.clock = _Ticks(self.ticks)
        self.spent: list[tuple[int, int, int]] = []
        self.used: list[float] = []

    def search(
        self,
        obs: Observation,
        sampler: Sampler,
        base: RolloutPolicy,
        candidates: list[Action],
        rng: random.Random,
        started: float,
    ) -> Action:
        action = super().search(obs, sampler, base, candidates, rng, started)
        self.spent.append((self.last_iterations, self.last_work, len(candidates)))
        if isinstance(self.clock, _Ticks):
            self.used.append(self.clock.now - started)
        return action


def test_work_budget_is_respected() -> None:
    # The budget is counted in rollout turns, so this is exact on any machine: a search stops
    # before the world that would start past its budget, overshooting by at most one world.
    budget_ms = 20.0
    player = LocalPlayer(partial(_Recording, budget_ms=budget_ms))
    result = play_match([player, LocalPlayer(HeuristicBot)], seed=99, hands=6, clock=still)
    assert result.faults == []
    bot = player.bot
    assert isinstance(bot, _Recording)
    assert SearchBot.work_per_ms is not None
    budget = budget_ms * SearchBot.budget_use * SearchBot.work_per_ms
    searched = bot.spent
    assert max(w for w, _, _ in searched) > 1, "the budget allowed no search at all"
    for _, work, candidates in searched:
        assert work <= budget + candidates * (SearchBot.max_rollout_turns + 1)
    # ...and it is the budget that stops a search, not a cap on worlds.
    assert any(work >= budget for _, work, _ in searched)


@pytest.mark.parametrize("work_per_ms", [None, 1e9])
def test_clock_stops_the_search(work_per_ms: float | None) -> None:
    # On the clock alone (work_per_ms None), a search stops within its budget; with a work
    # budget it cannot reach (a badly overloaded machine), the clock stops it at the safety
    # share of the match's decision deadline.
    step = 0.0002

    class Clocked(_Recording):
        ticks = step

    Clocked.work_per_ms = work_per_ms
    player = LocalPlayer(partial(Clocked, budget_ms=20.0))
    result = play_match([player, LocalPlayer(HeuristicBot)], seed=99, hands=3, clock=still)
    assert result.faults == []
    bot = player.bot
    assert isinstance(bot, Clocked)
    assert bot.used and max(w for w, _, _ in bot.spent) > 1
    limit = bot.budget * bot.budget_use if work_per_ms is None else bot.hard_stop
    assert limit is not None
    assert max(bot.used) <= limit + 2 * step
    assert max(bot.used) >= limit - 4 * step * 20, "the clock never came near the limit"


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
        result = play_match([LocalPlayer(b) for b in bots], 4242, 4, match_id="det", clock=still)
        return [h.record.to_json() for h in result.hands]

    assert records() == records()


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_only_legal_actions(players: int) -> None:
    table: list[Callable[[], Bot]] = [partial(SearchBot, budget_ms=0, iterations=3)]
    table += [RandomBot, HeuristicBot] * 3
    result = play_match([LocalPlayer(f) for f in table[:players]], 7 * players, 5, clock=still)
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
    result = play_match([LocalPlayer(b) for b in bots], 3, 6, rules=rules, clock=still)
    assert result.faults == []
    for obs in observations(3, 5, hands=3, rules=rules):
        world = Sampler(obs).sample_modelled(random.Random(0))
        assert_consistent(obs, world, uniform_rules=not rules.stock_reshuffle)
