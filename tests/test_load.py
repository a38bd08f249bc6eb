"""A short run of the loopback load test (bench/load.py) in CI: the dashboard under gunicorn
answers many concurrent clients on the leaderboard and a replay's JSON while a tournament is
being played, without a single error. The full 50-client, 30-second run is the benchmark."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_dashboard_under_load_while_a_tournament_runs_has_no_errors() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "load.py"), "--clients", "12", "--seconds", "6", "--json"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    summary = json.loads(run.stdout)
    routes = summary["routes"]
    assert set(routes) == {"leaderboard", "replay", "baseline"}
    for name, route in routes.items():
        assert route["errors"] == 0, (name, route)
        assert route["requests"] >= 12, (name, route)  # every client got answers on every route
    assert summary["tournament"]["of"] > 0
