"""Connected bots as real processes (issue #14's "done when"): `tonk serve BOT --connect`
with no listening socket, against `tonk dashboard` alone; then against `tonk gateway` on its
own with RQ workers in other processes, the gateway killed and restarted mid-tournament and
a bot process killed mid-match, and the tournament still finishing with every match counted
once."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers.arena import charged_faults
from helpers.compose import BIN
from helpers.net import free_port, get_json, listening, wait_for
from helpers.paths import ROOT, TESTS
from helpers.saturation import FAIR_US, first_fair, play_seat0, saturated
from sqlalchemy import func, or_, select

from arena.bots.owners import create_owner
from arena.link import directory
from arena.play.cuts import CUT_DECISION
from arena.processes import run_process, spawn
from arena.store.db import session_scope
from arena.store.models import RELINK_NOTICE_KIND, Bot, FaultRecord, Match, MatchSeat, Replay, utcnow

OPERATOR = "operator-token-for-link-tests"
#: A bot that plays randomly, 50 ms a decision (tests/helpers/faultbots.py).
SLEEPY = "helpers.faultbots:SleepyBot"


@dataclass
class Procs:
    """Processes started by a test, each with its log; all killed at the end."""

    tmp: Path
    running: dict[str, subprocess.Popen[str]] = field(default_factory=dict)
    commands: dict[str, tuple[list[str], dict[str, str]]] = field(default_factory=dict)

    def start(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
        self.commands[name] = (args, env)
        log = open(self.tmp / f"{name}.log", "a")  # noqa: SIM115 - closed with the process
        proc = spawn(
            [str(BIN / "tonk"), *args], env=env, stdout=log, stderr=subprocess.STDOUT, text=True
        )
        log.close()
        self.running[name] = proc
        return proc

    def kill(self, name: str) -> None:
        proc = self.running.pop(name)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def restart(self, name: str) -> subprocess.Popen[str]:
        """Start ``name`` again as it was started last."""
        return self.start(name, *self.commands[name])

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text() if path.exists() else ""

    def stop_all(self) -> None:
        for proc in self.running.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.running.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        self.running.clear()


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Procs]:
    made = Procs(tmp_path)
    try:
        yield made
    finally:
        made.stop_all()
        # The end of each process's log, shown by pytest with a failed test's teardown output
        # (the logs go with the test's folder; a bot that never connected says why here).
        for name in made.commands:
            log = tmp_path / f"{name}.log"
            text = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
            print(f"--- {name}.log (end) ---\n{text}")


def base_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp), "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1",
           "TONK_SANDBOX_DIR": os.environ["TONK_SANDBOX_DIR"],
           "TMPDIR": os.environ["TMPDIR"]}  # the run's folder (tests/scratch.py)  # fmt: skip
    env.update(extra)
    return env


def new_owner(url: str, name: str) -> str:
    with session_scope(url) as session:
        return create_owner(session, name)[1]


def listening_ports(pid: int) -> set[int]:
    """TCP ports process ``pid`` listens on (from /proc: its socket inodes in LISTEN state)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            parts = line.split()
            if parts[3] == "0A" and parts[9] in inodes:
                ports.add(int(parts[1].rsplit(":", 1)[1], 16))
    return ports


