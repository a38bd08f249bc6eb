"""Engine throughput: record replay, in-process self-play, and the full referee.

    .venv/bin/python bench/engine.py            # the full run (10,000 recorded hands)
    .venv/bin/python bench/engine.py --quick    # a smaller run, for a quick look
    .venv/bin/python bench/engine.py --profile replay|selfplay   # cProfile one part

Each part is timed in short chunks, ``--repeat`` times round-robin, and each chunk's best
time counts (a busy machine rarely slows every run of a short chunk). Rates are in CPU time of
this process (``cpu``: what one core does, the figure the targets are about) and in wall time.
Right after each chunk a baseline loop runs as many items (one dict lookup and one list append
each) and is timed the same way, so every rate is also printed as a ratio to the baseline
under the same load: the ratios move much less than the raw rates when the machine is busy.

Targets on one core: replay >= 250,000 actions/s, engine self-play >= 40,000 decisions/s.
Replay runs :meth:`HandRecord.verify`, which checks every action (``HandState.apply`` verifies
each one) and compares the replayed outcome with the stored one.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sdk.record as record_module
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.record import HandRecord
from sdk.rules import STANDARD

SEED = 20240601
CHUNKS = 20  # timed pieces per measurement (see best_of_chunks)
TARGET_REPLAY = 250_000
TARGET_DECISIONS = 40_000


@dataclass
class Timing:
    """``items`` done in ``cpu``/``wall`` seconds, and the baseline loop's CPU seconds for
    the same number of items, measured right after each chunk (so under the same load)."""

    items: int
    cpu: float
    wall: float
    base_cpu: float

    def __add__(self, other: Timing) -> Timing:
        return Timing(self.items + other.items, self.cpu + other.cpu, self.wall + other.wall,
                      self.base_cpu + other.base_cpu)


_TABLE = {k: k for k in range(1024)}


def baseline(items: int) -> None:
    """The trivial loop the rates are compared with: one dict lookup and one append per item."""
    table = _TABLE
    out = []
    for k in range(items):
        out.append(table[k & 1023])


def best_of_chunks(repeat: int, chunks: list[Callable[[], int]]) -> Timing:
    """Time each chunk (it returns how many items it did) and the baseline loop for as many
    items right after it, ``repeat`` times round-robin, and sum each one's best time. A busy
    machine rarely slows every run of a short chunk, so the sums come close to the machine's
    own speed, and the ratio of the two compares them under the same load."""
    n = len(chunks)
    cpu, wall, base = [float("inf")] * n, [float("inf")] * n, [float("inf")] * n
    items = [0] * n
    for _ in range(repeat):
        for i, chunk in enumerate(chunks):
            c0, w0 = time.process_time(), time.perf_counter()
            items[i] = chunk()
            c1, w1 = time.process_time(), time.perf_counter()
            baseline(items[i])
            c2 = time.process_time()
            cpu[i], wall[i] = min(cpu[i], c1 - c0), min(wall[i], w1 - w0)
            base[i] = min(base[i], c2 - c1)
    return Timing(sum(items), sum(cpu), sum(wall), sum(base))


def split(items: list[Any], parts: int) -> list[list[Any]]:
    size = max(1, -(-len(items) // parts))
    return [items[i : i + size] for i in range(0, len(items), size)]


def random_hand(seed: int, hand_index: int, players: int, rng: random.Random) -> tuple[HandState, int]:
    """One hand of a uniformly random legal player at every seat; returns it and its decisions."""
    state = HandState.deal(deck_order(seed, hand_index), players, hand_index % players, STANDARD)
    decisions = 0
    while state.outcome is None:
        actions = state.legal_actions()
        state.apply(actions[rng.randrange(len(actions))])
        decisions += 1
    return state, decisions


def report(name: str, timing: Timing, unit: str, extra: str = "") -> float:
    rate = timing.items / timing.cpu
    ratio = timing.base_cpu / timing.cpu  # work rate / baseline rate
    print(
        f"  {name:<34} {rate:>11,.0f} {unit}/s cpu {timing.items / timing.wall:>11,.0f} wall"
        f"   ratio {ratio:.4f} (1/{1 / ratio:,.0f}){extra}"
    )
    return rate


def print_baseline(timing: Timing) -> None:
    rate = timing.items / timing.base_cpu
    print(f"  {'baseline loop (lookup + append)':<34} {rate:>11,.0f} items/s cpu, measured beside each chunk")


def bench_replay(hands: int, repeat: int) -> tuple[float, float]:
    print(f"generating {hands:,} hands of random play (2 to 6 seats)...")
    rng = random.Random(SEED)
    texts = [
        HandRecord.from_state(random_hand(SEED, h, 2 + h % 5, rng)[0]).to_text() for h in range(hands)
    ]
    records = [HandRecord.from_text(t) for t in texts]
    actions = sum(len(r.actions) for r in records)
    print(f"{hands:,} records, {actions:,} actions ({actions / hands:.1f} a hand)")

    def replay(records: list[HandRecord], actions: int) -> int:
        for record in records:
            record.verify()
        return actions

    def parse(texts: list[str]) -> int:
        return sum(len(HandRecord.from_text(text).actions) for text in texts)

    def parse_replay(texts: list[str]) -> int:
        done = 0
        for text in texts:
            record = HandRecord.from_text(text)
            record.verify()
            done += len(record.actions)
        return done

    def loads_only(loads: Callable[[str], Any], texts: list[str], actions: int) -> int:
        for text in texts:
            loads(text)
        return actions

    record_chunks, text_chunks = split(records, CHUNKS), split(texts, CHUNKS)
    chunk_actions = [sum(len(r.actions) for r in c) for c in record_chunks]
    replayed = best_of_chunks(
        repeat, [partial(replay, c, a) for c, a in zip(record_chunks, chunk_actions, strict=True)]
    )
    print_baseline(replayed)
    rate = report("replay (verify) parsed records", replayed, "actions")
    # Each JSON reader HandRecord.from_text can use, in the same run: parsing's cost over the
    # replay's (under 1: parsing is the cheaper), and the JSON decoder's cost alone.
    costs = []
    for name, loads in backends():
        with json_backend(loads):
            parsed = best_of_chunks(repeat, [partial(parse, c) for c in text_chunks])
        report(f"parse, {name}", parsed, "actions")
        decoder = loads or json.loads
        alone = best_of_chunks(
            repeat,
            [partial(loads_only, decoder, t, a) for t, a in zip(text_chunks, chunk_actions, strict=True)],
        )
        report("  of which the JSON decoder alone", alone, "actions")
        costs.append(f"{name} {parsed.cpu / replayed.cpu:.2f} (decoder alone {alone.cpu / replayed.cpu:.2f})")
    both = best_of_chunks(repeat, [partial(parse_replay, c) for c in text_chunks])
    report("parse + replay", both, "actions", f"   ({hands / both.cpu:,.0f} hands/s)")
    print(f"  parse cost / replay cost: {', '.join(costs)}; the goal is under 1")
    ratio = replayed.base_cpu / replayed.cpu
    verdict = "meets" if rate >= TARGET_REPLAY else "MISSES"
    print(f"  replay {verdict} the target of {TARGET_REPLAY:,} actions/s (cpu) here; at this ratio "
          f"it needs a baseline of {TARGET_REPLAY / ratio:,.0f} items/s")
    return rate, ratio


def backends() -> list[tuple[str, Callable[[str | bytes], Any] | None]]:
    """The JSON readers HandRecord.from_text can use here: the standard library's, and
    orjson's when it is installed (the arena extra installs it)."""
    found: list[tuple[str, Callable[[str | bytes], Any] | None]] = [("stdlib json", None)]
    try:
        import orjson
    except ImportError:
        print("  (orjson is not installed: pip install -e '.[arena]' to compare it)")
    else:
        found.append((f"orjson {orjson.__version__}", orjson.loads))
    return found


