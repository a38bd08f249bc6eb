"""A real ladder, every part a process: bots served by their own processes over gRPC, two
``tonk ladder run`` schedulers (one holds the lease, the other stands by), and on RQ two
``tonk worker`` processes (embedded: each scheduler's own pool), on PostgreSQL.

The ladder plays until every bot has matches; a new bot registers and gets its placement
tables; a retired bot gets no new table; then the scheduler holding the lease and (on RQ) a
worker are SIGKILLed mid-match, and the standby takes over. Afterwards: no match lost,
failed or counted twice, every table whole (one deal in every seat order), the killed
matches played again to the end, no table scheduled by both schedulers, and no bot ever had
more matches in flight than its capacity.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.arena import SETTINGS, counted_once, wait_for
from helpers.faultbots import ROOT, FaultServer, forget_rq_members, serve_fault, stop_process
from sqlalchemy import func, select

import arena.processes
from arena.bots.owners import create_owner, get_or_create_operator
from arena.bots.registry import register_bot, retire_bot
from arena.ladder.lease import current_holder, lease_name
from arena.processes import descendants, run_process
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Bot, Match, MatchSeat, SchedulerLease, Tournament, utcnow
from arena.store.statuses import MatchStatus, TournamentKind
from arena.tournaments.seating import arrangements

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

CAPACITY = 2
TIMEOUT = 180.0


def env_for(url: str, redis_url: str | None, queue: str) -> dict[str, str]:
    env = {
        **os.environ,
        "TONK_DATABASE_URL": url,
        "TONK_QUEUE": queue,
        "TONK_BOT_CAPACITY": str(CAPACITY),
        "TONK_EMBEDDED_WORKERS": "1",
        "TONK_MATCHES_PER_WORKER": "4",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("TONK_REDIS_URL", None)
    if redis_url:
        env["TONK_REDIS_URL"] = redis_url
    return env


def tonk(env: dict[str, str], *args: str) -> str:
    done = run_process(
        [sys.executable, "-m", "sdk.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def spawn(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return arena.processes.spawn(
            [sys.executable, "-m", "sdk.cli", *args], env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip


def register(url: str, name: str, address: str) -> int:
    with session_scope(url) as session:
        owner, _token = create_owner(session, f"owner-{name}")
        return register_bot(session, owner, name, address, settings=SETTINGS, check=False).id


def done_by_bot(url: str, ladder: int) -> Counter[int]:
    with session_scope(url) as session:
        rows = session.execute(
            select(MatchSeat.bot_id, func.count())
            .join(Match, Match.id == MatchSeat.match_id)
            .where(Match.tournament_id == ladder, Match.status == MatchStatus.DONE)
            .group_by(MatchSeat.bot_id)
        ).all()
    return Counter(dict(rows))


def running(url: str, ladder: int) -> dict[int, str]:
    with session_scope(url) as session:
        return dict(
            session.execute(
                select(Match.id, Match.worker).where(
                    Match.tournament_id == ladder, Match.status == MatchStatus.RUNNING
                )
            ).all()
        )


def max_overlap(intervals: list[tuple[dt.datetime, dt.datetime]]) -> int:
    """The most intervals open at one moment (an end before a start at the same instant)."""
    events = sorted(
        [(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals], key=lambda x: (x[0], x[1])
    )
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


@pytest.fixture
def bots() -> Iterator[dict[str, FaultServer]]:
    """Three well-behaved bots, each served by a process of its own (a few ms a decision, so
    that a kill lands mid-match)."""
    served: dict[str, FaultServer] = {}
    try:
        for name, base in (
            ("alpha", "greedy"),
            ("bravo", "random"),
            ("charlie", "greedy"),
            ("delta", "random"),
        ):
            served[name] = serve_fault("sleep", delay_s=0.003, base=base, subprocess_mode=True)
        yield served
    finally:
        for server in served.values():
            server.stop()


@pytest.mark.parametrize("backend", ["rq", "embedded"])
def test_a_ladder_of_processes_survives_killed_workers_and_scheduler(
    backend: str,
    bots: dict[str, FaultServer],
    pg_url: str,
    redis_prefix: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TONK_BOT_CAPACITY", str(CAPACITY))
    redis_url = request.getfixturevalue("redis_url") if backend == "rq" else None
    url, queue = pg_url, f"{redis_prefix}-ladder"
    env = env_for(url, redis_url, queue)
    ids = {name: register(url, name, bots[name].address) for name in ("alpha", "bravo", "charlie")}
    with session_scope(url) as session:
        get_or_create_operator(session, "house")
    tonk(env, "ladder", "create", "--name", "public", "--table-size", "2", "--hands", "3", "--target", "6",
         "--deadline-ms", "5000")  # fmt: skip
    with session_scope(url) as session:
        ladder = session.scalar(select(Tournament.id).where(Tournament.kind == TournamentKind.LADDER))
    assert ladder is not None
    logs = {k: tmp_path / f"{k}.log" for k in ("a", "b", "w1", "w2")}
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        run = ("ladder", "run", "--lease-s", "3", "--poll-s", "0.3")
        procs["a"] = spawn(env, logs["a"], *run)
        wait_for(lambda: current_holder_of(url, ladder) is not None, TIMEOUT)
        procs["b"] = spawn(env, logs["b"], *run)  # the standby
        if backend == "rq":
            for w in ("w1", "w2"):
                procs[w] = spawn(env, logs[w], "worker", "--name", f"{queue}-{w}")

        # Every bot plays.
        wait_for(lambda: all(done_by_bot(url, ladder)[b] >= 4 for b in ids.values()), TIMEOUT)

        # A new bot joins by itself and gets its placement tables; a retired one leaves.
        ids["delta"] = register(url, "delta", bots["delta"].address)
        wait_for(lambda: done_by_bot(url, ladder)[ids["delta"]] >= 4, TIMEOUT)
        with session_scope(url) as session:
            operator = get_or_create_operator(session, "house")
            retire_bot(session, operator, "charlie")
        # A tick that read the pool before the retirement may still add its table: the boundary
        # is a tick begun after it (its renewed lease says when it began) and committed.
        retired_at = utcnow()
        wait_for(lambda: lease_expiry(url, ladder) > retired_at + dt.timedelta(seconds=3), TIMEOUT)
        with session_scope(url) as session:
            last = select(func.max(Match.id)).where(Match.tournament_id == ladder)
            retired_after = session.scalar(last) or 0
        done_before_kill = sum(done_by_bot(url, ladder).values())
        wait_for(lambda: sum(done_by_bot(url, ladder).values()) >= done_before_kill + 8, TIMEOUT)

        # Kill the scheduler holding the lease and (on RQ) a worker, each mid-match.
        holder = current_holder_of(url, ladder)
        assert holder is not None
        pid = int(holder.rsplit(":", 1)[1])
        killed_runner = next(k for k in ("a", "b") if procs[k].pid == pid)
        standby = "b" if killed_runner == "a" else "a"
        victim = procs["w1"] if backend == "rq" else procs[killed_runner]
        # The processes playing its matches: the RQ worker itself, or the scheduler's pool.
        players = {victim.pid} if backend == "rq" else {p.pid for p in descendants(victim.pid)}

        def mine() -> list[int]:
            return [m for m, w in running(url, ladder).items() if w and int(w.rsplit(":", 1)[1]) in players]

        wait_for(lambda: bool(mine()), TIMEOUT, step=0.01)
        os.killpg(victim.pid, signal.SIGKILL)
        if victim is not procs[killed_runner]:
            os.killpg(procs[killed_runner].pid, signal.SIGKILL)
        # Read after the kill: a match that finished just before it was not killed.
        killed = mine()
        assert killed
        for key in {killed_runner, "w1"} & set(procs):
            procs[key].wait(10)

        # The standby takes over; the killed matches are played again, to the end.
        wait_for(lambda: current_holder_of(url, ladder) == f"{holder.rsplit(':', 1)[0]}:{procs[standby].pid}",
                 TIMEOUT)  # fmt: skip
        done_at_takeover = sum(done_by_bot(url, ladder).values())
        wait_for(lambda: sum(done_by_bot(url, ladder).values()) >= done_at_takeover + 8, TIMEOUT)
        wait_for(lambda: all(status_of(url, m) == MatchStatus.DONE for m in killed), TIMEOUT)

        tonk(env, "ladder", "pause", str(ladder))
        wait_for(lambda: not running(url, ladder), TIMEOUT)
        status = tonk(env, "ladder", "status", str(ladder))
        assert "placement" in status and "delta" in status
    finally:
        for proc in procs.values():
            stop_process(proc, signal.SIGTERM, timeout=30)
        if redis_url:
            forget_rq_members(redis_url, redis_prefix)
        dispose_engines()

    with session_scope(url) as session:
        matches = session.execute(
            select(Match.id, Match.table_index, Match.status, Match.attempts, Match.reason, Match.started_at,
                   Match.finished_at).where(Match.tournament_id == ladder)
        ).all()  # fmt: skip
        seats = session.execute(
            select(MatchSeat.match_id, MatchSeat.bot_id)
            .join(Match, Match.id == MatchSeat.match_id)
            .where(Match.tournament_id == ladder)
        ).all()
        names = dict(session.execute(select(Bot.id, Bot.name)).all())
    # Nothing lost or counted twice: every match done or (the ladder paused) still pending.
    counted_once(url, ladder)
    assert {m.status for m in matches} <= {MatchStatus.DONE, MatchStatus.PENDING}
    by_match: dict[int, list[int]] = {}
    for match_id, bot in seats:
        by_match.setdefault(match_id, []).append(bot)
    per_table = Counter(m.table_index for m in matches)
    assert set(per_table.values()) == {len(arrangements(2))}  # every table one whole deal
    assert all(len(by_match[m.id]) == 2 for m in matches)
    assert all(m.reason for m in matches)
    # The killed matches were played again.
    attempts = {m.id: m.attempts for m in matches}
    assert all(attempts[m] >= 2 for m in killed)
    # The newcomer's first tables were its placement; the retired bot got no new table.
    first = min((m for m in matches if ids["delta"] in by_match[m.id]), key=lambda m: m.id)
    assert first.reason == "placement"
    assert not [m.id for m in matches if m.id > retired_after and ids["charlie"] in by_match[m.id]]
    # No table was scheduled by both schedulers.
    printed = {k: tables_in(logs[k], ladder) for k in ("a", "b")}
    assert printed["a"] and printed["b"] and not printed["a"] & printed["b"]
    # Capacities: never more matches of a bot in flight than it may have.
    for bot in ids.values():
        spans = [
            (m.started_at, m.finished_at) for m in matches if m.status == "done" and bot in by_match[m.id]
        ]
        assert max_overlap(spans) <= CAPACITY, names[bot]


def current_holder_of(url: str, ladder: int) -> str | None:
    with session_scope(url) as session:
        return current_holder(session, lease_name(ladder))


def lease_expiry(url: str, ladder: int) -> dt.datetime:
    with session_scope(url) as session:
        row = select(SchedulerLease.expires_at).where(SchedulerLease.name == lease_name(ladder))
        when = session.scalar(row)
    return when or dt.datetime.min.replace(tzinfo=dt.UTC)


def status_of(url: str, match_id: int) -> str:
    with session_scope(url) as session:
        return str(session.scalar(select(Match.status).where(Match.id == match_id)))


def tables_in(log: Path, ladder: int) -> set[int]:
    prefix = f"ladder {ladder}: table "
    out = set()
    with contextlib.suppress(FileNotFoundError):
        for line in log.read_text().splitlines():
            if line.startswith(prefix) and " for bots " in line:
                out.add(int(line[len(prefix) :].split()[0]))
    return out
