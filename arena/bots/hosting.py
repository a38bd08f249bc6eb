"""The arena's own bots: serving them on loopback, and registering them.

The house bots (``random``, ``greedy``, ``heuristic``, and ``search`` when it is installed)
are registered as *hosted* bots of the operator owner ``house``: ``Bot.hosted`` names their
class and they have no address. A worker plays them in-process (a seat's player comes from
:func:`arena.play.plan.make_seat_player`, the one factory of seat players) or, like
``tonk demo``, serves them over real gRPC on loopback ports with :class:`HostedBots` so that
every seat goes through the protocol::

    with session_scope(url) as session:
        ensure_house_bots(session, settings)
    with HostedBots() as addresses:          # {"random": "127.0.0.1:41234", ...}
        ...

HostedBots runs each bot as a ``tonk serve`` subprocess (the realistic setting: the bot
process is separate, and a crash or hang stays in it) or, with ``mode="thread"``, as an
in-process server from :func:`sdk.server.start_server` (fast, for tests).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

from sqlalchemy.orm import Session

from arena.bots.owners import get_or_create_operator
from arena.bots.registry import host_bot
from arena.config import Settings
from arena.store.models import Bot

#: The owner of the arena's own bots.
HOUSE_OWNER = "house"
_ROOT = Path(__file__).resolve().parents[2]  # the checkout: the folder holding the sdk and bots packages


class HostingError(RuntimeError):
    """A hosted bot did not start (its output is in the message)."""


def house_bots() -> dict[str, str]:
    """The installed house bots, name -> ``module:Class`` (``search`` is optional)."""
    from sdk.players import HOUSE_BOTS, PlayerSpecError, load_bot_class

    found: dict[str, str] = {}
    for name, path in HOUSE_BOTS.items():
        try:
            load_bot_class(path)
        except PlayerSpecError:
            continue
        found[name] = path
    return found


def ensure_house_bots(
    session: Session, settings: Settings, *, bots: Mapping[str, str] | None = None, check: bool = True
) -> list[Bot]:
    """Register the house bots as hosted bots of the ``house`` operator; idempotent (a bot
    already hosted with the same class is left alone). Returns them in name order."""
    house = get_or_create_operator(session, HOUSE_OWNER)
    wanted = house_bots() if bots is None else dict(bots)
    return [
        host_bot(session, house, name, path, settings=settings, check=check)
        for name, path in sorted(wanted.items())
    ]


class HostedBots:
    """Serve bots on free loopback ports while the ``with`` block runs; yields name -> address.

    ``bots`` maps names to ``module:Class`` (default: :func:`house_bots`). ``mode`` is
    ``"subprocess"`` (one ``tonk serve`` process per bot) or ``"thread"`` (in-process servers).
    Every bot answers SERVING on its health service before the block starts; if one cannot
    start, those already started are stopped and :class:`HostingError` is raised.
    """

    def __init__(
        self,
        bots: Mapping[str, str] | None = None,
        *,
        mode: Literal["subprocess", "thread"] = "subprocess",
        host: str = "127.0.0.1",
        startup_timeout_s: float = 20.0,
    ):
        if mode not in ("subprocess", "thread"):
            raise ValueError(f"mode must be 'subprocess' or 'thread', not {mode!r}")
        self.bots = dict(house_bots() if bots is None else bots)
        self.mode = mode
        self.host = host
        self.startup_timeout_s = startup_timeout_s
        self.addresses: dict[str, str] = {}
        self._servers: list[Any] = []  # sdk.server.RunningServer
        self._processes: dict[str, tuple[subprocess.Popen[bytes], IO[bytes]]] = {}

    def __enter__(self) -> dict[str, str]:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> dict[str, str]:
        from sdk.players import PlayerSpecError, load_bot_class

        for name, path in self.bots.items():  # fail fast, with the reason, before any process starts
            try:
                load_bot_class(path)
            except PlayerSpecError as exc:
                raise HostingError(f"cannot host bot {name!r}: {exc}") from None
        try:
            if self.mode == "thread":
                for name, path in self.bots.items():
                    self.addresses[name] = self._start_thread(path)
            else:
                self._start_processes()
        except BaseException:
            self.stop()
            raise
        return dict(self.addresses)

    def stop(self) -> None:
        """Stop every bot (SIGTERM, then SIGKILL after a few seconds); safe to call twice."""
        for server in self._servers:
            server.stop(0.5)
        self._servers.clear()
        for process, _log in self._processes.values():
            if process.poll() is None:
                process.terminate()
        for process, log in self._processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()
        self._processes.clear()
        self.addresses.clear()

    def pid(self, name: str) -> int | None:
        """The process id serving ``name`` (subprocess mode), for monitoring and tests."""
        entry = self._processes.get(name)
        return entry[0].pid if entry else None

    def _start_thread(self, path: str) -> str:
        from sdk.players import load_bot_class
        from sdk.server import start_server

        server = start_server(load_bot_class(path), port=0, host=self.host)
        self._servers.append(server)
        return f"{_url_host(self.host)}:{server.port}"

    def _start_processes(self) -> None:
        # All bots start at once (an interpreter each takes a moment). One that could not bind
        # its port (taken between probing and binding) is tried again on another; one that
        # died of anything else is reported with its output (start() stops the others).
        pending = dict(self.bots)
        for attempt in range(3):
            spawned = {name: self._spawn(name, path) for name, path in pending.items()}
            retry: dict[str, str] = {}
            for name, address in spawned.items():
                process, log = self._processes[name]
                if _wait_serving(address, process, self.startup_timeout_s):
                    self.addresses[name] = address
                    continue
                if process.poll() is None:
                    process.kill()
                process.wait()
                log.seek(0)
                output = log.read()[-2000:].decode("utf-8", "replace").strip()
                log.close()
                del self._processes[name]
                if "cannot listen" not in output or attempt == 2:
                    raise HostingError(
                        f"bot {name!r} ({pending[name]}) did not start serving on {self.host}: "
                        f"{output or 'no output'}"
                    )
                retry[name] = pending[name]
            if not retry:
                return
            pending = retry

    def _spawn(self, name: str, path: str) -> str:
        port = _free_port(self.host)
        log = tempfile.TemporaryFile(prefix=f"tonk-{name}-")  # noqa: SIM115 - closed in stop()
        process = subprocess.Popen(
            _serve_command(path, self.host, port),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_child_env(),
        )
        self._processes[name] = (process, log)
        return f"{_url_host(self.host)}:{port}"


def _serve_command(path: str, host: str, port: int) -> list[str]:
    # `tonk serve` itself, without building the whole `tonk` parser (which would import every
    # installed command, the arena's and the dashboard's included, in each bot process). It
    # ends with this process, however this one ends (a SIGKILL leaves no time to stop it).
    code = (
        f"from arena.processes import exit_with; exit_with({os.getpid()}); "
        "import argparse, sys; from sdk.commands import serve; "
        "parser = argparse.ArgumentParser(prog='tonk'); serve.register(parser.add_subparsers()); "
        "args = parser.parse_args(sys.argv[1:]); sys.exit(args.func(args))"
    )
    return [sys.executable, "-c", code, "serve", path, "--host", host, "--port", str(port)]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _wait_serving(address: str, process: subprocess.Popen[bytes], timeout_s: float) -> bool:
    from sdk.health import check_health

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        if check_health(address, timeout_s=1.0):
            return True
        time.sleep(0.05)
    return False


__all__ = ["HOUSE_OWNER", "HostedBots", "HostingError", "ensure_house_bots", "house_bots"]
