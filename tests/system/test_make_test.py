"""The README's test command, ``make test`` (what .ci/run runs), checks lint and types before
the tests, with the configuration in pyproject.toml."""

from __future__ import annotations

import shutil
import tomllib

import pytest
from helpers.paths import ROOT

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
