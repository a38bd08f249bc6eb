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
  cards each opponent passed, discarded and picked up).

Also printed: at the search bot's bar (``p >= 0.75``), how many positions it would go down
in and how many of those it is really lowest in.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bots.belief import BeliefSampler
from bots.heuristic import CardCounter, HeuristicBot
from bots.search import Sampler
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.observation import Observation, observe

Estimate = Callable[[Observation, random.Random, int], float]


def positions(hands: int, seed: int) -> list[tuple[Observation, bool]]:
    """(observation, whether the seat is strictly lowest) at every start of a turn, from the
    second round on, where going down is allowed."""
    out: list[tuple[Observation, bool]] = []
    for h in range(hands):
        state = HandState.deal(deck_order(seed, h), 2, h % 2)
        bots = [HeuristicBot(), HeuristicBot()]
        for i, bot in enumerate(bots):
            bot.rng = random.Random(f"{seed}:{h}:{i}")
        while state.outcome is None:
            seat = state.to_act
            obs = observe(state, seat, ("a", "b"), (0, 0), h, hands)
            if obs.phase == "start" and obs.turn >= 2 and obs.can_drop():
                mine = sum(c.value for c in state.hands[seat])
                theirs = sum(c.value for c in state.hands[1 - seat])
                out.append((obs, mine < theirs))
            reply = bots[seat].act(obs)
            state.apply(obs.legal_actions[reply] if isinstance(reply, int) else reply, seat)
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
