"""Where each bot of a table sits in each match of a duplicate deal.

A deal (one seed) is played several times at its table. Three things must come out even over
those matches, or the table's luck does not cancel:

- **the cards**: each bot holds each seat's cards equally often (the seed deals by seat);
- **the order of play**: each bot sits immediately after each other bot equally often (play
  goes round the table, so the bot after you gets your discards and you get its draws);
- **both at once**: each bot holds each seat's cards with each other bot after it equally
  often, so a follower's effect on a seat's cards is not left to one bot.

Rotating one seat order (the old design) balances the cards only: at 3 seats B would always
follow A. The designs below balance all three with the fewest matches possible, ``n (n - 1)``
at ``n`` seats (each bot must hold each seat once with each of its ``n - 1`` possible
followers): every (bot, seat, follower) occurs exactly once. At 2, 3 and 5 seats they
are cyclic seat orders in which every ordered pair of neighbours appears once (a
decomposition of the complete directed graph into Hamiltonian cycles), each played in all its
rotations. At 4 and 6 seats no such cycles exist (Tillson, 1980), so the seatings are listed
one by one, found by an exact-cover search; an earlier design of cycles played in some of
their rotations balanced cards and neighbours but not the two at once.

======  ==========================  ================  =============================
seats   design                      matches per deal  each (bot, seat, follower)
======  ==========================  ================  =============================
2       1 cyclic order x 2          2                 once
3       2 cyclic orders x 3         6 (all orders)    once
4       12 seatings                 12                once
5       4 cyclic orders x 5         20                once
6       30 seatings                 30                once
======  ==========================  ================  =============================

Everything here is table-relative: seat ``s`` of arrangement ``a`` holds the table's
``arrangements(n)[a][s]``-th bot. tests/arena/tournaments/test_seating.py checks the balances.
"""

from __future__ import annotations

import functools

__all__ = ["SeatingSizeError", "arrangements", "matches_per_deal"]

# Cyclic orders played in every rotation, per table size.
_CYCLES: dict[int, list[tuple[int, ...]]] = {
    2: [(0, 1)],
    3: [(0, 1, 2), (0, 2, 1)],
    5: [(0, 1, 2, 3, 4), (0, 2, 4, 1, 3), (0, 3, 1, 4, 2), (0, 4, 3, 2, 1)],
}
# Seatings listed one by one where no cycles do; any list passing
# tests/arena/tournaments/test_seating.py would do.
_SEATINGS: dict[int, list[tuple[int, ...]]] = {
    4: [
        (0, 1, 2, 3), (0, 2, 3, 1), (0, 3, 1, 2), (1, 0, 3, 2), (1, 2, 0, 3), (1, 3, 2, 0),
        (2, 0, 1, 3), (2, 1, 3, 0), (2, 3, 0, 1), (3, 0, 2, 1), (3, 1, 0, 2), (3, 2, 1, 0),
    ],
    6: [
        (0, 1, 3, 2, 4, 5), (0, 2, 3, 4, 5, 1), (0, 3, 1, 2, 5, 4), (0, 4, 2, 1, 5, 3),
        (0, 5, 4, 1, 3, 2), (1, 0, 3, 5, 4, 2), (1, 2, 4, 0, 3, 5), (1, 3, 5, 0, 2, 4),
        (1, 4, 5, 2, 0, 3), (1, 5, 2, 3, 4, 0), (2, 0, 5, 1, 4, 3), (2, 1, 4, 3, 5, 0),
        (2, 3, 4, 5, 0, 1), (2, 4, 0, 3, 1, 5), (2, 5, 3, 1, 0, 4), (3, 0, 2, 5, 1, 4),
        (3, 1, 2, 4, 0, 5), (3, 2, 5, 4, 1, 0), (3, 4, 1, 0, 5, 2), (3, 5, 0, 4, 2, 1),
        (4, 0, 1, 5, 2, 3), (4, 1, 5, 3, 0, 2), (4, 2, 0, 5, 3, 1), (4, 3, 0, 1, 2, 5),
        (4, 5, 1, 3, 2, 0), (5, 0, 4, 2, 1, 3), (5, 1, 0, 2, 3, 4), (5, 2, 1, 4, 3, 0),
        (5, 3, 2, 0, 4, 1), (5, 4, 3, 0, 1, 2),
    ],
}


class SeatingSizeError(ValueError):
    """A table size with no seating design (the rules allow 2 to 6 players)."""


@functools.cache
def arrangements(n: int) -> tuple[tuple[int, ...], ...]:
    """The seatings of one deal at an ``n``-seat table: ``result[a][s]`` is the index (in the
    table's bot list) of the bot in seat ``s`` of the deal's ``a``-th match."""
    if n in _SEATINGS:
        return tuple(_SEATINGS[n])
    if n not in _CYCLES:
        raise SeatingSizeError(f"no seating design for a table of {n!r}; tables seat 2 to 6")
    return tuple(tuple(order[(s + r) % n] for s in range(n)) for order in _CYCLES[n] for r in range(n))


def matches_per_deal(n: int) -> int:
    """How many matches one deal costs at an ``n``-seat table: ``n (n - 1)``."""
    return len(arrangements(n))