def post(url: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else b""
    request = urllib.request.Request(
        url, data=data, method="POST",
        headers={"Authorization": f"Bearer {OPERATOR}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def play_over_api(
    arena: str, name: str, bots: list[str], *, deals: int, hands: int
) -> dict[str, Any]:
    """Create a tournament at one table of two through the API, run it, wait until it is
    finished; the leaderboard's rows by bot name."""
    created: dict[str, Any] = post(arena + "/api/v1/tournaments", {
        "name": name, "bots": bots, "table_sizes": [2], "deals_per_table": deals, "hands_per_match": hands,
    })["tournament"]
    post(f"{arena}/api/v1/tournaments/{created['id']}/run")
    progress = f"{arena}/api/v1/tournaments/{created['id']}/progress"
    wait_for("the tournament to finish", lambda: get_json(progress)["progress"]["status"] == "finished", 180)
    return {row["bot"]: row for row in get_json(arena + "/api/v1/leaderboard")["leaderboard"]}


def start_bots(procs: Procs, env: dict[str, str], names: dict[str, str]) -> None:
    for name, house in names.items():
        procs.start(name, ["serve", house, "--connect", "--name", name, "--capacity", "2"], env)


def connected(url: str, *names: str) -> bool:
    with session_scope(url) as session:
        ids = session.scalars(select(Bot.id).where(Bot.name.in_(names))).all()
        return len(ids) == len(names) and all(directory.connected_capacity(session, i) > 0 for i in ids)


def start_dashboard(procs: Procs, tmp_path: Path, sqlite_url: str, owner: str) -> tuple[str, int, str]:
    """`tonk dashboard` with its in-process gateway on free ports, and a new owner's token:
    (the arena's URL, the gateway's port, the token)."""
    port, gateway, relay = free_port(), free_port(), free_port()
    arena_env = base_env(
        tmp_path,
        TONK_DATABASE_URL=sqlite_url,
        TONK_OPERATOR_TOKEN=OPERATOR,
        TONK_GATEWAY_PORT=str(gateway),
        TONK_GATEWAY_RELAY_PORT=str(relay),
        TONK_EMBEDDED_WORKERS="2",
    )
    token = new_owner(sqlite_url, owner)
    procs.start("dashboard", ["dashboard", "--port", str(port)], arena_env)
    wait_for("the dashboard", lambda: listening(port) and listening(gateway), 60)
    return f"http://127.0.0.1:{port}", gateway, token


def test_connected_bots_play_a_tournament_against_tonk_dashboard(
    tmp_path: Path, sqlite_url: str, procs: Procs
) -> None:
    arena, gateway, token = start_dashboard(procs, tmp_path, sqlite_url, "student")
    assert get_json(arena + "/api/v1/")["link"]["address"] == f"127.0.0.1:{gateway}"
    bot_env = base_env(tmp_path, TONK_ARENA=arena, TONK_TOKEN=token)
    start_bots(procs, bot_env, {"link1": "random", "link2": "greedy"})
    wait_for("both bots connected", lambda: connected(sqlite_url, "link1", "link2"), 120)
    for name in ("link1", "link2"):  # no listening port on the bots' side
        assert listening_ports(procs.running[name].pid) == set(), procs.log(name)

    board = play_over_api(arena, "connected", ["link1", "link2"], deals=3, hands=5)
    assert set(board) >= {"link1", "link2"}
    for name in ("link1", "link2"):
        assert board[name]["matches"] == 6 and board[name]["faults"] == 0 and board[name]["rating"]
    page = urllib.request.urlopen(arena + "/bots/link1", timeout=10).read().decode()
    assert "connected" in page.lower()


@pytest.mark.parametrize("restart", [False, True], ids=["running", "restarted"])
def test_a_tournament_run_through_the_api_waits_for_an_offline_bot_and_finishes_without_a_driver(
    tmp_path: Path, sqlite_url: str, procs: Procs, restart: bool
) -> None:
    """Started through the dashboard's API, with one of its bots offline: its matches wait
    for it, and once it connects the tournament finishes with no `tonk tournament run`
    anywhere, even when the dashboard (its pool and its gateway) was restarted meanwhile."""
    arena, gateway, token = start_dashboard(procs, tmp_path, sqlite_url, "student")
    bot_env = base_env(tmp_path, TONK_ARENA=arena, TONK_TOKEN=token)
    start_bots(procs, bot_env, {"early": "random", "late": "greedy"})
    wait_for("both bots registered", lambda: connected(sqlite_url, "early", "late"), 120)
    procs.kill("late")
    wait_for("the late bot offline", lambda: not connected(sqlite_url, "late"), 30)

    created = post(arena + "/api/v1/tournaments", {
        "name": "waits", "bots": ["early", "late"], "table_sizes": [2],
        "deals_per_table": 2, "hands_per_match": 3, "config": {"offline_grace_s": 600},
    })["tournament"]
    post(f"{arena}/api/v1/tournaments/{created['id']}/run")

    def waiting() -> bool:
        with session_scope(sqlite_url) as session:
            return bool(session.scalar(select(func.count(Match.id)).where(Match.waiting_since.is_not(None))))

    wait_for("a match waiting for the offline bot", waiting, 60)
    if restart:  # nobody runs the tournament again: the new dashboard must take it up itself
        procs.kill("dashboard")
        procs.restart("dashboard")
        port = int(arena.rsplit(":", 1)[1])
        wait_for("the dashboard again", lambda: listening(port) and listening(gateway), 60)
    start_bots(procs, bot_env, {"late": "greedy"})
    progress = f"{arena}/api/v1/tournaments/{created['id']}/progress"
    wait_for("the tournament to finish", lambda: get_json(progress)["progress"]["status"] == "finished", 180)
    board = {row["bot"]: row for row in get_json(arena + "/api/v1/leaderboard")["leaderboard"]}
    for name in ("early", "late"):
        assert board[name]["matches"] == 4 and board[name]["faults"] == 0, procs.log("dashboard")


def test_rq_workers_reach_bots_through_a_gateway_that_restarts_and_a_bot_that_dies(
    tmp_path: Path, pg_url: str, redis_url: str, redis_prefix: str, procs: Procs
) -> None:
    port, gateway, relay = free_port(), free_port(), free_port()
    arena_env = base_env(
        tmp_path,
        TONK_DATABASE_URL=pg_url,
        TONK_REDIS_URL=redis_url,
        TONK_QUEUE=redis_prefix,
        TONK_OPERATOR_TOKEN=OPERATOR,
        TONK_GATEWAY_PORT=str(gateway),
        TONK_GATEWAY_RELAY_PORT=str(relay),
        TONK_GATEWAY_SECRET="shared-secret-of-gateways-and-workers",
    )
    # The dashboard runs no gateway of its own and tells bots where `tonk gateway` is.
    dash_env = {**arena_env, "TONK_GATEWAY_PORT": "0", "TONK_GATEWAY_PUBLIC": f"127.0.0.1:{gateway}"}
    token = new_owner(pg_url, "student")
    procs.start("gateway", ["gateway"], arena_env)
    procs.start("dashboard", ["dashboard", "--port", str(port)], dash_env)
    for n in range(2):
        procs.start(f"worker{n}", ["worker"], arena_env)
    wait_for("the dashboard and gateway", lambda: listening(port) and listening(gateway), 60)
    bot_env = base_env(tmp_path, TONK_ARENA=f"http://127.0.0.1:{port}", TONK_TOKEN=token)
    # link1 thinks 50 ms a decision: a match lasts seconds, so the kills below land mid-match.
    bot_env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(ROOT)])
    start_bots(procs, bot_env, {"link1": SLEEPY, "link2": "greedy"})
    wait_for("both bots connected", lambda: connected(pg_url, "link1", "link2"), 120)

    created = run_process(
        [str(BIN / "tonk"), "tournament", "create", "--name", "restarts", "--bots", "link1,link2",
         "--tables", "2", "--deals", "10", "--hands", "4"],
        env=arena_env, capture_output=True, text=True, timeout=60,
    )
    assert created.returncode == 0, created.stderr
    tid = int(created.stdout.split()[1].rstrip(":"))
    driver = procs.start("driver", ["tournament", "run", str(tid), "--quiet"], arena_env)

    def done() -> int:
        with session_scope(pg_url) as session:
            return int(session.scalar(select(func.count(Match.id)).where(Match.status == "done")) or 0)

    def running() -> bool:
        """A match begun at least 0.3 s ago is still running: well inside its play."""
        begun = utcnow() - dt.timedelta(seconds=0.3)
        with session_scope(pg_url) as session:
            return bool(session.scalar(select(func.count(Match.id)).where(
                Match.status == "running", Match.started_at < begun)))

    def attempts_in_flight() -> dict[int, int]:
        with session_scope(pg_url) as session:
            return dict(session.execute(
                select(Match.id, Match.attempts).where(Match.status == "running")).all())  # fmt: skip

    def handed_back(caught: dict[int, int]) -> bool:
        """A match running when the gateway died was given back to be played again (pending,
        or claimed anew), not finished on the dead gateway."""
        with session_scope(pg_url) as session:
            now = session.execute(select(Match.id, Match.status, Match.attempts).where(
                Match.id.in_(caught))).all()  # fmt: skip
        return any(status == "pending" or attempts > caught[m] for m, status, attempts in now)

    wait_for("a few matches", lambda: done() >= 3, 120)
    wait_for("a match in flight", running, 60, poll=0.02)
    caught = attempts_in_flight()
    procs.kill("gateway")  # mid-tournament: matches in flight lose their gateway
    # The gateway comes back only once a worker has met its loss (not after a sleep that a busy
    # machine's worker could sleep through, then find a new gateway and play on).
    def lost_one() -> bool:
        if handed_back(caught):
            return True
        # On a busy machine those may finish before the loss is felt: a match claimed since
        # meets the dead gateway too.
        caught.update({m: a for m, a in attempts_in_flight().items() if m not in caught})
        return False

    wait_for("a match in flight to lose its gateway", lost_one, 60, poll=0.02)
    procs.start("gateway", ["gateway"], arena_env)
    wait_for("the bots to reconnect", lambda: connected(pg_url, "link1", "link2"), 90)
    at_restart = done()

    wait_for("more matches", lambda: done() >= at_restart + 3, 120)

    def link1_charged() -> bool:
        with session_scope(pg_url) as session:
            return bool(session.execute(charged_faults(FaultRecord.id).join(
                Bot, Bot.id == FaultRecord.bot_id).where(Bot.name == "link1")).first())  # fmt: skip

    def kill_missed(killed_at: dt.datetime) -> bool:
        """The kill fell between link1's plays (a match ending, or one in its StartMatch, which
        is handed back, not charged): nothing runs and a match waits for link1, which would
        fault only after the tournament's offline grace (60 s), so no fault is coming."""
        with session_scope(pg_url) as session:
            running_now = session.scalar(select(func.count(Match.id)).where(Match.status == "running"))
            waiting = session.scalar(select(func.count(Match.id)).where(
                Match.status == "pending", Match.waiting_since >= killed_at))  # fmt: skip
        return not running_now and bool(waiting) and not link1_charged()

    # Kill link1 mid-match: its match in flight faults. A match "running" for 0.3 s may still be
    # at its last call when the kill lands (seen in CI: 1 run in many), so a kill that missed
    # is tried again, after link1 is back; link1 comes back only once its match in flight has
    # been charged (a sleep was a race: a worker that had not called it yet could find it
    # reconnected and play on, no fault).
    for _attempt in range(4):
        wait_for("a match in flight", running, 60, poll=0.02)
        killed_at = utcnow() - dt.timedelta(seconds=1)
        procs.kill("link1")
        wait_for("the killed bot's match in flight to fault, or to be missed",
                 lambda at=killed_at: link1_charged() or kill_missed(at), 60, poll=0.05)  # fmt: skip
        if link1_charged():
            break
        start_bots(procs, bot_env, {"link1": SLEEPY})
        wait_for("link1 to reconnect", lambda: connected(pg_url, "link1"), 90)
    assert link1_charged(), "four kills of link1 in the middle of a match all missed it"
    start_bots(procs, bot_env, {"link1": SLEEPY})

    assert driver.wait(300) == 0, procs.log("driver")
    with session_scope(pg_url) as session:
        matches = session.scalars(select(Match).where(Match.tournament_id == tid)).all()
        assert len(matches) == 20 and {m.status for m in matches} == {"done"}
        replays = session.scalar(select(func.count(Replay.match_id)))
        assert replays == 20  # one replay per match: none lost, none twice
        seats = session.scalars(select(MatchSeat)).all()
        assert len(seats) == 40 and all(s.score is not None for s in seats)
        assert sum(s.decisions for s in seats) == sum(m.decisions for m in matches)
        faults = session.execute(
            charged_faults(FaultRecord.bot_id, FaultRecord.kind, FaultRecord.match_id)
        ).all()
        link1 = session.scalars(select(Bot.id).where(Bot.name == "link1")).one()
    # A match the gateway's death interrupted was played again from its start, not charged.
    assert any(m.attempts >= 2 for m in matches)
    # The gateway's restart cost nobody a fault; the killed bot's match(es) recorded theirs.
    assert faults, "the killed bot's match in flight should have faulted"
    assert {(bot, kind) for bot, kind, _ in faults} == {(link1, "unreachable")}
    assert len({match for _, _, match in faults}) <= 2  # at most the two in flight
    # Reconnected, the bot played on: matches after its restart have no faults.
    assert sum(1 for m in matches if m.faults == 0) >= 20 - 2


