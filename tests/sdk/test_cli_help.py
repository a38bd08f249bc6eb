"""``tonk --help`` answers at once and every argument of every command says what it is for.

The plug-in commands (arena, dashboard) are registered without importing the database or web
stacks: they are imported by a command when it runs. Their cost is measured by
bench/cli_startup.py; here, what is imported is checked, not how long it takes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator

import pytest
from helpers.paths import ROOT

from arena.processes import run_process
from sdk.cli import build_parser

HEAVY = ("sqlalchemy", "flask", "alembic", "numpy", "rq", "redis", "psycopg", "werkzeug")
PLUGIN_COMMANDS = {"tournament", "worker", "leaderboard", "demo", "dashboard", "db", "owner"}

PROBE = """
import contextlib, io, json, sys
from sdk.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
    main(sys.argv[1:])
print(json.dumps({"help": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def run_help(*args: str) -> dict[str, object]:
    run = run_process(
        [sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    data: dict[str, object] = json.loads(run.stdout)
    return data


@pytest.mark.parametrize("args", [("--help",), (), ("play", "--help"), ("serve", "--help")])
def test_help_imports_no_database_or_web_stack(args: tuple[str, ...]) -> None:
    result = run_help(*args)
    modules = result["modules"]
    assert isinstance(modules, list)
    loaded = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert loaded == [], loaded[:10]
    heavy_arena = {"arena.store.db", "arena.runtime.driver", "arena.store.models", "dashboard.server"}
    assert not heavy_arena & set(modules)


def test_top_level_help_lists_the_plug_in_commands() -> None:
    text = run_help("--help")["help"]
    assert isinstance(text, str)
    for command in PLUGIN_COMMANDS:
        assert f"    {command} " in text or f"    {command}\n" in text, (command, text)
def walk(parser: argparse.ArgumentParser, path: str = "tonk") -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:  # argparse has no public way to list a parser's arguments
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{path} {name}", argparse.Action([], name, help=helps.get(name))
                yield from walk(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield path, action


def test_every_command_and_argument_has_help_text() -> None:
    parser = build_parser(["--help"])  # every command, the plug-ins' included
    found = list(walk(parser))
    commands = {path.split()[1] for path, _ in found if len(path.split()) > 1}
    assert commands >= PLUGIN_COMMANDS  # the walk saw the plug-in commands
    missing = [
        f"{path}: {'/'.join(action.option_strings) or action.dest}"
        for path, action in found
        if not (action.help or "").strip()  # help=SUPPRESS hides an option on purpose
    ]
    assert missing == [], "\n".join(missing)
