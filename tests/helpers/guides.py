"""Running the guides' ``sh`` blocks as scripts, and stopping a demo's process group."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from arena.processes import run_process, spawn
from helpers.compose import BIN
from helpers.net import free_port

ROOT = Path(__file__).resolve().parents[2]


AUTHOR_GUIDE = ROOT / "docs" / "bot-author-guide.md"


OPERATOR_GUIDE = ROOT / "docs" / "operator-guide.md"


PROLOGUE = r"""set -euo pipefail
PS4='+ guide$ '
set -x
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
wait_serving() {  # HOST:PORT: wait for what the last command started in the background
  local host=${1%:*} port=${1##*:}
  for _ in $(seq 300); do
    if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null && python -m sdk.health "$1" >/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  echo "nothing serves at $1" >&2
  return 1
}
"""


@dataclass(frozen=True)
class Block:
    code: str
    directive: str | None  # the first word of <!-- guide: ... --> just before the block
    line: int


def sh_blocks(path: Path) -> list[Block]:
    text = path.read_text()
    pattern = re.compile(r"(?:<!-- guide: (\w+)[^>]*-->\n)?```sh\n(.*?)```", re.S)
    return [Block(m.group(2), m.group(1), text.count("\n", 0, m.start()) + 1) for m in pattern.finditer(text)]


def base_env(home: Path) -> dict[str, str]:
    return {
        "PATH": f"{BIN}{os.pathsep}/usr/local/bin{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "TONK_SANDBOX_DIR": os.environ["TONK_SANDBOX_DIR"],  # the session's (tests/conftest.py)
        "TMPDIR": os.environ["TMPDIR"],  # the run's folder (tests/scratch.py)
    }


def run_script(
    text: str, cwd: Path, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    process = spawn(
        ["bash", "-c", text], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        # Whatever the script left running (a server it sent to the background) goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        if process.poll() is None:
            process.kill()
            process.wait()
    result = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    assert result.returncode == 0, f"the guide's commands failed ({result.returncode}):\n{out}\n{err[-6000:]}"
    return result


def running_in_group(pgid: int) -> list[str]:
    """The processes of group ``pgid`` still running (exited ones may await their reaper)."""
    table = run_process(["ps", "-eo", "pgid=,stat=,args="], capture_output=True, text=True, timeout=60)
    return [line for line in table.stdout.splitlines()
            if line.split()[0] == str(pgid) and not line.split()[1].startswith("Z")]  # fmt: skip


def stop(demo: subprocess.Popen[str]) -> list[str]:
    """Ctrl-C to the demo's process group, as a terminal sends it; what still ran a minute
    later (then killed)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(demo.pid, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        demo.wait(60)
    for _ in range(600):
        left = running_in_group(demo.pid)
        if not left:
            break
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(demo.pid, signal.SIGKILL)
    demo.wait()
    return left


def localized(body: str) -> list[str]:
    """A guide's commands made to run here: its ports (``--port N``, ``--bind HOST:N``) moved to
    free ones, 0.0.0.0 made loopback, and after each server started in the background a wait
    until it answers (``wait_serving`` for a bot, ``wait_http`` for a web server: the script's
    prologue defines them)."""
    found = re.findall(r"--port (\d+)", body) + re.findall(r"--bind [\d.]+:(\d+)", body)
    ports = {int(p): free_port() for p in found}
    lines = []
    for line in body.splitlines():
        line = line.replace("0.0.0.0", "127.0.0.1")
        for old, new in ports.items():
            line = re.sub(rf"\b{old}\b", str(new), line)
        lines.append(line)
        if line.rstrip().endswith("&"):
            served = re.search(r"--port (\d+)", line)
            bound = re.search(r"--bind ([\d.]+:\d+)", line)
            if served:
                lines.append(f"wait_serving 127.0.0.1:{served.group(1)}")
            elif bound:
                lines.append(f"wait_http http://{bound.group(1)}/healthz")
    return lines
