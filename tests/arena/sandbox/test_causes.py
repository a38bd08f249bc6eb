"""The sentence that names the limits a sandboxed bot ran into (arena/sandbox/causes.py), from
each kind of evidence; the sandbox itself is attacked in test_walls.py."""

from __future__ import annotations

import os
import signal
import tempfile

from arena.sandbox import causes
from arena.sandbox.causes import (
    MAX_LENGTH,
    PREFIX,
    Cause,
    Counters,
    Finding,
    describe,
    from_counters,
    from_exit,
    from_rlimits,
    from_startup,
    full_places,
)
from arena.sandbox.limits import Limits

LIMITS = Limits(memory_mb=512, processes=48, cpu_s=30, tmp_mb=16)


def test_nothing_hit_says_nothing() -> None:
    assert describe([]) is None
    assert from_counters(Counters(2, 5, 10), Counters(2, 5, 99), LIMITS) == []
    assert from_exit(None, LIMITS) == from_exit(0, LIMITS) == from_exit(1, LIMITS) == []
    assert from_exit(128 + signal.SIGKILL, LIMITS) == []
    assert from_rlimits("deciding 3\nserving bot\n", 12, LIMITS) == []


def test_the_kernels_counters_name_memory_and_processes_since_the_match_began() -> None:
    found = from_counters(Counters(1, 3, 0), Counters(2, 10, 0), LIMITS)
    assert [f.cause for f in found] == [Cause.MEMORY, Cause.PROCESSES]
    text = describe(found)
    assert text is not None and text.startswith(PREFIX + "out of memory (")
    assert "512 MB" in text and "all 48 processes and threads" in text and "7 new ones" in text


def test_the_exit_signal_names_the_cpu_and_file_size_limits() -> None:
    assert [f.cause for f in from_exit(128 + signal.SIGXCPU, LIMITS)] == [Cause.CPU]
    assert [f.cause for f in from_exit(-signal.SIGXCPU, LIMITS)] == [Cause.CPU]
    assert "30 s of CPU" in from_exit(128 + signal.SIGXCPU, LIMITS)[0].detail
    assert [f.cause for f in from_exit(128 + signal.SIGXFSZ, LIMITS)] == [Cause.DISK]


def test_without_a_group_the_threads_and_last_words_tell() -> None:
    assert [f.cause for f in from_rlimits("", 47, LIMITS)] == [Cause.PROCESSES]
    thread = "RuntimeError: can't start new thread"
    assert [f.cause for f in from_rlimits(thread, 3, LIMITS)] == [Cause.PROCESSES]
    assert [f.cause for f in from_rlimits("Traceback ...\nMemoryError\n", 3, LIMITS)] == [Cause.MEMORY]


def test_a_full_place_is_named_and_an_empty_one_is_not() -> None:
    fd = os.open(tempfile.gettempdir(), os.O_PATH | os.O_DIRECTORY)
    try:
        st = os.fstatvfs(fd)
        assert st.f_bavail * 64 >= st.f_blocks, "the test's own temp folder is nearly full"
        assert full_places({"/tmp": fd}, {"/tmp": 16}) == []
    finally:
        os.close(fd)
    assert full_places({"/tmp": 10**6}, {"/tmp": 16}) == []  # a closed handle: nothing to say


def test_the_sentence_is_bounded_and_names_each_cause_once() -> None:
    many = [Finding(Cause.DISK, "x" * 5000), Finding(Cause.DISK, "again"), Finding(Cause.CPU, "y")]
    text = describe(many)
    assert text is not None and len(text) == MAX_LENGTH and text.endswith("\u2026")
    assert text.count("disk cap") == 1
    assert causes.describe([Finding(Cause.CPU, "y")]) == PREFIX + "CPU budget (y)"


def test_the_start_up_budget_is_named_past_it_and_not_within() -> None:
    limits = Limits(start_cpu_s=2.5)
    assert from_startup(2_500_000_000, limits) == []
    found = from_startup(2_600_000_000, limits)
    assert [f.cause for f in found] == [Cause.STARTUP]
    assert causes.describe(found) == (
        PREFIX + "start-up budget (its processes used 2.6 s of CPU before serving; "
        "the start-up budget is 2.5 s)"
    )


def test_no_causes_sentence_holds_another_causes_name() -> None:
    # The owner's log page finds the causes in a reason by "<name> (" (dashboard/views/bots.py).
    for cause in Cause:
        sentence = causes.describe([Finding(cause, "detail")]) or ""
        assert [c for c in Cause if f"{c.value} (" in sentence] == [cause]
