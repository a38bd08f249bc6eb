#!/usr/bin/env python3
"""Keep every bot busy: bot utilisation of a tournament between served bots that think.

    .venv/bin/python bench/throughput.py [--think-ms 20 200] [--modes embedded rq] [--quick]

Six bots, each its own ``tonk serve``-like process on loopback, think ``--think-ms`` a
decision, ONE decision at a time per bot (a bot in several matches queues its decisions, as
a bot on one core does), and declare in GetInfo that they play up to 4 matches at once. A
2-seat round robin between them runs on a single machine's defaults: the embedded pool
(one process per core, TONK_MATCHES_PER_WORKER threads each) or two ``tonk worker``
processes on RQ (``rq`` mode, needs Redis at --redis-url). Reported:

* utilisation = decisions x think / (wall x bots): 1.0 means no bot ever waited for the
  arena (goals: >= 0.70 at 20 ms, >= 0.85 at 200 ms); decisions/s;
* the worker processes' peak resident memory (VmHWM);
* ``--in-flight 64``: eight bots declaring 16 matches each, so that 64 matches can be in
  flight; the most seen in flight at once and the memory of the (at most two) workers
  holding them (goal: 64 in at most two processes, <= 400 MB in all);
* instant bots (random over gRPC, no think time): the tournament's decisions/s against a
  plain gRPC echo (bench/protocol.py's) driven by as many threads as the tournament had
  matches in flight on average, in the same run: the referee's own cost per decision.

Bots are registered with a check that only asks GetInfo (the full admission check would
play their think time through a conformance match first); the capacity they declare is read
from that reply, as the admission check does.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402
from rq import Worker  # noqa: E402
from sqlalchemy import func, select  # noqa: E402

import arena.processes  # noqa: E402
from arena.bots.owners import get_or_create_operator  # noqa: E402
from arena.bots.registry import register_bot  # noqa: E402
from arena.config import Settings, load_settings  # noqa: E402
from arena.runtime.backends import EmbeddedBackend  # noqa: E402
from arena.runtime.driver import run_tournament  # noqa: E402
from arena.runtime.rq_backend import RqBackend  # noqa: E402
from arena.store.db import dispose_engines, session_scope  # noqa: E402
from arena.store.models import Match  # noqa: E402
from arena.store.statuses import MatchStatus  # noqa: E402
from arena.tournaments.lifecycle import create_tournament  # noqa: E402
from bots.random_bot import RandomBot  # noqa: E402
from sdk.observation import Observation  # noqa: E402
from sdk.protocol import bot_pb2, bot_pb2_grpc  # noqa: E402
from sdk.server import start_server  # noqa: E402

SETTINGS = Settings(allowed_bot_hosts=("127.0.0.1",), decision_deadline_ms=5000, time_bank_ms=10000)


def serve_thinking_bot(think_ms: float, capacity: int) -> None:
    """A bot process: random play after ``think_ms``, one decision at a time."""
    one_at_a_time = threading.Lock()

    class Thinking(RandomBot):
        name = "thinking"

        def act(self, obs: Observation) -> Any:
            with one_at_a_time:
                if think_ms:
                    time.sleep(think_ms / 1000)
                return super().act(obs)

    running = start_server(Thinking, port=0, max_workers=64, max_matches=capacity)
    print(running.port, flush=True)
    running.server.wait_for_termination()


def bench_protocol() -> Any:
    """bench/protocol.py: its echo server and callers, exactly as that bench runs them."""
    sys.path.insert(0, str(ROOT / "bench"))
    import protocol

    return protocol


def serve_echo() -> None:
    bench_protocol().serve_echo()


def spawn(*args: str) -> tuple[subprocess.Popen[str], int]:
    proc = arena.processes.spawn([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


@contextlib.contextmanager
def served_bots(count: int, think_ms: float, capacity: int) -> Iterator[list[str]]:
    procs = [spawn("--serve-bot", str(think_ms), str(capacity)) for _ in range(count)]
    try:
        yield [f"127.0.0.1:{port}" for _, port in procs]
    finally:
        for proc, _ in procs:
            proc.terminate()
        for proc, _ in procs:
            proc.wait()


def info_only(address: str, settings: Settings) -> dict[str, Any]:
    with grpc.insecure_channel(address) as channel:
        reply = bot_pb2_grpc.BotServiceStub(channel).GetInfo(bot_pb2.GetInfoRequest(), timeout=5)
    return {
        "name": reply.name,
        "version": reply.version,
        "protocol_version": reply.protocol_version,
        "max_concurrent_matches": reply.max_concurrent_matches,
    }


def new_tournament(url: str, addresses: list[str], deals: int, hands: int, tag: str) -> int:
    with session_scope(url) as session:
        owner = get_or_create_operator(session, "bench")
        ids = [
            register_bot(session, owner, f"{tag}-{i}", address, settings=SETTINGS, checker=info_only).id
            for i, address in enumerate(addresses)
        ]
        return create_tournament(
            session,
            name=tag,
            bot_ids=ids,
            table_sizes=[2],
            deals_per_table=deals,
            hands_per_match=hands,
            settings=SETTINGS,
        ).id


def peak_rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
    return total / 1024


class InFlight:
    """Samples how many matches are running, from the store, every 50 ms."""

    def __init__(self, url: str, tid: int):
        self.url, self.tid = url, tid
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            with session_scope(self.url) as session:
                self.samples.append(
                    session.execute(
                        select(func.count()).where(
                            Match.tournament_id == self.tid, Match.status == MatchStatus.RUNNING
                        )
                    ).scalar_one()
                )

    def stop(self) -> tuple[int, float]:
        self._stop.set()
        self._thread.join()
        busy = [s for s in self.samples if s] or [0]
        if os.environ.get("TONK_BENCH_SAMPLES"):
            print(busy, file=sys.stderr)
        return max(busy), sum(busy) / len(busy)


def play(url: str, tid: int, mode: str, redis_url: str, workers: int) -> dict[str, Any]:
    """Run the tournament to its end; wall time, decisions, peak in flight, worker memory."""
    settings = load_settings()
    pids: list[int] = []
    # The clock starts once the workers are up (an arena's workers are long-running).
    if mode == "embedded":
        pool = EmbeddedBackend(url, settings.embedded_workers, slots=settings.matches_per_worker)
        pids = pool.process_ids()
        time.sleep(1.0)  # the pool processes import the arena
        gauge = InFlight(url, tid)
        started = time.perf_counter()
        try:
            run_tournament(url, tid, pool, poll_s=0.05)
            rss = peak_rss_mb(pids)
        finally:
            pool.close()
    else:
        queue = f"tonk-bench-throughput-{os.getpid()}"
        env = {**os.environ, "TONK_DATABASE_URL": url, "TONK_REDIS_URL": redis_url, "TONK_QUEUE": queue,
               "TONK_ALLOWED_BOT_HOSTS": "127.0.0.1", "PYTHONPATH": str(ROOT)}
        procs = [
            arena.processes.spawn(
                [sys.executable, "-m", "sdk.cli", "worker"], env=env, stderr=subprocess.DEVNULL
            )
            for _ in range(workers)
        ]
        pids = [p.pid for p in procs]
        backend = RqBackend(url, redis_url, queue)
        deadline = time.monotonic() + 60
        while Worker.count(queue=backend.queue) < workers and time.monotonic() < deadline:
            time.sleep(0.1)
        gauge = InFlight(url, tid)
        started = time.perf_counter()
        try:
            run_tournament(url, tid, backend, poll_s=0.05)
            rss = peak_rss_mb(pids)
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait()
            with contextlib.suppress(Exception):
                backend.queue.delete(delete_jobs=True)
                backend.connection.srem("rq:queues", backend.queue.key)
            backend.close()
    wall = time.perf_counter() - started
    most, mean = gauge.stop()
    with session_scope(url) as session:
        counts = dict(
            session.execute(
                select(Match.status, func.count()).where(Match.tournament_id == tid).group_by(Match.status)
            ).all()
        )
        decisions = session.execute(
            select(func.sum(Match.decisions)).where(Match.tournament_id == tid)
        ).scalar_one()
        done, total = counts.get("done", 0), sum(counts.values())
    if done != total:
        with session_scope(url) as session:
            errors = session.execute(
                select(Match.status, func.count(), func.max(Match.error)).where(Match.tournament_id == tid)
                .group_by(Match.status)
            ).all()
        raise SystemExit(f"{total - done} matches not done; e.g. {errors}")
    return {"wall": wall, "decisions": int(decisions), "most": most, "mean": mean, "rss_mb": rss,
            "processes": len(pids)}


def echo_rate(port: int, callers: int, seconds: float) -> float:
    protocol = bench_protocol()
    payload = b"x" * 600  # about a DecideRequest
    return float(protocol.rate(callers, seconds, protocol.echo_work(port, payload)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--think-ms", type=float, nargs="+", default=[20.0, 200.0])
    parser.add_argument("--modes", nargs="+", choices=["embedded", "rq"], default=["embedded", "rq"])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--bots", type=int, default=6)
    parser.add_argument("--in-flight", type=int, default=64, help="the in-flight check's target (0: skip)")
    parser.add_argument("--no-instant", action="store_true", help="skip the instant bots vs echo")
    parser.add_argument("--quick", action="store_true", help="smaller tournaments")
    args = parser.parse_args()
    rows: list[str] = []
    with tempfile.TemporaryDirectory(prefix="tonk-throughput-") as folder:
        n = 0

        def store() -> str:
            nonlocal n
            n += 1
            dispose_engines()
            return f"sqlite:///{folder}/arena-{n}.sqlite"

        for think in args.think_ms:
            # Enough matches that the end of the tournament (fewer matches left than slots)
            # is a small part of it: 15 tables x deals x 2 seatings.
            deals, hands = (4, 6) if think <= 50 else (12, 2)
            if args.quick:
                deals = max(1, deals // 2)
            for mode in args.modes:
                with served_bots(args.bots, think, 4) as addresses:
                    url = store()
                    tid = new_tournament(url, addresses, deals, hands, f"t{int(think)}{mode[0]}")
                    got = play(url, tid, mode, args.redis_url, 2)
                util = got["decisions"] * think / 1000 / (got["wall"] * args.bots)
                goal = 0.70 if think <= 50 else 0.85
                rows.append(
                    f"think {think:5.0f} ms  {mode:8s}  utilisation {util:.2f} (goal {goal:.2f}, "
                    f"{'met' if util >= goal else 'NOT met'})  "
                    f"{got['decisions'] / got['wall']:6.0f} decisions/s  "
                    f"in flight max {got['most']} mean {got['mean']:.1f}  "
                    f"{got['processes']} workers {got['rss_mb']:.0f} MB peak RSS"
                )
                print(rows[-1], flush=True)
        if args.in_flight:
            # Room for more than the target, so that packing bots into matches is never the limit.
            bots = 10
            capacity = max(1, -(-args.in_flight * 2 // bots) * 5 // 4)
            with served_bots(bots, 20.0, capacity) as addresses:
                url = store()
                tid = new_tournament(url, addresses, 2 if not args.quick else 1, 3, "inflight")
                got = play(url, tid, "embedded", args.redis_url, 2)
            met = got["most"] >= args.in_flight and got["processes"] <= 2 and got["rss_mb"] <= 400
            verdict = "met" if met else "NOT met"
            rows.append(
                f"in flight: {bots} bots x {capacity} matches declared; most at once {got['most']} "
                f"(mean {got['mean']:.1f}) in {got['processes']} worker processes using "
                f"{got['rss_mb']:.0f} MB peak RSS in all "
                f"(goal: {args.in_flight} in <= 2 processes, <= 400 MB: {verdict})"
            )
            print(rows[-1], flush=True)
        if not args.no_instant:
            with served_bots(args.bots, 0.0, 8) as addresses:
                url = store()
                # Long matches, so that starting and recording one is a small part of it.
                tid = new_tournament(url, addresses, 1 if args.quick else 2, 40, "instant")
                got = play(url, tid, "embedded", args.redis_url, 2)
            tournament_rate = got["decisions"] / got["wall"]
            callers = max(1, round(got["mean"]))
            echo, port = spawn("--serve-echo")
            try:
                echo_per_s = echo_rate(port, callers, 3.0)
            finally:
                echo.terminate()
                echo.wait()
            rows.append(
                f"instant bots: tournament {tournament_rate:.0f} decisions/s with {got['mean']:.1f} "
                f"matches in flight on average; gRPC echo {echo_per_s:.0f} calls/s at {callers} calls "
                f"in flight; "
                f"ratio {tournament_rate / echo_per_s:.2f}"
            )
            print(rows[-1], flush=True)
    print("\n".join(["", "summary (this machine, this run):", *rows]))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-bot":
        serve_thinking_bot(float(sys.argv[2]), int(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--serve-echo":
        serve_echo()
    else:
        arena.processes.ensure_watched()  # nothing it starts outlives it, however it ends
        sys.exit(main())