def test_the_node_example_connects_out_and_plays_a_tournament(
    tmp_path: Path, sqlite_url: str, procs: Procs
) -> None:
    """examples/node-bot in its connect-out mode, written from link.proto and docs/protocol.md,
    passes the admission check over its link and plays a tournament without a fault."""
    import shutil

    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are not installed")
    example = tmp_path / "node-bot"
    shutil.copytree(ROOT / "examples" / "node-bot", example, ignore=shutil.ignore_patterns("node_modules"))
    installed = run_process(["npm", "ci", "--no-audit", "--no-fund"], cwd=example, capture_output=True,
                               text=True, timeout=300)  # fmt: skip
    if installed.returncode != 0:
        pytest.skip(f"npm ci could not install @grpc/grpc-js: {installed.stderr[-500:]}")
    arena, _gateway, token = start_dashboard(procs, tmp_path, sqlite_url, "polyglot")
    node_env = base_env(tmp_path, TONK_PROTOS=str(ROOT / "protos"), TONK_ARENA=arena, TONK_TOKEN=token)
    log = open(tmp_path / "node.log", "w")  # noqa: SIM115 - closed with the process
    node = spawn([shutil.which("node") or "node", "bot.js", "--connect", "--name", "nodebot"],
                            cwd=example, env=node_env, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    log.close()
    procs.running["node"] = node  # type: ignore[assignment]
    start_bots(procs, base_env(tmp_path, TONK_ARENA=arena, TONK_TOKEN=token), {"pybot": "greedy"})
    wait_for("both bots connected", lambda: connected(sqlite_url, "nodebot", "pybot"), 120)
    assert listening_ports(node.pid) == set()
    board = play_over_api(arena, "polyglot", ["nodebot", "pybot"], deals=2, hands=10)
    node_log = (tmp_path / "node.log").read_text()
    assert board["nodebot"]["matches"] == 4 and board["nodebot"]["faults"] == 0, node_log
    with session_scope(sqlite_url) as session:
        info = session.scalars(select(Bot).where(Bot.name == "nodebot")).one().versions[0].info
    assert info["name"] == "node-example"


def test_a_connected_bot_is_not_charged_the_workers_own_lag(
    tmp_path: Path, sqlite_url: str, procs: Procs
) -> None:
    """Fair clocks through the gateway (tests/sdk/test_fair_clock.py has a dialled bot): a worker
    saturated by CPU-burning threads plays a connected bot (`tonk serve --connect`, via
    `tonk gateway` in a process of its own) with a 100 ms deadline and no time bank: no
    TIMEOUT, and no decision charged anywhere near the deadline. The gateway measures the
    bot's time on its stream; before, LinkPlayer was charged the worker's wall time."""
    from arena.link.player import LinkPlayer
    from arena.link.relay_client import RelayTransport, Routes
    from sdk.referee import FaultKind

    gateway, relay = free_port(), free_port()
    env = base_env(
        tmp_path,
        TONK_DATABASE_URL=sqlite_url,
        TONK_GATEWAY_PORT=str(gateway),
        TONK_GATEWAY_RELAY_PORT=str(relay),
    )
    token = new_owner(sqlite_url, "fair")
    procs.start("gateway", ["gateway"], env)
    wait_for("the gateway", lambda: listening(gateway), 60)
    bot_env = base_env(tmp_path, TONK_TOKEN=token)
    procs.start("bot", ["serve", "random", "--connect", "--link", f"127.0.0.1:{gateway}",
                        "--name", "fair", "--capacity", "1"], bot_env)  # fmt: skip
    wait_for("the bot connected", lambda: connected(sqlite_url, "fair"), 120)
    with session_scope(sqlite_url) as session:
        bot_id = session.scalars(select(Bot.id).where(Bot.name == "fair")).one()

    player = LinkPlayer("fair", RelayTransport(bot_id, Routes(sqlite_url)))
    with saturated():
        runs = first_fair(lambda: play_seat0(player))
    faults, latencies = runs[-1]
    assert latencies, "the bot made no decision"
    assert [f for f in faults if f.kind is FaultKind.TIMEOUT] == [], runs
    assert faults == [], runs
    # Charged: the bot's time and the network, not the worker's wait for the GIL.
    assert max(latencies) < FAIR_US, [sorted(lat)[-5:] for _, lat in runs]
    assert player.transport.last_bot_us is not None  # the gateway's measure, not a fallback


def test_a_bot_process_restarted_mid_match_keeps_its_matches(
    tmp_path: Path, sqlite_url: str, procs: Procs
) -> None:
    """Issue #27, point 7, as #37 bounds it: a connected bot's process killed in the middle of
    its matches and started again at once (a real cut: its connection closes, its calls in
    flight fail) keeps its matches: each interrupted one is either replayed from its start,
    dealt afresh and never charged (the bot was well ahead), or scored as it stood with the
    rest forfeited (arena/play/cuts.py: a bot must gain nothing by cutting its own link); every
    match is counted once. Before, each match in flight took UNREACHABLE faults until forfeited."""
    arena, _gateway, token = start_dashboard(procs, tmp_path, sqlite_url, "blip")
    bot_env = base_env(tmp_path, TONK_ARENA=arena, TONK_TOKEN=token)
    bot_env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(ROOT)])
    # blip thinks 50 ms a decision: a match of 8 hands lasts seconds, so the kill lands mid-match.
    start_bots(procs, bot_env, {"blip": SLEEPY, "steady": "greedy"})
    wait_for("both bots connected", lambda: connected(sqlite_url, "blip", "steady"), 120)
    created = post(arena + "/api/v1/tournaments", {
        "name": "blips", "bots": ["blip", "steady"], "table_sizes": [2],
        "deals_per_table": 3, "hands_per_match": 8,
    })["tournament"]
    post(f"{arena}/api/v1/tournaments/{created['id']}/run")

    def in_flight() -> dict[int, int]:
        """Matches well inside their play (begun 0.5 s ago, under half their hands): attempts."""
        begun = utcnow() - dt.timedelta(seconds=0.5)
        with session_scope(sqlite_url) as session:
            return dict(session.execute(select(Match.id, Match.attempts).where(
                Match.status == "running", Match.started_at < begun, Match.hands_played < 4,
            )).all())  # fmt: skip

    def notices() -> int:
        """Drops judged so far: relink notices (replayed) and cuts scored as they stood."""
        with session_scope(sqlite_url) as session:
            return session.scalar(
                select(func.count()).select_from(FaultRecord).where(
                    or_(FaultRecord.kind == RELINK_NOTICE_KIND, FaultRecord.decision == CUT_DECISION)
                )
            ) or 0

    def where(ids: list[int]) -> dict[int, tuple[str, int, int]]:
        """Each match's status, attempts and hands played."""
        with session_scope(sqlite_url) as session:
            rows = session.execute(
                select(Match.id, Match.status, Match.attempts, Match.hands_played).where(Match.id.in_(ids))
            ).all()
        return {row[0]: (row[1], row[2], row[3]) for row in rows}

    # A cut that lands between two of the bot's calls interrupts nothing (a match "in flight"
    # may be waiting on the other seat): the matches it caught play on under their attempt once
    # the bot is back, and the bot is cut again, up to 6 times. Each cut is judged as soon as it
    # shows (a notice, or a caught match moving on), not after a fixed wait: on a busy machine a
    # fixed wait let the tournament end before a second cut (CI, parallel run).
    dealt: dict[int, int] = {}
    for _cut in range(6):
        if notices() > 0:
            break
        wait_for("a match in flight", lambda: bool(in_flight()) or notices() > 0, 120, poll=0.02)
        with session_scope(sqlite_url) as session:
            running = session.execute(select(Match.id, Match.seed).where(Match.status == "running")).all()
        for match_id, seed in running:
            dealt.setdefault(match_id, seed)
        caught = [match_id for match_id, _ in running]
        before = where(caught)
        procs.kill("blip")
        start_bots(procs, bot_env, {"blip": SLEEPY})  # back at once: the link blipped

        def judged(caught: list[int] = caught, before: dict[int, tuple[str, int, int]] = before) -> bool:
            if notices() > 0:
                return True
            return any(
                status != "running" or (attempts == before[i][1] and played > before[i][2])
                for i, (status, attempts, played) in where(caught).items()
            )

        wait_for("the cut to interrupt a match or to miss", judged, 120, poll=0.05)

    progress = f"{arena}/api/v1/tournaments/{created['id']}/progress"
    wait_for("the tournament to finish", lambda: get_json(progress)["progress"]["status"] == "finished", 240)
    with session_scope(sqlite_url) as session:
        matches = session.scalars(select(Match).where(Match.tournament_id == created["id"])).all()
        charged = session.execute(charged_faults(FaultRecord.kind, FaultRecord.reason)).all()
        replays = session.scalar(select(func.count(Replay.match_id)))
        stood = dict(session.execute(select(FaultRecord.match_id, FaultRecord.seat).where(
            FaultRecord.decision == CUT_DECISION)).all())  # fmt: skip
    # The only charges: matches scored as they stood at the drop, the blipping bot's.
    assert [kind for kind, _ in charged] == ["unreachable"] * len(stood), procs.log("dashboard")[-3000:]
    assert len(matches) == 6 and {m.status for m in matches} == {"done"}
    assert replays == 6  # each match counted once
    assert all(m.forfeited_seat == stood[m.id] for m in matches if m.id in stood)
    assert all(m.faults == 0 and m.forfeited_seat is None for m in matches if m.id not in stood)
    # Each interrupted match left the blipping bot an uncharged relink notice (what its free
    # replays are counted by), and the API counts it apart from the faults.
    with session_scope(sqlite_url) as session:
        notes = session.execute(
            select(FaultRecord.match_id, Bot.name).join(Bot, Bot.id == FaultRecord.bot_id)
            .where(FaultRecord.kind == RELINK_NOTICE_KIND)
        ).all()  # fmt: skip
    assert notes or stood, "no drop was judged"
    assert {name for _, name in notes} <= {"blip"}, notes
    assert {match for match, _ in notes} <= {m.id for m in matches}
    # Those matches were played again from their start (a match claimed while the bot was away
    # is handed back too, unplayed and with no notice: it keeps its deal; and a match running
    # at a cut that missed it played on)...
    interrupted = {match for match, _ in notes}
    replayed = [m.id for m in matches if m.attempts > 1 and m.id in dealt and m.id in interrupted]
    assert replayed or not notes, (dealt, interrupted, [(m.id, m.attempts) for m in matches])
    # ... and dealt afresh: the bot had seen part of the old deal (its tables are dealt
    # independently under the default deal mode, so no other match shares the seed).
    assert all(m.seed != dealt[m.id] for m in matches if m.id in replayed)
    page = get_json(f"{arena}/api/v1/bots/blip")["bot"]
    assert page["faults"]["total"] == len(stood) and page["notices"]["total"] >= len(notes)
