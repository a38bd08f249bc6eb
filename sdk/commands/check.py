"""``tonk check BOT``: the conformance check (sdk.conformance) of a running bot (``HOST:PORT``)
or of a bot class (``MODULE:CLASS``, served on a loopback port for the check).

Exit status: 0 when the bot passes, 1 when it fails, 2 when it could not be checked at all.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from sdk.conformance import DEFAULT_SEED, CheckConfig, ConformanceError, check_bot


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check",
        help="check that a bot follows the protocol in every situation (HOST:PORT or MODULE:CLASS)",
        description="Play the bot through every phase of the game under the real referee and report "
        "illegal or malformed replies, timeouts, crashes, latency and nondeterminism.",
    )
    parser.add_argument("bot", metavar="BOT", help="HOST:PORT of a running bot, MODULE:CLASS, or a house bot")
    parser.add_argument("--deadline-ms", type=int, default=1000, help="decision deadline (default 1000)")
    parser.add_argument("--hands", type=int, default=CheckConfig.hands, help="hands per test match")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the test matches")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--dump-faults", type=Path, metavar="DIR", help="write each faulted decision to DIR "
                        "as a file for `tonk replay-decision`")  # fmt: skip
    parser.add_argument("--quiet", action="store_true", help="no progress on standard error")
    parser.set_defaults(func=run_check)


def run_check(args: argparse.Namespace) -> int:
    if args.deadline_ms < 1 or args.hands < 1:
        print("tonk check: --deadline-ms and --hands must be at least 1", file=sys.stderr)
        return 2
    config = CheckConfig(deadline_ms=args.deadline_ms, hands=args.hands, seed=args.seed)
    quiet = args.quiet or args.json

    def progress(step: str) -> None:
        if not quiet:
            print(f"  checking: {step}", file=sys.stderr, flush=True)

    try:
        report = check_bot(args.bot, config, progress=progress)
    except ConformanceError as exc:
        print(f"tonk check: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_json(), indent=1))
    else:
        print(report.render())
    if args.dump_faults and report.faults:
        paths = report.dump_faults(args.dump_faults)
        print(f"wrote {len(paths)} faulted decision(s) to {args.dump_faults}/ "
              f"(replay one: tonk replay-decision {paths[0]} {args.bot})", file=sys.stderr)  # fmt: skip
    return 0 if report.passed else 1
