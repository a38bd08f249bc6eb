"""The admission check's match (sdk.admission.conformance_match) on a busy machine: a lone
timeout is played again, and a refusal says whether the checking process itself was slow
(issue #27: a bot answering in 1 ms was refused for one timeout at load average 13-17, and
a plain retry accepted it)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator

import pytest

from sdk.admission import SLOW_ARENA_MS, AdmissionError, MatchCheck, conformance_match
from sdk.bot import Bot
from sdk.observation import Observation
from sdk.referee import LocalPlayer

#: Far over the check's deadline below, whatever the machine's load.
LATE_S = 1.5
CHECK = MatchCheck(deadline_ms=1000, time_bank_ms=0, seed=11)


class OnceLate(Bot):
    """Misses its first deadline (as a fast bot on a starved machine can), then answers at once."""

    name = "once-late"
    late = True

    def act(self, obs: Observation) -> int:
        if OnceLate.late:
            OnceLate.late = False
            time.sleep(LATE_S)
        return 0


class AlwaysLate(Bot):
    name = "always-late"

    def act(self, obs: Observation) -> int:
        time.sleep(LATE_S)
        return 0


def test_a_lone_timeout_is_played_again_and_the_bot_admitted() -> None:
    OnceLate.late = True
    conformance_match(LocalPlayer(OnceLate), "once-late", CHECK, "bot 'once-late'")
    assert OnceLate.late is False  # it did time out once


def test_a_bot_that_times_out_again_is_refused_with_the_arenas_own_lag() -> None:
    with pytest.raises(AdmissionError) as refused:
        conformance_match(LocalPlayer(AlwaysLate), "always-late", CHECK, "bot 'always-late'")
    exc = refused.value
    assert exc.code == "conformance_failed"
    text = str(exc)
    assert "timeout" in text and "its match was played again after a timeout" in text, text
    assert "the arena itself was" in text, text
    assert isinstance(exc.details["arena_lag_ms"], float) and exc.details["retried_timeout"], exc.details


@pytest.fixture
def gil_hog() -> Iterator[None]:
    """A thread that holds the interpreter for 0.3 s at a time: this process is slow, as a
    starved arena worker is, whatever the machine's load."""
    stop = threading.Event()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.3)

    def spin() -> None:
        while not stop.is_set():
            pass

    hog = threading.Thread(target=spin, daemon=True)
    hog.start()
    try:
        yield
    finally:
        stop.set()
        hog.join(10)
        sys.setswitchinterval(interval)


def test_a_refusal_says_when_the_arena_itself_was_slow(gil_hog: None) -> None:
    with pytest.raises(AdmissionError) as refused:
        conformance_match(LocalPlayer(AlwaysLate), "always-late", CHECK, "bot 'always-late'")
    assert refused.value.details["arena_lag_ms"] >= SLOW_ARENA_MS, refused.value.details
    assert "the arena itself was slow meanwhile" in str(refused.value)
    assert "try again" in str(refused.value)