@contextmanager
def json_backend(loads: Callable[[str | bytes], Any] | None) -> Iterator[None]:
    """HandRecord.from_text reads with ``loads`` (orjson's) or, given None, the stdlib only."""
    saved = record_module._orjson_loads
    record_module._orjson_loads = loads
    try:
        yield
    finally:
        record_module._orjson_loads = saved


def bench_selfplay(hands_per_size: int, repeat: int) -> tuple[float, float]:
    print(f"engine self-play: random legal bot, {hands_per_size:,} hands at each table size")
    total: Timing | None = None
    rows = []
    for players in range(2, 7):

        def run(hands: list[int], players: int = players) -> int:
            rng = random.Random(hands[0])  # one per chunk: the same play in every repeat
            return sum(random_hand(SEED, h, players, rng)[1] for h in hands)

        chunks = split(list(range(hands_per_size)), CHUNKS)
        timing = best_of_chunks(repeat, [partial(run, c) for c in chunks])
        rows.append((players, timing))
        total = timing if total is None else total + timing
    assert total is not None
    print_baseline(total)
    for players, timing in rows:
        report(f"{players} seats", timing, "decisions", f"   {hands_per_size / timing.cpu:>9,.0f} hands/s")
    rate = report("all sizes", total, "decisions", f"   {5 * hands_per_size / total.cpu:>9,.0f} hands/s")
    ratio = total.base_cpu / total.cpu
    verdict = "meets" if rate >= TARGET_DECISIONS else "MISSES"
    print(f"  self-play {verdict} the target of {TARGET_DECISIONS:,} decisions/s (cpu) here; at this "
          f"ratio it needs a baseline of {TARGET_DECISIONS / ratio:,.0f} items/s")
    return rate, ratio


def bench_referee(hands_per_size: int, repeat: int) -> None:
    from bots.random_bot import RandomBot
    from sdk.referee import LocalPlayer, play_match

    print(f"full referee: play_match with LocalPlayer(RandomBot), {hands_per_size:,} hands at each size")
    parts = 5
    total: Timing | None = None
    rows = []
    for players in range(2, 7):

        def run(part: int, players: int = players) -> int:
            seats = [LocalPlayer(RandomBot) for _ in range(players)]
            return play_match(seats, SEED + 100 * players + part, hands_per_size // parts).decisions

        timing = best_of_chunks(repeat, [partial(run, part) for part in range(parts)])
        rows.append((players, timing))
        total = timing if total is None else total + timing
    assert total is not None
    print_baseline(total)
    hands = parts * (hands_per_size // parts)
    for players, timing in rows:
        report(f"{players} seats", timing, "decisions", f"   {hands / timing.cpu:>9,.0f} hands/s")
    report("all sizes", total, "decisions", f"   {5 * hands / total.cpu:>9,.0f} hands/s")


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
    replay, replay_ratio = bench_replay(args.hands, args.repeat)
    selfplay, selfplay_ratio = bench_selfplay(args.selfplay_hands, args.repeat)
    bench_referee(args.referee_hands, args.repeat)
    ok = replay >= TARGET_REPLAY and selfplay >= TARGET_DECISIONS
    print(f"ratios to the baseline loop: replay {replay_ratio:.4f}, self-play {selfplay_ratio:.4f}")
    print("targets met" if ok else "targets NOT met on this run (see the ratios: the machine may be busy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
