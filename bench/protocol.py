#!/usr/bin/env python3
"""Decisions per second between the referee and a bot over gRPC on loopback, against a plain
gRPC echo of the same payload size, at the same concurrency.

    .venv/bin/python bench/protocol.py [--seconds 3] [--concurrency 1 4] [--bot random]

The bot and the echo each run in their own server process (the same thread pool size and
options), so client and server do not share a GIL, as in the arena. For each concurrency C:

* echo: C callers, each with its own channel, send a DecideRequest-sized payload and get the
  same bytes back (a generic handler, no parsing): the cost of the transport alone.
* referee, decision path: C callers, each running the referee's decision loop (deal, observe,
  encode, Decide over gRPC, decode, resolve, apply) on 2-seat hands: one RPC per decision.
  This is what the target compares: at least 80% of the echo's rate.
* referee vs the null bot: the same decision loop against a "bot" served next to the echo
  that answers index 0 (always legal) without reading the request, as the echo does not
  read it either: the referee's own cost, without the SDK's decoding on the bot's side.
* protocol only: recorded requests through GrpcPlayer to the bot, no engine work.
* referee, full matches: C callers running ``play_match``, which adds StartMatch, EndHand
  (with the hand's record) and EndMatch calls per seat; shown as decisions/s and RPCs/s.

The callers are C processes (``--clients processes``), one match each, or C threads of this
one process, sharing its GIL (``--clients threads``), as an arena worker process now plays
many matches in threads (bench/throughput.py measures that end to end); the default runs
both. Echo and referee always get the same kind of caller.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import grpc

import arena.processes
from sdk.actions import Action
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.grpc_player import DEFAULT_MAX_REPLY_BYTES, GrpcPlayer
from sdk.observation import observe
from sdk.players import load_bot_class
from sdk.protocol import SERVICE_NAME
from sdk.referee import DecisionRequest, LocalPlayer, play_match, resolve_reply
from sdk.server import DEFAULT_MAX_WORKERS, start_server
from sdk.wire import encode_decide_request, encode_reply

ECHO_METHOD = "/bench.Echo/Echo"
NULL_REPLY = encode_reply(0)  # DecideResponse{action_index: 0}


def serve_echo() -> None:
    """The echo, and in the same server the null bot: Decide answers index 0 (always legal)
    without reading the request, as the echo does not read it either, so the referee's
    side is all that differs from the echo."""

    def echo(request: bytes, context: grpc.ServicerContext) -> bytes:
        return request

    def first_legal(request: bytes, context: grpc.ServicerContext) -> bytes:
        return NULL_REPLY

    def no_info(request: bytes, context: grpc.ServicerContext) -> bytes:
        return b""

    handler = grpc.method_handlers_generic_handler(
        "bench.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)}
    )
    null_bot = grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {
            "Decide": grpc.unary_unary_rpc_method_handler(first_legal),
            "GetInfo": grpc.unary_unary_rpc_method_handler(no_info),
        },
    )
    # The same executor size and options as sdk.server.start_server.
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=DEFAULT_MAX_WORKERS), options=[("grpc.so_reuseport", 0)]
    )
    server.add_generic_rpc_handlers((handler, null_bot))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    server.wait_for_termination()


def serve_bot(spec: str) -> None:
    running = start_server(load_bot_class(spec), port=0)
    print(running.port, flush=True)
    running.server.wait_for_termination()


def spawn(*args: str) -> tuple[subprocess.Popen[str], int]:
    proc = arena.processes.spawn([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def timed(threads: int, seconds: float, work: Callable[[int, Callable[[], bool]], int]) -> tuple[int, float]:
    """Run ``work(index, keep_going)`` in ``threads`` threads for about ``seconds``; each returns
    how many units it did. Returns (units, elapsed seconds)."""
    counts = [0] * threads
    start = threading.Barrier(threads + 1)
    stop_at = [0.0]

    def keep_going() -> bool:
        return time.perf_counter() < stop_at[0]

    def run(i: int) -> None:
        start.wait()
        counts[i] = work(i, keep_going)

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    stop_at[0] = time.perf_counter() + seconds
    began = time.perf_counter()
    start.wait()
    for t in pool:
        t.join()
    return sum(counts), time.perf_counter() - began


def rate(threads: int, seconds: float, work: Callable[[int, Callable[[], bool]], int]) -> float:
    units, elapsed = timed(threads, seconds, work)
    return units / elapsed


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user + system) of this process, or of process ``pid``."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def measured(
    threads: int, seconds: float, work: Callable[[int, Callable[[], bool]], int], server_pid: int
) -> tuple[float, float, float]:
    """(units/s, client CPU us per unit, server CPU us per unit). CPU time is far less
    sensitive than wall time to other load on a shared machine."""
    client0, server0 = cpu_seconds(), cpu_seconds(server_pid)
    units, elapsed = timed(threads, seconds, work)
    client1, server1 = cpu_seconds(), cpu_seconds(server_pid)
    n = max(units, 1)
    return units / elapsed, (client1 - client0) / n * 1e6, (server1 - server0) / n * 1e6


Work = Callable[[int, Callable[[], bool]], int]


def client_run(
    kind: str, target: str, bot: str, payload_size: int, i: int, start_at: float, stop_at: float
) -> tuple[int, float, int, float]:
    """One caller process's share of a round: (units done, its CPU seconds from ``start_at``
    on, RPCs made if ``kind`` is "match", when it finished). ``start_at``, ``stop_at`` and
    the finish are ``time.monotonic`` times, one clock for every process. Connecting happens
    before ``start_at``; the unit under way at ``stop_at`` is finished and counted."""
    rpcs = [0] * (i + 1)
    work = process_work(kind, target, bot, payload_size, rpcs)
    cpu0 = [0.0]

    def keep_going() -> bool:
        if not cpu0[0]:  # the first call: connected; wait for the common start
            time.sleep(max(0.0, start_at - time.monotonic()))
            cpu0[0] = cpu_seconds()
        return time.monotonic() < stop_at

    units = work(i, keep_going)
    return units, cpu_seconds() - cpu0[0], rpcs[i], time.monotonic()


_requests_cache: dict[str, list[DecisionRequest]] = {}


def process_work(kind: str, target: str, bot: str, payload_size: int, rpcs: list[int]) -> Work:
    if kind == "echo":
        return echo_work(int(target), b"\x00" * payload_size)
    if kind == "decide":
        return decision_loop_work(target)
    if kind == "replay":
        return replay_work(target, cached_requests(bot))
    if kind == "match":
        return match_work(target, rpcs)
    raise ValueError(f"unknown work {kind!r}")


def cached_requests(bot: str) -> list[DecisionRequest]:
    if bot not in _requests_cache:
        _requests_cache[bot] = typical_requests(bot)
    return _requests_cache[bot]


class ProcessClients:
    """C caller processes, started once and reused for every round (spawned, not forked:
    this process already runs gRPC, which does not survive a fork)."""

    def __init__(self, count: int, bot: str, payload_size: int):
        self.count = count
        self.bot = bot
        self.payload_size = payload_size
        self.pool = ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn"))
        # Start every process and build its request list before any round is timed.
        warm = [self.pool.submit(cached_requests_len, bot, 0.5) for _ in range(count)]
        for f in warm:
            f.result()

    def measured(
        self, kind: str, target: str, seconds: float, server_pid: int | None
    ) -> tuple[float, float, float, float]:
        """(units/s, client CPU us per unit, server CPU us per unit, RPCs/s) over one round."""
        start_at = time.monotonic() + 0.5  # time for every caller to connect
        stop_at = start_at + seconds
        jobs = [
            self.pool.submit(client_run, kind, target, self.bot, self.payload_size, i, start_at, stop_at)
            for i in range(self.count)
        ]
        time.sleep(max(0.0, start_at - time.monotonic()))
        server0 = cpu_seconds(server_pid) if server_pid else 0.0
        results = [j.result() for j in jobs]
        server1 = cpu_seconds(server_pid) if server_pid else 0.0
        elapsed = max(r[3] for r in results) - start_at
        units = sum(r[0] for r in results)
        n = max(units, 1)
        client_cpu = sum(r[1] for r in results)
        rpcs = sum(r[2] for r in results)
        return units / elapsed, client_cpu / n * 1e6, (server1 - server0) / n * 1e6, rpcs / elapsed

    def close(self) -> None:
        self.pool.shutdown()


def cached_requests_len(bot: str, hold_s: float) -> int:
    time.sleep(hold_s)  # keep this process busy so that every warm-up lands on a new one
    return len(cached_requests(bot))


def typical_requests(bot_spec: str, hands: int = 200) -> list[DecisionRequest]:
    """The DecideRequests of an in-process 2-seat match (what the wire would carry)."""
    requests: list[DecisionRequest] = []

    class Recording(LocalPlayer):
        def act(self, request: DecisionRequest) -> Action | int:
            requests.append(request)
            return super().act(request)

    bot = load_bot_class(bot_spec)
    play_match([Recording(bot), Recording(bot)], seed=7, hands=hands, match_id="bench-size")
    return requests


def replay_work(address: str, requests: list[DecisionRequest]) -> Callable[[int, Callable[[], bool]], int]:
    """The protocol alone: recorded requests sent through GrpcPlayer (encode, Decide, decode
    the reply; the bot server decodes and acts), with no engine work on the referee's side."""

    def work(i: int, keep_going: Callable[[], bool]) -> int:
        player = GrpcPlayer(address)
        n = 0
        try:
            player.describe()
            while keep_going():
                player.act(requests[n % len(requests)])
                n += 1
        finally:
            player.close()
        return n

    return work


