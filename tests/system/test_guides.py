"""The guides' shell commands work as written.

Every ```sh block of docs/bot-author-guide.md runs, in order, in one bash script in a
temporary folder with the virtualenv's bin on PATH, except blocks marked
``<!-- guide: skip (why) -->`` (installing the SDK, exporting the arena's address and your
token: the test provides those). The arena the guide submits to is a dashboard this test
serves on loopback, with an owner whose token is in ``TONK_TOKEN``. The block marked
``<!-- guide: node ... -->`` (the Node example) runs in its own test, from a copy of the
repository's examples/ and protos/, when node and npm are on the machine.

Script rules: ``0.0.0.0`` listens on 127.0.0.1 instead, each port given to ``--port`` becomes a
free one, and a command sent to the background (``... &``) is waited for until it serves.

docs/operator-guide.md and docs/scale-out.md are about machines and services a test does not
have (Docker, production databases), so their commands are checked rather than run: every
``tonk`` command line parses with the real ``tonk`` parser (the subcommands and options
exist), the other programs and modules they name exist, and the SQLite backup they advise is
taken from a live WAL database and holds its last commit.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.compose import BIN
from helpers.guides import (
    AUTHOR_GUIDE,
    OPERATOR_GUIDE,
    PROLOGUE,
    ROOT,
    Block,
    base_env,
    localized,
    run_script,
    sh_blocks,
)

SCALE_OUT = ROOT / "docs" / "scale-out.md"
DIRECTIVES = {"skip", "node"}


def script(blocks: list[Block]) -> str:
    """The blocks as one bash script, with the rewrites in the module docstring."""
    return PROLOGUE + "\n".join(localized("\n".join(b.code for b in blocks))) + "\n"


def play_faults(output: str) -> list[int]:
    """The faults column of `tonk play`'s table, one number per seat."""
    rows = re.findall(r"^\d+:\S.*?\s(-?\d+)\s+(-?[\d.]+)\s+(\d+)\s+(\d+)$", output, re.M)
    return [int(row[3]) for row in rows]


