"""The instruments behind the strength figures (bench/oracle.py, bench/calibration.py) measure
what they say: the split oracle goes down exactly when the oracle does, and the replayed
belief rebuilds the opponent's view so faithfully that the real deal passes its test."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from helpers.bench_modules import bench_module

from bots.search import SearchBot
from sdk.actions import DROP

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_replayed_belief_accepts_the_real_deal() -> None:
    # The opponent here is the heuristic bot, so in the true world it would have played its
    # last turn exactly as it did: its discard is deterministic (every position must pass);
    # its go-down test samples with its own random numbers, so a rare position may not.
    with bench_module(BENCH / "calibration.py", "bench_calibration_test") as calibration:
        checked = whole = 0
        for hand in range(40):
            for state, obs in calibration.heuristic_hand(11, hand):
                sampler = calibration.ReplayedSampler(obs)
                if not sampler.ready:
                    continue
                truth = sampler.build([list(h) for h in state.hands], list(state.stock))
                whole += sampler.played_so(truth)
                sampler.plain = False  # the discard alone
                assert sampler.played_so(truth), f"the real discard was refused at {obs.turn=}"
                checked += 1
        assert checked > 100
        assert whole >= 0.97 * checked


def test_replayed_belief_redraws_worlds_the_opponent_would_not_play() -> None:
    with bench_module(BENCH / "calibration.py", "bench_calibration_test") as calibration:
        rng = random.Random(4)
        worlds = redrawn = 0
        for hand in range(10):
            for _, obs in calibration.heuristic_hand(12, hand):
                sampler = calibration.ReplayedSampler(obs)
                for _ in range(10):
                    sampler.sample_modelled(rng)
                worlds += sampler.worlds
                redrawn += sampler.redrawn
        assert worlds > 100
        assert redrawn > worlds // 10  # the test bites: many belief worlds fail it


@pytest.mark.parametrize("which", ["DropOracleBot", "DrawOracleBot"])
def test_split_oracle_goes_down_as_its_half_says(which: str) -> None:
    # The drop oracle's go-down choice is the oracle's (same worlds, same random numbers);
    # the draw oracle's is the honest search's.
    with (
        bench_module(BENCH / "oracle.py", "bench_oracle_test") as oracle,
        bench_module(BENCH / "calibration.py", "bench_calibration_test") as calibration,
    ):
        seed = 21
        starts = [
            obs
            for hand in range(6)
            for _, obs in calibration.heuristic_hand(seed, hand)
            if obs.phase == "start" and obs.can_drop()
        ]
        assert len(starts) > 20

        def bot(cls: type[SearchBot]) -> SearchBot:
            b = cls(budget_ms=0, iterations=24)
            b.seed = seed  # type: ignore[attr-defined]  # as on_match_start sets it from the id
            return b

        split = bot(getattr(oracle, which))
        whole = bot(oracle.OracleBot if which == "DropOracleBot" else SearchBot)
        drops = 0
        for i, obs in enumerate(starts):
            split.rng, whole.rng = random.Random(i), random.Random(i)
            went_down = split.decide(obs) == DROP
            assert went_down == (whole.decide(obs) == DROP), f"start {i}: turn {obs.turn}"
            drops += went_down
        assert 0 < drops < len(starts)