def echo_work(port: int, payload: bytes) -> Callable[[int, Callable[[], bool]], int]:
    def work(i: int, keep_going: Callable[[], bool]) -> int:
        # The channel options GrpcPlayer uses, so only the referee's work differs.
        options = [("grpc.max_receive_message_length", DEFAULT_MAX_REPLY_BYTES), ("grpc.enable_retries", 0)]
        with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
            call = channel.unary_unary(ECHO_METHOD)
            call(payload, timeout=5)  # connect before the clock matters
            n = 0
            while keep_going():
                call(payload, timeout=5)
                n += 1
            return n

    return work


def decision_loop_work(address: str) -> Callable[[int, Callable[[], bool]], int]:
    """The referee's inner loop (sdk.referee.play_match) without the lifecycle notices."""

    def work(i: int, keep_going: Callable[[], bool]) -> int:
        players = [GrpcPlayer(address), GrpcPlayer(address)]
        names = ("a", "b")
        n = 0
        hand = 0
        try:
            players[0].describe()
            players[1].describe()
            while keep_going():
                state = HandState.deal(deck_order(1000 + i, hand), 2, hand % 2)
                decision = 0
                while state.outcome is None:
                    seat = state.to_act
                    obs = observe(state, seat, names, (0, 0), hand, 1000)
                    request = DecisionRequest(f"bench-{i}", hand, f"bench-{i}/{hand}/{decision}", obs, 1000)
                    reply = players[seat].act(request)
                    state.apply(resolve_reply(obs, reply, state), seat)
                    decision += 1
                    n += 1
                hand += 1
        finally:
            for p in players:
                p.close()
        return n

    return work


