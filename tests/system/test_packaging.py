"""pyproject.toml uses the packaging metadata of today: installing the project prints no
deprecation warning of ours (setuptools reads the same configuration pip's build does), and an
editable install (`make demo`, `make test`) no notice either."""

from __future__ import annotations

import shutil
import sys
import tomllib
import warnings
from pathlib import Path

import pytest
from helpers.paths import ROOT

from arena.processes import run_process


def test_the_license_is_an_spdx_expression() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"


def test_setuptools_reads_the_configuration_without_a_warning() -> None:
    setuptools = pytest.importorskip("setuptools")
    major = int(setuptools.__version__.split(".")[0])
    if major < 77:
        pytest.skip(f"setuptools {setuptools.__version__} predates SPDX license strings (builds get >=77)")
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist = apply_configuration(Distribution(), str(ROOT / "pyproject.toml"))
    assert [str(w.message)[:300] for w in caught] == []
    assert dist.metadata.license_expression == "MIT"


def test_an_editable_install_warns_of_nothing(tmp_path: Path) -> None:
    # pip shows a build backend's warnings even with -q: setuptools' boxed "Editable
    # installation" notice read as an error in the middle of `make demo` (issue #40).
    pytest.importorskip("setuptools")
    project = tmp_path / "tonk-arena"
    shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", "*.egg-info", "build", "dist", "node_modules", ".*_cache", "tests",
        "bench", "docs", "deploy", "examples"))  # fmt: skip
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    done = run_process(
        [sys.executable, "-W", "error", "-c",
         f"import setuptools.build_meta as b; print(b.build_editable({str(wheels)!r}))"],
        cwd=project, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]  # -W error: a warning would have raised
    assert "Editable installation" not in done.stderr, done.stderr
    (wheel,) = wheels.glob("*.whl")
    assert wheel.name.startswith("tonk_arena-")
