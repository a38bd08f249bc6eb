"""What a bot is charged for a call: the time between sending the request and receiving the
reply, never the referee process's own lag.

A referee thread that waits on a bot in C (a blocking gRPC call releases the GIL) resumes
only once it gets the GIL back. In a busy worker (many matches in threads, the database,
other work) that can take tens of milliseconds after the reply has arrived, and reading
the clock then would charge the bot for the worker's lag. Python cannot read the clock
before it holds the GIL again, so the lag is measured beside the call instead: a sampler
thread sleeps :data:`SAMPLE_S` at a time and records how late it wakes (the same wait for
the CPU and the GIL any thread resumes through). :func:`charged_ns` takes the wall time of
the call and removes the worker's lag at its two ends: the stretch during which the
process was too busy to wake a waiting thread running up to the moment the call returned
(the reply may have waited that long) and the one running on from the moment it began
(the request may have waited that long to go out). Lateness in the middle of a call, while
the bot thinks, costs the bot nothing and is not removed. This is an estimate (the GIL
serves waiting threads in no fixed order): under full saturation it errs in the bot's
favour, by at most the time the worker was busy; when the worker is not busy it removes
nothing.

The deadline a transport enforces (gRPC's, measured in C, without the GIL) stays the hard
cut-off; this only decides what the referee charges to a seat's deadline and time bank.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Final

#: The sampler's sleep: its resolution, and its cost (one wake-up per SAMPLE_S).
SAMPLE_S: Final = 0.002
_SAMPLE_NS: Final = int(SAMPLE_S * 1e9)
#: Lateness below this is the OS timer's slack, not a busy process.
_SLACK_NS: Final = 200_000
#: Wake-ups remembered: about 2 s of them (a longer call's start is judged without them).
_KEPT: Final = 1024


class LagSampler:
    """A daemon thread measuring this process's scheduling lag."""

    def __init__(self) -> None:
        self._samples: collections.deque[tuple[int, int]] = collections.deque(maxlen=_KEPT)
        self._asleep_since = time.perf_counter_ns()
        self._thread = threading.Thread(target=self._run, name="tonk-lag-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            since = time.perf_counter_ns()
            self._asleep_since = since
            time.sleep(SAMPLE_S)
            woke = time.perf_counter_ns()
            # (when it woke, how late): late = time waiting for the CPU and the GIL
            self._samples.append((woke, max(0, woke - since - _SAMPLE_NS)))

    def lag_ns(self, start_ns: int, end_ns: int) -> int:
        """The worker's own lag in a call from ``start_ns`` to ``end_ns`` (perf_counter_ns):
        the stretch of lateness (a busy process) running up to ``end_ns`` (the reply may
        have waited that long for the thread to resume) plus the one running on from
        ``start_ns`` (the request may have waited that long to go out). A stretch is the
        sampler's late spells with no more than one sleep between them; lateness under
        :data:`_SLACK_NS` is timer slack, not a busy process."""
        spells: list[tuple[int, int]] = []  # (from, to), newest first
        due = self._asleep_since + _SAMPLE_NS
        if end_ns - due > _SLACK_NS:
            spells.append((due, end_ns))  # late for a wake-up right now
        # Newest first, one index at a time: each read is one step under the GIL, while
        # iterating the deque would race with the sampler's appends (RuntimeError: deque
        # mutated during iteration) and copying it costs more than a decision's worth.
        # An append meanwhile shifts the indexes by one: a sample read twice is skipped.
        samples = self._samples
        newest_seen = 1 << 63  # later than any perf_counter_ns
        k = 1
        while True:
            try:
                woke, late = samples[-k]
            except IndexError:
                break
            k += 1
            if woke >= newest_seen:
                continue
            newest_seen = woke
            if woke < start_ns:
                break
            if late > _SLACK_NS:
                spells.append((woke - late, woke))
        gap = _SAMPLE_NS + _SLACK_NS
        tail = 0
        edge = end_ns
        for begin, finish in spells:  # back from the end
            if edge - finish > gap:
                break
            tail += _overlap(begin, finish, start_ns, end_ns)
            edge = begin
        head = 0
        edge = start_ns
        for begin, finish in reversed(spells):  # on from the start
            if finish < start_ns:
                continue
            if begin - edge > gap:
                break
            head += _overlap(begin, finish, start_ns, end_ns)
            edge = finish
        return min(end_ns - start_ns, head + tail)


    def worst_ns(self, since_ns: int) -> int:
        """The latest this process woke up late (ns) since ``since_ns`` (perf_counter_ns), as
        far back as the samples kept reach (about 2 s): how slow the process itself was, for
        a report; a busy machine makes every process late, the bot's and this one alike."""
        worst = max(0, time.perf_counter_ns() - self._asleep_since - _SAMPLE_NS)  # late right now
        samples = self._samples
        k = 1
        while True:  # newest first, one index at a time (see lag_ns)
            try:
                woke, late = samples[-k]
            except IndexError:
                break
            if woke < since_ns:
                break
            worst = max(worst, late)
            k += 1
        return worst if worst > _SLACK_NS else 0


def _overlap(a: int, b: int, start: int, end: int) -> int:
    return max(0, min(b, end) - max(a, start))


_sampler: LagSampler | None = None
_sampler_lock = threading.Lock()


def sampler() -> LagSampler:
    """The process's sampler, started on first use."""
    global _sampler
    if _sampler is None:
        with _sampler_lock:
            if _sampler is None:
                _sampler = LagSampler()
    return _sampler


def charged_ns(start_ns: int, end_ns: int) -> int:
    """What a call from ``start_ns`` to ``end_ns`` (perf_counter_ns) is charged: its wall
    time less the worker's worst lag meanwhile, never below zero."""
    wall = end_ns - start_ns
    return max(0, wall - sampler().lag_ns(start_ns, end_ns))
