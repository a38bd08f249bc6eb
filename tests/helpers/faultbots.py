"""Fault bots: gRPC bots that misbehave in every way a referee has to survive.

Each one plays like a normal house bot (``bots.random_bot`` by default) for its first
``after`` decisions of every (match, seat) and then misbehaves in one way, served over real
gRPC on loopback. They are built on :class:`sdk.server.BotServicer` (so GetInfo, StartMatch,
EndHand and EndMatch are the SDK's own) with ``Decide`` overridden, which also lets a fault
bot answer with raw bytes that the SDK's codecs would never produce.

    with serve_fault("garbage", after=3) as bot:
        player = GrpcPlayer(bot.address)

``die`` runs in a subprocess that SIGKILLs itself in the middle of a Decide call: the
connection drops with the request in flight, and every later call finds nobody listening.

``python tests/helpers/faultbots.py KIND [--after N] [--delay S]`` serves one fault bot and prints
``PORT <n>`` (what the subprocess mode and the arena tests run).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import grpc

from sdk.actions import Discard
from sdk.bot import Bot, HandResult
from sdk.cards import DECK
from sdk.protocol import bot_pb2 as pb
from sdk.referee import FaultKind
from sdk.server import BotServicer, _bot_error
from sdk.wire import decode_decide_request, encode_reply

ROOT: Final = Path(__file__).resolve().parents[2]

# Bytes that are not a DecideResponse: a length-delimited field 2 announcing 16 bytes and
# carrying 3, a varint that never ends, and a field number 0 (reserved, always invalid).
GARBAGE: Final = (b"\x12\x10abc", b"\xff" * 11, b"\x00\x01\x02")
HUGE_REPLY_BYTES: Final = 4 * 1024 * 1024  # far over GrpcPlayer's 64 KiB reply limit
#: Text a hostile bot puts wherever it can: NUL (which PostgreSQL refuses in text), a
#: right-to-left override, an ANSI escape, a bell, and a lone surrogate's neighbours.
HOSTILE_TEXT: Final = "nul\x00 rlo\u202e esc\x1b[31m bel\x07 zwsp\u200b end"


@dataclass(frozen=True, slots=True)
class FaultSpec:
    """What a fault kind is charged as, and a fragment its reason must contain."""

    kind: FaultKind
    reason: str
    persistent: bool = True  # faults on every decision once it starts (so it forfeits)


#: Every fault bot, with what the referee must make of it.
FAULTS: Final[dict[str, FaultSpec]] = {
    "hang": FaultSpec(FaultKind.TIMEOUT, "no reply within"),
    "sleep": FaultSpec(FaultKind.TIMEOUT, "no reply within"),  # just past the deadline
    "slow_sometimes": FaultSpec(FaultKind.TIMEOUT, "no reply within", persistent=False),
    "crash": FaultSpec(FaultKind.CRASH, "INTERNAL: RuntimeError: fault bot crashed"),
    "raise_raw": FaultSpec(FaultKind.CRASH, "UNKNOWN"),  # a non-SDK handler that raises
    "abort": FaultSpec(FaultKind.UNREACHABLE, "cannot reach the bot"),
    "stop": FaultSpec(FaultKind.UNREACHABLE, "cannot reach the bot"),
    "die": FaultSpec(FaultKind.UNREACHABLE, "cannot reach the bot"),
    "garbage": FaultSpec(FaultKind.MALFORMED, "not a DecideResponse"),
    "empty": FaultSpec(FaultKind.MALFORMED, "names no action"),
    "bad_text": FaultSpec(FaultKind.MALFORMED, "unreadable action"),
    "huge": FaultSpec(FaultKind.MALFORMED, "too large"),
    "out_of_range": FaultSpec(FaultKind.ILLEGAL, "out of range"),
    "illegal": FaultSpec(FaultKind.ILLEGAL, "is not legal now"),
    # An error status whose details carry NUL and other controls (arena/text.py cleans them).
    "nul": FaultSpec(FaultKind.CRASH, "the bot answered INTERNAL: nul"),
}


#: Faults in StartMatch: a seat that cannot start forfeits the whole match.
LIFECYCLE_FAULTS: Final[dict[str, FaultSpec]] = {
    "start_crash": FaultSpec(FaultKind.CRASH, "StartMatch: the bot answered INTERNAL"),
    "start_hang": FaultSpec(FaultKind.TIMEOUT, "StartMatch: no reply within"),
}


def base_bot(name: str) -> type[Bot]:
    if name == "greedy":
        from bots.greedy import GreedyBot

        return GreedyBot
    from bots.random_bot import RandomBot

    return RandomBot


class FaultServicer(BotServicer):
    """A BotServicer whose Decide misbehaves as ``fault`` after ``after`` good decisions of
    each (match, seat). ``every`` > 1 misbehaves only on every ``every``-th decision."""

    def __init__(
        self,
        fault: str,
        *,
        after: int = 0,
        every: int = 1,
        delay_s: float = 0.0,
        base: type[Bot] | Callable[[], Bot] | None = None,
    ):
        if fault not in FAULTS and fault not in LIFECYCLE_FAULTS and fault != "none":
            raise ValueError(f"unknown fault {fault!r}")
        factory = base or base_bot("random")
        super().__init__(factory)
        self.fault = fault
        self.after = after
        self.every = every
        self.delay_s = delay_s
        self.release = threading.Event()  # set at teardown: "forever" ends with the test
        self.server: grpc.Server | None = None
        self.decisions = 0
        self.misbehaved = 0
        self._counts: dict[tuple[str, int], int] = {}
        self._count_lock = threading.Lock()
        self.info.name = f"fault-{fault}"

    def start_match(
        self, request: pb.StartMatchRequest, context: grpc.ServicerContext
    ) -> pb.StartMatchResponse:
        if self.fault == "start_crash":  # cannot even start: the whole match is forfeited
            _bot_error(context, "StartMatch", RuntimeError("fault bot cannot start"))
        if self.fault == "start_hang":
            self.release.wait()
        return super().start_match(request, context)

    def decide(self, data: bytes, context: grpc.ServicerContext) -> bytes:
        request = decode_decide_request(data)
        key = (request.match_id, request.observation.seat)
        with self._count_lock:
            n = self._counts.get(key, 0)
            self._counts[key] = n + 1
            self.decisions += 1
        if n < self.after or (n - self.after) % self.every != self.every - 1:
            return super().decide(data, context)
        with self._count_lock:
            self.misbehaved += 1
        return self.misbehave(data, request, context)

    def misbehave(self, data: bytes, request: Any, context: grpc.ServicerContext) -> bytes:
        fault = self.fault
        obs = request.observation
        if fault == "hang":
            self.release.wait()  # until the test ends: the referee must not wait for it
            return encode_reply(0)
        if fault in ("sleep", "slow_sometimes"):
            # Sleep, then answer properly: a reply that arrives after the deadline is no reply.
            self.release.wait(self.delay_s)
            return super().decide(data, context)
        if fault == "crash":
            # Exactly what sdk.server does with a bot's exception: INTERNAL with its message.
            _bot_error(context, "Decide", RuntimeError("fault bot crashed"))
        if fault == "nul":
            context.abort(grpc.StatusCode.INTERNAL, HOSTILE_TEXT + " " + "x" * 4000)
        if fault == "raise_raw":
            raise RuntimeError("a handler that raises: gRPC answers UNKNOWN")
        if fault == "abort":
            context.abort(grpc.StatusCode.UNAVAILABLE, "fault bot: going away")
        if fault == "stop":
            server = self.server
            assert server is not None
            # Stop the whole server from another thread (stop() waits for this very call):
            # the call in flight is cancelled and nothing listens on the port afterwards.
            threading.Thread(target=server.stop, args=(0,), daemon=True).start()
            self.release.wait(5)
            return encode_reply(0)
        if fault == "die":
            os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(60)  # not reached
        if fault == "garbage":
            return GARBAGE[self.misbehaved % len(GARBAGE)]
        if fault == "empty":
            return b""  # a valid, empty DecideResponse: it names no action
        if fault == "bad_text":
            return pb.DecideResponse(text="fly to the moon").SerializeToString()
        if fault == "huge":
            # Well-formed, just enormous: a valid text action padded with spaces.
            text = "discard " + obs.hand[0].text + " " * HUGE_REPLY_BYTES
            return pb.DecideResponse(text=text).SerializeToString()
        if fault == "out_of_range":
            index = len(obs.legal_actions) + 7 if self.misbehaved % 2 else -1
            return encode_reply(index)
        if fault == "illegal":
            # Well-formed and readable, never legal: discard a card this seat does not hold.
            missing = next(c for c in DECK if c not in obs.hand)
            return encode_reply(Discard(missing))
        raise AssertionError(f"no misbehaviour for {fault!r}")


class SleepyBot(Bot):
    """Plays randomly, 50 ms a decision: a hosted bot that keeps a match going for a while."""

    name = "sleepy"

    def act(self, obs: Any) -> int:
        time.sleep(0.05)
        return self.rng.randrange(len(obs.legal_actions))


class HashOrderSetBot(Bot):
    """Legal, and the same every time within one process: it picks the legal action whose tag
    comes first in a set of strings. Strings hash with a per-process seed, so another process
    iterates that set in another order and plays differently: the trap of a set of objects
    hashed by identity, made certain (object addresses repeat between processes more often
    than one would think, so a bot iterating those is caught only most of the time)."""

    name = "hash-order-set"

    def act(self, obs: Any) -> int:
        # The decision's place in the hand is in every tag, so each decision's order is drawn
        # afresh: a new process agrees on one with even odds at best, not once for all.
        where = f"{obs.hand_index}.{obs.turn}.{len(obs.history)}"
        tags = {f"{where}-{i}" for i in range(len(obs.legal_actions))}
        return int(next(iter(tags)).rsplit("-", 1)[1])


class LifecycleFaultBot(Bot):
    """Plays randomly but crashes in every EndHand: lifecycle notices are a courtesy, so
    this must cost it nothing."""

    name = "fault-endhand"

    def act(self, obs: Any) -> int:
        return self.rng.randrange(len(obs.legal_actions))

    def on_hand_end(self, result: HandResult) -> None:
        raise RuntimeError("EndHand crash")


class FaultServer:
    """A fault bot listening on 127.0.0.1 (in this process, or in a subprocess for ``die``)."""

    def __init__(
        self,
        address: str,
        servicer: FaultServicer | None,
        server: grpc.Server | None,
        process: subprocess.Popen[str] | None = None,
    ):
        self.address = address
        self.servicer = servicer
        self.server = server
        self.process = process

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    def stop(self) -> None:
        if self.servicer is not None:
            self.servicer.release.set()
        if self.server is not None:
            self.server.stop(0).wait(5)
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait(10)
            if self.process.stdout is not None:
                self.process.stdout.close()

    def __enter__(self) -> FaultServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_fault_server(servicer: BotServicer, port: int = 0) -> tuple[grpc.Server, int]:
    """Serve ``servicer`` on 127.0.0.1 (the same wiring as sdk.server, minus health)."""
    server = grpc.server(
        # Roomy: a hanging bot keeps one thread per call it never answers, and a full pool
        # would turn every later call (StartMatch, EndHand...) into a timeout as well.
        futures.ThreadPoolExecutor(max_workers=128, thread_name_prefix="fault-bot"),
        options=[("grpc.so_reuseport", 0)],
    )
    server.add_generic_rpc_handlers((servicer.handler(),))
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    if bound == 0:
        raise OSError(f"cannot listen on 127.0.0.1:{port}")
    server.start()
    if isinstance(servicer, FaultServicer):
        servicer.server = server
    return server, bound


def serve_fault(
    fault: str,
    *,
    after: int = 0,
    every: int = 1,
    delay_s: float = 0.0,
    base: str = "random",
    subprocess_mode: bool | None = None,
) -> FaultServer:
    """Start the fault bot ``fault`` (a key of :data:`FAULTS`, or ``none`` for a well-behaved
    one). ``die`` always runs in a subprocess, since it kills its own process."""
    if subprocess_mode or (subprocess_mode is None and fault == "die"):
        return _spawn(fault, after=after, every=every, delay_s=delay_s, base=base)
    servicer = FaultServicer(fault, after=after, every=every, delay_s=delay_s, base=base_bot(base))
    server, port = start_fault_server(servicer)
    return FaultServer(f"127.0.0.1:{port}", servicer, server)


def _spawn(fault: str, *, after: int, every: int, delay_s: float, base: str) -> FaultServer:
    # Here, not at the top: run as a script, this file's folder comes first on sys.path, and
    # its arena.py would be taken for the arena package.
    from arena.processes import spawn

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    args = [sys.executable, str(Path(__file__).resolve()), fault, "--after", str(after)]
    args += ["--every", str(every), "--delay", str(delay_s), "--base", base]
    process = spawn(args, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert process.stdout is not None
    line = process.stdout.readline()  # "PORT n" once it listens (or EOF if it failed)
    if not line.startswith("PORT "):
        process.kill()
        process.wait(10)
        raise RuntimeError(f"fault bot {fault!r} did not start: {line!r}")
    return FaultServer(f"127.0.0.1:{int(line.split()[1])}", None, None, process)


@contextmanager
def fault_bots(*faults: str, **kwargs: Any) -> Iterator[list[FaultServer]]:
    servers: list[FaultServer] = []
    try:
        for fault in faults:
            servers.append(serve_fault(fault, **kwargs))
        yield servers
    finally:
        for server in servers:
            server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="serve one fault bot on 127.0.0.1")
    parser.add_argument("fault", choices=[*FAULTS, *LIFECYCLE_FAULTS, "none"])
    parser.add_argument("--after", type=int, default=0)
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--base", default="random")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    servicer = FaultServicer(
        args.fault, after=args.after, every=args.every, delay_s=args.delay, base=base_bot(args.base)
    )
    server, port = start_fault_server(servicer, args.port)
    print(f"PORT {port}", flush=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        while not stopped.wait(0.5) and not sys.stdin.closed:
            pass
    except KeyboardInterrupt:
        pass
    servicer.release.set()
    server.stop(0).wait(5)
    return 0


if __name__ == "__main__":
    sys.exit(main())


# -- the arena side: registering fault bots and running RQ workers (used by the arena tests) --


def register_bots(database_url: str, addresses: dict[str, str], owner_name: str = "faults") -> dict[str, int]:
    """Register each ``name -> 127.0.0.1:PORT`` as a gRPC bot (checks skipped: a fault bot
    would fail them, which is the point); returns name -> bot id."""
    from arena.bots.owners import get_or_create_operator
    from arena.bots.registry import register_bot
    from arena.config import Settings
    from arena.store.db import session_scope

    settings = Settings(allowed_bot_hosts=("127.0.0.1",))
    with session_scope(database_url) as session:
        owner = get_or_create_operator(session, owner_name)
        return {
            name: register_bot(session, owner, name, address, settings=settings, check=False).id
            for name, address in addresses.items()
        }


def worker_env(database_url: str, redis_url: str, queue: str) -> dict[str, str]:
    return {
        **os.environ,
        "TONK_DATABASE_URL": database_url,
        "TONK_REDIS_URL": redis_url,
        "TONK_QUEUE": queue,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


def start_worker(
    database_url: str, redis_url: str, queue: str, name: str, log: Path | None = None
) -> subprocess.Popen[bytes]:
    """``tonk worker`` in its own process group (so a test can SIGKILL it and its children).
    Its output goes to ``log`` (never to an unread pipe, which would block it once full)."""
    from arena.processes import spawn

    out = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - the child owns it
    try:
        return spawn(
            [sys.executable, "-m", "sdk.cli", "worker", "--name", name],
            env=worker_env(database_url, redis_url, queue),
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        if log is not None:
            out.close()  # type: ignore[union-attr]


def stop_process(process: subprocess.Popen[Any], sig: int = signal.SIGTERM, timeout: float = 10) -> None:
    """Signal the process group, then make sure it is gone."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def forget_rq_members(redis_url: str, prefix: str) -> None:
    """RQ lists queues and workers in two global sets; remove this test's members (the
    conftest deletes the keys named after the prefix)."""
    from redis import Redis

    client = Redis.from_url(redis_url)
    try:
        for key in ("rq:queues", "rq:workers"):
            members = [m for m in client.smembers(key) if prefix.encode() in m]
            if members:
                client.srem(key, *members)
    finally:
        client.close()
