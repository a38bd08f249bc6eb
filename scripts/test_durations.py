#!/usr/bin/env python3
"""Write tests/durations.json (the order ``make test`` starts modules in) and tests/costly.txt
(the tests ``make test-fast`` leaves out; both read by tests/scheduling.py) from a pytest
``--junitxml`` report of a whole ``make test`` run:

    make test PARALLEL="-n 4 --dist loadfile --no-loadscope-reorder --junitxml=/tmp/run.xml"
    scripts/test_durations.py /tmp/run.xml

The report of a run with make test's flags is the one to use: its times are inflated by the
shared cores, and the threshold below is in those times.

Each module's figure is the sum of its tests' times (setup and teardown included), in seconds,
rounded to a tenth; modules under 1 s are left out (they keep their collection order). A test
that took ``COSTLY_S`` or more is costly. With ``--costly-only`` the report may be of a part of
the suite (``make test-fast ARGS=--junitxml=...``): the tests in it are judged again (a test left
out that pays its module's setup now that the first one is gone is added), the others keep their
place, and durations.json is left alone.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from scheduling import costly_tests  # noqa: E402  the suite's own reading of the list

OUT = ROOT / "tests" / "durations.json"
COSTLY = ROOT / "tests" / "costly.txt"
COSTLY_S = 1.0
HEADER = f"""\
# The tests that took {COSTLY_S:g} s or more in a make test run (setup and teardown included):
# tests/scheduling.py marks them slow, so make test-fast leaves them out. Written by
# scripts/test_durations.py from a --junitxml report; make test runs them all.
"""


def module_of(classname: str) -> str:
    """``tests.system.test_demo`` (or ``tests.system.test_demo.TestX``) -> its file path."""
    parts = classname.split(".")
    while parts and not (ROOT / Path(*parts)).with_suffix(".py").is_file():
        parts.pop()
    return str(Path(*parts).with_suffix(".py")) if parts else classname


def node_id(classname: str, name: str) -> str:
    """A junit case's pytest id: ``tests/x/test_y.py::TestZ::test_w[a]``."""
    module = module_of(classname)
    inner = classname.split(".")[len(Path(module).with_suffix("").parts) :]
    return "::".join([module, *inner, name])


def times(report: Path) -> dict[str, float]:
    """Each test's seconds (setup and teardown included) by its id."""
    found: dict[str, float] = defaultdict(float)
    for case in ET.parse(report).iter("testcase"):
        found[node_id(case.get("classname", ""), case.get("name", ""))] += float(case.get("time") or 0)
    return found


def durations(tests: dict[str, float]) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for test, seconds in tests.items():
        totals[test.split("::", 1)[0]] += seconds
    return {m: round(t, 1) for m, t in sorted(totals.items(), key=lambda kv: -kv[1]) if t >= 1.0}


def costly(tests: dict[str, float], before: set[str]) -> set[str]:
    """``before`` with the tests in ``tests`` judged again by their time."""
    return {t for t in before if t not in tests} | {t for t, s in tests.items() if s >= COSTLY_S}


def main(argv: list[str]) -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("report", type=Path, help="a pytest --junitxml report")
    parser.add_argument("--costly-only", action="store_true", help="merge a partial run into costly.txt only")
    args = parser.parse_args(argv)
    tests = times(args.report)
    if not tests:
        print(f"{args.report}: no test cases", file=sys.stderr)
        return 2
    if not args.costly_only:
        found = durations(tests)
        OUT.write_text(json.dumps(found, indent=1) + "\n")
        print(f"{os.path.relpath(OUT, ROOT)}: {len(found)} modules, {sum(found.values()):.0f} s in all")
    listed = sorted(costly(tests, costly_tests(COSTLY) if args.costly_only else set()))
    COSTLY.write_text(HEADER + "".join(f"{t}\n" for t in listed))
    print(f"{os.path.relpath(COSTLY, ROOT)}: {len(listed)} tests of {COSTLY_S:g} s or more")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
