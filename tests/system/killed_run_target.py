"""What tests/system/test_killed_run.py runs in a pytest of its own and kills mid-test: not
collected otherwise (its name does not start with ``test_``).

Its one test starts what the suite's tests start, each the way their helpers do: a private
``redis-server`` (a session of its own), a fault bot's process, ``tonk gateway`` and ``tonk
worker`` (a session of its own). It writes their pids to ``$TONK_KILLED_RUN_RECORD`` once all are
up, and waits to be killed. Its fixture's finalizer stops them and says so in
``$TONK_KILLED_RUN_RECORD.finalized``: a SIGTERM must run it, as Ctrl-C does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.faultbots import ROOT, serve_fault, start_worker, stop_process
from helpers.net import free_port, listening, wait_for
from helpers.services import PrivateRedis

from arena.processes import process_info, spawn

RECORD = "TONK_KILLED_RUN_RECORD"


@pytest.fixture
def started(tmp_path: Path) -> Iterator[dict[str, subprocess.Popen[bytes] | subprocess.Popen[str]]]:
    record = Path(os.environ[RECORD])
    url = f"sqlite:///{tmp_path / 'arena.sqlite'}"
    redis = PrivateRedis()
    redis.start()
    bot = serve_fault("none", subprocess_mode=True)
    port, relay = free_port(), free_port()
    gateway = spawn(
        [sys.executable, "-m", "sdk.cli", "gateway"], cwd=ROOT, stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "TONK_DATABASE_URL": url, "TONK_GATEWAY_PORT": str(port),
             "TONK_GATEWAY_RELAY_PORT": str(relay)},
    )  # fmt: skip
    worker = start_worker(url, redis.url, f"killed-{uuid.uuid4().hex[:8]}", "killed-run-worker")
    assert redis.process is not None and bot.process is not None
    processes = {"redis": redis.process, "bot": bot.process, "gateway": gateway, "worker": worker}
    try:
        wait_for("tonk gateway", lambda: listening(port) or gateway.poll() is not None, 120)
        assert gateway.poll() is None, "tonk gateway ended"
        yield processes
    finally:
        for name in ("worker", "gateway"):
            stop_process(processes[name])
        bot.stop()
        redis.kill()
        record.with_name(record.name + ".finalized").write_text("finalized\n")


def test_waits_to_be_killed(started: dict[str, subprocess.Popen[bytes] | subprocess.Popen[str]]) -> None:
    lines = []
    for name, process in started.items():
        info = process_info(process.pid)
        assert info is not None and process.poll() is None, f"{name} ended early"
        lines.append(f"{name} {info.pid} {info.started}\n")
    record = Path(os.environ[RECORD])
    partial = record.with_name(record.name + ".partial")
    partial.write_text("".join(lines))
    partial.rename(record)  # whole, or not there
    time.sleep(600)
