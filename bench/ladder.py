"""Simulate the continuous ladder: how many matches does each matchmaking need to find the top?

    .venv/bin/python bench/ladder.py            # 1,000 bots, SD 200, heads-up, one seed (~5 min)
    .venv/bin/python bench/ladder.py --quick    # 200 bots, the four worlds
    .venv/bin/python bench/ladder.py --full     # 1,000 bots, the four worlds, five seeds (hours here)
    .venv/bin/python bench/ladder.py --policies "" --real 5000   # the real RatingModel only
    .venv/bin/python bench/ladder_table.py      # docs/arena.md's table, from seeds 0-4

Everything is seeded (the worlds, the results, the matchmaker's randomness) and BLAS runs one
thread, so a seed gives the same numbers on every run. ``--cache FILE`` keeps the baselines'
runs (they do not depend on the matchmaker) while the matchmaker is being tuned.

A world is 1,000 (or ``--bots``) bots whose true strengths are drawn from a normal distribution
(SD 200 or 100 Elo) at heads-up or 3-seat tables. A table's result is Plackett-Luce on the
true strengths: each seat scores ``ELO_SCALE * strength + Gumbel noise``, so every pair of seats follows the
Bradley-Terry model the arena fits, exactly. A *match* here is one table (one Pick; the
rotations of a duplicate deal played at it count once): every policy is counted the same way.

Three policies fill the tables, each with the same rating machinery:

* ``matchmaking``: arena.ratings.matchmaking.choose_tables, in batches of ``--parallel``
  tables (the ladder's tables in flight, 64 per 1,000 bots: each bot at one table at a time,
  ratings as of the batch's start, match counts including the tables scheduled); it sees
  each rating's standard error relative to the board's mean, as the arena's model reports it;
* ``random``: uniform random tables;
* ``nearest``: Kaggle's way: a bot drawn uniformly, its opponents the nearest on the board.

The board is the arena's model, Bradley-Terry fitted by maximum likelihood on the pairwise
sums (``1/(n-1)`` per pair, as arena/ratings/model.py), with a faster stand-in for 1,000 bots
x millions of matches: between full fits each bot's rating takes a diagonal Newton step per
batch of results (the incremental update, scaled by its own information), and the full fit
(Newton over all bots, a weak N(1500, 1000) prior in place of the pool's bookkeeping for
not-yet-connected newcomers) runs at each checkpoint, geometrically spaced. ``--real`` reruns
a short horizon with arena.ratings.model.RatingModel itself and times its update and fit at 1,000 bots.

Criteria, at each checkpoint: (a) the true top 10 identified exactly (as a set), (b) at least
9 of the true top 10 in the board's top 10, (c) Spearman >= 0.95 over the whole board. The
matches needed are to reach *and hold*: the first checkpoint after which the criterion stays
true until the end of the run; a run goes on until every criterion has held for at least as
many matches again as it took to reach it (or ``--horizon``: then "not reached").
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

# One BLAS thread: a multi-threaded solve may sum in another order with another number of
# threads, and the matchmaking, which reads the refitted board, then diverges from there: a
# seed must give the same numbers everywhere. (Before numpy loads BLAS; an import, such as a
# test's, leaves its process alone.)
if __name__ == "__main__":
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = "1"

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from arena.ratings.matchmaking import (
    Candidate,
    MatchmakingSettings,
    choose_table,
    choose_tables,
)
from arena.ratings.model import ELO_SCALE, RatingModel

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The stand-in fit's prior precision (natural units): N(0, 1000 Elo), negligible after a match.
PRIOR = 1.0 / (ELO_SCALE * 1000.0) ** 2
CRITERIA = ("top 10 exact", ">= 9 of top 10", "Spearman >= 0.95")


class Board:
    """Pairwise sums of every result, and the ratings and variances the policies see."""

    def __init__(self, true: FloatArray, rng: np.random.Generator) -> None:
        n = len(true)
        self.n, self.true, self.rng = n, true, rng
        self.weights = np.zeros(n * n)  # flat: bincount adds into it directly
        self.points = np.zeros(n * n)
        self.games = np.zeros(n, dtype=np.int64)
        self.x = np.zeros(n)  # natural units
        # Each rating's own information (the Hessian's diagonal): the incremental step's scale.
        # (Not the marginal variance below, which holds the board's common shift: with it a
        # bot 3 Elo sure moved 14 Elo a game between fits at 200 bots, 3 at 1,000.)
        self.prec = np.full(n, PRIOR)
        # What the matchmaker sees: each rating's variance relative to the board's mean, as the
        # arena's model reports it (its mean is anchored at 1500). The plain marginal variance
        # also holds the whole board's common shift, which only the weak prior pins: about
        # 1000 / sqrt(n) Elo for every bot (71 at 200 bots), however many matches it played.
        self.rel_var = np.full(n, 1.0 / PRIOR)
        self.fit_seconds: list[float] = []

    def play(self, tables: IntArray) -> None:
        """Play tables (rows of bot indices): Plackett-Luce results, then the incremental step."""
        self.play_results(tables, ELO_SCALE * self.true[tables] + self.rng.gumbel(size=tables.shape))

    def play_results(self, tables: IntArray, util: FloatArray) -> None:
        """Add tables with their seats' final scores, and take the incremental step."""
        s = tables.shape[1]
        w = 1.0 / (s - 1)
        n = self.n
        grad = np.zeros(n)
        info = np.zeros(n)
        for a, b in zip(*np.triu_indices(s, 1), strict=True):
            i, j = tables[:, a], tables[:, b]
            won = (util[:, a] > util[:, b]).astype(np.float64)
            both = np.concatenate([i * n + j, j * n + i])
            scored = np.concatenate([won, 1.0 - won]) * w
            if len(both) * 50 < n * n:  # a few tables: add in place, not through an n x n bincount
                np.add.at(self.weights, both, w)
                np.add.at(self.points, both, scored)
            else:
                self.weights += np.bincount(both, minlength=n * n) * w
                self.points += np.bincount(both, scored, minlength=n * n)
            p = 1.0 / (1.0 + np.exp(self.x[j] - self.x[i]))
            grad += np.bincount(i, w * (won - p), minlength=n) - np.bincount(j, w * (won - p), minlength=n)
            curv = w * p * (1.0 - p)
            info += np.bincount(i, curv, minlength=n) + np.bincount(j, curv, minlength=n)
        self.games += np.bincount(tables.ravel(), minlength=n)
        self.prec += info
        self.rel_var = 1.0 / (1.0 / self.rel_var + info)
        self.x = self.x + np.clip(grad / self.prec, -1.0, 1.0)

    def refit(self) -> None:
        """The full fit: Newton to the maximum (warm start), then the variances."""
        start = time.perf_counter()
        n = self.n
        weights, points = self.weights.reshape(n, n), self.points.reshape(n, n)
        x = self.x - self.x.mean()
        for _ in range(50):
            p = 1.0 / (1.0 + np.exp(x[None, :] - x[:, None]))
            curv = weights * p * (1.0 - p)
            hess = -curv
            hess[np.diag_indices(n)] += curv.sum(axis=1) + PRIOR
            grad = (points - weights * p).sum(axis=1) - PRIOR * x
            step = np.clip(np.linalg.solve(hess, grad), -1.0, 1.0)  # undamped Newton can overshoot
            x = x + step
            if float(np.abs(step).max()) < 1e-7:
                break
        self.x = x
        self.prec = np.diag(hess).copy()
        cov = np.linalg.inv(hess)
        rows = cov.mean(axis=1)  # the variance of x_i - mean(x): the common shift taken out
        self.rel_var = np.maximum(np.diag(cov) - 2.0 * rows + rows.mean(), 1e-12)
        self.fit_seconds.append(time.perf_counter() - start)

    def elo(self) -> FloatArray:
        out: FloatArray = 1500.0 + self.x / ELO_SCALE
        return out

    def sd(self) -> FloatArray:
        """Standard errors in Elo, inf for a bot without a match."""
        out: FloatArray = np.where(self.games > 0, np.sqrt(self.rel_var) / ELO_SCALE, np.inf)
        return out


