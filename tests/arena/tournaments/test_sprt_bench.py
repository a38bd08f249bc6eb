"""bench/sprt_checks.py cannot fool itself: its vectorised SPRT decides on the arena's own LLR,
its vectorised duplicate verdict is sdk.compare's, its exact enumeration agrees with a plain
one over every count vector, and a simulated SPRT's verdicts are those of the arena's
``look`` played pair batch by pair batch."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
from helpers.bench_modules import bench_module
from helpers.paths import ROOT

from arena.tournaments.sprt import look
from sdk.compare import pair_test


def _compositions(n: int, parts: int = 5) -> Iterator[tuple[int, ...]]:
    if parts == 1:
        yield (n,)
        return
    for first in range(n + 1):
        for rest in _compositions(n - first, parts - 1):
            yield (first, *rest)


def test_the_bench_measures_the_arenas_rules() -> None:
    with bench_module(ROOT / "bench" / "sprt_checks.py", "bench_sprt_checks") as bench:
        rng = np.random.default_rng(3)
        bench.check_llrs(rng)  # raises if its LLR is not the arena's
        bench.check_verdict(rng)  # ... or its verdict not sdk.compare's
        # The exact rate, grouped as the bench groups the count vectors, is the plain sum.
        p = bench.shape("skewed, 72% split", 0.0)
        for n in (3, 9):
            plain = 0.0
            for counts in _compositions(n):
                terms = zip(counts, p, strict=True)
                log = math.lgamma(n + 1) + sum(c * math.log(q) - math.lgamma(c + 1) for c, q in terms)
                if bench.old_says_better(np.array([counts]))[0]:
                    plain += math.exp(log)
            assert abs(bench.exact_rate(p, n, bench.old_says_better) - plain) < 1e-12
        # The duplicate verdict it enumerates is pair_test's, count vector by count vector.
        for counts in _compositions(8):
            said = bool(bench.says_better(np.array([counts]))[0])
            assert said == (pair_test(counts).better is not None), counts
        # A simulated test stops where the arena's look would, batch by batch.
        p = bench.shape("symmetric, 65% split", 20.0)
        verdicts, pairs = bench.simulate(np.random.default_rng(5), p, 40)
        assert set(verdicts) <= {0, 1} and (pairs % bench.BATCH == 0).all()
        replay = np.random.default_rng(5)
        counts = np.zeros((40, 5), dtype=np.int64)
        live = list(range(40))
        seen: dict[int, tuple[int, int]] = {}
        n = 0
        while live:
            counts[live] += replay.multinomial(bench.BATCH, p, size=len(live))
            n += bench.BATCH
            for i in list(live):
                value, lower, upper = look([int(c) for c in counts[i]], 0.0, 20.0, 0.05, 0.05)
                if value >= upper or value <= lower:
                    seen[i] = (int(value >= upper), n)
                    live.remove(i)
        assert [seen[i] for i in range(40)] == list(zip(verdicts.tolist(), pairs.tolist(), strict=True))
