"""How well does a bot know whether it is lowest? Calibration of "go down" estimates.

    .venv/bin/python bench/calibration.py [--hands 600] [--positions 800] [--worlds 150]

Going down wins heads-up only with the strictly lowest total, so a bot's go-down decision
rests on one number: its estimate ``p`` of the chance that it is lowest. This plays
``--hands`` heads-up hands of the heuristic bot against itself, keeps every position where a
seat could go down (after the first round), and scores three estimates of ``p`` against the
truth (the opponent's real total) with the Brier score (mean squared error, lower is better)
and the log loss:

* ``heuristic``: the heuristic bot's own opponent model (bots/heuristic.py);
* ``uniform``: the search bot's worlds with the unseen cards dealt uniformly;
* ``modelled``: the search bot's worlds weighted by its card model (its default);
* ``belief``: the belief bot's worlds (bots/belief.py: card values by discards made, and the
  cards each opponent passed, discarded and picked up);
* ``replayed``: the belief bot's worlds, kept only if the heuristic bot, put in the
  opponent's seat with the world's cards, would have played its last turn as it did: not
  gone down at its start, and discarded the card it discarded (:class:`ReplayedSampler`).
  Here the opponent *is* the heuristic bot, so this is its exact policy read on the turn
  that says most about its hand now: what no model of opponents can beat on that turn.

Also printed: at the search bot's bar (``p >= 0.75``), how many positions it would go down
in and how many of those it is really lowest in.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bots.belief import BeliefSampler
from bots.heuristic import CardCounter, HeuristicBot
from bots.search import Sampler
from sdk.actions import Discard, Draw, Event, Layoff, Meld
from sdk.cards import Card
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.observation import Observation, observe
from sdk.outcome import Phase

Estimate = Callable[[Observation, random.Random, int], float]


def heuristic_hand(seed: int, hand: int) -> Iterator[tuple[HandState, Observation]]:
    """Every (true state, observation of the seat to act) of one heads-up hand of the
    heuristic bot against itself, each seat's random numbers seeded from the hand."""
    state = HandState.deal(deck_order(seed, hand), 2, hand % 2)
    bots = [HeuristicBot(), HeuristicBot()]
    for i, bot in enumerate(bots):
        bot.rng = random.Random(f"{seed}:{hand}:{i}")
    while state.outcome is None:
        seat = state.to_act
        obs = observe(state, seat, ("a", "b"), (0, 0), hand, 1)
        yield state, obs
        reply = bots[seat].act(obs)
        state.apply(obs.legal_actions[reply] if isinstance(reply, int) else reply, seat)


def positions(hands: int, seed: int) -> list[tuple[Observation, bool]]:
    """(observation, whether the seat is strictly lowest) at every start of a turn, from the
    second round on, where going down is allowed."""
    out: list[tuple[Observation, bool]] = []
    for h in range(hands):
        for state, obs in heuristic_hand(seed, h):
            if obs.phase == "start" and obs.turn >= 2 and obs.can_drop():
                mine = sum(c.value for c in state.hands[obs.seat])
                theirs = sum(c.value for c in state.hands[1 - obs.seat])
                out.append((obs, mine < theirs))
    return out


def heuristic(obs: Observation, rng: random.Random, worlds: int) -> float:
    bot = HeuristicBot()
    counter = CardCounter(obs, bot.horizon)
    known, unknown, draws, pool = bot.opponent_model(obs, counter, 1 - obs.seat)
    mine = obs.hand_value
    return sum(mine < known + sum(sorted(rng.sample(pool, draws))[:unknown]) for _ in range(worlds)) / worlds


def sampled(modelled: bool, kind: type[Sampler] = Sampler) -> Estimate:
    def estimate(obs: Observation, rng: random.Random, worlds: int) -> float:
        sampler = kind(obs)
        deal = sampler.sample_modelled if modelled else sampler.sample
        mine = obs.hand_value
        return sum(mine < sum(c.value for c in deal(rng).hands[1 - obs.seat]) for _ in range(worlds)) / worlds

    return estimate


