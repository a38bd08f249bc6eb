"""Serve a bot (``MODULE:CLASS`` or a house bot name) from a new Python process.

``tonk check`` replays its determinism match against such a process: a bot that iterates a set
of objects hashed by identity (or of strings, under hash randomisation) plays the same match
the same way twice in one process, but not in another, which is where the arena runs it.

    with serve_in_fresh_process("bots.greedy:GreedyBot") as address:
        player = GrpcPlayer(address)

The child prints its port, then serves until its standard input closes: it cannot outlive the
parent, which holds the other end of that pipe.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

START_TIMEOUT_S: Final = 30.0  # imports (grpc, the bot's module) on a loaded machine


class FreshProcessError(Exception):
    """The bot could not be served from a new process (its module does not import there...)."""


@contextmanager
def serve_in_fresh_process(target: str, timeout_s: float = START_TIMEOUT_S) -> Iterator[str]:
    """Serve ``target`` from a new interpreter on a free loopback port; yield its address."""
    env = dict(os.environ)
    # The child finds modules where this process does (a bot's module, a test's directory),
    # and hashes strings with its own seed, as a process the arena starts would.
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env["PYTHONHASHSEED"] = "random"
    process = subprocess.Popen(
        [sys.executable, "-m", "sdk.fresh_process", target],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        yield f"127.0.0.1:{_read_port(process, timeout_s)}"
    finally:
        assert process.stdin is not None
        process.stdin.close()  # the child's signal to stop
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def _read_port(process: subprocess.Popen[str], timeout_s: float) -> int:
    assert process.stdout is not None and process.stderr is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        ready = selector.select(timeout_s)
    line = process.stdout.readline() if ready else ""
    if not line.startswith("PORT "):
        process.kill()
        process.wait()
        error = process.stderr.read().strip().splitlines()
        reason = error[-1] if error else f"no port within {timeout_s:.0f} s"
        raise FreshProcessError(f"cannot serve the bot from a new process: {reason[:300]}")
    return int(line.split()[1])


def main(argv: list[str]) -> int:
    from sdk.players import load_bot_class
    from sdk.server import start_server

    running = start_server(load_bot_class(argv[0]), port=0)
    print(f"PORT {running.port}", flush=True)
    sys.stdin.read()  # until the parent closes the pipe (or dies)
    running.stop(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
