#!/usr/bin/env python3
"""How far above the heuristic bot can a bot get at all? The search bot with perfect knowledge.

    .venv/bin/python bench/oracle.py [--hands 400] [--players 2] [--see hands all] [--jobs 2]

The search bot (``bots/search.py``, same budget, same rollouts, same go-down bar) is given
the truth instead of sampled worlds: every world it searches holds the opponents' real
hands (``--see hands``; the stock is shuffled, as it does not know the order), or the real
hands and the real stock order too (``--see all``, so its rollouts see the future), or the
real hands only when a turn starts (``--see start``: go down, or where to draw from), or for
one of those two questions alone (``--see drop``, ``--see draw``). It is
scored against the heuristic bot exactly as ``bench/search.py`` scores the honest search bot
(duplicate deals, per-deal Elo-style score), so the two are directly comparable.

No honest bot knows more than this one, so its margin is an estimate of the ceiling for
search of this kind: if it cannot reach a target, better inference about the hidden cards
cannot either. (A better rollout policy or go-down rule could still move the ceiling.)

The oracle learns the deal by re-dealing the match seed, which ``bench/bots.py`` writes into
the match id. This is a measuring instrument, never a bot to serve: a real bot gets no seed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import sys
import time
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bots.search import RolloutPolicy, Sampler, SearchBot
from sdk.actions import DROP, Action
from sdk.bot import MatchInfo
from sdk.cards import Card
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.observation import Observation


def _bench_search() -> ModuleType:
    # bench/ is not a package; bench/search.py loads bench/bots.py (the duplicate runner).
    path = Path(__file__).resolve().parent / "search.py"
    spec = importlib.util.spec_from_file_location("bench_search", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_bots = _bench_search().bench_bots


def true_state(seed: int, obs: Observation) -> HandState:
    """The referee's state at ``obs``: the hand re-dealt from the seed, its history replayed
    (another seat's hidden stock draw takes the real top card)."""
    state = HandState.deal(deck_order(seed, obs.hand_index), len(obs.hand_sizes), obs.dealer, obs.rules)
    for event in obs.history:
        state.apply(event.action, event.seat)
    if sorted(state.hands[obs.seat]) != sorted(obs.hand) or state.to_act != obs.to_act:
        raise AssertionError(f"re-dealt state does not match the observation at hand {obs.hand_index}")
    return state


class OracleSampler(Sampler):
    """Every world is the true one: the real hands, and the real stock or a shuffle of it."""

    def __init__(self, obs: Observation, truth: HandState, see_stock: bool, drop_margin: float) -> None:
        super().__init__(obs, drop_margin)
        self.hands: list[list[Card]] = [list(h) for h in truth.hands]
        self.stock: list[Card] = list(truth.stock)
        self.see_stock = see_stock

    def sample(self, rng: random.Random) -> HandState:
        stock = list(self.stock)
        if not self.see_stock:
            rng.shuffle(stock)
        return self.build([list(h) for h in self.hands], stock)

    sample_modelled = sample


class OracleBot(SearchBot):
    """The search bot searching the true position (see the module docstring)."""

    name = "oracle"
    see_stock = False

    def on_match_start(self, info: MatchInfo) -> None:
        super().on_match_start(info)
        self.seed = bench_match_seed(info.match_id)

    def sampler(self, obs: Observation) -> Sampler:
        truth = true_state(self.seed, obs)
        return OracleSampler(obs, truth, self.see_stock, self.rollout_drop_margin)


class StartOracleBot(OracleBot):
    """The oracle at the start of its turns only (go down, or where to draw from); its
    discards are searched over honest worlds. Shows how much of the gap is those choices."""

    name = "oracle-start"

    def sampler(self, obs: Observation) -> Sampler:
        return super().sampler(obs) if obs.phase == "start" else SearchBot.sampler(self, obs)


class _SplitStartOracleBot(StartOracleBot):
    """The oracle for one of the two questions at a turn's start (go down, or where to draw
    from), the honest worlds for the other; everything else honest (its sampler is the start
    oracle's). Each start searches twice, with the full budget each time (this is a measuring
    instrument)."""

    oracle_drops = True

    def search(
        self,
        obs: Observation,
        sampler: Sampler,
        base: RolloutPolicy,
        candidates: list[Action],
        rng: random.Random,
        started: float,
    ) -> Action:
        if obs.phase != "start":  # a discard: the sampler is already the honest one
            return super().search(obs, sampler, base, candidates, rng, started)
        honest = SearchBot.sampler(self, obs)
        if DROP not in candidates:  # where to draw from is the only question
            only = honest if self.oracle_drops else sampler
            return super().search(obs, only, base, candidates, rng, started)
        first, second = (sampler, honest) if self.oracle_drops else (honest, sampler)
        choice = super().search(obs, first, base, candidates, rng, started)
        if choice == DROP:
            return DROP
        playing = [a for a in candidates if a != DROP]
        if len(playing) == 1:
            return playing[0]
        return super().search(obs, second, base, playing, rng, self.clock())


class DropOracleBot(_SplitStartOracleBot):
    """Goes down when the oracle would; draws as the honest search does."""

    name = "oracle-drop"


class DrawOracleBot(_SplitStartOracleBot):
    """Goes down when the honest search would; draws as the oracle does."""

    name = "oracle-draw"
    oracle_drops = False


class FullOracleBot(OracleBot):
    """The oracle that also knows the stock's order."""

    name = "oracle-all"
    see_stock = True


def bench_match_seed(match_id: str) -> int:
    # bench/bots.py's play_chunk names its matches dup-{seed}-{hero seat}.
    prefix, seed, _seat = match_id.split("-")
    if prefix != "dup":
        raise ValueError(f"not a bench/bots.py match id: {match_id!r}")
    return int(seed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=400, help="duplicate deals")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument(
        "--see",
        nargs="+",
        choices=("hands", "all", "start", "drop", "draw"),
        default=["hands", "all"],
        help="hands: the opponents' hands; all: and the stock order; start: hands, at turn starts "
        "only; drop / draw: hands, for going down / for where to draw from only",
    )
    parser.add_argument("--budget-ms", type=float, default=200.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--villain", default="heuristic")
    args = parser.parse_args(argv)
    os.environ["TONK_SEARCH_BUDGET_MS"] = str(args.budget_ms)
    specs = {
        "hands": f"{__name__}:OracleBot",
        "all": f"{__name__}:FullOracleBot",
        "start": f"{__name__}:StartOracleBot",
        "drop": f"{__name__}:DropOracleBot",
        "draw": f"{__name__}:DrawOracleBot",
    }
    for see in args.see:
        started = time.perf_counter()
        result = bench_bots.run_duplicate(
            specs[see], args.villain, args.players, args.hands, args.seed, jobs=args.jobs, chunk=25
        )
        elapsed = time.perf_counter() - started
        print(f"sees {see:>5}: {bench_bots.report(result)}  ({elapsed:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
