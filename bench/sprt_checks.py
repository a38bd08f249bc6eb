"""Do the two "is A better than B?" answers keep their error promises? (issue #38)

    .venv/bin/python bench/sprt_checks.py [sprt] [duplicate] [--runs 10000] [--seed 1]
    .venv/bin/python bench/sprt_checks.py --docs     # write both tables into docs/arena.md
    .venv/bin/python bench/sprt_checks.py --check    # rerun and compare with the docs

``sprt`` plays ``--runs`` simulated sequential tests (arena/tournaments/sprt.py: elo0 0, elo1
20, alpha = beta = 0.05, looked at every 8 pairs as the arena does, at most 20,000 pairs so the
rule is measured rather than the cap) per pair shape and true difference: at elo0 the share
that accepts H1 is the type-I error (target <= alpha), at elo1 the power (target >= 1 - beta -
0.02 = 0.93). Each rate is printed with its 95% Wilson interval; a target is met only when the
whole interval is on its side. The tests run side by side as numpy arrays, and the LLR they
decide on is checked against the arena's own ``llr`` before the run.

``duplicate`` gives the false-verdict rate of ``tonk play A B --duplicate`` (sdk/compare.py:
"A is better" or "B is better" when the two are equal) at 5 to 400 pairs on symmetric and
skewed pair shapes, by exact enumeration over every pair-count vector of non-negligible
probability (the verdict depends on the counts alone), and for comparison the old rule's (a
normal 95% interval on the mean pair score). Its power at +20 and +50 Elo, from ``--runs``
simulated comparisons each, shows what the guarantee costs.

Both are seeded and deterministic: the same command prints the same tables.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout
sys.path.append(str(Path(__file__).resolve().parent))  # docs_block.py beside this file

import docs_block

from arena.tournaments.sprt import OUTCOMES, bounds, expected_score, llr
from sdk.compare import FRACTIONS, TARGET, Z95, pair_test

ELO0, ELO1, ALPHA, BETA, BATCH, MAX_PAIRS = 0.0, 20.0, 0.05, 0.05, 8, 20_000
X = np.array(OUTCOMES)
DOCS = Path(__file__).resolve().parents[1] / "docs" / "arena.md"
MARKS = {
    which: (f"<!-- {which}-table:begin (bench/sprt_checks.py --docs writes this part) -->",
            f"<!-- {which}-table:end -->")
    for which in ("sprt", "duplicate")
}  # fmt: skip


def tilted(base: list[float], s: float) -> np.ndarray:
    """``base`` tilted exponentially (p_i * exp(t x_i)) to have mean pair score ``s``."""
    p = np.array(base)
    lo, hi = -50.0, 50.0
    for _ in range(200):
        t = (lo + hi) / 2
        q = p * np.exp(t * X)
        lo, hi = (t, hi) if (q @ X) / q.sum() < s else (lo, t)
    q = p * np.exp(lo * X)
    out: np.ndarray = q / q.sum()
    return out


#: Pair shapes at 0 Elo, share of pairs scoring 0, ¼, ½, ¾, 1: Tonk's duplicate pairs split at
#: ½ 65-82% of the time; "skewed" loses both matches more often than it wins both, and makes it
#: up in pairs won 3/4.
SHAPES = {
    "symmetric, 65% split": [0.03, 0.145, 0.65, 0.145, 0.03],
    "symmetric, 82% split": [0.01, 0.08, 0.82, 0.08, 0.01],
    "skewed, 72% split": [0.08, 0.03, 0.72, 0.15, 0.02],
}
#: Pairs of two independent matches (10% draws each): not Tonk, the hardest case for the SPRT.
INDEPENDENT = "two independent matches"


def shape(name: str, elo: float) -> np.ndarray:
    s = expected_score(elo)
    if name == INDEPENDENT:
        draws = 0.1
        game = np.array([1 - s - draws / 2, draws, s - draws / 2])
        out: np.ndarray = np.convolve(game, game)
        return out
    return tilted(SHAPES[name], s)


def wilson(k: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of a rate seen ``k`` times in ``n``."""
    p, z2 = k / n, Z95 * Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


# -- the SPRT ---------------------------------------------------------------------------------


def _fit(freqs: np.ndarray, s: float) -> np.ndarray:
    """arena.tournaments.sprt.mle for many frequency rows at once (same bisection)."""
    d = X - s
    lo = np.full(len(freqs), -1.0 / d.max())
    hi = np.full(len(freqs), -1.0 / d.min())
    for _ in range(200):
        mid = (lo + hi) / 2
        if not ((mid > lo) & (mid < hi)).any():
            break
        up = (freqs * d / (1.0 + mid[:, None] * d)).sum(axis=1) > 0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    lam = (lo + hi) / 2
    fitted = freqs / (1.0 + lam[:, None] * d)
    out: np.ndarray = fitted / fitted.sum(axis=1, keepdims=True)
    return out


