#!/usr/bin/env python3
"""What one rating update's intervals cost at 10,000 bots (issue #36): ``intervals.update_core``
on a core of that size, against a product of the same core with one vector (the cheapest
pass over it) in the same run.

    .venv/bin/python bench/core_update.py [--bots 10000] [--pairs 64] [--cells 128] [--seed 0]

The core, the pool's inverse and the new pairs and meat cells are drawn from ``--seed``
(their values change no cost: the work is the low-rank term of rank ``2 pairs + cells'
rows`` added to every cell). Each is timed twice, the second reported (the first pays for
the pages of a new 800 MB array).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from arena.ratings import intervals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=64, help="new pairs of pool members (64 results)")
    parser.add_argument("--cells", type=int, default=128, help="new meat cells")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n = args.bots
    core = rng.standard_normal((n, n))
    core = (core + core.T) / 2
    q = rng.standard_normal((n, n)) * 1e-3
    member = np.ones(n, dtype=bool)
    a = rng.integers(0, n, args.pairs)
    b = (a + 1 + rng.integers(0, n - 1, args.pairs)) % n
    pairs = (np.minimum(a, b), np.maximum(a, b), np.full(args.pairs, 0.2))
    delta = (rng.integers(0, n, args.cells), rng.integers(0, n, args.cells), rng.standard_normal(args.cells))
    centre = np.full(n, 1.0 / n)
    update = product = 0.0
    for _ in range(2):
        started = time.perf_counter()
        intervals.update_core(core, q, q, member, pairs, delta)
        update = time.perf_counter() - started
        started = time.perf_counter()
        core @ centre
        product = time.perf_counter() - started
    rank = 2 * args.pairs + len(np.unique(np.concatenate([delta[0], delta[1]])))
    print(f"{n:,} bots, {args.pairs} new pairs, {args.cells} meat cells (rank {rank}), seed {args.seed}: "
          f"update_core {update:.2f} s, the core times a vector {product * 1000:.0f} ms "
          f"(baseline), ratio {update / product:.0f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