@contextlib.contextmanager
def local_arena(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """A dashboard on loopback over a fresh SQLite store that accepts bots on 127.0.0.1;
    yields (its URL, an owner's token, the database URL)."""
    from arena.bots.owners import create_owner
    from arena.config import load_settings
    from arena.store.db import get_engine, session_scope
    from dashboard.server import serve_in_thread

    url = f"sqlite:///{tmp_path / 'arena.sqlite'}"
    settings = load_settings({"TONK_DATABASE_URL": url, "TONK_ALLOWED_BOT_HOSTS": "127.0.0.1"})
    with session_scope(url) as session:
        _owner, token = create_owner(session, "author")
    server, thread = serve_in_thread("127.0.0.1", 0, settings)
    try:
        yield f"http://127.0.0.1:{server.server_port}", token, url
    finally:
        server.shutdown()
        thread.join(10)
        get_engine(url).dispose()  # its connections; other tests' engines are theirs


# --- the bot author's guide --------------------------------------------------------------------


def test_every_sh_block_is_run_or_says_why_not() -> None:
    author = sh_blocks(AUTHOR_GUIDE)
    for block in author:
        assert block.directive in (None, *DIRECTIVES), f"{AUTHOR_GUIDE.name}:{block.line}: {block.directive}"
    runnable = "\n".join(b.code for b in author if b.directive is None)
    for step in ("tonk new", "tonk play", "--duplicate", "tonk check", "tonk serve", "tonk submit"):
        assert step in runnable, step
    assert [b.directive for b in author].count("node") == 1


def test_guides_link_to_files_that_exist() -> None:
    for path in (AUTHOR_GUIDE, OPERATOR_GUIDE, SCALE_OUT, ROOT / "examples/node-bot/README.md"):
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", path.read_text()):
            if "://" in target:
                continue
            assert (path.parent / target).exists(), f"{path.name} links to missing {target}"


@pytest.mark.slow
def test_the_bot_author_guide_runs_as_written(tmp_path: Path) -> None:
    from sqlalchemy import select

    from arena.store.db import session_scope
    from arena.store.models import Bot

    blocks = [b for b in sh_blocks(AUTHOR_GUIDE) if b.directive is None]
    text = script(blocks)
    with local_arena(tmp_path) as (arena, token, db):
        env = base_env(tmp_path) | {"TONK_ARENA": arena, "TONK_TOKEN": token, "BOT_HOST": "127.0.0.1"}
        result = run_script(text, tmp_path / "work", env)
        with session_scope(db) as session:
            bot = session.scalars(select(Bot).where(Bot.name == "my-bot")).one()
            assert (bot.owner.name, bot.status, len(bot.versions)) == ("author", "active", 2)
            assert bot.versions[-1].info["name"] == "my-bot"
    out = result.stdout
    assert (tmp_path / "work" / "my-bot" / "my_bot.py").exists()
    assert play_faults(out) == [0, 0, 0], out
    # "Is my new version better?": an unchanged copy cannot be told apart from the original.
    nothing = "no difference seen, so no number of deals can be promised"
    assert f"A - B = +0 +/- 40 Elo [-40, +40]: not distinguishable at 50 deals: {nothing}" in out, out
    assert "RESULT: PASS" in out
    assert re.search(r"\d+ passed", out), out  # the project's own tests
    assert "registered bot 'my-bot' (version 1)" in out
    assert "updated bot 'my-bot' (version 2)" in out


@pytest.mark.slow
def test_the_node_example_from_the_guide_plays_without_faults(tmp_path: Path) -> None:
    """examples/node-bot, installed with `npm ci` from its lock file, serves, plays a match
    under the referee with zero faults and passes the conformance check."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are not installed")
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "examples" / "node-bot", checkout / "examples" / "node-bot",
                    ignore=shutil.ignore_patterns("node_modules"))  # fmt: skip
    shutil.copytree(ROOT / "protos", checkout / "protos")
    (block,) = [b for b in sh_blocks(AUTHOR_GUIDE) if b.directive == "node"]
    text = script([block])
    env = base_env(tmp_path)
    # npm's download cache is the machine's (no fresh download each run when it has them).
    env["npm_config_cache"] = str(Path.home() / ".npm")
    env["npm_config_prefer_offline"] = "true"
    env["npm_config_update_notifier"] = "false"
    result = run_script(text, checkout, env)
    out = result.stdout
    assert (checkout / "examples/node-bot/node_modules/@grpc/grpc-js").is_dir()
    assert "0:node-example" in out, out
    assert play_faults(out) == [0, 0], out
    assert "fault:" not in out
    assert "RESULT: PASS" in out


# --- the operator's guide and scale-out -----------------------------------------------------------


def command_lines(path: Path) -> list[tuple[int, list[str]]]:
    """Each simple command of the file's ```sh blocks as argv, split at ``;``, ``&``, ``&&``,
    ``||`` and ``|``, without comments, assignments and the shell's own keywords."""
    import shlex

    out = []
    for block in sh_blocks(path):
        for offset, line in enumerate(block.code.splitlines()):
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            argv: list[str] = []
            for token in [*lexer, ";"]:
                if token not in (";", "&", "&&", "||", "|"):
                    argv.append(token)
                    continue
                while argv and argv[0] in ("do", "then", "else"):
                    argv.pop(0)
                if argv and argv[0] not in ("export", "cd", "for", "done", "wait", "fi"):
                    out.append((block.line + 1 + offset, argv))
                argv = []
    return out


def tonk_words(argv: list[str]) -> list[str] | None:
    """The arguments of a `tonk` command line, directly, captured (`VAR=$(tonk ...)`) or via
    `docker compose exec SERVICE`."""
    if argv[0] == "tonk":
        return argv[1:]
    if argv[0].endswith("=$") and argv[1:3] == ["(", "tonk"] and argv[-1] == ")":
        return argv[3:-1]
    if argv[:3] == ["docker", "compose", "exec"]:
        rest = [a for a in argv[3:] if not a.startswith("-")]  # SERVICE COMMAND ...
        if rest[1:2] == ["tonk"]:
            return argv[argv.index("tonk", argv.index(rest[0])) + 1 :]
    return None


def test_the_operator_commands_exist() -> None:
    import importlib
    import importlib.util

    from sdk.cli import build_parser

    parser = build_parser()
    seen: set[str] = set()
    for path in (OPERATOR_GUIDE, SCALE_OUT):
        for line, argv in command_lines(path):
            where = f"{path.name}:{line}: {' '.join(argv)}"
            words = tonk_words(argv)
            if words is not None:
                try:
                    parser.parse_args(words)
                except SystemExit as exc:
                    raise AssertionError(f"{where}: tonk cannot parse it") from exc
                seen.add(" ".join(w for w in words[:2] if not w.startswith("-")))
            elif argv[0] == "gunicorn":
                module = argv[-1].split(":")[0]
                assert importlib.util.find_spec(module), where
                if "--worker-class" in argv:  # the dashboard's own worker, by its dotted path
                    owner, _, name = argv[argv.index("--worker-class") + 1].rpartition(".")
                    assert hasattr(importlib.import_module(owner), name), where
            elif argv[0] in ("python", "python3") and argv[1] == "-m":
                assert importlib.util.find_spec(argv[2]), where
            elif argv[0] in (".", "pip", "docker", "openssl", "pg_dump", "pg_restore", "sqlite3", "rq"):
                pass  # other programs; rq's options are checked below
            else:
                raise AssertionError(f"{where}: unexpected command {argv[0]!r} (teach this test about it)")
    wanted = {"db upgrade", "db current", "owner create", "owner rotate", "owner list", "worker",
              "tournament create", "tournament run", "tournament status", "tournament pause",
              "tournament resume", "tournament extend", "leaderboard", "owner invite", "owner invites",
              "owner join", "owner rotate-token", "owner revoke-invite"}  # fmt: skip
    assert wanted <= seen, sorted(wanted - seen)


def test_rq_info_takes_the_options_the_guides_use() -> None:
    rq = BIN / "rq"
    if not rq.exists():
        pytest.skip("rq's command is not installed")
    help_text = subprocess.run([str(rq), "info", "--help"], capture_output=True, text=True, timeout=60).stdout
    for option in ("--only-workers", "-u"):
        assert option in help_text


def test_the_sqlite_backup_command_copies_a_live_wal_database(tmp_path: Path) -> None:
    """The guide's `sqlite3 DB ".backup 'FILE'"` while a connection still holds uncheckpointed
    commits in the -wal file: the backup has them."""
    import sqlite3

    if not shutil.which("sqlite3"):
        pytest.skip("the sqlite3 shell is not installed")
    (argv,) = [a for _line, a in command_lines(OPERATOR_GUIDE) if a[0] == "sqlite3"]
    argv = [str(tmp_path) + a[1:] if a.startswith("~/") else a for a in argv]  # HOME is tmp_path
    database = tmp_path / ".local" / "share" / "tonk-arena" / "tonk-arena.sqlite"  # the default store
    backup = tmp_path / "tonk-arena-backup.sqlite"
    database.parent.mkdir(parents=True)
    live = sqlite3.connect(database)
    live.execute("PRAGMA journal_mode=WAL")
    live.execute("PRAGMA wal_autocheckpoint=0")  # keep every commit in the -wal file
    live.execute("CREATE TABLE owners (name TEXT)")
    live.execute("INSERT INTO owners VALUES ('alice')")
    live.commit()
    assert database.with_name("tonk-arena.sqlite-wal").stat().st_size > 0
    subprocess.run(argv, cwd=tmp_path, check=True, timeout=60)
    live.close()
    copy = sqlite3.connect(backup)
    assert copy.execute("SELECT name FROM owners").fetchall() == [("alice",)]
    copy.close()
