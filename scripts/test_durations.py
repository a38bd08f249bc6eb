#!/usr/bin/env python3
"""Write tests/durations.json (the order ``make test`` starts modules in: tests/scheduling.py)
from a pytest ``--junitxml`` report of a whole run, ideally serial and on a quiet machine:

    .venv/bin/pytest -p no:xdist --junitxml=/tmp/run.xml && scripts/test_durations.py /tmp/run.xml

A parallel run's report (make test's flags) serves as well: its times are inflated alike by sharing the
cores, and the order is what the schedule reads.

Each module's figure is the sum of its tests' times (setup and teardown included), in seconds,
rounded to a tenth; modules under 1 s are left out (they keep their collection order).
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "durations.json"


def module_of(classname: str) -> str:
    """``tests.system.test_demo`` (or ``tests.system.test_demo.TestX``) -> its file path."""
    parts = classname.split(".")
    while parts and not (ROOT / Path(*parts)).with_suffix(".py").is_file():
        parts.pop()
    return str(Path(*parts).with_suffix(".py")) if parts else classname


def durations(report: Path) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for case in ET.parse(report).iter("testcase"):
        totals[module_of(case.get("classname", ""))] += float(case.get("time") or 0)
    return {m: round(t, 1) for m, t in sorted(totals.items(), key=lambda kv: -kv[1]) if t >= 1.0}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    found = durations(Path(argv[0]))
    OUT.write_text(json.dumps(found, indent=1) + "\n")
    print(f"{OUT.relative_to(ROOT)}: {len(found)} modules, {sum(found.values()):.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
