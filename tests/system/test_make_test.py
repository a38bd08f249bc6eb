"""The README's test command, ``make test`` (what .ci/run runs), checks lint and types before
the tests, with the configuration in pyproject.toml."""

from __future__ import annotations

import json
import shutil
import sys
import tomllib
from pathlib import Path

import pytest
from helpers.paths import ROOT
from scheduling import costly_tests

from arena.processes import run_process


def recipe(target: str) -> list[str]:
    """The commands ``make`` would run for ``target`` (prerequisites included), not run."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    command = ["make", "-n", target]
    run = run_process(command, cwd=ROOT, capture_output=True, text=True, timeout=30, check=True)
    return run.stdout.splitlines()


def test_make_test_runs_ruff_then_mypy_then_pytest() -> None:
    lines = recipe("test")
    steps = [next(i for i, line in enumerate(lines) if line.endswith(tail) or tail + " " in line) for tail in
             ("/ruff check .", "/mypy", "/pytest")]
    assert steps == sorted(steps), lines


def test_make_test_runs_the_tests_in_parallel_costliest_module_first() -> None:
    (pytest,) = [line.split() for line in recipe("test") if "/pytest " in line or line.endswith("/pytest")]
    assert "-n" in pytest and int(pytest[pytest.index("-n") + 1]) >= 2, pytest
    assert pytest[pytest.index("--dist") + 1] == "loadfile" and "--no-loadscope-reorder" in pytest, pytest


def test_mypy_alone_checks_every_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert set(config["files"]) == {"sdk", "arena", "dashboard", "bots"}
    assert config["strict"] is True


def test_ci_runs_make_test() -> None:
    assert "make test" in (ROOT / ".ci" / "run").read_text().splitlines()


def test_make_test_fast_leaves_out_what_was_measured_costly_and_make_test_keeps_it() -> None:
    (listed, *_) = sorted(costly_tests())  # the list is in the checkout, written from a run
    module = listed.split("::", 1)[0]

    def collected(*flags: str) -> set[str]:
        command = [sys.executable, "-m", "pytest", "--collect-only", "-q", *flags, module]
        run = run_process(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert run.returncode in (0, 5), run.stdout + run.stderr  # 5: every test deselected
        return {line for line in run.stdout.splitlines() if "::" in line}

    everything, fast = collected(), collected("-m", "not slow")
    assert listed in everything and listed not in fast, (listed, fast)
    assert fast < everything


def test_the_costly_list_is_written_from_a_report_and_a_partial_run_judges_only_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import test_durations as script

    monkeypatch.setattr(script, "OUT", tmp_path / "durations.json")
    monkeypatch.setattr(script, "COSTLY", tmp_path / "costly.txt")
    monkeypatch.setattr(script, "ROOT", ROOT)

    def report(name: str, cases: list[tuple[str, str, float]]) -> Path:
        body = "".join(f'<testcase classname="{c}" name="{n}" time="{t}"/>' for c, n, t in cases)
        path = tmp_path / name
        path.write_text(f'<testsuites><testsuite name="pytest">{body}</testsuite></testsuites>')
        return path

    make = "tests.system.test_make_test"
    whole = report("whole.xml", [(make, "test_a[x.y]", 1.5), (make, "test_b", 0.2), (make, "test_c", 3.0)])
    assert script.main([str(whole)]) == 0
    ids = costly_tests(tmp_path / "costly.txt")
    path = "tests/system/test_make_test.py"
    assert ids == {f"{path}::test_a[x.y]", f"{path}::test_c"}
    assert json.loads((tmp_path / "durations.json").read_text()) == {path: 4.7}
    # A fast run (test_c left out) finds test_b slow now that it pays the setup: added; test_a
    # fast now: dropped; test_c, not in the report, keeps its place; the module order is untouched.
    part = report("part.xml", [(make, "test_a[x.y]", 0.4), (make, "test_b", 1.2)])
    assert script.main(["--costly-only", str(part)]) == 0
    assert costly_tests(tmp_path / "costly.txt") == {f"{path}::test_b", f"{path}::test_c"}
    assert json.loads((tmp_path / "durations.json").read_text()) == {path: 4.7}
    assert (tmp_path / "costly.txt").read_text().startswith("# The tests that took 1 s or more")
