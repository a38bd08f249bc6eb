"""Engine throughput: record replay, in-process self-play, and the full referee.

    .venv/bin/python bench/engine.py            # the full run (10,000 recorded hands)
    .venv/bin/python bench/engine.py --quick    # a smaller run, for a quick look
    .venv/bin/python bench/engine.py --profile replay|selfplay   # cProfile one part

Every rate is the best of ``--repeat`` runs, measured both in CPU time of this process
(``cpu``: what one core does, the figure the targets are about) and in wall time. The
machine may be busy, so each rate is also printed as a ratio to a baseline measured in this
process just before: a trivial loop doing one dict lookup and one list append per item, the
same number of items as the measured part has actions or decisions. The ratios move much less
than the raw rates when the machine is loaded.

Targets on one core: replay >= 250,000 actions/s, engine self-play >= 40,000 decisions/s.
Replay runs :meth:`HandRecord.verify`, which checks every action (``HandState.apply`` verifies
each one) and compares the replayed outcome with the stored one.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.record import HandRecord
from sdk.rules import STANDARD

SEED = 20240601
CHUNKS = 20  # timed pieces per measurement (see best_of_chunks)
TARGET_REPLAY = 250_000
TARGET_DECISIONS = 40_000


def best_of(repeat: int, run: Callable[[], Any]) -> tuple[float, float]:
    """Best (cpu seconds, wall seconds) of ``repeat`` runs."""
    cpu = wall = float("inf")
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        run()
        cpu = min(cpu, time.process_time() - c0)
        wall = min(wall, time.perf_counter() - w0)
    return cpu, wall


def best_of_chunks(repeat: int, chunks: list[Callable[[], Any]]) -> tuple[float, float]:
    """The sum over ``chunks`` of each one's best time in ``repeat`` runs: a busy machine
    rarely slows every run of a short chunk, so this comes closer to the machine's own speed
    than the best of whole runs. Chunks are run round-robin so each repeat is spread out."""
    cpu = [float("inf")] * len(chunks)
    wall = [float("inf")] * len(chunks)
    for _ in range(repeat):
        for i, chunk in enumerate(chunks):
            c0, w0 = time.process_time(), time.perf_counter()
            chunk()
            cpu[i] = min(cpu[i], time.process_time() - c0)
            wall[i] = min(wall[i], time.perf_counter() - w0)
    return sum(cpu), sum(wall)


def split(items: list[Any], parts: int) -> list[list[Any]]:
    size = max(1, -(-len(items) // parts))
    return [items[i : i + size] for i in range(0, len(items), size)]


def baseline_rate(items: int, repeat: int) -> float:
    """Items/s (CPU) of the trivial loop: one dict lookup and one append per item."""
    table = {k: k for k in range(1024)}
    keys = [k & 1023 for k in range(items)]

    def run() -> None:
        out = []
        for k in keys:
            out.append(table[k])

    cpu, _ = best_of(repeat, run)
    return items / cpu


def random_hand(seed: int, hand_index: int, players: int, rng: random.Random) -> tuple[HandState, int]:
    """One hand of a uniformly random legal player at every seat; returns it and its decisions."""
    state = HandState.deal(deck_order(seed, hand_index), players, hand_index % players, STANDARD)
    decisions = 0
    while state.outcome is None:
        actions = state.legal_actions()
        state.apply(actions[rng.randrange(len(actions))])
        decisions += 1
    return state, decisions


def report(name: str, count: int, unit: str, cpu: float, wall: float, base: float, extra: str = "") -> float:
    rate = count / cpu
    print(
        f"  {name:<34} {rate:>11,.0f} {unit}/s cpu  {count / wall:>11,.0f} {unit}/s wall"
        f"   ratio {rate / base:.4f} (1/{base / rate:,.0f}){extra}"
    )
    return rate


def bench_replay(hands: int, repeat: int) -> float:
    print(f"generating {hands:,} hands of random play (2 to 6 seats)...")
    rng = random.Random(SEED)
    texts = [
        HandRecord.from_state(random_hand(SEED, h, 2 + h % 5, rng)[0]).to_text() for h in range(hands)
    ]
    records = [HandRecord.from_text(t) for t in texts]
    actions = sum(len(r.actions) for r in records)
    print(f"{hands:,} records, {actions:,} actions ({actions / hands:.1f} a hand)")
    base = baseline_rate(actions, repeat)
    print(f"  {'baseline (dict lookup + append)':<34} {base:>11,.0f} items/s cpu")

    def replay(records: list[HandRecord]) -> None:
        for record in records:
            record.verify()

    def parse(texts: list[str]) -> None:
        for text in texts:
            HandRecord.from_text(text)

    def parse_replay(texts: list[str]) -> None:
        for text in texts:
            HandRecord.from_text(text).verify()

    record_chunks, text_chunks = split(records, CHUNKS), split(texts, CHUNKS)
    cpu, wall = best_of_chunks(repeat, [partial(replay, c) for c in record_chunks])
    rate = report("replay (verify) parsed records", actions, "actions", cpu, wall, base)
    cpu, wall = best_of_chunks(repeat, [partial(parse, c) for c in text_chunks])
    report("parse (JSON text -> checked record)", actions, "actions", cpu, wall, base)
    cpu, wall = best_of_chunks(repeat, [partial(parse_replay, c) for c in text_chunks])
    report("parse + replay", actions, "actions", cpu, wall, base, f"   ({hands / cpu:,.0f} hands/s cpu)")
    verdict = "meets" if rate >= TARGET_REPLAY else "MISSES"
    print(f"  replay {verdict} the target of {TARGET_REPLAY:,} actions/s (cpu)")
    return rate


def bench_selfplay(hands_per_size: int, repeat: int) -> float:
    print(f"engine self-play: random legal bot, {hands_per_size:,} hands at each table size")
    rows = []
    total_hands = total_decisions = 0
    total_cpu = total_wall = 0.0
    for players in range(2, 7):
        counts: dict[int, int] = {}

        def run(hands: list[int], players: int = players, counts: dict[int, int] = counts) -> None:
            rng = random.Random(hands[0])  # one per chunk: the same play in every repeat
            for h in hands:
                counts[h] = random_hand(SEED, h, players, rng)[1]

        chunks = split(list(range(hands_per_size)), CHUNKS)
        cpu, wall = best_of_chunks(repeat, [partial(run, c) for c in chunks])
        decisions = sum(counts.values())
        rows.append((players, decisions, cpu, wall))
        total_hands += hands_per_size
        total_decisions += decisions
        total_cpu += cpu
        total_wall += wall
    base = baseline_rate(total_decisions, repeat)
    print(f"  {'baseline (dict lookup + append)':<34} {base:>11,.0f} items/s cpu")
    for players, decisions, cpu, wall in rows:
        report(
            f"{players} seats", decisions, "decisions", cpu, wall, base,
            f"   {hands_per_size / cpu:>9,.0f} hands/s",
        )
    rate = report(
        "all sizes", total_decisions, "decisions", total_cpu, total_wall, base,
        f"   {total_hands / total_cpu:>9,.0f} hands/s",
    )
    verdict = "meets" if rate >= TARGET_DECISIONS else "MISSES"
    print(f"  self-play {verdict} the target of {TARGET_DECISIONS:,} decisions/s (cpu)")
    return rate


def bench_referee(hands_per_size: int, repeat: int) -> None:
    from bots.random_bot import RandomBot
    from sdk.referee import LocalPlayer, play_match

    print(f"full referee: play_match with LocalPlayer(RandomBot), {hands_per_size:,} hands at each size")
    rows = []
    for players in range(2, 7):
        decisions: list[int] = []

        def run(players: int = players, decisions: list[int] = decisions) -> None:
            seats = [LocalPlayer(RandomBot) for _ in range(players)]
            result = play_match(seats, SEED + players, hands_per_size)
            decisions[:] = [result.decisions]

        cpu, wall = best_of(repeat, run)
        rows.append((players, decisions[0], cpu, wall))
    total = sum(r[1] for r in rows)
    base = baseline_rate(total, repeat)
    print(f"  {'baseline (dict lookup + append)':<34} {base:>11,.0f} items/s cpu")
    for players, count, cpu, wall in rows:
        per_hand = f"   {hands_per_size / cpu:>9,.0f} hands/s"
        report(f"{players} seats", count, "decisions", cpu, wall, base, per_hand)
    cpu = sum(r[2] for r in rows)
    wall = sum(r[3] for r in rows)
    report("all sizes", total, "decisions", cpu, wall, base, f"   {5 * hands_per_size / cpu:>9,.0f} hands/s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hands", type=int, default=10_000, help="recorded hands to replay")
    parser.add_argument("--selfplay-hands", type=int, default=4_000, help="hands per table size")
    parser.add_argument("--referee-hands", type=int, default=400, help="hands per table size")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best counts")
    parser.add_argument("--quick", action="store_true", help="a tenth of the work")
    parser.add_argument("--profile", choices=("replay", "selfplay"), help="cProfile one part and stop")
    args = parser.parse_args(argv)
    if args.quick:
        args.hands //= 10
        args.selfplay_hands //= 10
        args.referee_hands //= 10
    if args.profile:
        part = bench_replay if args.profile == "replay" else bench_selfplay
        size = args.hands if args.profile == "replay" else args.selfplay_hands
        profiler = cProfile.Profile()
        profiler.runcall(part, size, 1)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
        return 0
    print(f"Python {sys.version.split()[0]} on {sys.platform}")
    replay = bench_replay(args.hands, args.repeat)
    selfplay = bench_selfplay(args.selfplay_hands, args.repeat)
    bench_referee(args.referee_hands, args.repeat)
    ok = replay >= TARGET_REPLAY and selfplay >= TARGET_DECISIONS
    print("targets met" if ok else "targets NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
