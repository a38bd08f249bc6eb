"""``tonk record verify|simulate``, run as a user runs it: a subprocess
(``python -m sdk.cli record ...``), its exit status, its standard output (one JSON line per
file) and its standard error (never a traceback).

The three runs start together (each pays the CLI's start-up once) and the tests read their
results.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers.case_files import CASES
from helpers.paths import ROOT

from arena.processes import spawn

REPO = ROOT
CASE_FILES = sorted(CASES.glob("*.json"))
EXAMPLE: dict[str, Any] = json.loads((CASES / "seed-example-1.json").read_text())


@dataclass
class Run:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    def line(self, index: int) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.lines[index])
        return data


def mutated(change: Callable[[dict[str, Any]], object]) -> str:
    data = copy.deepcopy(EXAMPLE)
    change(data)
    return json.dumps(data, indent=1)


# Goblin (seat 1) discards a card he does not hold at action 3.
ILLEGAL = mutated(lambda d: d["actions"][3].__setitem__("discard", "Qs"))
# The stored payoffs are wrong; the actions are all legal.
MISMATCH = mutated(lambda d: d["outcome"].__setitem__("payoffs", [1, 0, -1]))
# The record stops before Croaker goes down.
UNFINISHED = mutated(lambda d: d["actions"].pop())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    work = tmp_path_factory.mktemp("records")
    (work / "sub").mkdir()
    (work / "illegal.json").write_text(ILLEGAL)
    (work / "mismatch.json").write_text(MISMATCH)
    (work / "unfinished.json").write_text(UNFINISHED)
    (work / "sub" / "broken.json").write_text('{"format": "tonk-hand/1",')
    (work / "sub" / "example.json").write_text(json.dumps(EXAMPLE))
    plans = {
        "verify_cases": ["verify", *map(str, CASE_FILES)],
        "verify_bad": ["verify", "illegal.json", "mismatch.json", "sub/broken.json", "unfinished.json",
                       "sub/example.json"],
        "simulate": ["simulate", "illegal.json", "./mismatch.json", "sub/../sub/example.json",
                     "sub/broken.json", "no-such-file.json", str(CASES / "seed-example-2.json")],
    }
    procs = {
        name: (
            args,
            spawn(
                [sys.executable, "-m", "sdk.cli", "record", *args],
                cwd=work,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            ),
        )
        for name, args in plans.items()
    }
    results = {}
    for name, (args, proc) in procs.items():
        stdout, stderr = proc.communicate(timeout=120)
        results[name] = Run(args, proc.returncode, stdout, stderr)
    yield results


def test_verify_the_public_cases_exits_0(runs: dict[str, Run]) -> None:
    run = runs["verify_cases"]
    assert len(CASE_FILES) >= 2
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stderr == ""
    assert len(run.lines) == len(CASE_FILES)
    for index, path in enumerate(CASE_FILES):
        assert run.line(index) == {"file": str(path), "outcome": json.loads(path.read_text())["outcome"]}


def test_verify_an_illegal_record_exits_non_zero_naming_the_action_and_a_plain_reason(
    runs: dict[str, Run],
) -> None:
    run = runs["verify_bad"]
    assert run.returncode != 0
    line = run.line(0)
    assert line["file"] == "illegal.json"
    assert line["error"]["action"] == 3
    assert line["error"]["reason"] == "action 3 (discard Qs, seat 1): Qs is not in seat 1's hand"


def test_verify_never_prints_a_traceback(runs: dict[str, Run]) -> None:
    for run in runs.values():
        assert "Traceback" not in run.stderr
        assert "Traceback" not in run.stdout
        assert run.stderr == ""
        for text in run.lines:
            json.loads(text)  # every line is JSON


def test_verify_a_wrong_stored_outcome_is_reported_as_a_mismatch(runs: dict[str, Run]) -> None:
    line = runs["verify_bad"].line(1)
    assert line["file"] == "mismatch.json"
    assert line["error"]["mismatch"] is True
    assert line["error"]["action"] is None
    assert line["error"]["reason"] == (
        "stored outcome disagrees with the replay: payoffs: record says [1, 0, -1], replay gives [2, -1, -1]"
    )


def test_verify_malformed_and_unfinished_records_and_carries_on(runs: dict[str, Run]) -> None:
    run = runs["verify_bad"]
    assert len(run.lines) == 5  # one line per file, in the order given
    broken = run.line(2)
    assert broken["file"] == "sub/broken.json"
    assert broken["error"]["action"] is None
    assert broken["error"]["reason"].startswith("not valid JSON: ")
    unfinished = run.line(3)
    assert unfinished["error"]["reason"] == "the actions end before the hand is over"
    assert run.line(4) == {"file": "sub/example.json", "outcome": EXAMPLE["outcome"]}


def test_simulate_prints_one_json_line_per_file_exactly(runs: dict[str, Run]) -> None:
    run = runs["simulate"]
    names = run.args[1:]
    assert len(run.lines) == len(names)
    expected_outcome_2 = json.loads((CASES / "seed-example-2.json").read_text())["outcome"]
    expected: list[dict[str, Any]] = [
        {"file": "illegal.json",
         "error": {"action": 3, "reason": "action 3 (discard Qs, seat 1): Qs is not in seat 1's hand"}},
        # simulate replays and does not compare: the replayed outcome, not the stored one
        {"file": "./mismatch.json", "outcome": EXAMPLE["outcome"]},
        {"file": "sub/../sub/example.json", "outcome": EXAMPLE["outcome"]},
        {"file": "sub/broken.json", "error": {"action": None, "reason": run.line(3)["error"]["reason"]}},
        {"file": "no-such-file.json", "error": {"action": None, "reason": run.line(4)["error"]["reason"]}},
        {"file": names[5], "outcome": expected_outcome_2},
    ]
    for text, want in zip(run.lines, expected, strict=True):
        # Exactly {"file": NAME, "outcome": {...}} or {"file": NAME, "error": {"action", "reason"}},
        # keys in that order, with the file name as given.
        assert text == json.dumps(want)
    assert run.line(3)["error"]["reason"].startswith("not valid JSON: ")
    assert run.line(4)["error"]["reason"].startswith("cannot read the file: ")
    assert run.stderr == ""


def test_an_engine_bug_is_still_one_json_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdk.commands import record as command
    from sdk.record import HandRecord

    path = tmp_path / "example.json"
    path.write_text(json.dumps(EXAMPLE))

    def broken(self: HandRecord) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(HandRecord, "verify", broken)
    line = command.check_file(str(path), compare=True)
    reason = "internal error, please report it: KeyError: 'boom'"
    assert line == {"file": str(path), "error": {"action": None, "reason": reason}}


def test_in_process_check_file_agrees_with_the_cli(runs: dict[str, Run]) -> None:
    from sdk.commands.record import check_file

    for index, path in enumerate(CASE_FILES):
        assert check_file(str(path), compare=True) == runs["verify_cases"].line(index)