def match_work(address: str, rpcs: list[int]) -> Callable[[int, Callable[[], bool]], int]:
    def work(i: int, keep_going: Callable[[], bool]) -> int:
        players = [GrpcPlayer(address), GrpcPlayer(address)]
        n = 0
        calls = 0
        m = 0
        try:
            while keep_going():
                result = play_match(players, seed=5000 + i * 1000 + m, hands=20, match_id=f"bm-{i}-{m}")
                assert not result.faults, result.faults
                n += result.decisions
                # StartMatch + EndMatch per seat, EndHand per seat per hand, plus the decisions.
                calls += result.decisions + 2 * (2 + len(result.hands))
                m += 1
        finally:
            for p in players:
                p.close()
        rpcs[i] = calls
        return n

    return work


def thread_round(
    conc: int,
    seconds: float,
    echo: tuple[int, int],
    bot: tuple[int, str],
    requests: list[DecisionRequest],
    payload: bytes,
) -> tuple[float, ...]:
    """One round with C threads of this process as the callers (see :func:`row`)."""
    (echo_pid, echo_port), (bot_pid, address) = echo, bot
    e = measured(conc, seconds, echo_work(echo_port, payload), echo_pid)
    r = measured(conc, seconds, decision_loop_work(address), bot_pid)
    null = rate(conc, seconds, decision_loop_work(f"127.0.0.1:{echo_port}"))
    replay = rate(conc, seconds, replay_work(address, requests))
    rpcs = [0] * conc
    decisions, elapsed = timed(conc, seconds, match_work(address, rpcs))
    return row(e, r, null, replay, decisions / elapsed, sum(rpcs) / elapsed)


def process_round(
    clients: ProcessClients, seconds: float, echo: tuple[int, int], bot: tuple[int, str]
) -> tuple[float, ...]:
    """One round with the caller processes of ``clients``."""
    (echo_pid, echo_port), (bot_pid, address) = echo, bot
    e = clients.measured("echo", str(echo_port), seconds, echo_pid)[:3]
    r = clients.measured("decide", address, seconds, bot_pid)[:3]
    null = clients.measured("decide", f"127.0.0.1:{echo_port}", seconds, None)[0]
    replay = clients.measured("replay", address, seconds, None)[0]
    decisions, _, _, rpcs = clients.measured("match", address, seconds, None)
    return row(e, r, null, replay, decisions, rpcs)


