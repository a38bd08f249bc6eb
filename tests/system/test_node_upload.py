"""Any language the operator installed: examples/node-bot uploaded as its author would (``npm
ci``, then the folder with its node_modules), built, started by its tonk.toml's command in
the real sandbox on a Unix socket, and given the arena's admission check."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.arena import UNHURRIED_CHECK
from helpers.paths import ROOT

from arena.bots.owners import create_owner
from arena.bots.uploaded import submit_upload
from arena.config import Settings
from arena.processes import run_process
from arena.store.db import session_scope
from sdk.packing import pack

EXAMPLE = ROOT / "examples" / "node-bot"


def test_the_node_examples_protos_are_the_checkouts() -> None:
    """The copy an upload carries (examples/node-bot/protos) is the protocol itself."""
    for name in ("bot.proto", "link.proto"):
        copy = EXAMPLE / "protos" / "tonk" / "v1" / name
        assert copy.read_bytes() == (ROOT / "protos" / "tonk" / "v1" / name).read_bytes(), name


@pytest.fixture
def folder() -> Iterator[Path]:
    made = Path(tempfile.mkdtemp(prefix="tonk-node-upload-"))
    made.chmod(0o755)  # the sandbox's own uid reads the bundle under it
    yield made
    shutil.rmtree(made, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("node") and shutil.which("npm") and shutil.which("bwrap")),
                    reason="node, npm or bubblewrap is not installed")  # fmt: skip
def test_the_node_example_uploads_builds_and_passes_the_check_in_the_sandbox(folder: Path) -> None:
    project = folder / "node-bot"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("node_modules"))
    env = {**os.environ, "npm_config_cache": str(Path.home() / ".npm"), "npm_config_prefer_offline": "true",
           "npm_config_update_notifier": "false"}  # fmt: skip
    run_process(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=project, env=env,
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    archive = pack(project)
    url = f"sqlite:///{folder / 'arena.sqlite'}"
    settings = Settings(**UNHURRIED_CHECK, data_dir=str(folder / "data"), database_url=url)
    with session_scope(url) as session:
        owner, _ = create_owner(session, "alice")
        bot = submit_upload(session, owner, "node-bot", archive, settings=settings)
        version = bot.versions[0]
        assert version.launch == {"command": ["node", "bot.js", "--socket", "{socket}"]}
        assert version.info["name"] == "node-example" and version.info["language"].startswith("javascript")
