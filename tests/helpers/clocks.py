"""Clocks a test hands the referee (``play_match(clock=...)``) when its subject is not time.

A bot's legality, determinism or own budget is no business of the machine's load: timed by the
real clock, an in-process bot on a busy machine (two busy loops a core, or the suite's own
workers) can be stopped for seconds between two readings and be faulted for a timeout, which
changes the very records the test compares. With :func:`still` no call takes any time.
"""

from __future__ import annotations


def still() -> int:
    """A clock (ns) that never moves: the referee times every call at 0."""
    return 0
