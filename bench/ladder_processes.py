#!/usr/bin/env python3
"""A real ladder of processes at the size of a public competition (issue #36).

    .venv/bin/python bench/ladder_processes.py [--bots 1000] [--servers 4] [--connected 8]
        [--submitted 2] [--hands 2] [--target 64] [--slots 8] [--phase-s 60]

Every part is a process of its own, as docs/scale-out.md runs them: ``tonk ladder run`` (the
scheduler, ``--timings``: a line per tick with its cost), two ``tonk worker`` on RQ, ``tonk
gateway``, ``tonk dashboard``, on a PostgreSQL database of its own (dropped at the end unless
``--keep``) and the local Redis (a queue of its own). The bots:

- ``--servers`` bot processes, each serving a house bot (random, greedy, heuristic in turn) on
  its share of ``--bots`` loopback ports, one gRPC server and one bot servicer per process:
  every port is a registered bot of its own owner (register_bot, without the network check:
  the bulk of them are one build under many names, as uploads of a few archives would be);
- ``--submitted`` more of those ports entered as a bot author does, ``tonk submit --address``
  through the dashboard's API, with every check the arena runs;
- ``--connected`` bots that connect out to the gateway (``sdk.link.LinkClient``, one process
  for all of them), registered by their first connection after the gateway's admission check.

Then three phases of ``--phase-s`` each: the ladder running; after a SIGKILL of the
scheduler, which a supervisor starts again (compose's ``restart: unless-stopped``); after a
SIGKILL of a worker in the middle of its matches, started again likewise. Printed: the ticks'
cost (median, p95, the slowest) in each phase, matches finished a minute, what each kill
did (how long until ticks and finished matches came back, the killed matches played again to
the end), the ladder page and its idle poll through the dashboard, the store's checks (no
match lost, failed or counted twice, the ladder's kept counts equal its seats), and each
process's peak RSS (VmHWM). Goals (#36): a tick after 64 new results < 0.1 s at 1,000 bots.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]  # bench/arena.py is not arena
sys.path.insert(0, str(ROOT))

from tests.helpers.net import free_port, listening, wait_for  # noqa: E402

ADMIN = os.environ.get("TONK_TEST_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS = os.environ.get("TONK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
KINDS = ("random", "greedy", "heuristic")
#: Seconds any one wait of the run may take before it is reported as not met.
PATIENCE_S = 300.0


# -- the bots' processes -----------------------------------------------------------------------


def serve_bots(kind: str, count: int) -> None:
    """Serve house bot ``kind`` on ``count`` loopback ports (one gRPC server, one servicer),
    print the ports as one JSON line, and serve until SIGTERM."""
    from concurrent import futures

    import grpc
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    from sdk.players import load_bot_class
    from sdk.protocol import SERVICE_NAME
    from sdk.server import BotServicer

    servicer = BotServicer(load_bot_class(kind), 900.0, None, None)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="bench-bot"),
        options=[("grpc.so_reuseport", 0)],
    )
    server.add_generic_rpc_handlers((servicer.handler(),))
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    ports = [server.add_insecure_port("127.0.0.1:0") for _ in range(count)]
    server.start()
    for service in ("", SERVICE_NAME):  # as sdk.server.start_server: a checker may ask either
        health_servicer.set(service, health_pb2.HealthCheckResponse.SERVING)
    print(json.dumps(ports), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    server.stop(1).wait()


def link_bots(gateway: str, spec: str) -> None:
    """Connect the bots of ``spec`` (a JSON list of [name, token, kind]) to ``gateway``, each
    over its own link, until SIGTERM."""
    from sdk.link import LinkClient
    from sdk.players import load_bot_class

    clients = [
        LinkClient(load_bot_class(kind), gateway, token, name, capacity=2)
        for name, token, kind in json.loads(Path(spec).read_text())
    ]
    threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
    for t in threads:
        t.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    for c in clients:
        c.stop()


# -- the arena's processes ---------------------------------------------------------------------


@dataclass
class Proc:
    name: str
    args: list[str]
    log: Path
    process: subprocess.Popen[bytes]
    #: pid -> its peak RSS in KB, for the process and each process below it (gunicorn's workers)
    peak_kb: dict[int, int] = field(default_factory=dict)

    def sample(self) -> None:
        """Note the peak RSS so far (VmHWM: the kernel's own high-water mark) of the process
        and of each process below it."""
        from arena.processes import descendants

        for pid in [self.process.pid, *(p.pid for p in descendants(self.process.pid))]:
            with contextlib.suppress(OSError, ValueError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak_kb[pid] = max(self.peak_kb.get(pid, 0), int(line.split()[1]))

    def peaks(self) -> str:
        own = self.peak_kb.get(self.process.pid, 0) / 1024
        below = sorted(
            (kb / 1024 for pid, kb in self.peak_kb.items() if pid != self.process.pid), reverse=True
        )
        return f"{own:.0f}" + (f" (below it: {', '.join(f'{mb:.0f}' for mb in below)})" if below else "")


@dataclass
class Arena:
    tmp: Path
    env: dict[str, str]
    url: str
    procs: dict[str, Proc] = field(default_factory=dict)
    gone: list[Proc] = field(default_factory=list)  # killed or stopped: their peaks stay reported
    died: list[str] = field(default_factory=list)  # found ended before the run stopped them

    def start(
        self, name: str, *args: str, stdout: int | IO[bytes] | None = None, bench: bool = False
    ) -> Proc:
        """Start ``tonk ARGS`` (or, ``bench``, this script with ARGS) as process ``name``, in a
        session of its own, dying with this one (arena/processes.py's spawn)."""
        from arena.processes import spawn

        log = self.tmp / f"{name}.log"
        command = (
            [sys.executable, str(Path(__file__).resolve())] if bench else [sys.executable, "-m", "sdk.cli"]
        )
        with open(log, "ab") as out:
            process = spawn(
                [*command, *args],
                env=self.env,
                cwd=ROOT,
                stdout=out if stdout is None else stdout,
                stderr=out,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        proc = self.procs[name] = Proc(name, list(args), log, process)
        return proc

    def kill(self, name: str) -> float:
        """SIGKILL ``name``'s whole session; returns when (monotonic) it was sent."""
        proc = self.procs.pop(name)
        proc.sample()
        at = time.monotonic()
        os.killpg(proc.process.pid, signal.SIGKILL)
        proc.process.wait(10)
        self.gone.append(proc)
        return at

    def sample(self) -> None:
        for proc in self.procs.values():
            proc.sample()

    def stop_all(self) -> None:
        from tests.helpers.faultbots import stop_process

        self.sample()
        for proc in self.procs.values():
            if proc.process.poll() is not None:
                self.died.append(f"{proc.name} (exit {proc.process.returncode})")
        for proc in self.procs.values():  # all told at once: they stop side by side
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.process.pid, signal.SIGTERM)
        for proc in self.procs.values():
            stop_process(proc.process, timeout=30)
        self.gone.extend(self.procs.values())
        self.procs.clear()


# -- reading the store -------------------------------------------------------------------------


def scalar(url: str, sql: str, **params: Any) -> Any:
    from sqlalchemy import text

    from arena.store.db import session_scope

    with session_scope(url) as session:
        return session.execute(text(sql), params).scalar()


def rows(url: str, sql: str, **params: Any) -> list[Any]:
    from sqlalchemy import text

    from arena.store.db import session_scope

    with session_scope(url) as session:
        return list(session.execute(text(sql), params).all())


def done(url: str, ladder: int) -> int:
    return int(
        scalar(url, "SELECT count(*) FROM matches WHERE tournament_id = :t AND status = 'done'", t=ladder)
    )


def running_on(url: str, ladder: int, pids: set[int]) -> list[int]:
    found = rows(
        url, "SELECT id, worker FROM matches WHERE tournament_id = :t AND status = 'running'", t=ladder
    )
    return [m for m, w in found if w and w.rsplit(":", 1)[-1].isdigit() and int(w.rsplit(":", 1)[1]) in pids]


def store_checks(url: str, ladder: int, killed: list[int]) -> dict[str, Any]:
    """What the store says after the run: nothing lost, failed or counted twice."""
    statuses = dict(
        rows(url, "SELECT status, count(*) FROM matches WHERE tournament_id = :t GROUP BY status", t=ladder)
    )
    twice = scalar(
        url,
        "SELECT count(*) FROM (SELECT table_index, rotation FROM matches WHERE tournament_id = :t "
        "GROUP BY table_index, rotation HAVING count(*) > 1) x",
        t=ladder,
    )
    replays = scalar(
        url,
        "SELECT count(*) FROM matches m WHERE m.tournament_id = :t AND m.status = 'done' AND "
        "(SELECT count(*) FROM replays r WHERE r.match_id = m.id) <> 1",
        t=ladder,
    )
    unbalanced = scalar(
        url,
        "SELECT count(*) FROM (SELECT s.match_id FROM match_seats s JOIN matches m ON "
        "m.id = s.match_id WHERE m.tournament_id = :t AND m.status = 'done' GROUP BY "
        "s.match_id HAVING sum(s.score) <> 0 OR count(*) <> 2 OR count(s.score) <> 2) x",
        t=ladder,
    )
    miscounted = scalar(
        url,
        "SELECT count(*) FROM tournament_entries e WHERE e.tournament_id = :t AND e.matches <> "
        "(SELECT count(*) FROM match_seats s JOIN matches m ON m.id = s.match_id WHERE "
        "m.tournament_id = :t AND s.bot_id = e.bot_id)",
        t=ladder,
    )
    whole = scalar(
        url,
        "SELECT count(*) FROM (SELECT table_index FROM matches WHERE tournament_id = :t GROUP BY "
        "table_index HAVING count(*) <> 2) x",
        t=ladder,
    )
    again = (
        rows(url, "SELECT id, status, attempts FROM matches WHERE id = ANY(:ids)", ids=killed)
        if killed
        else []
    )
    played = scalar(
        url,
        "SELECT count(DISTINCT s.bot_id) FROM match_seats s JOIN matches m ON m.id = s.match_id "
        "WHERE m.tournament_id = :t AND m.status = 'done'",
        t=ladder,
    )
    return {
        "statuses": statuses,
        "tables or rotations twice": twice,
        "done without exactly one replay": replays,
        "done with seats unscored, unbalanced or not 2": unbalanced,
        "entries whose kept count differs": miscounted,
        "tables not of 2 matches": whole,
        "killed matches": [tuple(r) for r in again],
        "bots that played a done match": played,
    }


# -- the run -----------------------------------------------------------------------------------

TICK = re.compile(r"^ladder \d+: tick ([0-9.]+) ms \(([0-9.]+) ms CPU\), (\d+) tables")


def ticks(log: Path, skip_lines: int = 0) -> list[tuple[float, float, int]]:
    """The (ms, CPU ms, tables added) of each tick the scheduler logged, after line
    ``skip_lines``."""
    out = []
    with contextlib.suppress(FileNotFoundError):
        for line in log.read_text().splitlines()[skip_lines:]:
            m = TICK.match(line)
            if m:
                out.append((float(m.group(1)), float(m.group(2)), int(m.group(3))))
    return out


def line_count(log: Path) -> int:
    with contextlib.suppress(FileNotFoundError):
        return len(log.read_text().splitlines())
    return 0


def summary(times: list[float]) -> str:
    if not times:
        return "no ticks"
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (
        f"{len(times)} ticks: median {statistics.median(times):.0f} ms, p95 {p95:.0f} ms, "
        f"slowest {ordered[-1]:.0f} ms"
    )


def http(url: str, headers: dict[str, str] | None = None) -> tuple[int, int, float]:
    """(status, bytes, seconds) of one GET."""
    started = time.perf_counter()
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            body = response.read()
            return response.status, len(body), time.perf_counter() - started
    except urllib.error.HTTPError as exc:
        return exc.code, len(exc.read()), time.perf_counter() - started


def register_bulk(url: str, addresses: list[tuple[str, str]]) -> None:
    """Each (name, address) a bot of an owner of its own, entered without the network check."""
    from arena.bots.owners import create_owner
    from arena.bots.registry import register_bot
    from arena.config import Settings
    from arena.store.db import session_scope

    settings = Settings(allowed_bot_hosts=("127.0.0.1",))
    for lo in range(0, len(addresses), 200):
        with session_scope(url) as session:
            for name, address in addresses[lo : lo + 200]:
                owner, _token = create_owner(session, f"owner-{name}")
                register_bot(session, owner, name, address, settings=settings, check=False)


def new_owners(url: str, names: list[str]) -> dict[str, str]:
    from arena.bots.owners import create_owner
    from arena.store.db import session_scope

    with session_scope(url) as session:
        return {name: create_owner(session, f"owner-{name}")[1] for name in names}


def forget_queue(queue: str) -> None:
    """Remove the run's RQ keys (named after its queue) and its queue and workers from RQ's
    lists."""
    from redis import Redis

    from tests.helpers.faultbots import forget_rq_members

    client = Redis.from_url(REDIS)
    try:
        for key in client.scan_iter(match=f"*{queue}*", count=500):
            client.delete(key)
    finally:
        client.close()
    forget_rq_members(REDIS, queue)


def phase(
    arena: Arena, ladder: int, seconds: float, label: str, least: int = 0
) -> list[tuple[float, float, int]]:
    """Let the ladder run ``seconds`` and until ``least`` more matches are done, sampling
    peaks; print its ticks and finished matches, and return its ticks."""
    log = arena.procs["scheduler"].log
    first_line, first_done, started = line_count(log), done(arena.url, ladder), time.monotonic()
    while time.monotonic() - started < seconds or done(arena.url, ladder) < first_done + least:
        if time.monotonic() - started > seconds + PATIENCE_S:
            raise TimeoutError(f"{label}: {least} matches not done within {PATIENCE_S:.0f} s")
        arena.sample()
        time.sleep(0.5)
    elapsed = time.monotonic() - started
    made = ticks(log, first_line)
    finished = done(arena.url, ladder) - first_done
    adding = [ms for ms, _, tables in made if tables]
    print(
        f"{label}: {summary([ms for ms, _, _ in made])}, in CPU {summary([c for _, c, _ in made])}; "
        f"those adding tables: {summary(adding)}; {finished} matches finished, "
        f"{60 * finished / elapsed:.0f} a minute",
        flush=True,
    )
    return made


def run(args: argparse.Namespace) -> bool:
    """The whole run (see the module's docstring); whether every check passed."""
    import psycopg

    from arena.processes import ensure_watched
    from arena.store.db import dispose_engines

    ensure_watched()
    tag = uuid.uuid4().hex[:10]
    name = f"tonk_bench_lp_{tag}"
    base = ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    url = f"{base}/{name}"  # a database of its own, dropped at the end
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    tmp = Path(tempfile.mkdtemp(prefix="bench-ladder-processes-"))
    dash_port, gw_port, relay_port = free_port(), free_port(), free_port()
    queue = f"bench-lp-{tag}"
    env = {
        **os.environ,
        "TONK_DATABASE_URL": url,
        "TONK_REDIS_URL": REDIS,
        "TONK_QUEUE": queue,
        "TONK_BOT_CAPACITY": "2",
        "TONK_MATCHES_PER_WORKER": str(args.slots),
        "TONK_ALLOWED_BOT_HOSTS": "127.0.0.1",
        "TONK_GATEWAY_PORT": str(gw_port),
        "TONK_GATEWAY_RELAY_PORT": str(relay_port),
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    arena = Arena(tmp, env, url)
    every: list[tuple[float, float, int]] = []  # each phase's ticks
    ok = True
    try:
        from arena.processes import run_process

        done_upgrade = run_process(
            [sys.executable, "-m", "sdk.cli", "db", "upgrade"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done_upgrade.returncode == 0, done_upgrade.stderr
        started = time.monotonic()
        # As deployed: gunicorn (no gateway inside it; the gateway is a process of its own).
        # Both first: the bots' thousand ports are drawn from the same free ones.
        arena.start("dashboard", "dashboard", "--port", str(dash_port), "--production", "--workers", "2")
        arena.start("gateway", "gateway", "--port", str(gw_port), "--relay-port", str(relay_port))
        wait_for(
            "the dashboard and the gateway",
            lambda: listening(dash_port) and listening(gw_port),
            PATIENCE_S,
        )
        # The bots' processes: each serves its share of the ports.
        share = -(-(args.bots + args.submitted) // args.servers)
        ports: list[tuple[str, int]] = []
        for k in range(args.servers):
            kind = KINDS[k % len(KINDS)]
            proc = arena.start(
                f"bots-{k}", "--serve-bots", kind, str(share), stdout=subprocess.PIPE, bench=True
            )
            assert proc.process.stdout is not None
            ports += [(kind, p) for p in json.loads(proc.process.stdout.readline())]
        bulk = [
            (f"{kind[0]}{k:04d}", f"127.0.0.1:{port}") for k, (kind, port) in enumerate(ports[: args.bots])
        ]
        register_bulk(url, bulk)
        print(
            f"{len(bulk)} bots on {args.servers} bot processes registered in "
            f"{time.monotonic() - started:.1f} s",
            flush=True,
        )
        # A bot author's way in, with every check: tonk submit through the dashboard's API.
        arena_url = f"http://127.0.0.1:{dash_port}"
        spare = ports[args.bots : args.bots + args.submitted]
        submitted = [(f"sub{k}", f"127.0.0.1:{port}") for k, (_, port) in enumerate(spare)]
        tokens = new_owners(url, [n for n, _ in submitted])
        for name_, address in submitted:
            began = time.monotonic()
            out = run_process(
                [sys.executable, "-m", "sdk.cli", "submit", "--name", name_, "--address", address],
                env={**env, "TONK_ARENA": arena_url, "TONK_TOKEN": tokens[name_]},
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=600,
            )
            said = (out.stdout.strip().splitlines() or [out.stderr.strip()])[-1]
            print(
                f"tonk submit {name_}: exit {out.returncode} in {time.monotonic() - began:.1f} s: {said}",
                flush=True,
            )
            ok &= out.returncode == 0
        # Bots that connect out, registered by their first connection (the admission check).
        linked = [f"link{k}" for k in range(args.connected)]
        link_tokens = new_owners(url, linked)
        spec = tmp / "links.json"
        spec.write_text(json.dumps([[n, link_tokens[n], KINDS[k % 2]] for k, n in enumerate(linked)]))
        if linked:
            arena.start("links", "--link-bots", f"127.0.0.1:{gw_port}", str(spec), bench=True)
            began = time.monotonic()
            registered = "SELECT count(*) FROM bots WHERE connected AND name LIKE 'link%'"
            wait_for(
                "the connected bots' registration",
                lambda: scalar(url, registered) == len(linked),
                PATIENCE_S,
            )
            print(
                f"{len(linked)} connected bots admitted through the gateway in "
                f"{time.monotonic() - began:.1f} s",
                flush=True,
            )
        total = int(scalar(url, "SELECT count(*) FROM bots WHERE status = 'active'"))
        made = run_process(
            [
                sys.executable,
                "-m",
                "sdk.cli",
                "ladder",
                "create",
                "--name",
                "public",
                "--table-size",
                "2",
                "--hands",
                str(args.hands),
                "--target",
                str(args.target),
                "--deadline-ms",
                "5000",
            ],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert made.returncode == 0, made.stderr
        ladder = int(made.stdout.split()[1])
        scheduler_args = (
            "ladder",
            "run",
            str(ladder),
            "--timings",
            "--quiet",
            "--poll-s",
            "1",
            "--lease-s",
            "5",
        )
        arena.start("scheduler", *scheduler_args)
        for w in ("w1", "w2"):
            arena.start(w, "worker", "--name", f"{queue}-{w}")
        print(
            f"ladder {ladder}: {total} active bots; scheduler, 2 workers of {args.slots} slots, gateway, "
            f"dashboard up",
            flush=True,
        )
        wait_for("the first finished match", lambda: done(url, ladder) > 0, PATIENCE_S)

        every += phase(arena, ladder, args.phase_s, "running", args.least)

        # The scheduler SIGKILLed; its supervisor starts it again. Its lease lapses first.
        log = arena.procs["scheduler"].log
        lines = line_count(log)
        arena.kill("scheduler")
        done_at_kill = done(url, ladder)
        arena.start("scheduler", *scheduler_args)
        back = wait_for("a tick of the restarted scheduler", lambda: ticks(log, lines), PATIENCE_S, 0.1)
        flowing = wait_for(
            "finished matches after the scheduler's kill",
            lambda: done(url, ladder) > done_at_kill + 2,
            PATIENCE_S,
            0.1,
        )
        print(
            f"scheduler SIGKILLed: the restarted one ticked {back:.1f} s after the kill (its lease: 5 s), "
            f"matches finishing again within {max(back, flowing):.1f} s",
            flush=True,
        )
        every += phase(arena, ladder, args.phase_s, "after the scheduler's kill", args.least)

        # A worker SIGKILLed with matches in play; its supervisor starts it again.
        pid = arena.procs["w1"].process.pid
        wait_for("matches in play on worker 1", lambda: running_on(url, ladder, {pid}), PATIENCE_S, 0.02)
        at = arena.kill("w1")
        killed = running_on(url, ladder, {pid})
        arena.start("w1", "worker", "--name", f"{queue}-w1")

        def replayed() -> bool:
            found = rows(url, "SELECT status FROM matches WHERE id = ANY(:ids)", ids=killed)
            return all(s == "done" for (s,) in found)

        again = wait_for("the killed matches played again", replayed, PATIENCE_S, 0.5) if killed else 0.0
        print(
            f"worker SIGKILLed with {len(killed)} matches in play: all done again "
            f"{time.monotonic() - at:.1f} s after the kill ({again:.1f} s of waiting)",
            flush=True,
        )
        every += phase(arena, ladder, args.phase_s, "after the worker's kill", args.least)

        # The dashboard at this size: the ladder page and an idle tab's poll.
        page = f"{arena_url}/ladders/{ladder}"
        http(page)
        page_s = [http(page)[2] for _ in range(5)]
        status, size, _ = http(page)
        live = f"{arena_url}/api/v1/ladders/{ladder}/live?html=1&page=1"
        with urllib.request.urlopen(live, timeout=60) as response:
            tag_ = response.headers["ETag"]
        idle = http(live, {"If-None-Match": tag_})
        print(
            f"dashboard: ladder page {status}, {size / 1000:.1f} KB, median "
            f"{1000 * statistics.median(page_s):.0f} ms over HTTP; a poll with the last ETag: {idle[0]}, "
            f"{idle[1]} bytes of body "
            f"(304 unless something shown changed meanwhile)",
            flush=True,
        )

        with contextlib.suppress(Exception):
            run_process(
                [sys.executable, "-m", "sdk.cli", "ladder", "pause", str(ladder)],
                env=env,
                cwd=ROOT,
                capture_output=True,
                timeout=120,
            )
        with contextlib.suppress(TimeoutError):
            wait_for(
                "the matches in play to finish",
                lambda: (
                    not scalar(
                        url,
                        "SELECT count(*) FROM matches WHERE tournament_id = :t AND status = 'running'",
                        t=ladder,
                    )
                ),
                timeout=120,
            )
        arena.stop_all()
        dispose_engines()
        print(f"processes that had ended by themselves: {arena.died or 'none'}")
        ok &= not arena.died
        checks = store_checks(url, ladder, killed)
        print("store checks:", flush=True)
        for key, value in checks.items():
            print(f"  {key}: {value}")
        ok &= all(
            checks[k] == 0
            for k in (
                "tables or rotations twice",
                "done without exactly one replay",
                "done with seats unscored, unbalanced or not 2",
                "entries whose kept count differs",
                "tables not of 2 matches",
            )
        )
        ok &= set(checks["statuses"]) <= {"done", "pending"}
        ok &= all(s == "done" and a >= 2 for _, s, a in checks["killed matches"])
        cpu = [c for _, c, _ in every]
        print(
            f"all phases: {summary([ms for ms, _, _ in every])}; in CPU {summary(cpu)}; goal < 100 ms a "
            f"tick at 1,000 bots: {'met' if cpu and statistics.median(cpu) < 100 else 'NOT met'} in "
            f"the median of CPU"
        )
    finally:
        arena.stop_all()
        dispose_engines()
        print("peak RSS (VmHWM) of each process, MB:")
        for proc in arena.gone:
            print(f"  {proc.name:<12} {proc.peaks()}")
        forget_queue(queue)
        if not args.keep:
            with psycopg.connect(ADMIN, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept: {url}, logs in {tmp}")
    print(f"checks: {'passed' if ok else 'FAILED'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve-bots", nargs=2, metavar=("KIND", "COUNT"), help=argparse.SUPPRESS)
    parser.add_argument("--link-bots", nargs=2, metavar=("GATEWAY", "SPEC"), help=argparse.SUPPRESS)
    parser.add_argument("--bots", type=int, default=1000, help="bots registered in bulk")
    parser.add_argument("--servers", type=int, default=4, help="processes serving them")
    parser.add_argument("--submitted", type=int, default=2, help="bots entered by tonk submit, every check")
    parser.add_argument("--connected", type=int, default=8, help="bots connected out to the gateway")
    parser.add_argument("--hands", type=int, default=2, help="hands a match")
    parser.add_argument("--target", type=int, default=64, help="matches the ladder keeps queued")
    parser.add_argument("--slots", type=int, default=8, help="matches each worker plays at once")
    parser.add_argument("--phase-s", type=float, default=60.0, help="seconds each phase runs at least")
    parser.add_argument("--least", type=int, default=0, help="matches each phase finishes at least")
    parser.add_argument("--keep", action="store_true", help="keep the database and logs")
    args = parser.parse_args()
    if args.serve_bots:
        serve_bots(args.serve_bots[0], int(args.serve_bots[1]))
        return 0
    if args.link_bots:
        link_bots(*args.link_bots)
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: still drop what it made
    return 0 if run(args) else 1


if __name__ == "__main__":
    sys.exit(main())
