"""Write docs/arena.md's matchmaking table from a seeded run of bench/ladder.py.

    .venv/bin/python bench/ladder_table.py                      # 200 bots, the four worlds, seeds 0-4
    .venv/bin/python bench/ladder_table.py --bots 200,1000      # the goal's whole grid (hours here)
    .venv/bin/python bench/ladder_table.py --check              # rerun and compare with the docs

Every number in the table comes from one call of ``ladder.compare`` per world and seed: the
worlds, the boards and the matchmaker's randomness are all seeded (and BLAS runs one thread),
so the same command gives the same table on any machine with the same numpy. The table and
the command that made it go between the marker comments below in docs/arena.md; nothing else
in the file is touched.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

if __name__ == "__main__":  # one BLAS thread, as bench/ladder.py run as a script: see there
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # ladder.py beside this file

import docs_block
import ladder

BEGIN = "<!-- ladder-table:begin (bench/ladder_table.py writes this part) -->"
END = "<!-- ladder-table:end -->"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "arena.md"
#: The goal: (a) and (b) within these fractions of random's and nearest's tables, (c) of
#: random's, and no bot over the cap.
DASH, TIMES = "\u2013", "\u00d7"  # the docs' typography, escaped for the linter
GOAL_RANDOM, GOAL_NEAREST, GOAL_SPEARMAN, GOAL_SHARE = 1 / 3, 1 / 2, 1.1, 5.0


def cell(values: list[int | None], tables: list[int]) -> str:
    return " / ".join(f"{v:,}" if v is not None else f"> {t:,}" for v, t in zip(values, tables, strict=True))


def misses(runs: dict[str, ladder.Run]) -> list[str]:
    """The goals this world and seed missed; a goal neither side reached by the horizon is
    undecided, not met."""
    mm, rnd, near = runs["matchmaking"], runs["random"], runs["nearest"]
    out: list[str] = []
    for k, name in ((0, "(a)"), (1, "(b)")):
        for base, goal, label in ((rnd, GOAL_RANDOM, "random"), (near, GOAL_NEAREST, "nearest")):
            mine, theirs = mm.needed[k], base.needed[k]
            if mine is None and theirs is None:
                out.append(f"{name} vs {label}: neither reached")
            elif mine is None or (theirs is not None and mine > goal * theirs):
                out.append(f"{name} vs {label}")
    mine, theirs = mm.needed[2], rnd.needed[2]
    if mine is None or (theirs is not None and mine > GOAL_SPEARMAN * theirs):
        out.append("(c)")
    if mm.share_max > GOAL_SHARE + 1e-9:
        out.append("share")
    return out


GOALS = ("(a) vs random", "(a) vs nearest", "(b) vs random", "(b) vs nearest", "(c)", "share")


def tally(missed: list[list[str]], spearman: list[float]) -> str:
    """The goals-missed column added up: each goal on how many worlds x seeds (how many of
    them undecided), and the (c) misses' tables as a multiple of random's."""
    labels = [m for row in missed for m in row]
    counts = Counter(m.split(":")[0] for m in labels)
    undecided = Counter(m.split(":")[0] for m in labels if m.endswith("neither reached"))
    parts = [f"{g} on {counts[g]}" + (f" ({undecided[g]} undecided)" if undecided[g] else "") for g in GOALS]
    if spearman:
        parts[4] += f" ({min(spearman):.2f}{DASH}{max(spearman):.2f}{TIMES} random's tables)"
    return "Missed: " + ", ".join(parts) + "."


def table(args: argparse.Namespace, command: str) -> str:
    lines = [
        f"Made by `{command}` (seeds {args.seed0}{DASH}{args.seed0 + args.seeds - 1}, checkpoints every "
        f"{TIMES}{args.growth}, matchmaking in batches of 64 tables per 1,000 bots).",
        "",
        f"| bots, SD, seats | seed (gap #10{DASH}#11) | (a) top 10 exact: matchmaking / random / nearest "
        f"| (b) ≥ 9 of 10 | (c) Spearman ≥ 0.95 | busiest bot, {TIMES} mean | goals missed |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    settings = ladder.parse_settings(args.set)
    total = met = 0
    missed_all: list[list[str]] = []
    spearman: list[float] = []
    for bots in (int(b) for b in args.bots.split(",")):
        horizon = args.horizon or (400_000 if bots <= 200 else 2_000_000)
        for spread, seats in ladder.GRID:
            for seed in range(args.seed0, args.seed0 + args.seeds):
                runs = ladder.compare(
                    bots,
                    spread,
                    seats,
                    seed,
                    horizon=horizon,
                    growth=args.growth,
                    parallel=ladder.default_parallel(bots),
                    settings=settings,
                    policies=["matchmaking", "random", "nearest"],
                    cache=args.cache,
                )
                true = ladder.world(bots, spread, seed)
                ordered = sorted(true.tolist())
                gap = ordered[-10] - ordered[-11]
                order = [runs[p] for p in ("matchmaking", "random", "nearest")]
                crit = [cell([r.needed[k] for r in order], [r.tables for r in order]) for k in range(3)]
                missed = misses(runs)
                missed_all.append(missed)
                mine, theirs = runs["matchmaking"].needed[2], runs["random"].needed[2]
                if "(c)" in missed and mine is not None and theirs is not None:
                    spearman.append(mine / theirs)
                total += 1
                met += not missed
                lines.append(
                    f"| {bots:,}, {spread:.0f}, {seats} | {seed} ({gap:.1f} Elo) | {crit[0]} | {crit[1]} "
                    f"| {crit[2]} | {runs['matchmaking'].share_max:.2f} | {', '.join(missed) or '—'} |"
                )
    lines += ["", f"Every goal met on {met} of {total} worlds {TIMES} seeds. {tally(missed_all, spearman)}"]
    return "\n".join(lines)


def splice(text: str, block: str) -> str:
    return docs_block.splice(text, BEGIN, END, block)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", default="200", help="pool sizes, e.g. 200,1000")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--seed0", type=int, default=0)
    parser.add_argument("--horizon", type=int, default=0, help="default 400,000 (200 bots), 2,000,000")
    parser.add_argument("--growth", type=float, default=1.15)
    parser.add_argument("--set", default="", help="matchmaking settings, as bench/ladder.py")
    parser.add_argument("--cache", type=Path, default=None, help="as bench/ladder.py (baselines only)")
    parser.add_argument("--check", action="store_true", help="compare with the docs instead of writing")
    parser.add_argument("--docs", type=Path, default=DOCS)
    args = parser.parse_args(argv)
    # the cache changes no number: "--cache FILE" and "--cache=FILE" stay out
    block = table(args, docs_block.command("bench/ladder_table.py", argv, unpriced=("--cache",)))
    return docs_block.publish(args.docs, BEGIN, END, block, args.check)


if __name__ == "__main__":
    raise SystemExit(main())