def llrs(counts: np.ndarray) -> np.ndarray:
    """The arena's exact GSPRT LLR (``llr``) of each row of pair counts."""
    reg = np.maximum(counts.astype(float), 1e-3)
    freqs = reg / reg.sum(axis=1, keepdims=True)
    p0, p1 = _fit(freqs, expected_score(ELO0)), _fit(freqs, expected_score(ELO1))
    out: np.ndarray = counts.sum(axis=1) * (freqs * np.log(p1 / p0)).sum(axis=1)
    return out


def check_llrs(rng: np.random.Generator) -> None:
    """The vectorised LLR is the arena's, on counts of every kind (zeros, lopsided, large)."""
    drawn = [rng.multinomial(int(n), rng.dirichlet(np.ones(5))) for n in rng.integers(1, 3000, 200)]
    counts = np.vstack([*drawn, np.array([0, 0, 8, 0, 0]), np.array([0, 0, 0, 0, 60])])
    mine = llrs(counts)
    for row, value in zip(counts, mine, strict=True):
        theirs = llr([int(c) for c in row], ELO0, ELO1)
        assert abs(theirs - value) < 1e-6 * max(1.0, abs(theirs)), (row, theirs, value)


def simulate(rng: np.random.Generator, p: np.ndarray, runs: int) -> tuple[np.ndarray, np.ndarray]:
    """``runs`` tests on pairs drawn from ``p``: (verdict per test: 1 H1, 0 H0, -1 undecided;
    pairs played per test)."""
    lower, upper = bounds(ALPHA, BETA)
    counts = np.zeros((runs, 5), dtype=np.int64)
    verdict = np.full(runs, -1)
    pairs = np.zeros(runs, dtype=np.int64)
    live = np.arange(runs)
    n = 0
    while len(live) and n < MAX_PAIRS:
        counts[live] += rng.multinomial(BATCH, p, size=len(live))
        n += BATCH
        value = llrs(counts[live])
        done = (value >= upper) | (value <= lower)
        verdict[live[done]] = (value[done] >= upper).astype(int)
        pairs[live] = n
        live = live[~done]
    return verdict, pairs


def sprt(runs: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    check_llrs(rng)
    lower, upper = bounds(ALPHA, BETA)
    rows = [
        f"{runs:,} simulated tests per row: elo0 {ELO0:g}, elo1 {ELO1:g}, alpha = beta = {ALPHA}, looked at "
        f"every {BATCH} pairs, bounds {lower:.2f} and {upper:+.2f} (ln beta, ln 1/alpha); the rates with "
        "their 95% intervals.",
        "",
        "| pairs | true | P(accept H1), 95% interval | target | met | pairs to decide, mean / 95th pct "
        "| over 2,000 pairs |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in [*SHAPES, INDEPENDENT]:
        for elo in (ELO0, ELO1):
            verdict, pairs = simulate(rng, shape(name, elo), runs)
            h1 = int((verdict == 1).sum())
            low, high = wilson(h1, runs)
            if elo == ELO0:
                target, met = f"<= {ALPHA:g}", high <= ALPHA
            else:
                target, met = f">= {1 - BETA - 0.02:.2f}", low >= 1 - BETA - 0.02
            true = f"{'+' if elo else ''}{elo:g}"
            rows.append(
                f"| {name} | {true} | {h1 / runs:.4f} [{low:.4f}, {high:.4f}] | {target} "
                f"| {'yes' if met else 'NO'} | {pairs.mean():.0f} / {np.percentile(pairs, 95):.0f} "
                f"| {np.mean(pairs > 2000):.2%} |"
            )
            print(rows[-1], flush=True)
    return rows


# -- tonk play --duplicate --------------------------------------------------------------------


def _log_factorials(n: int) -> np.ndarray:
    return np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1)))])


def _binomial(n: int, p: float, lf: np.ndarray) -> np.ndarray:
    k = np.arange(n + 1)
    with np.errstate(divide="ignore"):
        out: np.ndarray = np.exp(lf[n] - lf[k] - lf[n - k] + k * np.log(p) + (n - k) * np.log1p(-p))
    return out


def exact_rate(
    p: np.ndarray, n: int, verdict: Callable[[np.ndarray], np.ndarray], tiny: float = 1e-16
) -> float:
    """P(``verdict`` says better, either way) over n pairs drawn from ``p``, exactly: every count
    vector, grouped by the pairs won or lost by both (u) and by one match (v), then the
    binomial split of each group between the two sides; groups of probability below ``tiny``
    (together far below 1e-9) are left out."""
    lf = _log_factorials(n)
    ends, halves = p[0] + p[4], p[1] + p[3]
    total = 0.0
    for u in range(n + 1):
        wins = _binomial(u, p[4] / ends, lf)
        for v in range(n - u + 1):
            log_pm = lf[n] - lf[u] - lf[v] - lf[n - u - v] + u * math.log(ends) + v * math.log(halves)
            log_pm += (n - u - v) * math.log(p[2])
            if log_pm < math.log(tiny):
                continue
            threes = _binomial(v, p[3] / halves, lf)
            c4, c3 = np.meshgrid(np.arange(u + 1), np.arange(v + 1), indexing="ij")
            counts = np.stack([u - c4, v - c3, np.full_like(c4, n - u - v), c3, c4], axis=-1).reshape(-1, 5)
            said = verdict(counts).reshape(c4.shape)
            total += math.exp(log_pm) * float((wins[:, None] * threes[None, :])[said].sum())
    return total


