"""The order modules start in under pytest-xdist (``make test``): costliest first.

``make test`` hands whole modules to its workers (``--dist loadfile``), in the order the
workers collected them. A module of minutes collected last (tests/system sorts late) starts
when the others are nearly done and the run waits for it alone: started first, it runs beside
everything else. So the workers sort the modules by what each took in a whole run on a quiet
machine, kept in ``tests/durations.json`` (``scripts/test_durations.py`` rewrites it from a
``--junitxml`` report); a module not in it keeps its place after the known ones. Tests within a
module keep their order. A pytest without workers runs in the usual order.

The file only orders: a stale or missing entry costs time, never a test.

``make test-fast`` (``-m "not slow"``) is the loop while working, and a test is ``slow`` by its
measure as well as by hand: ``tests/costly.txt`` lists the tests that took a second or more in a
``make test`` run (setup and teardown included, shared cores and all), and each is marked
``slow`` as it is collected. Nothing is skipped by ``make test``; a stale list only makes the
fast loop slower, or faster by a test it should have run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
COSTLY = Path(__file__).with_name("costly.txt")


def module_costs(path: Path = DURATIONS) -> dict[str, float]:
    """Seconds per module (its path from the checkout, as in a test id); empty if unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}


def costliest_first(items: list[pytest.Item], costs: dict[str, float]) -> list[pytest.Item]:
    """``items`` grouped by module, modules by cost (highest first; unknown ones last, in their
    collection order), each module's tests in their own order."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    order = sorted(modules, key=lambda module: -costs.get(module, 0.0))  # stable: ties keep order
    return [item for module in order for item in modules[module]]


def costly_tests(path: Path = COSTLY) -> set[str]:
    """The test ids listed in ``path`` (one a line; ``#`` starts a comment); empty if unreadable."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return set()
    return {line.split("#", 1)[0].strip() for line in lines} - {""}


def mark_costly(items: list[pytest.Item], costly: set[str]) -> int:
    """Mark ``slow`` each of ``items`` listed in ``costly``; how many were."""
    marked = 0
    for item in items:
        if item.nodeid in costly:
            item.add_marker(pytest.mark.slow)
            marked += 1
    return marked


# First, so that -m's selection (a later implementation of the same hook) sees the marks.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_costly(items, costly_tests())
    # Only xdist's workers collect; each must reach the same order, and does (same file).
    if hasattr(config, "workerinput"):
        items[:] = costliest_first(items, module_costs())
