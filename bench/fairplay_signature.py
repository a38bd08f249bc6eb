#!/usr/bin/env python3
"""Would the fair-play check catch a bot remembering a quarter of its deals sooner if it also
looked at memory's own signature, not only at chips? (issue #38)

    .venv/bin/python bench/fairplay_signature.py --print             # the table
    .venv/bin/python bench/fairplay_signature.py                     # write docs/arena.md's table
    .venv/bin/python bench/fairplay_signature.py --check             # rerun and compare

The check (arena/ratings/fairplay.py) bets on chips: each deal's later-minus-first difference,
net of the reference, clipped at the mean spread of the deals before it. Against `heuristic` an
honest deal's net difference is noise of about 45 chips/100 hands, and a cheater that uses its
memory in a quarter of its deals gains 10: the check needs a median of about 440 deals.

Memory shows more plainly in one decision. In Tonk, going down (a drop) wins only when the
dropper's total is strictly the lowest, which depends on cards it cannot see. A bot that knows
them drops when it will win and holds back when it would lose. So per rotation this bench also
counts, from the hand records, the bot's **drops won less drops lost**: for an honest bot, as
for chips, the rotations of a deal are exchangeable, so that count's later-minus-first
difference is as likely to be either sign whatever its shape, and the same permutation
martingale (clip, bets, threshold: arena/ratings/fairplay.py's constants) is valid on it, or on
the mean of the two clipped scores (each in [-1, 1] with expectation 0, so their mean is too).

Real deals: ``--deals`` duplicate heads-up deals of ``--hands`` hands against each villain,
played in-process by the honest ``greedy`` and by bench/fairplay.py's ``MemoryBot`` built on it
(the first rotation in seat 0, the later in seat 1), each rotation's chips net of the arena's
reference (arena/play/reference.py) and its drops won and lost. Simulated lives (``--runs``
per row, seeded), resampled from those deals:

* honest, **exchangeable**: each resampled deal's two rotations in random order. This is the
  world the permutation test is exact for, and the one real honest play is (which seat is
  played first says nothing about the cards); Ville's inequality bounds its lifetime false
  alarms by ALPHA whatever the statistic.
* honest, **as drawn**: the deals' rotations in the order played. ``--deals`` real deals have a
  lean of order 1/sqrt(deals) one way or the other by chance (the later rotation better in
  more deals than worse, or the reverse), and a life of 2,000 deals drawn from them with
  replacement repeats that lean until a test finds it. Its false alarms measure the sample,
  not the test: the row is printed for each disjoint block of ``--block`` real deals.
* memory in a quarter and in half of the deals: the cheater's rotations with that chance, else
  the honest bot's on the same deal.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

if __name__ == "__main__":  # one BLAS thread (a shared machine): read when numpy is imported
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))
sys.path.append(str(_HERE))  # bench/fairplay.py and fairplay_stats.py, as top-level modules

import docs_block  # noqa: E402
import fairplay_stats as stats  # noqa: E402

from arena.play.reference import reference_scores  # noqa: E402
from bots.greedy import GreedyBot  # noqa: E402
from sdk.actions import DROP  # noqa: E402
from sdk.bot import Bot  # noqa: E402
from sdk.dealing import derive_seed  # noqa: E402
from sdk.players import load_bot_class  # noqa: E402
from sdk.referee import LocalPlayer, MatchResult, RefereeConfig, play_match  # noqa: E402
from sdk.rules import STANDARD  # noqa: E402

BEGIN = "<!-- fairplay-signature:begin (bench/fairplay_signature.py writes this part) -->"
END = "<!-- fairplay-signature:end -->"
DOCS = _HERE.parent / "docs" / "arena.md"
STATISTICS = ("chips", "drops", "both")
MINUS = "\u2212"
# bench/fairplay.py, imported by fairplay_stats (importing it takes this folder off the path)
cheats = sys.modules["fairplay"]

# -- real deals ---------------------------------------------------------------------------------


def drops(result: MatchResult, seat: int) -> tuple[int, int]:
    """The drops ``seat`` made in the match that won (its total strictly the lowest) and lost."""
    won = lost = 0
    for log in result.hands:
        state = log.record.initial_state()
        for actor, action in log.record.actions:
            if actor == seat and action == DROP:
                totals = state.totals()
                lowest = all(totals[seat] < t for s, t in enumerate(totals) if s != seat)
                won, lost = won + lowest, lost + (not lowest)
            state.apply(action, actor)
    return won, lost


def rotations(hero: type[Bot], villain: type[Bot], seed: int, hands: int) -> list[tuple[int, int, int]]:
    """The hero's (chips, drops won, drops lost) in the deal ``seed`` from seat 0 (its first
    rotation), then seat 1."""
    cheats.MemoryBot.memory.clear()
    out = []
    config = RefereeConfig(decision_deadline_ms=60_000)
    for seat in (0, 1):
        players = [LocalPlayer(hero if s == seat else villain) for s in range(2)]
        names = ["hero" if s == seat else "villain" for s in range(2)]
        result = play_match(players, seed, hands, match_id=f"fp38-{seed}-{seat}", names=names,
                            config=config, reveal=False)  # fmt: skip
        out.append((result.scores[seat], *drops(result, seat)))
    return out


def play_deals(villain: str, start: int, count: int, hands: int, seed: int) -> np.ndarray:
    """Deals ``start`` to ``start + count``: shape (count, 2 bots (honest, memory), 2 rotations,
    3 (chips net of the reference per 100 hands, drops won, drops lost))."""
    villain_cls = load_bot_class(villain)
    memory = cheats.memory_bot(GreedyBot)
    out = np.zeros((count, 2, 2, 3))
    heroes: tuple[type[Bot], type[Bot]] = (GreedyBot, memory)
    for row, deal in enumerate(range(start, start + count)):
        # "h6/...": the name of the stream the docs' deals were drawn from.
        deal_seed = derive_seed(seed, f"h6/{villain}/{hands}/{deal}")
        ref = reference_scores(deal_seed, hands, 2, STANDARD)
        for bot, hero in enumerate(heroes):
            for rotation, (chips, won, lost) in enumerate(rotations(hero, villain_cls, deal_seed, hands)):
                out[row, bot, rotation] = (100 * (chips - ref[rotation]) / hands, won, lost)
    return out


def real_deals(villain: str, deals: int, hands: int, seed: int, jobs: int, cache: Path | None) -> np.ndarray:
    """``play_deals`` in chunks of 100 (each deal its own seed: the same for any ``jobs``),
    kept in ``cache`` (a folder) a chunk a file."""
    chunks = [(villain, s, min(100, deals - s), hands, seed) for s in range(0, deals, 100)]
    parts: dict[int, np.ndarray] = {}
    todo = []
    for chunk in chunks:
        path = None if cache is None else cache / "fairplay-signature-{}-{}-{}-{}-{}.npy".format(*chunk)
        if path is not None and path.exists():
            parts[chunk[1]] = np.load(path)
        else:
            todo.append((chunk, path))
    if todo:
        if jobs <= 1:
            done = [play_deals(*chunk) for chunk, _ in todo]
        else:
            with ProcessPoolExecutor(jobs) as pool:
                done = list(pool.map(play_deals, *zip(*(chunk for chunk, _ in todo), strict=True)))
        for (chunk, path), part in zip(todo, done, strict=True):
            parts[chunk[1]] = part
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                np.save(path, part)
    return np.concatenate([parts[s] for s in sorted(parts)])


# -- the check on either statistic, vectorised --------------------------------------------------


def statistic(deals: np.ndarray, name: str) -> np.ndarray:
    """Per deal and rotation, the statistic a test bets on: chips, or drops won less lost."""
    out: np.ndarray = deals[..., 0] if name == "chips" else deals[..., 1] - deals[..., 2]
    return out


def flags(lives: np.ndarray, name: str) -> np.ndarray:
    """Per life (``lives``: runs, deals, 2 rotations, 3), the deals at its first flag (0:
    never) by the check betting on ``name``: "both" bets on the mean of the two scores. The
    check's own scores, heads-up (fairplay_stats.scores: arena/ratings/fairplay.py's)."""
    if name == "both":
        score = (stats.scores(statistic(lives, "chips")) + stats.scores(statistic(lives, "drops"))) / 2
    else:
        score = stats.scores(statistic(lives, name))
    return stats.flagged_at(stats.wealth(score))


Lives = stats.Draw  # (rng, (runs, deals)) -> lives


def first_flags(make: Lives, runs: int, deals: int, name: str, seed: int, block: int = 1000) -> np.ndarray:
    """``flags`` of ``runs`` lives of ``deals`` from ``make``, seeded, made ``block`` at a time."""
    rng = np.random.default_rng(seed)
    parts = [flags(make(rng, (min(block, runs - s), deals)), name) for s in range(0, runs, block)]
    return np.concatenate(parts)


def table(args: argparse.Namespace, command: str) -> str:
    lines = [
        f"Made by `{command}`: {args.runs:,} simulated lives per cell, seeded; 95% Wilson intervals. "
        f"Real heads-up deals of {args.hands} hands; \"drops\" bets on each rotation's drops won "
        f"{MINUS} drops lost, \"both\" on the mean of the chips and drops scores.",
        "",
        "| opponent, world | deals | chips (the check now) | drops | both |",
        "| --- | --- | --- | --- | --- |",
    ]
    looks = f"{args.looks:,} looks"
    for villain in args.villains:
        count = args.deals if villain == "heuristic" else args.deals_greedy
        deals = real_deals(villain, count, args.hands, args.seed, args.jobs, args.cache)
        honest, memory = deals[:, 0], deals[:, 1]

        def honest_row(part: np.ndarray, swap: bool, key: str) -> dict[str, str]:
            # the rotations of a deal in random order when ``swap``
            make = stats.resampled(part, swap)
            out = {}
            for name in STATISTICS:
                at = first_flags(make, args.runs, args.looks, name, derive_seed(args.seed, f"{key}/{name}"))
                out[name] = stats.within(at, args.looks)
            return out

        rows = [(f"honest, exchangeable ({len(honest)} real deals, rotations in random order)", looks,
                 honest_row(honest, True, f"honest/{villain}"))]  # fmt: skip
        for start in range(0, len(honest) - args.block + 1, args.block):
            part = honest[start : start + args.block]
            d = statistic(part, "chips")
            later, first = int((d[:, 1] > d[:, 0]).sum()), int((d[:, 1] < d[:, 0]).sum())
            label = f"honest, as drawn: real deals {start + 1}{MINUS}{start + args.block}"
            rows.append((f"{label} (chips better later in {later}, worse in {first})", looks,
                         honest_row(part, False, f"drawn/{villain}/{start}")))  # fmt: skip
        for used, share in ((0.25, "a quarter"), (0.5, "half")):
            cells = {}
            # the honest deals' rotations in random order, as in the exchangeable honest world:
            # the real deals' chance lean is not a cheat's
            make = stats.mixed(honest, memory, used, swap=True)
            for name in STATISTICS:
                seed = derive_seed(args.seed, f"memory/{villain}/{used}/{name}")
                at = first_flags(make, args.runs, args.horizon_long, name, seed)
                median = int(np.median(np.where(at > 0, at, args.horizon_long + 1)))
                shown = f"{median:,}" if median <= args.horizon_long else f"> {args.horizon_long:,}"
                cells[name] = f"{stats.within(at, args.horizon)}; median {shown}"
            rows.append((f"memory in {share} of the deals", f"flagged within {args.horizon}", cells))
        for label, span, cells in rows:
            row = " | ".join(cells[name] for name in STATISTICS)
            lines.append(f"| `{villain}`, {label} | {span} | {row} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="simulated lives per cell")
    parser.add_argument("--looks", type=int, default=2000, help="an honest bot's life, in deals")
    parser.add_argument("--horizon", type=int, default=200, help="the deals a memory bot must be flagged in")
    parser.add_argument("--horizon-long", type=int, default=1000, help="a memory bot's life, in deals")
    parser.add_argument("--deals", type=int, default=400, help="real deals against heuristic")
    parser.add_argument("--deals-greedy", type=int, default=200, help="and against greedy")
    parser.add_argument("--block", type=int, default=200, help="real deals per 'as drawn' honest row")
    parser.add_argument("--villains", nargs="+", default=["heuristic", "greedy"])
    parser.add_argument("--hands", type=int, default=16)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--jobs", type=int, default=1, help="processes playing the real deals")
    parser.add_argument("--cache", type=Path, default=None, help="a folder for the real deals")
    parser.add_argument("--check", action="store_true", help="compare with the docs instead of writing")
    parser.add_argument("--print", action="store_true", help="print the table only")
    parser.add_argument("--docs", type=Path, default=DOCS)
    args = parser.parse_args(argv)
    unpriced = ("--cache", "--jobs")  # neither the cache nor the processes change a number
    block = table(args, docs_block.command("bench/fairplay_signature.py", argv, unpriced))
    if args.print:
        print(block)
        return 0
    return docs_block.publish(args.docs, BEGIN, END, block, args.check)


if __name__ == "__main__":
    raise SystemExit(main())