def says_better(counts: np.ndarray) -> np.ndarray:
    """sdk.compare's verdict, vectorised: the bets on A's pair score (``FRACTIONS`` of the
    largest safe stake, averaged) or those on B's reach ``TARGET`` against "equal"."""
    d = X - 0.5
    out = np.zeros(len(counts), dtype=bool)
    for side in (1.0, -1.0):
        stakes = side * np.array(FRACTIONS) / 0.5
        logs = counts.astype(float) @ np.log1p(stakes[None, :] * d[:, None])  # (rows, stakes)
        top = logs.max(axis=1)
        out |= top + np.log(np.exp(logs - top[:, None]).mean(axis=1)) >= math.log(TARGET)
    return out


def old_says_better(counts: np.ndarray) -> np.ndarray:
    """The old verdict: a normal 95% interval on the mean pair score with a pseudo-pair at ½
    (sdk.compare.elo_estimate) leaves ½ out."""
    m = counts.sum(axis=1) + 1
    s = counts @ (X - 0.5)
    q = counts @ (X - 0.5) ** 2
    mean = s / m
    var = np.maximum(q - s * s / m, 0.0) / (m - 1)
    out: np.ndarray = np.abs(mean) > Z95 * np.sqrt(var / m)
    return out


def check_verdict(rng: np.random.Generator) -> None:
    """The vectorised verdict is sdk.compare's on random counts."""
    for _ in range(300):
        row = rng.multinomial(int(rng.integers(1, 400)), rng.dirichlet(np.ones(5)))
        mine = bool(says_better(row[None, :])[0])
        theirs = pair_test([int(c) for c in row]).better is not None
        assert mine == theirs, row


DUPLICATE_N = (5, 10, 20, 40, 100, 400)


def duplicate(runs: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    check_verdict(rng)
    names = [*SHAPES, INDEPENDENT]
    rows = [
        "False verdicts (\"A is better\" or \"B is better\" when A and B are equal) of `tonk play A B "
        "--duplicate`, by exact enumeration; new / old rule (old: a normal 95% interval on the mean pair "
        "score). Target: new <= 0.05 everywhere.",
        "",
        "| pairs | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    worst = 0.0
    for n in DUPLICATE_N:
        cells = []
        for name in names:
            p = shape(name, 0.0)
            new, old = exact_rate(p, n, says_better), exact_rate(p, n, old_says_better)
            worst = max(worst, new)
            cells.append(f"{new:.4f} / {old:.4f}")
        rows.append(f"| {n} | " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)
    rows += ["", f"Largest false-verdict rate: {worst:.4f} ({'met' if worst <= 0.05 else 'MISSED'}).", ""]
    rows += [
        f"Power (\"A is better\" when A is), {runs:,} simulated comparisons per cell, new / old rule:",
        "",
        "| pairs | true | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for elo in (20.0, 50.0):
        for n in (40, 100, 200, 400):
            cells = []
            for name in names:
                counts = rng.multinomial(n, shape(name, elo), size=runs)
                better = counts @ (X - 0.5) > 0
                new = float((says_better(counts) & better).mean())
                old = float((old_says_better(counts) & better).mean())
                cells.append(f"{new:.3f} / {old:.3f}")
            rows.append(f"| {n} | +{elo:g} | " + " | ".join(cells) + " |")
            print(rows[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", nargs="*", help="sprt, duplicate (default: both)")
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--docs", action="store_true", help="write the tables into docs/arena.md")
    parser.add_argument("--check", action="store_true", help="compare the tables with docs/arena.md")
    args = parser.parse_args(argv)
    unknown = set(args.what) - set(MARKS)
    if unknown:
        parser.error(f"unknown check(s) {', '.join(sorted(unknown))}; choose from sprt, duplicate")
    shown = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--docs"]
    command = docs_block.command("bench/sprt_checks.py", [*shown, "--docs"])
    checks = {"sprt": sprt, "duplicate": duplicate}
    blocks = {which: checks[which](args.runs, args.seed) for which in args.what or MARKS}
    if not (args.docs or args.check):
        return 0
    made = {which: "\n".join([f"Made by `{command}`.", "", *rows]) for which, rows in blocks.items()}
    return max(docs_block.publish(DOCS, *MARKS[which], block, args.check) for which, block in made.items())


if __name__ == "__main__":
    raise SystemExit(main())