def ranks(values: FloatArray) -> FloatArray:
    out = np.empty(len(values))
    out[np.argsort(values)] = np.arange(len(values))
    return out


def criteria(board: Board, top_true: set[int], true_rank: FloatArray) -> tuple[bool, bool, bool]:
    x = board.x
    top = set(np.argsort(-x)[:10].tolist())
    hit = len(top & top_true)
    rho = float(np.corrcoef(ranks(x), true_rank)[0, 1])
    return hit == 10, hit >= 9, rho >= 0.95


# --- Policies: each plays ``count`` more tables on the board --------------------------------


Policy = Callable[[Board, int, int, np.random.Generator], float]  # returns scheduler seconds


def random_tables(board: Board, count: int, seats: int, rng: np.random.Generator) -> float:
    start = time.perf_counter()
    tables = np.argsort(rng.random((count, board.n)), axis=1)[:, :seats] if count * board.n < 5e6 else None
    if tables is None:  # large batches: draw with replacement, redraw rows that repeat a bot
        tables = rng.integers(0, board.n, (count, seats))
        while True:
            ordered = np.sort(tables, axis=1)
            bad = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
            if not bad.any():
                break
            tables[bad] = rng.integers(0, board.n, (int(bad.sum()), seats))
    spent = time.perf_counter() - start
    board.play(tables)
    return spent


