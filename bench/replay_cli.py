"""The CLI replay path as a user runs it: whole ``tonk record simulate FILE`` processes, start-up
included, over one ``.jsonl`` file of recorded hands, this tree against an older one in the same
run.

    .venv/bin/python bench/replay_cli.py [--hands 6000] [--runs 7] [--records FILE]
    git worktree add --detach /tmp/tonk-old 86d05f6
    .venv/bin/python bench/replay_cli.py --old /tmp/tonk-old      # this tree against that one
    git worktree remove /tmp/tonk-old

The records are real play, seeded (``--seed``): matches of 20 hands under the referee
(``sdk.referee.play_match``) between the house bots ``heuristic`` and ``greedy``, seated
alternately and rotated from match to match, a third of the hands at each of 2, 3 and 4 seats.
Uniformly random play (bench/engine.py's) mostly goes down at once, about 5 actions a hand;
these hands run about 20 actions, with melds, lay-offs, going out and stock-outs among their
ends, as an exported tournament does. Each line is a ``tonk-hand/1`` record with its outcome
and an ``arena`` field, as ``tonk export`` writes them. Generating 6,000 hands takes under a
minute: ``--records FILE`` keeps them (and reuses the file when it exists) for the next run.

Each tree runs under this interpreter with ``PYTHONPATH`` set to the tree (the same
``sdk.cli:main`` the ``tonk`` launcher calls); ``--old-python`` gives the old tree an
interpreter of its own (its own venv). Each tree's ``sdk.__file__`` is printed, so a run shows
which code it timed. Every round runs each command once, in turn (so load on a shared machine
hits them alike), after one warm-up round (which also writes each tree's bytecode cache); the
output goes to a file, and the new tree's lines must equal the old tree's. The timed commands
run without PYTHONDONTWRITEBYTECODE and PYTHONUNBUFFERED, as on a user's machine (``--keep-env``
keeps them). Printed per command: median and minimum wall time and CPU time (the
children's rusage: user + system), and the ratios old/new per round (their median). Two
yardsticks run in the same rounds: ``python -c pass`` (the interpreter's start-up) and a naive
dict-based referee (this file with ``--naive-referee FILE``: ``json.loads`` and a few
list operations per action, fewer checks than the engine's; it must find the end and winners
tonk finds), whose time over the new tree's says how far the CLI is from a bare loop on this
machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Run as a script, this file's folder comes first on sys.path, and bench/bots.py would shadow
# the ``bots`` package: put the repository root there instead.
_HERE = Path(__file__).resolve().parent
ROOT = _HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(ROOT))

from arena.processes import ensure_watched, run_process  # noqa: E402

SEED = 20250311
HANDS_PER_MATCH = 20
RUN_CLI = "import sys; from sdk.cli import main; sys.exit(main())"  # what the tonk launcher runs
NAIVE, NEW, OLD = "naive dict referee", "new: tonk record simulate", "old: tonk record simulate"


# -- the records ------------------------------------------------------------------------------


def generate(path: Path, hands: int, seed: int) -> None:
    """Write ``hands`` records of real play to ``path`` (see the module's docstring)."""
    from bots.greedy import GreedyBot
    from bots.heuristic import HeuristicBot
    from sdk.dealing import derive_seed
    from sdk.referee import LocalPlayer, plain_record, play_match

    per_size = [hands // 3 + (1 if k < hands % 3 else 0) for k in range(3)]
    started = time.perf_counter()
    with open(path, "w", encoding="utf-8") as out:
        match = 0
        for seats, wanted in zip((2, 3, 4), per_size, strict=True):
            done = 0
            while done < wanted:
                count = min(HANDS_PER_MATCH, wanted - done)
                bots = [HeuristicBot if (s + match) % 2 == 0 else GreedyBot for s in range(seats)]
                result = play_match(
                    [LocalPlayer(b) for b in bots], derive_seed(seed, f"replay-cli/{match}"), count
                )
                for index, log in enumerate(result.hands):
                    line = plain_record(log.to_json())
                    line["arena"] = {"tournament": 1, "match": match + 1, "hand": index}
                    out.write(json.dumps(line, separators=(",", ":")) + "\n")
                done += count
                match += 1
            print(f"  {seats} seats: {wanted:,} hands ({time.perf_counter() - started:.0f} s)", flush=True)


def describe(path: Path) -> str:
    seats: dict[int, int] = {}
    ends: dict[str, int] = {}
    actions = 0
    with open(path, encoding="utf-8") as f:
        for text in f:
            record = json.loads(text)
            n = len(record["players"])
            seats[n] = seats.get(n, 0) + 1
            end = record["outcome"]["end"]
            ends[end] = ends.get(end, 0) + 1
            actions += len(record["actions"])
    hands = sum(seats.values())
    by_seats = ", ".join(f"{n} seats {c:,}" for n, c in sorted(seats.items()))
    by_end = ", ".join(f"{e} {c}" for e, c in sorted(ends.items(), key=lambda kv: -kv[1]))
    return (
        f"{hands:,} hands ({by_seats}), {actions:,} actions ({actions / hands:.1f} a hand), "
        f"{path.stat().st_size / 1e6:.1f} MB; ends: {by_end}"
    )


# -- the naive referee (a yardstick) ------------------------------------------------------------

_VALUES = {"A": 1, "J": 10, "Q": 10, "K": 10}


def _value(card: str) -> int:
    rank = card[:-1]
    return _VALUES.get(rank) or int(rank)


def naive_referee(path: str) -> int:
    """Replay each record of ``path`` with plain dicts and lists: the seat to act, the phase,
    cards in hand, piles not empty; the outcome of a drop, an out and a showdown. A yardstick,
    not a referee: melds and lay-offs are not checked for shape."""
    out = sys.stdout
    with open(path, "rb") as f:
        for number, text in enumerate(f, start=1):
            record = json.loads(text)
            n = len(record["players"])
            hands = [list(h) for h in record["hands"]]
            discard = list(record["discard"])
            stock = record["stock"][::-1]
            table: list[list[str]] = []
            seat = (record["dealer"] + 1) % n
            drawn = False
            end: dict[str, Any] | None = None
            totals = [sum(_value(c) for c in h) for h in hands]
            if any(t <= 15 or t >= 49 for t in totals):
                end = {"end": "tonk"}
            for i, action in enumerate(record["actions"]):
                hand = hands[seat]
                ok = end is None and action["seat"] == seat
                if ok and "draw" in action:
                    pile = stock if action["draw"] == "stock" else discard
                    ok = not drawn and bool(pile)
                    if ok:
                        hand.append(pile.pop())
                        drawn = True
                elif ok and "discard" in action:
                    ok = drawn and action["discard"] in hand
                    if ok:
                        hand.remove(action["discard"])
                        discard.append(action["discard"])
                        drawn = False
                        if not hand:
                            end = {"end": "out", "winners": [seat]}
                        elif not stock:
                            end = {"end": "stock"}
                        seat = (seat + 1) % n
                elif ok and "meld" in action:
                    ok = drawn and all(c in hand for c in action["meld"])
                    if ok:
                        for c in action["meld"]:
                            hand.remove(c)
                        table.append(list(action["meld"]))
                        if not hand:
                            end = {"end": "out", "winners": [seat]}
                elif ok and "layoff" in action:
                    ok = drawn and action["layoff"] in hand and action["onto"] < len(table)
                    if ok:
                        hand.remove(action["layoff"])
                        table[action["onto"]].append(action["layoff"])
                        if not hand:
                            end = {"end": "out", "winners": [seat]}
                elif ok:  # drop
                    ok = not drawn
                    totals = [sum(_value(c) for c in h) for h in hands]
                    low = min(t for s, t in enumerate(totals) if s != seat)
                    lowest = [s for s in range(n) if s != seat and totals[s] == low]
                    end = {"end": "drop", "winners": [seat] if totals[seat] < low else lowest}
                if not ok:
                    end = {"action": i, "reason": "illegal"}
                    break
            out.write(json.dumps({"file": path, "line": number, "outcome": end}) + "\n")
    out.flush()
    return 0


# -- timing -----------------------------------------------------------------------------------


#: Set in some shells and CI jobs, unusual on a user's machine, and each changes what is timed:
#: no bytecode cache means every run compiles the tree's sources again, unbuffered output a
#: system call per line. ``--keep-env`` keeps them.
UNUSUAL_ENV = ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONPROFILEIMPORTTIME", "PYTHONPATH")


def child_env(keep: bool, tree: Path | None = None) -> dict[str, str]:
    env = dict(os.environ) if keep else {k: v for k, v in os.environ.items() if k not in UNUSUAL_ENV}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def timed(command: list[str], env: dict[str, str], output: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds (the child's user + system) of one whole process, and its exit
    status; its standard output goes to ``output``. It runs in ``output``'s folder: ``python
    -c`` puts the working directory first on sys.path, where a checkout would shadow the tree
    ``PYTHONPATH`` names."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(output, "wb") as out:
        started = time.perf_counter()
        code = run_process(
            command, env=env, cwd=output.parent, stdout=out, stderr=subprocess.DEVNULL, check=False
        ).returncode
        wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, code


def lines_of(path: Path) -> list[Any]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hands", type=int, default=6000, help="recorded hands (default 6000)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--records", type=Path, help="keep the records here; reused when it exists")
    parser.add_argument("--old", type=Path, help="an older checkout to time against (a git worktree)")
    parser.add_argument("--old-python", default=sys.executable, help="the old tree's interpreter")
    parser.add_argument("--runs", type=int, default=7, help="timed rounds (after one warm-up)")
    parser.add_argument("--keep-env", action="store_true",
                        help=f"keep {', '.join(UNUSUAL_ENV[:3])} for the timed commands")
    parser.add_argument("--naive-referee", metavar="FILE", help=argparse.SUPPRESS)  # the yardstick
    args = parser.parse_args(argv)
    if args.naive_referee:
        return naive_referee(args.naive_referee)
    with tempfile.TemporaryDirectory(prefix="tonk-replay-cli-") as scratch:
        return run(args, Path(scratch))


def run(args: argparse.Namespace, scratch: Path) -> int:
    records = args.records or scratch / "hands.jsonl"
    if not records.exists():
        print(f"generating {args.hands:,} hands of heuristic/greedy play (seed {args.seed})...", flush=True)
        generate(records, args.hands, args.seed)
    print(f"records: {describe(records)}")
    python, here = sys.executable, str(Path(__file__).resolve())
    simulate = ["-c", RUN_CLI, "record", "simulate", str(records)]
    plain = child_env(args.keep_env)
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "python -c pass": ([python, "-c", "pass"], plain),
        NAIVE: ([python, here, "--naive-referee", str(records)], plain),
        NEW: ([python, *simulate], child_env(args.keep_env, ROOT)),
    }
    if args.old is not None:
        commands[OLD] = ([args.old_python, *simulate], child_env(args.keep_env, args.old.resolve()))
    unset = [k for k in UNUSUAL_ENV[:3] if k in os.environ and k not in plain]
    if unset:
        print(f"  the timed commands run without {', '.join(unset)} (--keep-env keeps them)")
    for label in (NEW, OLD) if args.old is not None else (NEW,):
        command, env = commands[label]
        where = run_process(
            [command[0], "-c", "import sdk; print(sdk.__file__)"], env=env, cwd=scratch,
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        print(f"  {label}: sdk from {where}")
    times: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
    outputs = {label: scratch / f"out-{i}.jsonl" for i, label in enumerate(commands)}
    for round_ in range(args.runs + 1):  # round 0 warms the caches and is not counted
        for label, (command, env) in commands.items():
            wall, cpu, code = timed(command, env, outputs[label])
            if code != 0:
                print(f"{label} exited with {code}", file=sys.stderr)
                return 1
            if round_:
                times[label].append((wall, cpu))
    new_lines = lines_of(outputs[NEW])
    if OLD in outputs:
        same = new_lines == lines_of(outputs[OLD])
        print(f"  new and old print the same lines: {same}")
        if not same:
            return 1
    # The yardstick does real work: it finds the ends tonk finds (it skips the turn cap).
    agree = sum(
        n["outcome"]["end"] == t["outcome"]["end"]
        and n["outcome"].get("winners", t["outcome"]["winners"]) == t["outcome"]["winners"]
        for n, t in zip(lines_of(outputs[NAIVE]), new_lines, strict=True)
    )
    print(f"  the naive referee finds tonk's end and winners in {agree:,} of {len(new_lines):,} hands")
    print(f"{args.runs} rounds after a warm-up, each command once a round in turn")
    print(f"  {'command':<28} {'wall median':>11} {'wall min':>9} {'cpu median':>11} {'cpu min':>8}")
    for label, values in times.items():
        walls, cpus = [w for w, _ in values], [c for _, c in values]
        print(f"  {label:<28} {statistics.median(walls):>10.3f}s {min(walls):>8.3f}s "
              f"{statistics.median(cpus):>10.3f}s {min(cpus):>7.3f}s")

    def ratio(a: str, b: str, part: int) -> float:  # median over rounds of a/b, round by round
        return statistics.median(x[part] / y[part] for x, y in zip(times[a], times[b], strict=True))

    for other in (NEW, OLD) if args.old is not None else (NEW,):
        print(f"  naive referee / {other[:3]} (wall): {ratio(NAIVE, other, 0):.2f}"
              f"   (cpu): {ratio(NAIVE, other, 1):.2f}")
    if args.old is not None:
        print(f"  old / new (wall): {ratio(OLD, NEW, 0):.2f}   (cpu): {ratio(OLD, NEW, 1):.2f}"
              "   (the median of the rounds' ratios)")
    return 0


if __name__ == "__main__":
    ensure_watched()  # nothing it starts outlives it, however it ends (arena/processes.py)
    sys.exit(main())
