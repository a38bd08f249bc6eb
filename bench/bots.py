"""House-bot strength ladder: heuristic vs greedy vs random, heads-up, in duplicate.

    .venv/bin/python bench/bots.py [--hands 2000] [--seed 1] [--jobs 2]

Duplicate format: every deal is played once per seating, with the same seed, so each bot
holds every hand of the deal once and card luck cancels. One *sample* is a deal: the hero's
chips summed over its seatings (heads-up: the two mirrored hands). Printed per pairing:

* mean chips per hand for the hero, with a 95% confidence interval over deals;
* an Elo-style difference: each deal scores 1 for the hero if its summed chips are positive,
  1/2 if zero, 0 if negative; the mean score ``p`` maps to ``400 * log10(p / (1 - p))``, and
  the interval is the normal 95% interval on ``p`` mapped the same way.

``--hands`` counts deals (2,000 deals are 4,000 hands heads-up). The helpers here are reused
by ``bench/search.py``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, and this file (bots.py) would
# shadow the ``bots`` package: put the repository root there instead.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from sdk.dealing import derive_seed  # noqa: E402
from sdk.players import load_bot_class  # noqa: E402
from sdk.referee import LocalPlayer, RefereeConfig, play_match  # noqa: E402

Z95 = 1.959963984540054


@dataclass
class DuplicateResult:
    """The hero's chips per deal (summed over its seatings) plus what the referee measured."""

    hero: str
    villain: str
    players: int
    deal_chips: list[int] = field(default_factory=list)
    hero_decision_us: list[int] = field(default_factory=list)
    hero_cpu_us: list[int] = field(default_factory=list)  # when the hero records it (search)
    faults: int = 0

    @property
    def hands(self) -> int:
        return len(self.deal_chips) * self.players

    def merge(self, other: DuplicateResult) -> None:
        self.deal_chips += other.deal_chips
        self.hero_decision_us += other.hero_decision_us
        self.hero_cpu_us += other.hero_cpu_us
        self.faults += other.faults


def mean_ci(samples: Sequence[float]) -> tuple[float, float, float]:
    """Mean and its normal 95% interval."""
    n = len(samples)
    mean = statistics.fmean(samples)
    half = Z95 * statistics.stdev(samples) / math.sqrt(n) if n > 1 else math.inf
    return mean, mean - half, mean + half


def elo_of(score: float) -> float:
    score = min(max(score, 1e-6), 1 - 1e-6)
    return 400 * math.log10(score / (1 - score))


def elo_ci(deal_chips: Sequence[int]) -> tuple[float, float, float]:
    """Elo-style difference from the per-deal win/draw/loss score, with its 95% interval."""
    scores = [1.0 if c > 0 else 0.5 if c == 0 else 0.0 for c in deal_chips]
    p, lo, hi = mean_ci(scores)
    return elo_of(p), elo_of(lo), elo_of(hi)


def play_chunk(hero: str, villain: str, players: int, deals: int, seed: int) -> DuplicateResult:
    """``deals`` deals of the match ``seed``, each played with the hero in every seat (and the
    villain, one fresh instance per seat, everywhere else)."""
    hero_cls, villain_cls = load_bot_class(hero), load_bot_class(villain)
    out = DuplicateResult(hero, villain, players, [0] * deals)
    config = RefereeConfig(decision_deadline_ms=10_000)  # measure time, never fault on load
    for hero_seat in range(players):
        seats = [LocalPlayer(hero_cls if s == hero_seat else villain_cls) for s in range(players)]
        result = play_match(seats, seed, deals, match_id=f"dup-{seed}-{hero_seat}", config=config)
        out.faults += len(result.faults)
        timings = getattr(seats[hero_seat].bot, "timings", [])  # SearchBot: (wall, CPU) seconds
        out.hero_cpu_us += [round(cpu * 1e6) for _, cpu in timings]
        for h, log in enumerate(result.hands):
            assert log.record.outcome is not None
            out.deal_chips[h] += log.record.outcome["payoffs"][hero_seat]
            for (seat, _), us in zip(log.record.actions, log.latencies_us, strict=False):
                if seat == hero_seat:
                    out.hero_decision_us.append(us)
    return out


def run_duplicate(
    hero: str, villain: str, players: int, deals: int, seed: int, *, jobs: int = 1, chunk: int = 100
) -> DuplicateResult:
    """Play ``deals`` duplicate deals, in chunks (one seeded match each) over ``jobs`` processes."""
    sizes = [min(chunk, deals - start) for start in range(0, deals, chunk)]
    args = [
        (hero, villain, players, n, derive_seed(seed, f"{hero}/{villain}/{players}/{i}"))
        for i, n in enumerate(sizes)
    ]
    total = DuplicateResult(hero, villain, players)
    if jobs <= 1:
        parts = [play_chunk(*a) for a in args]
    else:
        with ProcessPoolExecutor(jobs) as pool:
            parts = list(pool.map(play_chunk, *zip(*args, strict=True)))
    for part in parts:
        total.merge(part)
    return total


def report(result: DuplicateResult) -> str:
    per_hand = [c / result.players for c in result.deal_chips]
    m, lo, hi = mean_ci(per_hand)
    e, elo_lo, elo_hi = elo_ci(result.deal_chips)
    wins = sum(c > 0 for c in result.deal_chips)
    ties = sum(c == 0 for c in result.deal_chips)
    return (
        f"{result.hero:>9} vs {result.villain:<9} {result.players} seats  {len(result.deal_chips)} deals "
        f"({result.hands} hands)  chips/hand {m:+.3f} [{lo:+.3f}, {hi:+.3f}]  "
        f"Elo {e:+.0f} [{elo_lo:+.0f}, {elo_hi:+.0f}]  deals won/tied/lost "
        f"{wins}/{ties}/{len(result.deal_chips) - wins - ties}  faults {result.faults}"
    )


PAIRINGS = (("greedy", "random"), ("heuristic", "greedy"), ("heuristic", "random"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=2000, help="duplicate deals per pairing")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument(
        "--pairs",
        nargs="*",
        default=None,
        metavar="HERO,VILLAIN",
        help="pairings to play (default: greedy,random heuristic,greedy heuristic,random)",
    )
    args = parser.parse_args(argv)
    pairings = [tuple(p.split(",", 1)) for p in args.pairs] if args.pairs else PAIRINGS
    for hero, villain in pairings:
        started = time.perf_counter()
        result = run_duplicate(hero, villain, 2, args.hands, args.seed, jobs=args.jobs)
        print(f"{report(result)}  ({time.perf_counter() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    from arena.processes import ensure_watched  # here: its path is fixed above

    ensure_watched()  # nothing it starts outlives it, however it ends (arena/processes.py)
    raise SystemExit(main())
