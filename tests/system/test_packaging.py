"""pyproject.toml uses the packaging metadata of today: installing the project prints no
deprecation warning of ours (setuptools reads the same configuration pip's build does)."""

from __future__ import annotations

import tomllib
import warnings

import pytest
from helpers.paths import ROOT


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
