"""Helpers for the search bots' tests (no tests here): observations met in real play, and the
check that a sampled world agrees with what the observing seat saw."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from bots.greedy import GreedyBot
from bots.heuristic import HeuristicBot
from bots.search import SearchBot
from helpers.clocks import still
from sdk.actions import Action
from sdk.bot import Bot
from sdk.engine import HandState
from sdk.observation import Observation, observe
from sdk.referee import LocalPlayer, play_match
from sdk.rules import STANDARD, Rules

PUBLIC_FIELDS = (
    "hand",
    "hand_sizes",
    "stock_size",
    "discard",
    "table",
    "dealer",
    "to_act",
    "phase",
    "picked_up",
    "turn",
    "locked",
    "legal_actions",
)


def observations(players: int, seed: int, hands: int = 2, rules: Rules = STANDARD) -> list[Observation]:
    """Every observation the acting seats were given in a short match of greedy bots (they
    take discards, so opponents come to hold known cards)."""
    seen: list[Observation] = []

    class Recorder(GreedyBot):
        def act(self, obs: Observation) -> Action | int:
            seen.append(obs)
            return super().act(obs)

    play_match([LocalPlayer(Recorder) for _ in range(players)], seed, hands, rules=rules, clock=still)
    return seen


def assert_consistent(obs: Observation, world: HandState, uniform_rules: bool = True) -> None:
    view = observe(world, obs.seat)
    for name in PUBLIC_FIELDS:
        assert getattr(view, name) == getattr(obs, name), name
    seen = obs.cards_seen()
    for seat, hand in enumerate(world.hands):
        if seat == obs.seat:
            continue
        known = set(obs.opponent_known_cards(seat))
        assert known <= set(hand), "a card the seat saw an opponent pick up is not in its hand"
        if uniform_rules:
            assert not (set(hand) - known) & seen, "a card seen face up was dealt as hidden"
    if uniform_rules:
        assert not set(world.stock) & seen


def searched_observations(bot: type[SearchBot], players: int, seed: int) -> list[Observation]:
    """Every observation ``bot`` (a search bot, at 2 worlds a decision) met in seat 0 of a
    4-hand match against heuristic and greedy bots: mid-turn ones (after a pick-up) too."""
    seen: list[Observation] = []

    class Recorder(bot):  # type: ignore[valid-type,misc]
        def act(self, obs: Observation) -> Action | int:
            seen.append(obs)
            return super().act(obs)

    table: list[Callable[[], Bot]] = [partial(Recorder, budget_ms=0, iterations=2)]
    table += [HeuristicBot, GreedyBot] * 3
    play_match([LocalPlayer(f) for f in table[:players]], seed, 4, clock=still)
    return seen
