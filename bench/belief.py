#!/usr/bin/env python3
"""How well does each search bot's belief read the opponents' hands? A measure without games.

    .venv/bin/python bench/belief.py [--hands 600] [--players 2 3] [--worlds 60]

Heads-up nine hands in ten end with a winning drop, and a search bot's drop is settled
exactly in its sampled worlds: its strength turns on how well those worlds say "am I the
lowest?". From heuristic-bot play (a position is a seat at the start of its turn, from the
second round on, 30% of them), each belief estimates that chance from ``--worlds`` worlds,
and is scored against the truth: Brier score (0 is perfect knowledge, the oracle's; always
saying the base rate scores ``p (1 - p)``) and log loss. The beliefs: ``uniform`` (unseen
cards dealt at random), ``search`` (``bots/search.py``'s value model and drop filter) and
``belief`` (``bots/belief.py``: values by discards made, passes, discards, pick-ups).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bots.belief import BeliefSampler
from bots.heuristic import HeuristicBot
from bots.search import Sampler
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.observation import Observation, observe
from sdk.rules import STANDARD

Position = tuple[Observation, bool]  # a seat's view, and whether it is really the lowest


def positions(players: int, hands: int, seed: int) -> list[Position]:
    rng = random.Random(seed)
    bots = [HeuristicBot() for _ in range(players)]
    for bot in bots:
        bot.rng = random.Random(rng.random())
    out: list[Position] = []
    for h in range(hands):
        state = HandState.deal(deck_order(seed, h), players, h % players, STANDARD)
        while state.outcome is None:
            seat = state.to_act
            obs = observe(state, seat)
            if obs.phase == "start" and obs.turn >= players and rng.random() < 0.3:
                totals = [sum([c.value for c in hand]) for hand in state.hands]
                out.append((obs, all(totals[seat] < t for s, t in enumerate(totals) if s != seat)))
            reply = bots[seat].act(obs)
            state.apply(obs.legal_actions[reply] if isinstance(reply, int) else reply)
    return out


def score(deal: Callable[[Observation, random.Random], HandState], found: list[Position], worlds: int) -> str:
    rng = random.Random(5)
    brier = loss = 0.0
    for obs, lowest in found:
        mine = obs.hand_value
        hits = 0
        for _ in range(worlds):
            world = deal(obs, rng)
            others = [sum([c.value for c in h]) for s, h in enumerate(world.hands) if s != obs.seat]
            hits += all(mine < t for t in others)
        p = (hits + 0.5) / (worlds + 1)
        brier += (p - lowest) ** 2
        loss -= math.log(p if lowest else 1.0 - p)
    return f"Brier {brier / len(found):.4f}  log loss {loss / len(found):.4f}"


BELIEFS: dict[str, Callable[[Observation, random.Random], HandState]] = {
    "uniform": lambda obs, rng: Sampler(obs).sample(rng),
    "search": lambda obs, rng: Sampler(obs).sample_modelled(rng),
    "belief": lambda obs, rng: BeliefSampler(obs).sample_modelled(rng),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=600)
    parser.add_argument("--players", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--worlds", type=int, default=60)
    parser.add_argument("--seed", type=int, default=99)
    args = parser.parse_args(argv)
    for players in args.players:
        found = positions(players, args.hands, args.seed)
        rate = sum(low for _, low in found) / len(found)
        print(f"{players} seats: {len(found)} positions, lowest in {rate:.1%} "
              f"(base-rate Brier {rate * (1 - rate):.4f}; perfect knowledge 0)", flush=True)  # fmt: skip
        for name, deal in BELIEFS.items():
            started = time.perf_counter()
            print(f"  {name:>7}: {score(deal, found, args.worlds)}  ({time.perf_counter() - started:.0f} s)",
                  flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
