"""How long ``tonk --help`` takes to answer, against a bare Python start-up measured in the
same run (the machine's own speed), so the numbers compare across machines.

    .venv/bin/python bench/cli_startup.py [--runs 10]

Prints the median wall time of each command and its ratio to the bare start-up.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

# Run as a script, this folder comes first on the path, and bench/arena.py would stand for the
# arena package: the checkout instead.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from arena.processes import ensure_watched, run_process  # noqa: E402

TONK = str(Path(sys.executable).with_name("tonk"))
COMMANDS = {
    "python -c pass (baseline)": [sys.executable, "-c", "pass"],
    "tonk --help": [TONK, "--help"],
    "tonk play --help": [TONK, "play", "--help"],
    "tonk tournament --help": [TONK, "tournament", "--help"],
}


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    # Every command alike through run_process: it dies with this bench however the bench ends.
    run_process(command, stdout=subprocess.DEVNULL, check=True, timeout=60)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each command (alternated)")
    args = parser.parse_args(argv)
    ensure_watched()
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):  # alternated, so load on a shared machine hits every command alike
        for name, command in COMMANDS.items():
            times[name].append(timed(command))
    base = statistics.median(times["python -c pass (baseline)"])
    print(f"{'command':<28} {'median s':>9} {'x baseline':>10}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<28} {median:>9.3f} {median / base:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
