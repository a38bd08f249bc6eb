"""``tonk demo``, the README's main job, end to end (without serving the dashboard): house
bots on local gRPC ports, a round-robin on the embedded pool, the leaderboard. Its store is
the one an earlier demo may have left behind, so it is brought up to the current schema."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.guides import stop
from helpers.net import free_port, free_ports_from
from helpers.paths import ROOT
from sqlalchemy import select, text

from arena.processes import run_process, spawn
from arena.ratings.terms import legend
from arena.store.db import dispose_engines, session_scope
from arena.store.migrate import VERSION_TABLE, migrate
from arena.store.migrations import HEAD
from arena.store.models import Match, Tournament
from bots.random_bot import RandomBot


def run_demo(cwd: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``tonk demo ARGS --tables 2 --no-serve`` on the store ``url``, the embedded pool and
    the search bot's demo budget; asserts it exits 0."""
    env = {**os.environ, "TONK_DATABASE_URL": url, "TONK_REDIS_URL": "", "TONK_EMBEDDED_WORKERS": "2"}
    env.pop("TONK_SEARCH_BUDGET_MS", None)
    done = run_process(
        [sys.executable, "-m", "sdk.cli", "demo", *args, "--tables", "2", "--no-serve"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_tonk_demo_plays_a_round_robin_on_a_store_an_older_version_left(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tonk-arena.sqlite'}"
    assert migrate(url, "0001") == "0001"  # as an earlier demo, before revision 0002, left it
    done = run_demo(tmp_path, url, "--bots", "random,greedy", "--deals", "2", "--hands", "3")
    assert "4 matches played, 0 failed" in done.stdout, done.stdout
    board = done.stdout.split("Elo [95% interval]", 1)[1].splitlines()
    for line in legend():  # the same words as the leaderboard page and `tonk leaderboard`
        assert line in done.stdout
    ranks = [line.split()[:2] for line in board if line.strip()[:1].isdigit()]
    assert sorted(name for _rank, name in ranks) == ["greedy", "random"], done.stdout
    with session_scope(url) as session:
        assert session.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar() == HEAD
        assert session.scalars(select(Tournament.status)).all() == ["finished"]
        assert set(session.scalars(select(Match.status))) == {"done"}
    dispose_engines()


def test_tonk_demo_says_how_long_the_search_bot_thinks(tmp_path: Path) -> None:
    # The demo cuts the search bot's budget to keep the run short; without saying so, its
    # place on the leaderboard would read as the bot's strength.
    url = f"sqlite:///{tmp_path / 'tonk-arena.sqlite'}"
    done = run_demo(tmp_path, url, "--bots", "random,search", "--deals", "1", "--hands", "2")
    lines = {line.split()[1]: line for line in done.stdout.splitlines() if line.startswith("bot ")}
    assert lines["search"].endswith("(searching 20 ms a decision)"), done.stdout
    assert "searching" not in lines["random"], done.stdout
    assert "2 matches played, 0 failed" in done.stdout, done.stdout
    dispose_engines()


def test_the_gateways_default_ports_lie_below_the_ephemeral_range() -> None:
    # At 50061/50062 (inside Linux's 32768-60999) an outgoing connection of the demo's own
    # round-robin could hold the port when its gateway came to bind it.
    from arena.config import Settings

    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range")
    low, high = map(int, ephemeral.read_text().split()) if ephemeral.exists() else (32768, 60999)
    settings = Settings()
    for port in (settings.gateway_port, settings.gateway_relay_port):
        assert 1024 <= port < low or port > high, (port, low, high)


def test_a_demo_whose_gateway_port_is_taken_stops_before_playing(tmp_path: Path) -> None:
    # It used to play its round-robin first, then serve without a gateway and without saying
    # so in the lines its user reads (no connect-out line).
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        env = {**os.environ, "TONK_DATA_DIR": str(tmp_path / "data"), "TONK_REDIS_URL": "",
               "TONK_GATEWAY_PORT": str(port), "TONK_GATEWAY_RELAY_PORT": str(free_port())}  # fmt: skip
        env.pop("TONK_DATABASE_URL", None)
        done = run_process(
            [sys.executable, "-m", "sdk.cli", "demo", "--bots", "random,greedy", "--tables", "2",
             "--deals", "1", "--hands", "2", "--port", str(free_port())],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"tonk demo: the gateway cannot listen for bots on 127.0.0.1:{port}" in done.stderr, done.stderr
    assert "TONK_GATEWAY_PORT" in done.stderr
    assert "tournament" not in done.stdout and "dashboard at" not in done.stdout, done.stdout
    dispose_engines()


def test_one_port_moves_the_demos_dashboard_and_gateway() -> None:
    # Issue #40: a second demo on the machine clashed on the gateway's fixed 7061/7062.
    from arena.config import load_settings
    from dashboard.commands import demo_ports, register

    settings = load_settings({})
    moved = demo_ports(settings, 8123, {})
    assert (moved.gateway_port, moved.gateway_relay_port) == (8124, 8125)
    named = {"TONK_GATEWAY_PORT": "7000", "TONK_GATEWAY_RELAY_PORT": "7001"}
    kept = demo_ports(load_settings(named), 8123, named)
    assert (kept.gateway_port, kept.gateway_relay_port) == (7000, 7001)  # named: kept
    off = {"TONK_GATEWAY_PORT": "0"}
    assert demo_ports(load_settings(off), 8123, off).gateway_port == 0  # no gateway at all
    import argparse

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    assert parser.parse_args(["demo", "--port", "65533"]).port == 65533
    for bad in ("65534", "0", "80a"):
        with pytest.raises(SystemExit):
            parser.parse_args(["demo", "--port", bad])


def test_the_demo_gateway_listens_beside_its_dashboard(tmp_path: Path) -> None:
    port = free_ports_from(3)
    env = {**os.environ, "TONK_DATA_DIR": str(tmp_path / "data"), "TONK_REDIS_URL": ""}
    for name in ("TONK_DATABASE_URL", "TONK_GATEWAY_PORT", "TONK_GATEWAY_RELAY_PORT"):
        env.pop(name, None)
    demo = spawn(
        [sys.executable, "-m", "sdk.cli", "demo", "--bots", "random,greedy", "--tables", "2", "--deals", "1",
         "--hands", "2", "--port", str(port)],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert demo.stdout is not None
        said = []
        # Stopped once it serves, as a user stops it: Ctrl-C in the middle of its start-up once
        # outlived the 2 minutes stop() allows, under the parallel suite (noted for #40's demo).
        for line in demo.stdout:
            said.append(line)
            if line.startswith("dashboard at "):
                break
    finally:
        left = stop(demo)
    expected = f"gateway for connected bots at 127.0.0.1:{port + 1} (relay 127.0.0.1:{port + 2})"
    assert expected in [line.strip() for line in said], said
    assert said[-1].startswith(f"dashboard at http://127.0.0.1:{port}/"), said
    assert not left, left


def test_make_demo_takes_a_port() -> None:
    done = run_process(["make", "-n", "demo", "PORT=8123"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "tonk demo --port 8123" in done.stdout, done.stdout


@pytest.mark.slow
def test_the_demo_is_an_arena_a_local_bot_joins_and_a_restart_reuses_its_store(tmp_path: Path) -> None:
    """`tonk demo` prints its store, an operator token, a `tonk submit` line and a
    `tonk serve --connect` line; the first enters a bot served on 127.0.0.1 (a deployed arena
    refuses loopback addresses), the second a bot with no port that connects out; run again
    on the same store it serves what it played instead of playing again."""
    from sdk.server import start_server

    env = {**os.environ, "TONK_DATA_DIR": str(tmp_path / "data"), "TONK_REDIS_URL": "",
           "TONK_EMBEDDED_WORKERS": "2", "TONK_OPERATOR_TOKEN": "",
           "TONK_GATEWAY_PORT": str(free_port()), "TONK_GATEWAY_RELAY_PORT": str(free_port())}  # fmt: skip
    env.pop("TONK_DATABASE_URL", None)
    port = free_port()
    command = [sys.executable, "-m", "sdk.cli", "demo", "--bots", "random,greedy", "--tables", "2",
               "--deals", "1", "--hands", "2", "--port", str(port)]  # fmt: skip
    demo = spawn(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)  # fmt: skip
    bot = start_server(RandomBot, port=0, host="127.0.0.1")
    try:
        lines = []
        assert demo.stdout is not None
        for line in demo.stdout:
            lines.append(line)
            if line.strip().startswith("tonk serve my_bot:MyBot --connect"):
                break
        connect = lines.pop().split()
        while not lines[-1].strip().startswith("tonk submit"):
            lines.pop()
        out = "".join(lines)
        assert f"store: {tmp_path / 'data' / 'tonk-arena.sqlite'} (SQLite)" in out, out
        # The gateway binds before the round-robin opens any connection of its own.
        assert out.index("gateway for connected bots at") < out.index("tournament 1:"), out
        assert f"dashboard at http://127.0.0.1:{port}/" in out, out
        # A visitor's way to a seat (#39): an invite link that leads to the bot's form.
        visitor = rf"^play random yourself: http://127\.0\.0\.1:{port}/join\?code=tonki_\S+&bot=random$"
        assert re.search(visitor, out, re.M), out
        token = re.search(r"^operator token: (\S+)", out, re.M)
        assert token, out
        submit = lines[-1].split()
        assert submit[:2] == ["tonk", "submit"], out
        assert f"--arena http://127.0.0.1:{port} --token {token.group(1)}" in lines[-1]
        # The line as printed, for a bot served on this machine at another port.
        submit[submit.index("--address") + 1] = f"127.0.0.1:{bot.port}"
        entered = run_process([sys.executable, "-m", "sdk.cli", *submit[1:]], env=env,
                                 capture_output=True, text=True, timeout=300)  # fmt: skip
        assert entered.returncode == 0, entered.stderr
        assert "registered bot 'my-bot' (version 1)" in entered.stdout
        # The connect-out line as printed, for a house bot under another name: it registers
        # through the demo's gateway with no port of its own.
        connect[connect.index("my_bot:MyBot")] = "random"
        connect[connect.index("--name") + 1] = "my-link"
        assert f"--arena http://127.0.0.1:{port} --token {token.group(1)}" in " ".join(connect)
        linked = spawn([sys.executable, "-m", "sdk.cli", *connect[1:]], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
        try:
            assert linked.stdout is not None
            said = []
            for line in linked.stdout:
                said.append(line)
                if "its page:" in line:
                    break
            assert any("as my-link" in line and "registered" in line for line in said), "".join(said)
            assert said[-1].rstrip().endswith(f"its page: http://127.0.0.1:{port}/bots/my-link"), said
        finally:
            linked.terminate()
            linked.wait(30)
    finally:
        bot.stop(0)
        left = stop(demo)  # Ctrl-C, as a terminal sends it to the demo's process group
    assert not left, left
    again = run_demo_env(tmp_path, env, "--bots", "random,greedy", "--deals", "1", "--hands", "2")
    assert re.search(r"reusing tournament 1 \('demo round-robin", again.stdout), again.stdout
    assert "matches played" not in again.stdout
    fresh = run_demo_env(tmp_path, env, "--bots", "random,greedy", "--deals", "1", "--hands", "2", "--fresh")
    assert "2 matches played, 0 failed" in fresh.stdout, fresh.stdout
    dispose_engines()


def test_a_deployed_arena_still_refuses_loopback_bots_the_demo_accepts() -> None:
    from arena.bots.addresses import AddressNotAllowedError, check_address
    from arena.config import load_settings
    from dashboard.commands import demo_settings

    deployed = load_settings({"TONK_OPERATOR_TOKEN": "secret"})
    with pytest.raises(AddressNotAllowedError):
        check_address("127.0.0.1:50051", deployed.allowed_bot_hosts)
    demo = demo_settings(deployed)
    assert check_address("127.0.0.1:50051", demo.allowed_bot_hosts) == "127.0.0.1:50051"
    assert check_address("[::1]:50051", demo.allowed_bot_hosts) == "[::1]:50051"
    with pytest.raises(AddressNotAllowedError):  # loopback only, not the private networks
        check_address("10.0.0.7:50051", demo.allowed_bot_hosts)
    assert demo.operator_token == "secret"
    assert demo_settings(load_settings({})).operator_token.startswith("tonk_demo_")


def run_demo_env(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = run_process([sys.executable, "-m", "sdk.cli", "demo", *args, "--tables", "2", "--no-serve"],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done
