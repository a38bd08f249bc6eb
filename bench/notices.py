#!/usr/bin/env python3
"""What a bot that is slow to take lifecycle notices costs a match, before and after the
lifecycle deadline (sdk.referee.RefereeConfig.lifecycle_deadline_ms).

    .venv/bin/python bench/notices.py [--hands 6] [--delay 1.9] [--deadline-ms 1000]

A bot served over gRPC on loopback answers decisions at once but takes ``--delay`` seconds
over every EndHand and EndMatch. One match of ``--hands`` hands against ``greedy`` (in
process) is played three ways, all in this process:

* baseline: the same bot with no delay;
* unbounded: notices waited on up to 2 s each, the GrpcPlayer's own timeout (what the
  referee did before it had a lifecycle deadline);
* bounded: the referee's lifecycle deadline (``--deadline-ms``).

Printed: wall time of each, its ratio to the baseline, the notices the bot received, and the
slow notices the referee recorded.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bots.greedy import GreedyBot  # noqa: E402
from bots.random_bot import RandomBot  # noqa: E402
from sdk.bot import HandResult, MatchSummary  # noqa: E402
from sdk.grpc_player import GrpcPlayer  # noqa: E402
from sdk.referee import LocalPlayer, MatchResult, RefereeConfig, play_match  # noqa: E402
from sdk.server import start_server  # noqa: E402


class SlowNoticeBot(RandomBot):
    name = "slow-notices"
    delay_s = 0.0
    received = 0

    def on_hand_end(self, result: HandResult) -> None:
        SlowNoticeBot.received += 1
        threading.Event().wait(SlowNoticeBot.delay_s)

    def on_match_end(self, summary: MatchSummary) -> None:
        SlowNoticeBot.received += 1
        threading.Event().wait(SlowNoticeBot.delay_s)


def timed(address: str, hands: int, config: RefereeConfig) -> tuple[float, MatchResult]:
    SlowNoticeBot.received = 0
    started = time.perf_counter()
    with GrpcPlayer(address) as player:
        result = play_match([player, LocalPlayer(GreedyBot)], 2026, hands, config=config)
    return time.perf_counter() - started, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=6, help="hands in the match")
    parser.add_argument("--delay", type=float, default=1.9, help="seconds the bot takes over each notice")
    parser.add_argument("--deadline-ms", type=int, default=1000, help="the lifecycle deadline measured")
    args = parser.parse_args(argv)
    server = start_server(SlowNoticeBot)
    try:
        runs = []
        for label, delay, deadline_ms in (
            ("baseline (no delay)", 0.0, args.deadline_ms),
            ("unbounded (2 s timeout)", args.delay, 60_000),
            (f"bounded ({args.deadline_ms} ms)", args.delay, args.deadline_ms),
        ):
            SlowNoticeBot.delay_s = delay
            config = RefereeConfig(lifecycle_deadline_ms=deadline_ms)
            seconds, result = timed(server.address, args.hands, config)
            runs.append((label, seconds, SlowNoticeBot.received, len(result.slow_notices)))
    finally:
        SlowNoticeBot.delay_s = 0.0
        server.stop(0)
    base = runs[0][1]
    print(f"{args.hands}-hand match, notices taking {args.delay:g} s:")
    for label, seconds, received, slow in runs:
        print(f"  {label:<26} {seconds:7.2f} s  x{seconds / base:7.1f}  notices received {received:2d}  "
              f"recorded slow {slow}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