def nearest_tables(board: Board, count: int, seats: int, rng: np.random.Generator, reach: int = 4) -> float:
    """A bot drawn uniformly, its opponents drawn from the ``reach`` nearest either side."""
    start = time.perf_counter()
    n = board.n
    order = np.argsort(-board.x)
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    focal = rng.integers(0, n, count)
    offsets = np.concatenate([np.arange(-reach, 0), np.arange(1, reach + 1)])
    picks = np.argsort(rng.random((count, len(offsets))), axis=1)[:, : seats - 1]
    at = pos[focal][:, None] + offsets[picks]
    at = np.where(at < 0, at + reach + 1, at)  # reflect off the ends of the board
    at = np.where(at >= n, at - reach - 1, at)
    tables = np.concatenate([focal[:, None], order[at]], axis=1)
    spent = time.perf_counter() - start
    board.play(tables)
    return spent


@dataclass
class Matchmaker:
    settings: MatchmakingSettings
    parallel: int
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    picks: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def __call__(self, board: Board, count: int, seats: int, _: np.random.Generator) -> float:
        spent = 0.0
        done = 0
        while done < count:
            batch = min(self.parallel, count - done)
            start = time.perf_counter()
            elo, sd, games = board.elo().tolist(), board.sd().tolist(), board.games.tolist()
            pool = [Candidate(i, i, elo[i], sd[i], games[i]) for i in range(board.n)]
            picks = choose_tables(pool, seats, self.rng, batch, self.settings)
            spent += time.perf_counter() - start
            for pick in picks:
                kind = pick.reason.split(" #")[0].split(":")[0]
                self.reasons[kind] = self.reasons.get(kind, 0) + 1
            board.play(np.array([p.bot_ids for p in picks], dtype=np.int64))
            done += len(picks)
            self.picks += len(picks)
        return spent


# --- Runs -----------------------------------------------------------------------------------


@dataclass
class Run:
    needed: list[int | None]  # per criterion: matches to reach and hold, None if not reached
    tables: int
    share_min: float
    share_max: float
    pick_ms: float
    fit_ms: float
    reasons: dict[str, int]


def held_from(series: list[tuple[int, tuple[bool, ...]]], k: int) -> int | None:
    """The first checkpoint after which criterion ``k`` stays true to the end."""
    first: int | None = None
    for tables, ok in series:
        if not ok[k]:
            first = None
        elif first is None:
            first = tables
    return first


