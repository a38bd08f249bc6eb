"""bench/replay_cli.py measures what it says: it times the real ``tonk record simulate`` of
each tree it names (and says which code each imported), over records of real play that replay
as recorded, beside a naive referee that finds the same ends."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from helpers.bench_modules import bench_module
from helpers.paths import ROOT

from sdk.commands.record import check_lines


def test_the_bench_runs_both_trees_on_real_play_and_its_yardstick_agrees(tmp_path: Path) -> None:
    records = tmp_path / "hands.jsonl"
    out = io.StringIO()
    bench_file = ROOT / "bench" / "replay_cli.py"
    with bench_module(bench_file, "bench_replay_cli_test") as bench, contextlib.redirect_stdout(out):
        status = bench.main(["--hands", "14", "--records", str(records), "--runs", "1", "--old", str(ROOT)])
    text = out.getvalue()
    assert status == 0, text
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert [len(r["players"]) for r in lines] == [2] * 5 + [3] * 5 + [4] * 4
    assert {r["players"][0] for r in lines} == {"heuristic", "greedy"}
    replayed = [line["outcome"] for line in check_lines(str(records), compare=True)]  # as recorded
    assert replayed == [r["outcome"] for r in lines]
    assert sum(len(r["actions"]) for r in lines) > 5 * len(lines)  # played, not dropped at once
    assert f"sdk from {ROOT / 'sdk' / '__init__.py'}" in text
    assert "new and old print the same lines: True" in text
    assert "the naive referee finds tonk's end and winners in 14 of 14 hands" in text
    assert "old / new (wall): " in text
