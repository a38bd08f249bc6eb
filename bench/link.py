#!/usr/bin/env python3
"""Decisions per second to a bot through the gateway (it connected out) against dialling the
same bot directly, in the same run, with the same number of matches in flight.

    .venv/bin/python bench/link.py [--in-flight 4] [--seconds 4] [--rounds 3] [--hands 5]

One bot process (the house ``random`` bot, or ``--bot``) both serves ``tonk.v1.BotService``
on a port and connects out to a ``tonk gateway`` process, so both paths reach the same code.
This process is the match worker: ``--in-flight`` threads each play 2-seat matches back to
back with the referee's ``play_match`` (seat 0 the remote bot, seat 1 the in-process random
bot); only the remote bot's decisions are counted. Direct seats use ``GrpcPlayer``; connected
seats the arena's ``LinkPlayer`` (worker -> gateway relay -> the bot's stream -> back). The two
paths alternate for ``--rounds`` rounds so that load drifting on the machine hits both; the
medians are compared, and the CPU each process spent per decision is shown (on a machine
short of cores the extra hop's CPU, not its latency, sets the ratio). Goal (issue #14):
through the gateway >= 70% of direct. Workers relay over one RelayStream per gateway;
``--unary`` also measures one unary Relay per call (what a gateway without streams gets).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def serve_bot(bot: str, port: int, link: str, token: str, name: str, capacity: int) -> None:
    """The bot process: serve on ``port`` and connect out to ``link``, until stdin closes."""
    from sdk.link import LinkClient
    from sdk.players import load_bot_class
    from sdk.server import start_server

    cls = load_bot_class(bot)
    running = start_server(cls, port=port, max_workers=max(16, 2 * capacity))
    client = LinkClient(cls, link, token, name, capacity=capacity)
    thread = threading.Thread(target=client.run, daemon=True)
    thread.start()
    if not client.connected.wait(120):
        print(f"not connected: {client.stats}", flush=True)
        sys.exit(1)
    print("ready", flush=True)
    sys.stdin.read()
    print(f"bot: {client.stats}", file=sys.stderr, flush=True)
    client.stop()
    running.stop(0)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, timeout: float = 60.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {port}")


def cpu_s(pid: int | None = None) -> float:
    """CPU seconds used so far by process ``pid`` (default: this one); 0 where /proc is absent."""
    if pid is None:
        return time.process_time()
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    make_player: Callable[[], object], in_flight: int, seconds: float, hands: int
) -> tuple[float, int, int]:
    """Remote decisions per second with ``in_flight`` matches played back to back; also the
    faults and the number of decisions."""
    from bots.random_bot import RandomBot
    from sdk.referee import LocalPlayer, RefereeConfig, play_match

    config = RefereeConfig(decision_deadline_ms=5000, time_bank_ms=0, max_faults=1000)
    counts = [0] * in_flight
    faults = [0] * in_flight
    stop = time.monotonic() + seconds

    def caller(i: int) -> None:
        n = 0
        while time.monotonic() < stop:
            player = make_player()
            try:
                result = play_match(
                    [player, LocalPlayer(RandomBot)],  # type: ignore[list-item]
                    1000 * i + n + 1,
                    hands,
                    match_id=f"bench-{i}-{n}",
                    config=config,
                )
            finally:
                player.close()  # type: ignore[attr-defined]
            n += 1
            counts[i] += sum(1 for h in result.hands for seat, _ in h.record.actions if seat == 0)
            faults[i] += sum(1 for f in result.faults if f.seat == 0)

    began = time.monotonic()
    threads = [threading.Thread(target=caller, args=(i,)) for i in range(in_flight)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.monotonic() - began), sum(faults), sum(counts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--in-flight", type=int, default=4, help="matches in flight (threads)")
    parser.add_argument("--seconds", type=float, default=4.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of direct and connected")
    parser.add_argument("--hands", type=int, default=5, help="hands per match")
    parser.add_argument("--bot", default="random")
    parser.add_argument("--unary", action="store_true", help="also measure unary relays (older gateways)")
    parser.add_argument("--serve-bot", nargs=5, metavar=("PORT", "LINK", "TOKEN", "NAME", "CAPACITY"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args(argv)
    if args.serve_bot:
        port, link, token, name, capacity = args.serve_bot
        serve_bot(args.bot, int(port), link, token, name, int(capacity))
        return 0

    from arena.bots.owners import create_owner
    from arena.link.player import LinkPlayer
    from arena.link.relay_client import RelayTransport, Routes, routes_for
    from arena.processes import spawn
    from arena.store.db import session_scope
    from arena.store.models import Bot
    from sdk.grpc_player import GrpcPlayer

    with tempfile.TemporaryDirectory(prefix="tonk-bench-link-") as tmp:
        url = f"sqlite:///{tmp}/arena.sqlite"
        with session_scope(url) as session:
            _owner, token = create_owner(session, "bench")
        gw_port, relay_port, bot_port = free_port(), free_port(), free_port()
        env = {
            **os.environ,
            "TONK_DATABASE_URL": url,
            "TONK_GATEWAY_PORT": str(gw_port),
            "TONK_GATEWAY_RELAY_PORT": str(relay_port),
        }
        gateway = spawn([str(BIN / "tonk"), "gateway"], env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)  # fmt: skip
        bot = None
        try:
            wait_port(gw_port)
            capacity = max(args.in_flight, 1)
            bot = spawn(
                [sys.executable, __file__, "--bot", args.bot, "--serve-bot", str(bot_port),
                 f"127.0.0.1:{gw_port}", token, "benchbot", str(capacity)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )  # fmt: skip
            assert bot.stdout is not None
            if bot.stdout.readline().strip() != "ready":
                print("the bot did not connect", file=sys.stderr)
                return 1
            with session_scope(url) as session:
                bot_id = session.query(Bot.id).filter(Bot.name == "benchbot").scalar()
            routes = routes_for(url)
            direct_address = f"127.0.0.1:{bot_port}"

            def direct() -> object:
                return GrpcPlayer(direct_address)

            def connected() -> object:
                return LinkPlayer("benchbot", RelayTransport(bot_id, routes))

            unary_routes = Routes(url)
            unary_routes.unary_only(f"127.0.0.1:{relay_port}")

            def unary() -> object:
                return LinkPlayer("benchbot", RelayTransport(bot_id, unary_routes))

            paths: dict[str, Callable[[], object]] = {"direct": direct, "connected": connected}
            if args.unary:
                paths["unary"] = unary
            for factory in paths.values():  # warm every path up
                measure(factory, args.in_flight, 1.0, args.hands)
            rates: dict[str, list[float]] = {k: [] for k in paths}
            faults = dict.fromkeys(paths, 0)
            # CPU seconds per process (worker = this one) and decisions, per path.
            cpu: dict[str, dict[str, float]] = {k: {"worker": 0.0, "gateway": 0.0, "bot": 0.0} for k in rates}
            decided = dict.fromkeys(paths, 0)
            pids = {"worker": None, "gateway": gateway.pid, "bot": bot.pid}
            for _ in range(args.rounds):
                for label, factory in paths.items():
                    before = {k: cpu_s(p) for k, p in pids.items()}
                    rate, n, count = measure(factory, args.in_flight, args.seconds, args.hands)
                    for k, p in pids.items():
                        cpu[label][k] += cpu_s(p) - before[k]
                    rates[label].append(rate)
                    faults[label] += n
                    decided[label] += count
            d, c = statistics.median(rates["direct"]), statistics.median(rates["connected"])
            print(f"bot {args.bot!r}, {args.in_flight} matches in flight, {args.hands} hands a match, "
                  f"{args.rounds} rounds of {args.seconds:.0f} s each, 2 cores shared")  # fmt: skip
            for label in paths:
                runs = ", ".join(f"{r:.0f}" for r in rates[label])
                print(f"  {label:<9} {statistics.median(rates[label]):8.0f} decisions/s  (runs: {runs}; "
                      f"faults {faults[label]})")  # fmt: skip
                per = {k: 1000 * v / max(decided[label], 1) for k, v in cpu[label].items()}
                total = sum(per.values())
                print(f"            CPU ms per decision: worker {per['worker']:.2f}, "
                      f"gateway {per['gateway']:.2f}, bot {per['bot']:.2f}, total {total:.2f}")  # fmt: skip
            ratio = c / d if d else 0.0
            print(f"  connected / direct = {ratio:.2f}  (goal >= 0.70)")
            if args.unary:
                print(f"  unary / direct = {statistics.median(rates['unary']) / d if d else 0.0:.2f}")
            return 0
        finally:
            if bot is not None:
                if bot.stdin is not None:
                    bot.stdin.close()
                try:
                    bot.wait(10)
                except subprocess.TimeoutExpired:
                    bot.kill()
                    bot.wait()
            gateway.terminate()
            try:
                gateway.wait(10)
            except subprocess.TimeoutExpired:
                gateway.kill()
                gateway.wait()


if __name__ == "__main__":
    from arena.processes import ensure_watched  # here: its path is fixed above

    ensure_watched()  # nothing it starts outlives it, however it ends (arena/processes.py)
    sys.exit(main())
