"""The local services the tests talk to (tests/conftest.py makes each test's own database and
key prefix on them). Here, not in conftest.py, so that a test module can import them: with a
conftest.py in tests/arena/link too, ``import conftest`` names whichever was loaded last."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

PG_ADMIN_URL = os.environ.get("TONK_TEST_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_TEST_URL = os.environ.get("TONK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


class PrivateRedis:
    """``redis-server`` on a free loopback port, without persistence: a restart is empty. In a
    session of its own (a test may SIGKILL its group); it dies with the test process however
    that ends (arena/processes.py's ``spawn``)."""

    def __init__(self) -> None:
        import shutil

        import pytest

        from helpers.net import free_port

        exe = shutil.which("redis-server")
        if exe is None:
            if os.environ.get("CI"):
                pytest.fail("redis-server is not installed")
            pytest.skip("redis-server is not installed")
        self.exe = exe
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        from redis import Redis

        from arena.processes import spawn

        self.process = spawn(
            [self.exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(Exception):
                if Redis.from_url(self.url, socket_connect_timeout=0.2).ping():
                    return
            if time.monotonic() > deadline:
                raise RuntimeError("the private redis-server did not start")
            time.sleep(0.05)

    def kill(self) -> None:
        from helpers.faultbots import stop_process

        if self.process is not None:
            stop_process(self.process, signal.SIGKILL)
            self.process = None

    def restart(self) -> None:
        self.kill()
        time.sleep(0.3)
        self.start()
        self.restarts += 1
