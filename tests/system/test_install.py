"""Installing as a bot author works as written, in fresh virtualenvs: the author's guide's
first block beside a checkout (and the wheel `make dist` builds), then the project `tonk new`
writes installs its own requirements with one command and passes its tests with that
virtualenv's pytest."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.guides import AUTHOR_GUIDE, sh_blocks
from helpers.paths import ROOT

from arena.processes import run_process

#: What a clone does not have (or a checkout's own build leftovers).
NOT_IN_A_CHECKOUT = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", "*.egg-info", "build", "dist", "node_modules", ".*_cache", ".hypothesis"
)

pytestmark = pytest.mark.slow


def checkout(tmp_path: Path) -> Path:
    folder = tmp_path / "tonk-arena"
    shutil.copytree(ROOT, folder, ignore=NOT_IN_A_CHECKOUT)
    return folder


def sh(script: str, cwd: Path, timeout: float = 900) -> str:
    ours = Path(sys.executable).parent
    env = {
        # The machine's python3, not the test's virtualenv.
        "PATH": os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != ours),
        "HOME": os.environ.get("HOME", str(cwd)),  # pip's cache: no download when it has the files
        "LANG": "C.UTF-8",
        "TONK_DATA_DIR": str(cwd / "data"),
        "TONK_SANDBOX_DIR": os.environ["TONK_SANDBOX_DIR"],  # the session's (tests/conftest.py)
        "TMPDIR": os.environ["TMPDIR"],  # the run's folder (tests/scratch.py)
    }
    for name in ("PIP_FIND_LINKS", "PIP_CERT", "PIP_DEFAULT_TIMEOUT", "PIP_DISABLE_PIP_VERSION_CHECK"):
        if name in os.environ:
            env[name] = os.environ[name]
    done = run_process(
        ["bash", "-c", "set -euxo pipefail\n" + script],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-6000:]
    return done.stdout


def test_the_guides_install_then_the_new_projects_own_install_and_tests(tmp_path: Path) -> None:
    checkout(tmp_path)
    first = sh_blocks(AUTHOR_GUIDE)[0].code
    assert "pip install ./tonk-arena" in first
    out = sh(first + "tonk new my-bot\ncd my-bot\ncat requirements.txt\npip install -q -r requirements.txt\n"
             "command -v pytest\npytest -p no:cacheprovider\n", tmp_path)  # fmt: skip
    assert f"tonk-arena @ file://{tmp_path / 'tonk-arena'}" in out, out
    assert f"{tmp_path / '.venv' / 'bin' / 'pytest'}" in out, out  # that virtualenv's own pytest
    assert "3 passed" in out, out


def test_the_wheel_from_make_dist_and_a_project_with_its_own_virtualenv(tmp_path: Path) -> None:
    source = checkout(tmp_path)
    made = run_process(["make", "-n", "dist"], cwd=source, capture_output=True, text=True, timeout=60)
    (build,) = [line for line in made.stdout.splitlines() if "pip wheel" in line]
    # The target's build command, with this test's pip (make would first set up a virtualenv).
    wheel_command = build.replace(".venv/bin/pip", f"{sys.executable} -m pip")
    out = sh(
        f"cd tonk-arena && {wheel_command} && cd ..\n"
        "python3 -m venv sdk-env\n"
        "sdk-env/bin/pip install -q tonk-arena/dist/tonk_arena-*.whl\n"
        "sdk-env/bin/tonk new wheel-bot\n"
        "cd wheel-bot\n"
        "python3 -m venv .venv\n"  # the project's own virtualenv, as its README says
        ". .venv/bin/activate\n"
        "pip install -q -r requirements.txt\n"
        "cat requirements.txt\n"
        "pytest -p no:cacheprovider\n",
        tmp_path,
    )
    assert "tonk-arena @ file://" in out and "/dist/tonk_arena-0.1.0-py3-none-any.whl" in out, out
    assert "3 passed" in out, out