class ReplayedSampler(BeliefSampler):
    """Belief worlds in which the heuristic bot in the opponent's seat would have played its
    last turn as it did (heads-up, at the start of the observer's turn). A world failing the
    test is redrawn, up to :attr:`tries` times (then the last one is kept)."""

    tries = 12

    def __init__(self, obs: Observation, drop_margin: float = 0.5) -> None:
        super().__init__(obs, drop_margin)
        self.guide = HeuristicBot()
        self.guide.rng = random.Random(1)
        self.redrawn = self.worlds = 0
        history = obs.history
        self.ready = (
            obs.phase == "start"
            and len(obs.hand_sizes) == 2
            and bool(history)
            and isinstance(history[-1].action, Discard)
        )
        if not self.ready:
            return
        self.opp = history[-1].seat
        last = history[-1].action
        assert isinstance(last, Discard)
        self.thrown = last.card
        draw_at = len(history) - 2
        while draw_at >= 0 and not (
            history[draw_at].seat == self.opp and isinstance(history[draw_at].action, Draw)
        ):
            draw_at -= 1
        self.ready = draw_at >= 0
        if not self.ready:
            return
        draw = history[draw_at]
        assert isinstance(draw.action, Draw)
        # The opponent's view of the history: the observer's stock draws hidden from it.
        self.history = tuple(
            Event(e.seat, e.action, None)
            if e.seat != self.opp and isinstance(e.action, Draw) and e.action.source == "stock"
            else e
            for e in history
        )
        self.draw_at = draw_at
        # Its own stock draw is hidden from the observer; the drop test needs its hand before
        # it, so that test runs only on turns without melds or lay-offs (most turns).
        self.plain = not any(isinstance(e.action, (Meld, Layoff)) for e in history[draw_at + 1 : -1])
        self.picked: Card | None = draw.card if draw.action.source == "discard" else None

    def _view(
        self, hands: list[list[Card]], pile: list[Card], stock: list[Card], upto: int, phase: Phase
    ) -> Observation:
        obs = self.obs
        state = HandState.from_position(
            hands, pile, stock, obs.table, dealer=obs.dealer, to_act=self.opp, rules=obs.rules
        )
        state.phase = phase
        state.turns = obs.turn - 1
        if phase is Phase.PLAY:
            state.picked = self.picked
        return dataclasses.replace(observe(state, self.opp), history=self.history[:upto])

    def played_so(self, world: HandState) -> bool:
        """Whether the heuristic bot holding the world's cards would have played so."""
        obs, opp = self.obs, self.opp
        hands = [list(h) for h in world.hands]
        hands[opp].append(self.thrown)
        view = self._view(hands, list(obs.discard[:-1]), list(world.stock), len(self.history) - 1, Phase.PLAY)
        reply = self.guide.act(view)
        if (view.legal_actions[reply] if isinstance(reply, int) else reply) != Discard(self.thrown):
            return False
        if not self.plain:
            return True
        # Its turn's start: without the card it drew. A stock draw is one of its unknown
        # cards: the lowest of them (the case least likely to have gone down).
        if self.picked is not None:
            drawn = self.picked
        else:
            known = self.known[opp]  # the Sampler's: its pick-ups still in hand
            drawn = min((c for c in hands[opp] if c not in known), key=lambda c: c.value)
        hands[opp].remove(drawn)
        pile = list(obs.discard[:-1])
        stock = list(world.stock)
        if self.picked is not None:
            pile.append(drawn)
        else:
            stock.insert(0, drawn)
        view = self._view(hands, pile, stock, self.draw_at, Phase.START)
        if not view.can_drop():
            return True
        return self.guide.drop_value(view, CardCounter(view, self.guide.horizon)) < self.guide.drop_margin

    def sample_modelled(self, rng: random.Random) -> HandState:
        world = super().sample_modelled(rng)
        if not self.ready:
            return world
        self.worlds += 1
        for _ in range(self.tries):
            if self.played_so(world):
                break
            self.redrawn += 1
            world = super().sample_modelled(rng)
        return world


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=600)
    parser.add_argument("--positions", type=int, default=800)
    parser.add_argument("--worlds", type=int, default=150)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args(argv)
    cases = positions(args.hands, args.seed)[: args.positions]
    lowest = sum(truth for _, truth in cases)
    print(f"{len(cases)} positions from {args.hands} heads-up heuristic hands; lowest in {lowest}")
    print(f"{'estimate':<10} {'Brier':>7} {'log loss':>9}   go down at p >= 0.75: positions, really lowest")
    estimates = (
        ("heuristic", heuristic),
        ("uniform", sampled(False)),
        ("modelled", sampled(True)),
        ("belief", sampled(True, BeliefSampler)),
        ("replayed", sampled(True, ReplayedSampler)),
    )
    for name, estimate in estimates:
        rng = random.Random(3)
        brier = loss = 0.0
        drops = right = 0
        for obs, truth in cases:
            p = estimate(obs, rng, args.worlds)
            brier += (p - truth) ** 2
            q = min(max(p, 0.01), 0.99)
            loss -= math.log(q if truth else 1 - q)
            if p >= 0.75:
                drops += 1
                right += truth
        n = len(cases)
        share = right / max(drops, 1)
        print(f"{name:<10} {brier / n:>7.4f} {loss / n:>9.4f}   {drops:>5}, {right} ({share:.0%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
