"""What the server-side replay costs: a match's steps (arena/queries/replay_steps.py)
against decoding its stored replay (what /api/v1/matches/<id>/replay already did), and the
size of the steps' JSON against the replay's.

    .venv/bin/python bench/replay_steps.py [--hands 20] [--repeat 5]

Both are timed in the same process, best of ``--repeat``, for a 2-seat and a 6-seat match;
the ratio (steps / decode) is the figure to watch: it moves little with the machine's load.
The steps are cached per match once computed (a done match never changes).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.queries.replay_steps import match_steps
from arena.store.replays import decode, encode_logs
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from sdk.referee import LocalPlayer, play_match
from sdk.rules import STANDARD


def best(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=20, help="hands per match (default 20)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs, best counts (default 5)")
    args = parser.parse_args()
    print(f"{'seats':>5} {'hands':>5} {'steps':>6} {'decode ms':>10} {'steps ms':>9} {'ratio':>6} "
          f"{'replay KB':>9} {'steps KB':>9} {'size ratio':>10}")
    for seats in (2, 6):
        bots = [GreedyBot if s % 2 else RandomBot for s in range(seats)]
        result = play_match([LocalPlayer(b) for b in bots], 4242, args.hands)
        blob = encode_logs(result.hands, seed=result.seed, players=result.players, rules=STANDARD)
        hands = decode("tonk-replay/1", blob)
        t_decode = best(args.repeat, lambda: decode("tonk-replay/1", blob))  # noqa: B023
        t_steps = best(args.repeat, lambda: match_steps(hands))  # noqa: B023
        steps = match_steps(hands)
        count = sum(len(h["steps"]) for h in steps)
        replay_kb = len(json.dumps({"hands": hands})) / 1024
        steps_kb = len(json.dumps({"hands": steps})) / 1024
        print(f"{seats:>5} {len(hands):>5} {count:>6} {1000 * t_decode:>10.2f} {1000 * t_steps:>9.2f} "
              f"{t_steps / t_decode:>6.2f} {replay_kb:>9.1f} {steps_kb:>9.1f} {steps_kb / replay_kb:>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