def run(policy: Policy, true: FloatArray, seats: int, horizon: int, seed: int, growth: float) -> Run:
    rng = np.random.default_rng(seed)
    board = Board(true, rng)
    top_true = set(np.argsort(-true)[:10].tolist())
    true_rank = ranks(true)
    series: list[tuple[int, tuple[bool, ...]]] = []
    played, spent = 0, 0.0
    nxt = max(board.n // seats, 100)
    while True:
        step = min(nxt, horizon) - played
        while step > 0:  # the board's ratings move on between checkpoints (nearest uses them)
            chunk = min(step, max(2000, played // 20))
            spent += policy(board, chunk, seats, rng)
            played += chunk
            step -= chunk
        board.refit()
        series.append((played, criteria(board, top_true, true_rank)))
        needed = [held_from(series, k) for k in range(3)]
        if played >= horizon or all(t is not None and 2 * t <= played for t in needed):
            break
        nxt = int(played * growth) + 1
    share = board.games / board.games.mean()
    reasons = policy.reasons if isinstance(policy, Matchmaker) else {}
    return Run(
        needed,
        played,
        float(share.min()),
        float(share.max()),
        1e3 * spent / played,
        1e3 * statistics.median(board.fit_seconds),
        reasons,
    )


def world(bots: int, spread: float, seed: int) -> FloatArray:
    out: FloatArray = np.random.default_rng(1000 + seed).normal(0.0, spread, bots)
    return out


def fmt(t: int | None, horizon: int) -> str:
    return f"{t:>11,}" if t is not None else f"{'>' + format(horizon, ','):>11}"


def ratio(a: int | None, b: int | None, a_run: int, b_run: int) -> str:
    """a / b, or a bound when one of them was not reached in its run."""
    if a is None:
        return ">" + format(a_run / b, ".2f") if b is not None else "n/a"
    if b is None:
        return "<" + format(a / b_run, ".2f")
    return f"{a / b:.2f}"


def pick_cost(bots: int, seats: int, parallel: int, settings: MatchmakingSettings) -> dict[str, float]:
    """choose_table alone and choose_tables in batches, at this many bots, against random
    pairing's pick (``random.sample``) and building the pool of Candidates (which the ladder
    does anyway), all in the same process: medians in ms."""
    rng = random.Random(3)
    elo = [1500 + rng.gauss(0, 200) for _ in range(bots)]
    sd = [rng.uniform(10, 60) for _ in range(bots)]  # a board whose top line is unresolved
    games = [rng.randint(100, 300) for _ in range(bots)]

    def build() -> list[Candidate]:
        return [Candidate(i, i, elo[i], sd[i], games[i]) for i in range(bots)]

    pool = build()
    times: dict[str, list[float]] = {"build": [], "one": [], "batch": [], "random": []}
    for _ in range(30):
        start = time.perf_counter()
        build()
        times["build"].append(time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(10):
            choose_table(pool, seats, rng, settings)
        times["one"].append((time.perf_counter() - start) / 10)
        start = time.perf_counter()
        for _ in range(10):
            rng.sample(pool, seats)
        times["random"].append((time.perf_counter() - start) / 10)
        start = time.perf_counter()
        picks = choose_tables(pool, seats, rng, parallel, settings)
        times["batch"].append((time.perf_counter() - start) / len(picks))
    ms = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    print(
        f"\ncost of a pick at {bots} bots, {seats} seats (medians): choose_table {ms['one']:.3f} ms "
        f"(goal < 1 ms; random pairing's pick {1e3 * ms['random']:.1f} us, x{ms['one'] / ms['random']:.0f}; "
        f"building the pool of Candidates {ms['build']:.3f} ms, x{ms['one'] / ms['build']:.2f}), "
        f"choose_tables in batches of {parallel}: {ms['batch']:.3f} ms a table"
    )
    return ms


def staleness(bots: int, per_bot: int = 40) -> None:
    """The real model at ``bots`` bots: a full fit, and the incremental update after one more
    match, i.e. how stale the board is after a result (the live leaderboard updates then)."""
    rng = np.random.default_rng(4)
    true = world(bots, 200.0, 0)
    names = [f"bot-{i:04d}" for i in range(bots)]
    seats = np.argsort(rng.random((bots * per_bot // 2, bots)), axis=1)[:, :2]
    model = RatingModel()
    model.add_table(names, seats, ELO_SCALE * true[seats] + rng.gumbel(size=seats.shape))
    start = time.perf_counter()
    model.fit(pairwise=False)
    fitted = time.perf_counter() - start
    updates = []
    for _ in range(5):
        one = rng.choice(bots, 2, replace=False)[None, :]
        start = time.perf_counter()
        model.add_table(names, one, rng.gumbel(size=(1, 2)))
        model.update(pairwise=False)
        updates.append(time.perf_counter() - start)
    print(
        f"real RatingModel at {bots} bots, {model.total:,} matches: full fit {1e3 * fitted:.0f} ms, "
        f"one more match + incremental update {1e3 * statistics.median(updates):.0f} ms "
        f"(the board's staleness after a match; goal < 1 s)"
    )


def yn(flags: tuple[bool, ...]) -> str:
    return " ".join("yes" if f else "no" for f in flags)


def real(
    bots: int, spread: float, seats: int, tables: int, parallel: int, settings: MatchmakingSettings
) -> None:
    """The matchmaking on the arena's own RatingModel (incremental update after every batch of
    tables, a full fit once 5% of the matches are new, as the live leaderboard does), with the
    stand-in board fed the very same results beside it: how far apart the two boards are,
    and what the real model's update and fit cost at this size."""
    true = world(bots, spread, 0)
    rng = np.random.default_rng(0)
    board = Board(true, rng)
    model = RatingModel()
    names = [f"bot-{i:04d}" for i in range(bots)]
    code = {name: i for i, name in enumerate(names)}
    top_true = set(np.argsort(-true)[:10].tolist())
    true_rank = ranks(true)
    pick_rng = random.Random(0)
    z = 1.959963984540054
    elo, sd = np.full(bots, 1500.0), np.full(bots, np.inf)
    updates: list[float] = []
    fits: list[float] = []
    picks_s: list[float] = []
    played, fitted_at, nxt = 0, 0, 2000
    print(
        f"\n--real: {bots} bots, SD {spread:.0f}, {seats} seats, {tables:,} tables in batches of {parallel}"
    )
    print(f"{'tables':>8} {'real: (a) (b) (c)':>22} {'stand-in: (a) (b) (c)':>26} {'agreement rho':>14}")
    while played < tables:
        start = time.perf_counter()
        games = board.games.tolist()
        pool = [Candidate(i, i, float(elo[i]), float(sd[i]), games[i]) for i in range(bots)]
        picks = choose_tables(pool, seats, pick_rng, parallel, settings)
        picks_s.append((time.perf_counter() - start) / len(picks))
        at = np.array([p.bot_ids for p in picks], dtype=np.int64)
        # The same results for both boards: Board.play draws them, the model gets them too.
        util = ELO_SCALE * true[at] + rng.gumbel(size=at.shape)
        board.play_results(at, util)
        model.add_table(names, at, util)
        played += len(picks)
        start = time.perf_counter()
        if model.total - fitted_at >= 0.05 * model.total:
            table = model.fit(pairwise=False)
            fits.append(time.perf_counter() - start)
            fitted_at = model.total
        else:
            table = model.update(pairwise=False)
            updates.append(time.perf_counter() - start)
        elo[:], sd[:] = 1500.0, np.inf
        for r in table.ratings:
            i = code[r.bot]
            elo[i] = r.elo
            if r.low is not None and r.high is not None:
                sd[i] = (r.high - r.low) / (2 * z)
        if played >= nxt or played >= tables:
            nxt = int(played * 1.3)
            board.refit()
            mine = criteria(board, top_true, true_rank)
            board_x = board.x.copy()
            board.x = (elo - 1500.0) * ELO_SCALE
            theirs = criteria(board, top_true, true_rank)
            agree = float(np.corrcoef(ranks(board.x), ranks(board_x))[0, 1])
            board.x = board_x
            print(f"{played:>8,} {yn(theirs):>22} {yn(mine):>26} {agree:>14.4f}", flush=True)
    print(
        f"real model at {bots} bots: incremental update median {1e3 * statistics.median(updates):.0f} ms "
        f"(the board's staleness after a match; goal < 1 s), full fit median "
        f"{1e3 * statistics.median(fits):.0f} ms ({len(fits)} fits), "
        f"pick {1e3 * statistics.median(picks_s):.3f} ms"
    )


#: The worlds of the goal: (SD, seats), each at 200 and 1,000 bots and five seeds.
GRID = [(200.0, 2), (100.0, 2), (200.0, 3), (100.0, 3)]


def default_parallel(bots: int) -> int:
    """Tables in flight: 64 at 1,000 bots, in proportion below (at 200 bots 64 tables of one
    slot each would seat 64% of the pool every batch, so no bot could play 1.6x the mean)."""
    return max(1, 64 * bots // 1000)


def compare(
    bots: int,
    spread: float,
    seats: int,
    seed: int,
    *,
    horizon: int,
    growth: float,
    parallel: int,
    settings: MatchmakingSettings,
    policies: list[str],
    cache: Path | None = None,
    quiet: bool = False,
) -> dict[str, Run]:
    """One world, one seed: each policy's run. The baselines (random, nearest) do not depend on
    the matchmaker, so with ``cache`` their runs are kept in that JSON file by world, seed,
    horizon and growth, and read back instead of rerun (delete it after changing this bench)."""
    true = world(bots, spread, seed)
    gap = float(np.sort(true)[-10] - np.sort(true)[-11])
    if not quiet:
        print(f"\n{bots} bots, SD {spread:.0f}, {seats} seats, seed {seed} (true gap #10-#11: {gap:.1f} Elo)")
        print(f"  {'':<12}{'(a)':>11}{'(b)':>11}{'(c)':>11}  fairness, cost")
    stored: dict[str, dict[str, object]] = json.loads(cache.read_text()) if cache and cache.exists() else {}
    makers: dict[str, Callable[[], Policy]] = {
        "matchmaking": lambda: Matchmaker(settings, parallel, random.Random(seed)),
        "random": lambda: random_tables,
        "nearest": lambda: nearest_tables,
    }
    results: dict[str, Run] = {}
    for name in policies:
        key = f"{name}/{bots}/{spread:g}/{seats}/{seed}/{horizon}/{growth:g}"
        start = time.perf_counter()
        if name != "matchmaking" and key in stored:
            results[name] = Run(**stored[key])  # type: ignore[arg-type]
        else:
            results[name] = run(makers[name](), true, seats, horizon, seed, growth)
            if cache and name != "matchmaking":
                stored = json.loads(cache.read_text()) if cache.exists() else {}
                stored[key] = asdict(results[name])
                part = cache.with_name(f"{cache.name}.{os.getpid()}")
                part.write_text(json.dumps(stored, indent=0, sort_keys=True))
                part.replace(cache)  # whole: several runs may share one cache
        r = results[name]
        if not quiet:
            print(
                f"  {name:<12}"
                + "".join(fmt(t, r.tables) for t in r.needed)
                + f"  share {r.share_min:4.2f}-{r.share_max:4.2f}x mean, pick {r.pick_ms:.3f} ms,"
                f" fit {r.fit_ms:.0f} ms, run {time.perf_counter() - start:.0f} s",
                flush=True,
            )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--seed0", type=int, default=0, help="first seed")
    parser.add_argument("--horizon", type=int, default=2_000_000, help="most tables per run")
    parser.add_argument(
        "--parallel", type=int, default=0, help="matchmaking: tables per batch (default 64 per 1,000 bots)"
    )
    parser.add_argument("--growth", type=float, default=1.15, help="checkpoint spacing")
    parser.add_argument(
        "--real",
        type=int,
        default=0,
        metavar="TABLES",
        help="also run the matchmaking on the real RatingModel for this many tables",
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--only", default="", help="worlds, e.g. 200x2,100x3")
    parser.add_argument("--policies", default="matchmaking,random,nearest")
    parser.add_argument("--set", default="", help="matchmaking settings, e.g. top_weight=0.5,explore=4")
    parser.add_argument("--cache", type=Path, default=None, help="JSON file keeping the baselines' runs")
    parser.add_argument("--no-cost", action="store_true", help="skip the cost of a pick and of the model")
    args = parser.parse_args(argv)
    worlds = [(200.0, 2)]  # the default: one world, about 5 minutes here
    if args.quick:
        args.bots, args.horizon = 200, 400_000
    if args.full:
        args.seeds, args.horizon = 5, 4_000_000
    if args.quick or args.full:
        worlds = GRID
    if args.only:
        worlds = [(float(w.split("x")[0]), int(w.split("x")[1])) for w in args.only.split(",")]
    parallel = args.parallel or default_parallel(args.bots)
    settings = parse_settings(args.set)
    print(
        f"{args.bots} bots; a match = a table; checkpoints every x{args.growth}; "
        f"horizon {args.horizon:,} tables; matchmaking in batches of {parallel}\n"
        f"matches needed to reach and hold: (a) top 10 exact, (b) >= 9 of top 10, (c) Spearman >= 0.95"
    )
    summary: dict[tuple[float, int, str], list[str]] = {}
    policies = [p for p in args.policies.split(",") if p]
    for spread, seats in worlds if policies else []:
        for seed in range(args.seed0, args.seed0 + args.seeds):
            results = compare(
                args.bots,
                spread,
                seats,
                seed,
                horizon=args.horizon,
                growth=args.growth,
                parallel=parallel,
                settings=settings,
                policies=policies,
                cache=args.cache,
            )
            if "matchmaking" not in results:
                continue
            mm = results["matchmaking"]
            for base in ("random", "nearest"):
                if base not in results:
                    continue
                b = results[base]
                cells = [ratio(x, y, mm.tables, b.tables) for x, y in zip(mm.needed, b.needed, strict=True)]
                summary.setdefault((spread, seats, base), []).append(" ".join(f"{c:>5}" for c in cells))
                print(f"  {'vs ' + base:<12}" + "".join(f"{c:>11}" for c in cells))
            print(f"  reasons: {mm.reasons}", flush=True)
    if summary:
        print(
            "\nmatchmaking / baseline, per seed ((a) (b) (c)); goals: (a), (b) <= 0.33 of random "
            "and <= 0.5 of nearest; (c) <= 1.1 of random"
        )
        for (spread, seats, base), rows in summary.items():
            print(f"  SD {spread:.0f} {seats} seats vs {base:<8}: " + " | ".join(rows))
    if policies and not args.no_cost:
        pick_cost(args.bots, 2, parallel, settings)
        pick_cost(args.bots, 3, parallel, settings)
        staleness(args.bots)
    if args.real:
        real(args.bots, 200.0, 2, args.real, parallel, settings)
    return 0


def parse_settings(text: str) -> MatchmakingSettings:
    """``top_weight=0.5,explore=4`` into settings (ints stay ints)."""
    pairs = (kv.split("=") for kv in text.split(",") if kv)
    overrides = {k: (int(v) if v.isdigit() else float(v)) for k, v in pairs}
    return MatchmakingSettings(**overrides)  # type: ignore[arg-type]


if __name__ == "__main__":
    raise SystemExit(main())
