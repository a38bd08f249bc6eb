"""`tonk worker` (arena/runtime/workers.py) stops on SIGTERM and Ctrl-C whatever its main thread
is running, after the matches in play (issue 35: a worker did not stop in time). A real
worker process on the real local Redis."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from helpers.paths import ROOT
from redis import Redis
from rq import Queue
from rq.job import Job

from arena.processes import spawn

pytestmark = pytest.mark.redis

#: ``tonk worker`` whose main thread, once it has started a job and waits on the queue for the
#: next (rq's state "idle", in which rq's handler raises), runs a weakref callback that the
#: signal lands in, as it may land in any weakref callback or finaliser.
SIGNAL_IN_A_WEAKREF_CALLBACK = """
import os, signal, time, weakref
from arena.config import load_settings
from arena.runtime import workers

class Doomed:
    pass

refs, started = [], []
heartbeat, execute_job = workers.ThreadedWorker.heartbeat, workers.ThreadedWorker.execute_job

def execute(self, job, queue):
    execute_job(self, job, queue)
    started.append(job.id)

def beat(self, *args, **kwargs):
    heartbeat(self, *args, **kwargs)
    if started and self.get_state() == "idle" and not refs:
        doomed = Doomed()
        refs.append(weakref.ref(doomed, lambda _: (os.kill(os.getpid(), signal.{signal}), time.sleep(0.5))))
        print("signalled", flush=True)
        del doomed  # the callback runs now, and the signal's handler inside it

workers.ThreadedWorker.execute_job = execute
workers.ThreadedWorker.heartbeat = beat
workers.run_worker(load_settings())
print("stopped", flush=True)
"""


@pytest.fixture
def queue(redis_url: str, redis_prefix: str) -> Iterator[Queue]:
    connection = Redis.from_url(redis_url)
    yield Queue(redis_prefix, connection=connection)
    for key in ("rq:queues", "rq:workers"):
        members = [m for m in connection.smembers(key) if redis_prefix.encode() in m]
        if members:
            connection.srem(key, *members)
    connection.close()


@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_a_signal_landing_in_a_weakref_callback_still_stops_the_worker_after_its_match(
    queue: Queue, redis_url: str, redis_prefix: str, sqlite_url: str, signum: str
) -> None:
    # A match in play, as far as RQ knows, most likely still in play when the signal comes.
    job = queue.enqueue(time.sleep, 2, job_id=f"{redis_prefix}-sleep")
    env = {**os.environ, "TONK_REDIS_URL": redis_url, "TONK_QUEUE": redis_prefix,
           "TONK_DATABASE_URL": sqlite_url, "PYTHONPATH": str(ROOT)}  # fmt: skip
    code = SIGNAL_IN_A_WEAKREF_CALLBACK.format(signal=signum)
    worker = spawn([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        out, err = worker.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        worker.kill()
        out, err = worker.communicate()
        raise AssertionError(f"the worker ran on after {signum} ({out.split()}): {err[-2000:]}") from None
    assert worker.returncode == 0, (worker.returncode, out, err[-2000:])
    assert out.split() == ["signalled", "stopped"], out
    assert "Traceback" not in err and "Exception ignored" not in err, err[-2000:]
    # A warm stop: the job in play was played out and recorded.
    assert Job.fetch(job.id, connection=queue.connection).get_status() == "finished"


#: ``tonk worker --burst`` on an empty queue whose main thread, having sent the UNSUBSCRIBE of
#: rq's teardown, is held up a second (as a busy machine may) before it stops the listener:
#: the listener has handled the reply and waits for a subscription again.
SLOW_UNSUBSCRIBE = """
import time
from redis.client import PubSub
from arena.config import load_settings
from arena.runtime.workers import run_worker

unsubscribe = PubSub.unsubscribe

def slow(self, *args, **kwargs):
    unsubscribe(self, *args, **kwargs)
    time.sleep(1)

PubSub.unsubscribe = slow
run_worker(load_settings(), burst=True)
print("stopped", flush=True)
"""


def test_a_stopping_worker_does_not_wait_on_its_command_channel(
    queue: Queue, redis_url: str, redis_prefix: str, sqlite_url: str
) -> None:
    """rq listened to the channel 60 s at a time and waited for that listen on the way out: a
    stop took a minute, as long as compose's grace (stop_grace_period 60s). The deadline is
    half that grace, what tests/helpers/compose.py gives a service to stop."""
    env = {**os.environ, "TONK_REDIS_URL": redis_url, "TONK_QUEUE": redis_prefix,
           "TONK_DATABASE_URL": sqlite_url, "PYTHONPATH": str(ROOT)}  # fmt: skip
    worker = spawn([sys.executable, "-c", SLOW_UNSUBSCRIBE], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        out, err = worker.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        worker.kill()
        out, err = worker.communicate()
        raise AssertionError(f"the worker was still stopping after 30 s: {err[-2000:]}") from None
    assert worker.returncode == 0 and out.split() == ["stopped"], (worker.returncode, out, err[-2000:])


def _worker(name: str, env: dict[str, str], *, burst: bool) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "sdk.cli", "worker", "--name", name, *(["--burst"] if burst else [])]
    return spawn(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_worker_started_again_under_its_name_after_a_kill_9_runs_and_a_live_namesake_is_refused(
    queue: Queue, redis_url: str, redis_prefix: str, sqlite_url: str
) -> None:
    """RQ keeps a SIGKILLed worker's registration for minutes and refused a supervisor's
    restart of ``tonk worker --name X`` meanwhile; a namesake still alive must still be refused."""
    env = {**os.environ, "TONK_REDIS_URL": redis_url, "TONK_QUEUE": redis_prefix,
           "TONK_DATABASE_URL": sqlite_url, "PYTHONPATH": str(ROOT)}  # fmt: skip
    name = f"{redis_prefix}-named"
    key = f"rq:worker:{name}"
    connection = queue.connection
    first = _worker(name, env, burst=False)
    try:
        deadline = time.monotonic() + 60
        while not connection.exists(key):
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first worker never registered"
            time.sleep(0.05)
        namesake = _worker(name, env, burst=True)
        _, err = namesake.communicate(timeout=60)
        assert namesake.returncode != 0 and "active worker named" in err, (namesake.returncode, err[-2000:])
        first.kill()
        first.communicate(timeout=30)
        assert connection.exists(key) and not connection.hexists(key, "death")  # RQ still lists it
        again = _worker(name, env, burst=True)
        _, err = again.communicate(timeout=60)
        assert again.returncode == 0, (again.returncode, err[-2000:])
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
        connection.delete(key)
