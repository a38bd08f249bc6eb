"""The SDK's commands end to end: ``tonk new`` (and the generated project's own tests),
``tonk serve`` as a real process, ``tonk play`` over gRPC, ``tonk replay-decision``."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from helpers.grpc_bots import IllegalBot, serving
from helpers.paths import ROOT

from arena.processes import run_process, spawn
from sdk import cli
from sdk.commands.new import ProjectNameError, create_project, names_for
from sdk.dealing import deck_order
from sdk.decision_file import decision_to_json
from sdk.engine import HandState
from sdk.observation import observe
from sdk.protocol import SERVICE_NAME
from sdk.referee import DecisionRequest
from sdk.rules import Rules

# -- tonk new ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "module", "class_name"),
    [
        ("night-owl", "night_owl", "NightOwlBot"),
        ("Night Owl", "night_owl", "NightOwlBot"),
        ("robobot", "robobot", "Robobot"),
        ("card shark 2", "card_shark_2", "CardShark2Bot"),
        ("random", "random_bot", "RandomBot"),  # never shadow the stdlib module
    ],
)
def test_project_names(name: str, module: str, class_name: str) -> None:
    names = names_for(name)
    assert (names["module"], names["class_name"]) == (module, class_name)


@pytest.mark.parametrize("name", ["", "2fast", "---"])
def test_bad_project_names(name: str) -> None:
    with pytest.raises(ProjectNameError):
        names_for(name)


def test_new_project_passes_its_own_tests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["new", "Night Owl", "--dir", str(tmp_path)]) == 0
    assert "night_owl:NightOwlBot" in capsys.readouterr().out
    folder = tmp_path / "night-owl"
    assert {p.name for p in folder.iterdir()} == {
        "night_owl.py",
        "test_night_owl.py",
        "pyproject.toml",
        "tonk.toml",
        "requirements.txt",
        "README.md",
        ".gitignore",
    }
    # The generated project is tested as its author would: pytest in its own folder.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    done = run_process(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
    # Its README's commands name the bot the way `tonk` resolves it, from that folder.
    assert "tonk serve night_owl:NightOwlBot" in (folder / "README.md").read_text()


def test_new_says_where_its_next_steps_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue #40: the hint made the virtualenv before `cd` and sent `--upload` with no folder.
    monkeypatch.chdir(tmp_path)
    assert cli.main(["new", "owl"]) == 0
    steps = [line.strip() for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert steps[0] == "cd owl"
    assert steps[1].startswith("python3 -m venv .venv && .venv/bin/pip install -r requirements.txt")
    assert any(step.startswith("tonk login --arena URL --token TOKEN") for step in steps), steps
    assert steps[-1].startswith("tonk submit --name owl --upload . "), steps


def test_help_says_submit_takes_code_or_an_address(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line a command
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("submit ")]
    assert "--upload" in line and "--address" in line, line


def test_new_refuses_a_folder_in_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    create_project("owl", tmp_path)
    assert cli.main(["new", "owl", "--dir", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert cli.main(["new", "owl", "--dir", str(tmp_path), "--force"]) == 0


def test_a_bot_in_the_working_directory_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    create_project("lark", tmp_path)
    monkeypatch.chdir(tmp_path / "lark")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path / "lark"))])
    assert cli.main(["play", "lark:LarkBot", "random", "--hands", "3", "--seed", "1", "--quiet"]) == 0


# -- tonk serve as a process, tonk play over gRPC -------------------------------------------------


@pytest.fixture(scope="module")
def served_random() -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc = spawn(
        [sys.executable, "-m", "sdk.cli", "serve", "random", "--port", "0"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    address = ""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        found = re.search(r"serving random .* on (\S+:\d+)", line)
        if found:
            address = found.group(1)
            break
    assert address, "tonk serve did not report its address"
    yield proc, address
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_served_bot_is_healthy(served_random: tuple[subprocess.Popen[str], str]) -> None:
    _, address = served_random
    with grpc.insecure_channel(address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=5
        )
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def _scores(output: str) -> list[str]:
    return [line.split()[1] for line in output.splitlines() if re.match(r"\d+:", line)]


def test_tonk_play_over_grpc_matches_in_process(
    served_random: tuple[subprocess.Popen[str], str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, address = served_random
    args = ["--hands", "40", "--seed", "11", "--quiet"]
    assert cli.main(["play", address, "random", *args]) == 0
    remote = capsys.readouterr().out
    assert cli.main(["play", "random", "random", *args]) == 0
    local = capsys.readouterr().out
    assert "0:random" in remote  # named by its GetInfo
    assert _scores(remote) == _scores(local)
    assert re.search(r"\d+ decisions", remote).group(0) == re.search(r"\d+ decisions", local).group(0)  # type: ignore[union-attr]


def test_tonk_play_duplicate_over_grpc_matches_in_process(
    served_random: tuple[subprocess.Popen[str], str], capsys: pytest.CaptureFixture[str]
) -> None:
    # The served bot plays both seats of each deal, as the in-process one does.
    _, address = served_random
    args = ["--duplicate", "--deals", "6", "--hands", "5", "--seed", "3", "--quiet"]
    assert cli.main(["play", address, "random", *args]) == 0
    remote = capsys.readouterr().out.splitlines()
    assert cli.main(["play", "random", "random", *args]) == 0
    local = capsys.readouterr().out.splitlines()
    assert remote[0] == f"seed 3; A = {address}, B = random"
    assert remote[1:] == local[1:] and len(local) == 6, local  # with the line on chips and Elo


def test_tonk_play_against_nothing_stops_at_once_and_says_what_to_check(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # It used to print a table "0 hands, score -20" and exit 0.
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
    assert cli.main(["play", address, "random", "--quiet"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and f"nothing answers at {address}" in err and "tonk serve" in err


DYING_BOT = """
import os
from sdk.bot import Bot

