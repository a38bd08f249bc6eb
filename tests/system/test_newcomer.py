"""The newcomer's whole path, walked as a user would from a fresh clone: `make demo PORT=...`
in the background, then the README's "Your bot in the demo arena" block from the clone's
parent folder: `tonk new my-bot`, the project's own install and tests, `tonk owner create`
and `tonk login` (the arena and token remembered: no command after it names either, and
``TONK_ARENA`` is set nowhere), `tonk submit --upload .` to the running demo (which builds the
bot and checks it in its sandbox), `tonk tournament create --run` (the arena runs the uploaded
bot in its sandbox for each match), `tonk logs my-bot` (what it printed), and the bot's rating
from `/api/v1/bots/my-bot`; then the README's next block,
issue #27's loop: a v2 compared with v1 on the same cards locally (`tonk play --duplicate`),
submitted beside it, tested by the owner's own `tonk sprt --arena`, made the bot's current
version with `--update`, and rated apart from v1.

To save ten minutes of installing, the clone's `.venv` is a copy of this one with the clone
installed in it (no download) and `make`'s install marker set, so `make demo` starts at once;
everything after that is the README's own commands. The store is the per-user one, with
``XDG_DATA_HOME`` pointing into the test's folder, and the remembered login is in the test's
folder too (``TONK_CONFIG_DIR``: ``HOME`` stays the user's, for pip's cache and configuration).
Nothing is left running: the demo and whatever the block started go with their process groups."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.guides import PROLOGUE, run_script, sh_blocks, stop
from helpers.net import free_port, free_ports_from
from helpers.paths import ROOT

from arena.processes import run_process, spawn

README = ROOT / "README.md"

# The walk plays two tournaments and a sequential test to its verdict: minutes on a busy machine
# (its script has 1,500 s), past the suite's default of 300 s a test.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def readme_walk() -> str:
    """The README's walk: a new bot to a rated one, then its v2 compared (locally, then by a
    sequential test in the arena) and made current."""
    (first,) = [b.code for b in sh_blocks(README) if "tonk new my-bot" in b.code]
    (second,) = [b.code for b in sh_blocks(README) if "tonk sprt my-bot-v2 my-bot" in b.code]
    return first + second


def clone_with_venv(tmp_path: Path) -> Path:
    clone = tmp_path / "tonk-arena"
    run_process(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    venv = Path(sys.prefix)
    shutil.copytree(venv, clone / ".venv", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".installed-*"))  # fmt: skip
    # Scripts and activate name the virtualenv by its path: point them at the copy.
    old, new = str(venv).encode(), str(clone / ".venv").encode()
    for path in (clone / ".venv" / "bin").iterdir():
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if old in data:
                path.write_bytes(data.replace(old, new))
    python = clone / ".venv" / "bin" / "python"
    # The copy's tonk-arena is this checkout's: install the clone instead (no dependency to fetch).
    run_process([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e",
                    str(clone)], check=True, timeout=600, capture_output=True)  # fmt: skip
    (clone / ".venv" / ".installed-server").touch()  # make's marker: the install step is done
    return clone


def test_a_newcomer_walks_from_a_fresh_clone_to_a_rated_bot(tmp_path: Path) -> None:
    clone = clone_with_venv(tmp_path)
    # `make demo PORT=P` takes P and the next two (its gateway and relay), as a newcomer runs it:
    # all three free and below the ephemeral range (free_port's P+1 was once another's socket).
    port = free_ports_from(3)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", str(tmp_path)),  # pip's cache
        "LANG": "C.UTF-8",
        "XDG_DATA_HOME": str(tmp_path / "xdg"),  # the per-user store, inside the test's folder
        "TONK_CONFIG_DIR": str(tmp_path / "config"),  # where `tonk login` remembers the arena
        "PYTHONUNBUFFERED": "1",
        "TONK_SANDBOX_DIR": os.environ["TONK_SANDBOX_DIR"],  # the session's (tests/conftest.py)
        "TMPDIR": os.environ["TMPDIR"],  # the run's folder (tests/scratch.py)
    }
    for name in ("PIP_FIND_LINKS", "PIP_CERT", "PIP_DEFAULT_TIMEOUT", "PIP_DISABLE_PIP_VERSION_CHECK"):
        if name in os.environ:
            env[name] = os.environ[name]
    demo = spawn(["make", "demo", f"PORT={port}"], cwd=clone, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    shown: list[str] = []
    try:
        assert demo.stdout is not None
        for line in demo.stdout:
            shown.append(line)
            if line.strip().startswith("tonk submit"):
                break
        printed = "".join(shown)
        store = tmp_path / "xdg" / "tonk-arena" / "tonk-arena.sqlite"
        assert f"store: {store} (SQLite)" in printed, printed
        assert f"dashboard at http://127.0.0.1:{port}/" in printed, printed
        assert "pip install" not in printed, printed  # make's install step was done already

        walk = readme_walk().replace("8123", str(port))
        bot_port = free_port()
        walk = walk.replace("50051", str(bot_port))
        lines = []
        for line in walk.splitlines():
            lines.append(line)
            if line.split("#")[0].rstrip().endswith("&"):
                lines.append(f"wait_serving 127.0.0.1:{bot_port}")
        result = run_script(PROLOGUE + "\n".join(lines) + "\n", tmp_path, env, timeout=1500)
    finally:
        left = stop(demo)
    out = result.stdout
    project = tmp_path / "my-bot"
    assert (project / "my_bot.py").exists() and (project / ".venv" / "bin" / "pytest").exists()
    assert f"tonk-arena @ file://{clone}" in (project / "requirements.txt").read_text()
    assert re.search(r"\b3 passed\b", out), out
    # Remembered once: nothing after `tonk login` names the arena, nor asks for TONK_ARENA.
    assert "TONK_ARENA" not in env and "TONK_TOKEN" not in env
    assert f"remembered http://127.0.0.1:{port} and your token in {tmp_path / 'config' / 'arena.json'}" in out
    assert "TONK_ARENA" not in out + result.stderr, out + result.stderr
    assert f"the whole tournament: tonk tournament status 2, or http://127.0.0.1:{port}/tournaments/2" in out
    assert re.search(r"^match \d+  seat \d  \d+ bytes", out, re.MULTILINE), out  # tonk logs my-bot
    assert "registered bot 'my-bot' (version 1), built and run by the arena" in out, out
    assert f"its page: http://127.0.0.1:{port}/bots/my-bot" in out
    assert re.search(r"tournament 2: finished; (\d+)/\1 done, 0 failed", out), out
    answers = [json.loads(line) for line in out.splitlines() if line.startswith('{"bot"')]
    assert len(answers) == 2, out
    rating = answers[0]["bot"]["rating"]
    assert answers[0]["bot"]["name"] == "my-bot" and rating and rating["matches"] > 0, answers[0]

    # v2: compared on the same cards locally (the paired estimate and a verdict) ...
    assert re.search(r"^A - B = [+-]\d+ \+/- \d+ Elo \[[+-]\d+, [+-]\d+\]: ", out, re.MULTILINE), out
    # ... by the owner's own sequential test in the arena, whose verdict carries the estimate ...
    assert "registered bot 'my-bot-v2' (version 1), built and run by the arena" in out, out
    assert "version 1 is the arena's count of my-bot-v2's versions (an --update adds one); 0.2.0 is" in out
    verdict = r"^my-bot-v2 - my-bot = [+-]\d+ \+/- \d+ Elo \[[+-]\d+, [+-]\d+\]: accepted H[01] "
    assert re.search(verdict, out, re.MULTILINE), out
    # ... then made the bot's current version, and rated apart from v1.
    assert "updated bot 'my-bot' (version 2), built and run by the arena" in out, out
    assert re.search(r"tournament 4: finished; (\d+)/\1 done, 0 failed", out), out
    bot = answers[1]["bot"]
    versions = {v["number"]: v for v in bot["versions"]}
    assert sorted(versions) == [1, 2] and versions[2]["current"] and not versions[1]["current"], bot
    assert versions[1]["rating"] and versions[2]["rating"], bot  # each its own
    assert bot["rating"] == versions[2]["rating"], bot  # the bot's is its current version's
    assert versions[2]["record"]["matches"] + versions[1]["record"]["matches"] == bot["record"]["matches"]
    assert re.search(r"^\s*v?2\b.*current", out, re.MULTILINE), out  # tonk bot lists it so
    assert not left, left  # Ctrl-C stopped the demo and all it started