def row(
    echo: tuple[float, float, float],
    ref: tuple[float, float, float],
    null: float,
    replay: float,
    decisions: float,
    rpcs: float,
) -> tuple[float, ...]:
    """echo/s, referee dec/s, their ratio, CPU us per call (echo client, server; referee
    client, server), CPU ratio, referee-vs-null-bot dec/s and its ratio, protocol-only dec/s
    and its ratio, full-match dec/s and RPC/s."""
    (e, e_cli, e_srv), (r, r_cli, r_srv) = echo, ref
    cpu_ratio = (e_cli + e_srv) / (r_cli + r_srv)
    return (
        e,
        r,
        r / e,
        e_cli,
        e_srv,
        r_cli,
        r_srv,
        cpu_ratio,
        null,
        null / e,
        replay,
        replay / e,
        decisions,
        rpcs,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description="referee-over-gRPC vs echo throughput")
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one round")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per concurrency")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--bot", default="random", help="house bot or MODULE:CLASS to serve")
    parser.add_argument(
        "--clients",
        choices=("processes", "threads", "both"),
        default="both",
        help="the callers: processes (one match each, as arena workers), threads of one process, or both",
    )
    parser.add_argument("--serve-echo", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-bot", metavar="SPEC", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_echo:
        serve_echo()
        return 0
    if args.serve_bot:
        serve_bot(args.serve_bot)
        return 0
    arena.processes.ensure_watched()  # nothing it starts outlives it, however it ends

    requests = typical_requests(args.bot)
    sizes = [len(encode_decide_request(r)) for r in requests]
    payload = b"\x00" * round(statistics.mean(sizes))  # what the echo sends: the mean request's size
    print(
        f"DecideRequest size over {len(sizes)} decisions (2 seats, bot {args.bot!r}): "
        f"mean {statistics.mean(sizes):.0f} B, median {statistics.median(sizes):.0f} B, max {max(sizes)} B"
    )
    print(f"cpus: {os.cpu_count()}; {args.rounds} alternating rounds of {args.seconds:.1f} s; medians")
    echo_proc, echo_port = spawn("--serve-echo")
    bot_proc, bot_port = spawn("--serve-bot", args.bot)
    address = f"127.0.0.1:{bot_port}"
    echo, bot = (echo_proc.pid, echo_port), (bot_proc.pid, address)
    modes = ["processes", "threads"] if args.clients == "both" else [args.clients]
    worst: dict[str, float] = {}
    try:
        thread_round(1, 0.5, echo, bot, requests, payload)  # warm both servers up
        print(
            "callers      conc | echo calls/s | referee dec/s  ratio | CPU us/call (client+server): echo,"
            " referee, ratio | vs null bot dec/s ratio | protocol only dec/s ratio | full matches dec/s RPC/s"
        )
        for mode in modes:
            for conc in args.concurrency:
                clients = ProcessClients(conc, args.bot, len(payload)) if mode == "processes" else None
                # Short alternating rounds, medians: the machine may be shared, and load that
                # comes and goes then hits every variant alike.
                rows: list[tuple[float, ...]] = []
                try:
                    for _ in range(args.rounds):
                        if clients is not None:
                            rows.append(process_round(clients, args.seconds, echo, bot))
                        else:
                            rows.append(thread_round(conc, args.seconds, echo, bot, requests, payload))
                finally:
                    if clients is not None:
                        clients.close()
                m = [statistics.median(column) for column in zip(*rows, strict=True)]
                worst[mode] = min(worst.get(mode, 1.0), m[2])
                print(
                    f"{mode:<9} {conc:>7} | {m[0]:>12.0f} | {m[1]:>13.0f} {m[2]:>6.2f} | "
                    f"{m[3]:>4.0f}+{m[4]:<4.0f} {m[5]:>4.0f}+{m[6]:<4.0f} {m[7]:>5.2f} | "
                    f"{m[8]:>17.0f} {m[9]:>5.2f} | {m[10]:>19.0f} {m[11]:>5.2f} | "
                    f"{m[12]:>18.0f} {m[13]:>5.0f}",
                    flush=True,
                )
    finally:
        for proc in (echo_proc, bot_proc):
            proc.kill()
            proc.wait()
    for mode, ratio in worst.items():
        verdict = "OK" if ratio >= 0.8 else "BELOW"
        print(
            f"target: referee >= 0.80 x echo; {mode} as callers: worst median ratio {ratio:.2f} -> {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