class DyingBot(Bot):
    name = "dying"
    decisions = 0

    def act(self, obs):
        DyingBot.decisions += 1
        if DyingBot.decisions == 6:
            os._exit(0)  # the server process dies mid-match
        return 0
"""


def test_tonk_play_fails_when_a_bot_goes_away_mid_match(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "dying.py").write_text(DYING_BOT)
    proc = spawn([sys.executable, "-m", "sdk.cli", "serve", "dying:DyingBot", "--port", "0"],
                            cwd=tmp_path, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    try:
        assert proc.stderr is not None
        found = None
        while found is None:
            line = proc.stderr.readline()
            assert line, "tonk serve ended before serving"
            found = re.search(r"serving .* on (\S+:\d+)", line)
        code = cli.main(["play", found.group(1), "random", "--hands", "30", "--seed", "3", "--quiet"])
    finally:
        proc.kill()
        proc.wait()
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert "unreachable" in out and "lost the connection to 0:" in err


def test_a_misspelt_house_bot_gets_the_closest_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["play", "randm", "greedy"]) == 2
    assert "did you mean 'random'?" in capsys.readouterr().err
    assert cli.main(["check", "heuristc"]) == 2
    assert "did you mean 'heuristic'?" in capsys.readouterr().err


def test_tonk_serve_stops_cleanly_on_sigterm(served_random: tuple[subprocess.Popen[str], str]) -> None:
    proc, _ = served_random
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == 0


def test_tonk_serve_refuses_what_is_not_a_bot(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "no_such_module:Bot"]) == 2
    assert "cannot import" in capsys.readouterr().err


# -- tonk replay-decision -------------------------------------------------------------------------


@pytest.fixture
def decision_file(tmp_path: Path) -> Path:
    state = HandState.deal(deck_order(5, 1), 3, rules=Rules(tonk_low=0, tonk_high=200))
    obs = observe(state, state.to_act, ("a", "b", "c"), (2, -1, -1), 1, 10)
    path = tmp_path / "decision.json"
    path.write_text(json.dumps(decision_to_json(DecisionRequest("m-9", 1, "m-9/1/0", obs, 500))))
    return path


def test_replay_decision_legal(decision_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["replay-decision", str(decision_file), "bots.random_bot:RandomBot"]) == 0
    out = capsys.readouterr().out
    assert "legal: yes" in out and "decision m-9/1/0" in out


def test_replay_decision_illegal_over_grpc(decision_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with serving(IllegalBot) as running:
        assert cli.main(["replay-decision", str(decision_file), running.address, "--json"]) == 1
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["legal"] is False and verdict["fault"] == "illegal"
    assert verdict["reply"].startswith("discard ")


def test_replay_decision_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert cli.main(["replay-decision", str(bad), "random"]) == 2
    assert cli.main(["replay-decision", str(tmp_path / "missing.json"), "random"]) == 2
    assert "cannot read" in capsys.readouterr().err


CRASHING_BOT = """
from sdk.bot import Bot

class CrashingBot(Bot):
    name = "crashing"

    def act(self, obs):
        return self.choose(obs)

    def choose(self, obs):
        raise KeyError("no such card")
"""


def test_tonk_play_says_a_crashing_bot_forfeited_and_shows_where_it_crashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # It used to exit 0 with "3 hands" for 200 asked, no word of the forfeit, no traceback.
    (tmp_path / "crashing.py").write_text(CRASHING_BOT)
    monkeypatch.chdir(tmp_path)
    code = cli.main(["play", "crashing:CrashingBot", "random", "--hands", "200", "--seed", "5", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    played = re.search(r"(\d+) of 200 hands", out)
    assert played and int(played.group(1)) < 200, out
    assert "0:crashing forfeited after 3 faults" in err
    assert f"the {200 - int(played.group(1))} hands not played are charged to it" in err
    assert "Traceback (most recent call last)" in err and "in choose" in err and "KeyError" in err
    assert err.count("Traceback") == 1  # the first crash, not one per fault


def test_the_author_guides_example_is_what_tonk_new_writes(tmp_path: Path) -> None:
    # The guide's §3 once showed a bot of its own, not the one `tonk new` had just written.
    guide = (ROOT / "docs" / "bot-author-guide.md").read_text()
    (example,) = [b for b in re.findall(r"```python\n(.*?)```", guide, re.S) if "class MyBot(Bot)" in b]
    create_project("my-bot", tmp_path)
    written = (tmp_path / "my-bot" / "my_bot.py").read_text()
    assert written.endswith(example) and written.index(example) > 0, example


def test_the_generated_readme_says_where_a_decision_file_comes_from(tmp_path: Path) -> None:
    create_project("my-bot", tmp_path)
    readme = (tmp_path / "my-bot" / "README.md").read_text()
    # It used to say `tonk replay-decision decision.json` and nothing of where such a file is.
    (line,) = [line for line in readme.splitlines() if line.startswith("tonk replay-decision")]
    dumped = re.search(r"^tonk check my_bot:MyBot --dump-faults (\S+) .*writes (\S+?),", readme, re.M)
    assert dumped, readme
    assert line.split()[2] == dumped.group(2) and dumped.group(2).startswith(dumped.group(1) + "/"), line
    assert "/api/v1/matches/ID/hands/H/decisions/D" in readme  # the dashboard's download
