"""Where each bot of a table sits in each match of a duplicate deal.

A deal (one seed) is played several times at its table. Two things must come out even over
those matches, or the table's luck does not cancel:

- **the cards**: each bot holds each seat's cards equally often (the seed deals by seat);
- **the order of play**: each bot sits immediately after each other bot equally often (play
  goes round the table, so the bot after you gets your discards and you get its draws).

Rotating one seat order (the old design) balances the cards only: at 3 seats B would always
follow A. The designs below balance both, with the fewest matches possible: ``n (n - 1)``
at ``n`` seats, since each match holds ``n`` of the ``n (n - 1)`` ordered neighbour pairs and
every bot must hold every seat. Each is a set of cyclic seat orders in which every ordered
pair of neighbours appears equally often (both directions of a Hamiltonian decomposition of
the complete graph: of K_n at 3 and 5 seats, of K_n doubled at 4 and 6), each played in
some of its rotations, chosen so every bot holds every seat equally often.

======  =========================  ==============================  ==================
seats   cyclic orders x rotations  matches per deal                each ordered pair
======  =========================  ==============================  ==================
2       1 x 2                      2                               2 times
3       2 x 3 (all 6 orders)       6                               3 times
4       6 x 2                      12                              4 times
5       4 x 5                      20                              5 times
6       10 x 3                     30                              6 times
======  =========================  ==============================  ==================

Everything here is table-relative: seat ``s`` of arrangement ``a`` holds the table's
``arrangements(n)[a][s]``-th bot. tests/arena/tournaments/test_seating.py checks both balances.
"""

from __future__ import annotations

import functools

__all__ = ["SeatingSizeError", "arrangements", "matches_per_deal"]

# (cyclic order, the rotations of it that are played), per table size. The 6-seat rotations
# were found by a local search; any choice passing tests/arena/tournaments/test_seating.py would do.
_DESIGNS: dict[int, list[tuple[tuple[int, ...], tuple[int, ...]]]] = {
    2: [((0, 1), (0, 1))],
    3: [((0, 1, 2), (0, 1, 2)), ((0, 2, 1), (0, 1, 2))],
    4: [
        ((0, 1, 2, 3), (0, 1)),
        ((0, 1, 3, 2), (0, 2)),
        ((0, 2, 1, 3), (2, 3)),
        ((0, 2, 3, 1), (1, 3)),
        ((0, 3, 1, 2), (0, 3)),
        ((0, 3, 2, 1), (1, 2)),
    ],
    5: [
        ((0, 1, 2, 3, 4), (0, 1, 2, 3, 4)),
        ((0, 2, 4, 1, 3), (0, 1, 2, 3, 4)),
        ((0, 3, 1, 4, 2), (0, 1, 2, 3, 4)),
        ((0, 4, 3, 2, 1), (0, 1, 2, 3, 4)),
    ],
    6: [
        ((0, 1, 2, 3, 4, 5), (2, 3, 5)),
        ((0, 5, 4, 3, 2, 1), (0, 1, 4)),
        ((0, 1, 2, 3, 5, 4), (0, 2, 5)),
        ((0, 4, 5, 3, 2, 1), (1, 3, 4)),
        ((0, 2, 4, 1, 3, 5), (0, 3, 5)),
        ((0, 5, 3, 1, 4, 2), (0, 3, 4)),
        ((0, 2, 5, 1, 4, 3), (2, 3, 5)),
        ((0, 3, 4, 1, 5, 2), (0, 1, 4)),
        ((0, 3, 1, 5, 2, 4), (1, 2, 5)),
        ((0, 4, 2, 5, 1, 3), (1, 2, 4)),
    ],
}


class SeatingSizeError(ValueError):
    """A table size with no seating design (the rules allow 2 to 6 players)."""


@functools.cache
def arrangements(n: int) -> tuple[tuple[int, ...], ...]:
    """The seatings of one deal at an ``n``-seat table: ``result[a][s]`` is the index (in the
    table's bot list) of the bot in seat ``s`` of the deal's ``a``-th match."""
    if n not in _DESIGNS:
        raise SeatingSizeError(f"no seating design for a table of {n!r}; tables seat 2 to 6")
    return tuple(
        tuple(order[(s + r) % n] for s in range(n)) for order, rotations in _DESIGNS[n] for r in rotations
    )


def matches_per_deal(n: int) -> int:
    """How many matches one deal costs at an ``n``-seat table: ``n (n - 1)``."""
    return len(arrangements(n))
