"""`tonk ladder run` stops on SIGTERM and Ctrl-C whatever its main thread is running, giving
up its leases (issue 35). A real scheduler process on a real store."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers.paths import ROOT

from arena.processes import spawn

#: ``tonk ladder run`` whose main thread, after a tick, runs a weakref callback that the signal
#: lands in, as it may land in any weakref callback or finaliser.
SIGNAL_IN_A_WEAKREF_CALLBACK = """
import os, signal, sys, time, weakref
from arena.runtime import ladder
from sdk.cli import main

class Doomed:
    pass

refs = []
step = ladder.LadderRunner.step

def tick(self):
    step(self)
    if not refs:
        doomed = Doomed()
        refs.append(weakref.ref(doomed, lambda _: (os.kill(os.getpid(), signal.{signal}), time.sleep(0.5))))
        del doomed  # the callback runs now, and the signal's handler inside it

ladder.LadderRunner.step = tick
code = main(["ladder", "run", "--poll-s", "0.2", "--quiet"])
print("stopped", code, flush=True)
sys.exit(code)
"""


@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_a_signal_landing_in_a_weakref_callback_still_stops_the_scheduler(
    sqlite_url: str, signum: str
) -> None:
    env = {**os.environ, "TONK_DATABASE_URL": sqlite_url, "TONK_EMBEDDED_WORKERS": "1",
           "PYTHONPATH": str(ROOT)}  # fmt: skip
    env.pop("TONK_REDIS_URL", None)
    code = SIGNAL_IN_A_WEAKREF_CALLBACK.format(signal=signum)
    scheduler = spawn([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        out, err = scheduler.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        scheduler.kill()
        out, err = scheduler.communicate()
        raise AssertionError(f"the scheduler ran on after {signum}: {err[-2000:]}") from None
    assert scheduler.returncode == 0 and out.split() == ["stopped", "0"], (scheduler.returncode, out, err)
    assert "Traceback" not in err and "Exception ignored" not in err, err[-2000:]
