"""docs/operator-guide.md runs as written, the way tests/system/test_guides.py runs the bot author's
guide: its ```sh blocks, in order, in one bash script, with the project's virtualenv on PATH,
except blocks marked ``<!-- guide: skip (why) -->`` (Docker, installing, the environment
block: this test sets its own PostgreSQL, Redis, queue, tokens and ``BOT_HOST=127.0.0.1``).

Rewrites: ``0.0.0.0`` listens on 127.0.0.1; each port given to ``--port`` or ``--bind`` becomes
a free one everywhere it appears; a command sent to the background is waited for until it
serves (gRPC health for ``tonk serve``, ``/healthz`` for the dashboard)."""

from __future__ import annotations

import re
import secrets
from pathlib import Path

import pytest
from helpers.guides import OPERATOR_GUIDE, PROLOGUE, base_env, localized, run_script, sh_blocks

WAIT_HTTP = r"""
wait_http() {  # URL: wait until it answers 200
  local get='import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)'
  for _ in $(seq 300); do
    if python -c "$get" "$1" 2>/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  echo "nothing answers at $1" >&2
  return 1
}
"""


def operator_script() -> str:
    body = "\n".join(b.code for b in sh_blocks(OPERATOR_GUIDE) if b.directive is None)
    return PROLOGUE + WAIT_HTTP + "\n".join(localized(body)) + "\n"


def test_the_guides_example_names_only_bots_it_enters() -> None:
    script = operator_script()
    entered = set(re.findall(r"tonk submit --name (\S+)", script))
    (bots,) = re.findall(r"tonk tournament create .*--bots (\S+)", script)
    assert set(bots.split(",")) <= entered, (bots, entered)  # it named 'lowball', entered nowhere


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.redis
def test_the_operator_guide_runs_as_written(
    tmp_path: Path, pg_empty_url: str, redis_url: str, redis_prefix: str
) -> None:
    env = base_env(tmp_path) | {
        "TONK_DATABASE_URL": pg_empty_url,
        "TONK_REDIS_URL": redis_url,
        "TONK_QUEUE": f"{redis_prefix}-matches",
        "TONK_OPERATOR_TOKEN": secrets.token_hex(32),
        "TONK_SECRET_KEY": secrets.token_hex(32),
        "TONK_ALLOWED_BOT_HOSTS": "127.0.0.1",
        "BOT_HOST": "127.0.0.1",
        "TONK_DATA_DIR": str(tmp_path / "data"),
    }
    result = run_script(operator_script(), tmp_path / "work", env, timeout=900)
    out, err = result.stdout, result.stderr
    assert re.search(r"^tonk_\S+$", out, re.M), out  # alice's token, alone on its line
    for bot in ("random", "greedy", "heuristic"):
        assert f"registered bot '{bot}' (version 1)" in out
    assert "tournament 1 created" in out
    assert re.search(r"tournament 1: finished; (\d+)/\1 done, 0 failed", out), out + err[-3000:]
    assert "tournament 1: " in out and "matches added" in out
    board = out.split("95% interval", 1)[1]
    assert {"random", "greedy", "heuristic"} <= set(re.findall(r"[a-z]+", board))
    assert "(head)" in out  # tonk db current
