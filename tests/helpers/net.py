"""Local ports and waiting for services a test started."""

from __future__ import annotations

import contextlib
import random
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports_from(count: int) -> int:
    """A port that is free with the ``count - 1`` after it (`tonk demo --port P` takes P and
    the next two), held by nothing when this returns. Drawn below the kernel's ephemeral range:
    there the ports after it could be taken by any outgoing connection (or ``free_port``)
    between this answer and the caller's bind, as happened under the parallel suite."""
    rng = random.Random()
    for _ in range(200):
        first = rng.randrange(20000, _ephemeral_low() - count)
        with contextlib.ExitStack() as held:
            try:
                for port in range(first, first + count):
                    sock = held.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return first
    raise RuntimeError(f"no {count} free ports in a row")


def wait_for(what: str, check: Any, timeout: float, poll: float = 0.2) -> float:
    """Wait until ``check()`` is true; the seconds it took (bench/ladder_processes.py reports
    them), TimeoutError after ``timeout``."""
    started = time.monotonic()
    while time.monotonic() < started + timeout:
        if check():
            return time.monotonic() - started
        time.sleep(poll)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True
    return False


def get_json(url: str, timeout: float = 10.0) -> Any:
    import json

    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.load(response)


@contextlib.contextmanager
def loopback_listener() -> Iterator[tuple[int, list[object]]]:
    """A TCP server on loopback standing for the dashboard (and any loopback service), for
    sandbox tests: yields its port and the peers it accepted, which must stay empty."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except TimeoutError:
                continue
            accepted.append(peer)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], accepted
    finally:
        stop.set()
        thread.join()
        server.close()


@contextlib.contextmanager
def app_on_loopback(app: Any) -> Iterator[str]:
    """A WSGI app (the dashboard) served on a free port of 127.0.0.1 by threads, for tests
    that talk HTTP to it as a client would (the CLI, a burst of requests); its base URL."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="test-dashboard", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
