"""``tonk record`` as a stream: what it loads to start, how its lines reach a terminal, what it
does when its reader goes away (``tonk record simulate FILE | head -3``), run as a user runs it
in a subprocess; and that the text of a line is json.dumps's, however it is written.
test_cli_record.py checks the lines themselves.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.case_files import CASES
from helpers.paths import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.processes import run_process, spawn

EXAMPLE = CASES / "seed-example-1.json"
ONE_LINE = json.dumps(json.loads(EXAMPLE.read_text())) + "\n"
OUTCOME = json.loads(EXAMPLE.read_text())["outcome"]
GUARD_S = 60  # a bound on waiting for a line that should come at once, never a measure

PROBE = """
import contextlib, io, json, sys
from sdk.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main(sys.argv[1:])
print(json.dumps({"status": status, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def tonk(*args: str) -> list[str]:
    return [sys.executable, "-m", "sdk.cli", *args]


ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize("action", ["simulate", "verify"])
def test_record_loads_neither_grpc_nor_the_bot_server_nor_asyncio(action: str) -> None:
    run = run_process(
        [sys.executable, "-c", PROBE, "record", action, str(EXAMPLE)],
        cwd=ROOT, capture_output=True, text=True, timeout=GUARD_S, check=True,
    )  # fmt: skip
    result = json.loads(run.stdout)
    assert result["status"] == 0 and json.loads(result["out"])["outcome"] == OUTCOME
    modules = set(result["modules"])
    heavy = ("grpc", "google", "asyncio", "concurrent", "urllib.request", "importlib.metadata", "arena")
    loaded = sorted(m for m in modules if m.startswith(heavy) or m == "sdk.server")
    assert loaded == []
    # nor the other SDK commands, nor what only bots, dealing or drawing a table need
    assert {m for m in modules if m.startswith("sdk.commands.")} == {"sdk.commands.record"}
    unneeded = {"sdk.bot", "sdk.observation", "sdk.referee", "sdk.dealing", "sdk.table_text"}
    unneeded.add("sdk.position_setup")
    assert sorted(unneeded & modules) == []


def test_the_command_table_names_exactly_what_each_module_registers() -> None:
    from sdk.cli import COMMAND_MODULES, COMMANDS

    for module in COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        subparsers = parser.add_subparsers()
        __import__(module, fromlist=["register"]).register(subparsers)
        assert set(subparsers.choices) == {name for name, m in COMMANDS.items() if m == module}, module


def test_an_option_before_the_command_still_lists_every_sdk_command() -> None:
    from sdk.cli import COMMANDS, build_parser

    for argv in (["-h", "record"], ["--help", "play"]):
        parser = build_parser(argv)
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        assert set(subparsers.choices) == set(COMMANDS), argv


@pytest.fixture
def many_records(tmp_path: Path) -> Path:
    path = tmp_path / "many.jsonl"
    path.write_text(ONE_LINE * 3000)  # far more output than a pipe and a stream buffer hold
    return path


def test_a_reader_that_goes_away_ends_it_quietly_as_coreutils_do(many_records: Path) -> None:
    proc = spawn(
        tonk("record", "simulate", str(many_records)), cwd=ROOT, env=ENV,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stderr is not None
        first = [proc.stdout.readline() for _ in range(3)]  # `| head -3`
        proc.stdout.close()
        stderr = proc.stderr.read()
        status = proc.wait(timeout=GUARD_S)
    finally:
        proc.kill()
        proc.wait()
    assert [json.loads(line)["outcome"] for line in first] == [OUTCOME] * 3
    assert stderr == b""  # no traceback, no "Exception ignored"
    assert status == 141  # what a shell shows for a command SIGPIPE ended (128 + 13)


def _lines_from(master: int, count: int) -> Iterator[str]:
    """``count`` lines read from a terminal's master side, each waited for at most GUARD_S."""
    pending = b""
    got = 0
    while got < count:
        ready, _, _ = select.select([master], [], [], GUARD_S)
        assert ready, "no line on the terminal: the output waits in a buffer"
        pending += os.read(master, 65536)
        while b"\n" in pending and got < count:
            line, pending = pending.split(b"\n", 1)
            got += 1
            yield line.decode().rstrip("\r")


def test_on_a_terminal_each_line_shows_as_soon_as_its_record_is_read(tmp_path: Path) -> None:
    # The records come through a FIFO one at a time: the second is written only once the
    # first one's line is on the terminal, which a buffered output would never show.
    fifo = tmp_path / "live.jsonl"
    os.mkfifo(fifo)
    master, slave = pty.openpty()
    proc = spawn(
        tonk("record", "simulate", str(fifo)), cwd=ROOT, env=ENV, stdout=slave, stderr=subprocess.PIPE
    )
    os.close(slave)
    try:
        with open(fifo, "w") as feed:
            lines = _lines_from(master, 2)
            feed.write(ONE_LINE)
            feed.flush()
            first: dict[str, Any] = json.loads(next(lines))
            feed.write(ONE_LINE)
        second: dict[str, Any] = json.loads(next(lines))
        assert proc.wait(timeout=GUARD_S) == 0
    finally:
        proc.kill()
        proc.wait()
        os.close(master)
        if proc.stderr is not None:
            proc.stderr.close()
    assert first == {"file": str(fifo), "line": 1, "outcome": OUTCOME}
    assert second == {"file": str(fifo), "line": 2, "outcome": OUTCOME}


INTS = st.lists(st.integers(-(10**12), 10**12), min_size=2, max_size=6)
ENDS = st.sampled_from(["tonk", "drop", "out", "stock", "cap", "fault"])


@settings(max_examples=300, deadline=None)
@given(
    name=st.text(),
    number=st.none() | st.integers(1, 10**9),
    end=ENDS,
    lists=st.tuples(INTS, INTS, INTS),
    faulted=st.none() | st.integers(0, 5),
)
def test_a_lines_text_is_json_dumps_of_it(
    name: str, number: int | None, end: Any, lists: tuple[list[int], ...], faulted: int | None
) -> None:
    from sdk.commands.record import line_text
    from sdk.outcome import Outcome

    line: dict[str, Any] = {"file": name} if number is None else {"file": name, "line": number}
    winners, payoffs, totals = map(tuple, lists)
    outcome = Outcome(end, winners, payoffs, totals, faulted).to_json()
    head = '{"file": ' + json.dumps(name)
    assert line_text({**line, "outcome": outcome}, head) == json.dumps({**line, "outcome": outcome}) + "\n"
    error = {**line, "error": {"action": number, "reason": name}}
    assert line_text(error, head) == json.dumps(error) + "\n"
