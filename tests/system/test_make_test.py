"""The README's test command, ``make test`` (what .ci/run runs), checks lint and types before
the tests, with the configuration in pyproject.toml."""

from __future__ import annotations

import shutil
import subprocess
import tomllib

import pytest
from helpers.paths import ROOT


def recipe(target: str) -> list[str]:
    """The commands ``make`` would run for ``target`` (prerequisites included), not run."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    command = ["make", "-n", target]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=30, check=True)
    return run.stdout.splitlines()


def test_make_test_runs_ruff_then_mypy_then_pytest() -> None:
    lines = recipe("test")
    steps = [next(i for i, line in enumerate(lines) if line.endswith(tail)) for tail in
             ("/ruff check .", "/mypy", "/pytest")]
    assert steps == sorted(steps), lines


def test_mypy_alone_checks_every_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert set(config["files"]) == {"sdk", "arena", "dashboard", "bots"}
    assert config["strict"] is True


def test_ci_runs_make_test() -> None:
    assert "make test" in (ROOT / ".ci" / "run").read_text().splitlines()
