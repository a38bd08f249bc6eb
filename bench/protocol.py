#!/usr/bin/env python3
"""Decisions per second between the referee and a bot over gRPC on loopback, against a plain
gRPC echo of the same payload size, at the same concurrency.

    .venv/bin/python bench/protocol.py [--seconds 3] [--concurrency 1 4] [--bot random]

The bot and the echo each run in their own server process (the same thread pool size and
options), so client and server do not share a GIL, as in the arena. For each concurrency C:

* echo: C threads, each with its own channel, send a DecideRequest-sized payload and get the
  same bytes back (a generic handler, no parsing): the cost of the transport alone.
* referee, decision path: C threads, each running the referee's decision loop (deal, observe,
  encode, Decide over gRPC, decode, resolve, apply) on 2-seat hands: one RPC per decision.
  This is what the target compares: at least 80% of the echo's rate.
* referee, full matches: C threads running ``play_match``, which adds StartMatch, EndHand
  (with the hand's record) and EndMatch calls per seat; shown as decisions/s and RPCs/s.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import grpc

from sdk.actions import Action
from sdk.convert import encode_decide_request
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.grpc_player import DEFAULT_MAX_REPLY_BYTES, GrpcPlayer
from sdk.observation import observe
from sdk.players import load_bot_class
from sdk.referee import DecisionRequest, LocalPlayer, play_match, resolve_reply
from sdk.server import DEFAULT_MAX_WORKERS, start_server

ECHO_METHOD = "/bench.Echo/Echo"


def serve_echo() -> None:
    def echo(request: bytes, context: grpc.ServicerContext) -> bytes:
        return request

    handler = grpc.method_handlers_generic_handler(
        "bench.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)}
    )
    # The same executor size and options as sdk.server.start_server.
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=DEFAULT_MAX_WORKERS), options=[("grpc.so_reuseport", 0)]
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    server.wait_for_termination()


def serve_bot(spec: str) -> None:
    running = start_server(load_bot_class(spec), port=0)
    print(running.port, flush=True)
    running.server.wait_for_termination()


def spawn(*args: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True)
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


def main() -> int:
    parser = argparse.ArgumentParser(description="referee-over-gRPC vs echo throughput")
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one round")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per concurrency")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--bot", default="random", help="house bot or MODULE:CLASS to serve")
    parser.add_argument("--serve-echo", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-bot", metavar="SPEC", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_echo:
        serve_echo()
        return 0
    if args.serve_bot:
        serve_bot(args.serve_bot)
        return 0

    requests = typical_requests(args.bot)
    sizes = [len(encode_decide_request(r)) for r in requests]
    payload = b"\x00" * round(statistics.mean(sizes))
    print(
        f"DecideRequest size over {len(sizes)} decisions (2 seats, bot {args.bot!r}): "
        f"mean {statistics.mean(sizes):.0f} B, median {statistics.median(sizes):.0f} B, max {max(sizes)} B"
    )
    print(f"cpus: {os.cpu_count()}; {args.rounds} alternating rounds of {args.seconds:.1f} s; medians")
    echo_proc, echo_port = spawn("--serve-echo")
    bot_proc, bot_port = spawn("--serve-bot", args.bot)
    address = f"127.0.0.1:{bot_port}"
    worst = 1.0
    try:
        rate(1, 0.5, echo_work(echo_port, payload))  # warm both servers up
        rate(1, 0.5, decision_loop_work(address))
        print(
            "conc | echo calls/s | referee dec/s  ratio | CPU us/call (client+server): echo, referee, ratio"
            " | protocol only dec/s ratio | full matches dec/s RPC/s"
        )
        for conc in args.concurrency:
            # Short alternating rounds, medians: the machine may be shared, and load that
            # comes and goes then hits every variant alike.
            rows: list[tuple[float, ...]] = []
            for _ in range(args.rounds):
                echo_loop = echo_work(echo_port, payload)
                echo, e_cli, e_srv = measured(conc, args.seconds, echo_loop, echo_proc.pid)
                ref, r_cli, r_srv = measured(conc, args.seconds, decision_loop_work(address), bot_proc.pid)
                replay = rate(conc, args.seconds, replay_work(address, requests))
                rpcs = [0] * conc
                decisions, elapsed = timed(conc, args.seconds, match_work(address, rpcs))
                rows.append(
                    (echo, ref, ref / echo, e_cli, e_srv, r_cli, r_srv, (e_cli + e_srv) / (r_cli + r_srv),
                     replay, replay / echo, decisions / elapsed, sum(rpcs) / elapsed)
                )  # fmt: skip
            m = [statistics.median(column) for column in zip(*rows, strict=True)]
            worst = min(worst, m[2])
            print(
                f"{conc:>4} | {m[0]:>12.0f} | {m[1]:>13.0f} {m[2]:>6.2f} | "
                f"{m[3]:>4.0f}+{m[4]:<4.0f} {m[5]:>4.0f}+{m[6]:<4.0f} {m[7]:>5.2f} | "
                f"{m[8]:>19.0f} {m[9]:>5.2f} | {m[10]:>18.0f} {m[11]:>5.0f}"
            )
    finally:
        for proc in (echo_proc, bot_proc):
            proc.kill()
            proc.wait()
    verdict = "OK" if worst >= 0.8 else "BELOW"
    print(f"target: referee >= 0.80 x echo; worst median ratio {worst:.2f} -> {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
