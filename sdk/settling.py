"""Settling a hand: who wins and who pays whom, as docs/rules.md says under "TONK" and
"Settling". Each function takes the players' point totals (and what ended the hand) and gives
the hand's :class:`~sdk.outcome.Outcome`, payoffs in units of the stake summing to zero.

:class:`sdk.engine.HandState` decides when a hand ends (the turn, what is legal, what each
action changes); these decide what it pays, and need nothing of the hand but its totals.
"""

from __future__ import annotations

from sdk.outcome import EndKind, Outcome
from sdk.rules import Rules


def tonk(totals: tuple[int, ...], rules: Rules) -> Outcome | None:
    """The outcome when some hand has TONK right after the deal, else None. Every player
    without TONK pays every player with it 2x (nobody pays if all have it)."""
    low, high = rules.tonk_low, rules.tonk_high
    winners = []
    for seat, total in enumerate(totals):  # a plain loop: this runs at every deal
        if total <= low or total >= high:
            winners.append(seat)
    if not winners:
        return None
    n, k = len(totals), len(winners)
    payoffs = [-2 * k] * n
    for w in winners:
        payoffs[w] = 2 * (n - k)
    return Outcome("tonk", tuple(winners), tuple(payoffs), totals)


def out(totals: tuple[int, ...], seat: int, by_discard: bool, rules: Rules) -> Outcome:
    """``seat`` emptied its hand: every other player pays it 1x (2x under ``meld_out_double``
    when the last card went to a meld or a lay-off rather than the discard pile)."""
    n = len(totals)
    stake = 2 if (rules.meld_out_double and not by_discard) else 1
    payoffs = [-stake] * n
    payoffs[seat] = stake * (n - 1)
    return Outcome("out", (seat,), tuple(payoffs), totals)


def drop(totals: tuple[int, ...], dropper: int) -> Outcome:
    """``dropper`` went down. With the strictly lowest total every other player pays it 1x;
    otherwise (caught) it pays 2x to each player with a total equal to or lower than its own,
    and every player who is neither the dropper nor among the lowest others pays each of them
    1x."""
    n = len(totals)
    mine = totals[dropper]
    others = list(totals)
    del others[dropper]
    low = min(others)
    if mine < low:
        payoffs = [-1] * n
        payoffs[dropper] = n - 1
        return Outcome("drop", (dropper,), tuple(payoffs), totals)
    k = others.count(low)
    payoffs = [-k] * n
    lowest = []
    paid = 0
    for seat in range(n):
        if seat == dropper:
            continue
        total = totals[seat]
        if total == low:
            lowest.append(seat)
            payoffs[seat] = n - 1 - k  # 1x from each other player who is not among them
        if total <= mine:
            payoffs[seat] += 2
            paid += 2
    payoffs[dropper] = -paid
    return Outcome("drop", tuple(lowest), tuple(payoffs), totals)


def showdown(totals: tuple[int, ...], end: EndKind) -> Outcome:
    """The stock ran out (``end="stock"``) or the turn cap was reached (``"cap"``): every
    player not tied for the lowest total pays each lowest player 1x."""
    low = min(totals)
    lowest = [s for s, t in enumerate(totals) if t == low]
    n, k = len(totals), len(lowest)
    payoffs = [-k] * n
    for w in lowest:
        payoffs[w] = n - k
    return Outcome(end, tuple(lowest), tuple(payoffs), totals)


def fault(totals: tuple[int, ...], seat: int) -> Outcome:
    """``seat`` was faulted (the arena's extension, docs/protocol.md): it loses the hand and
    pays every other seat 2x."""
    n = len(totals)
    payoffs = [2] * n
    payoffs[seat] = -2 * (n - 1)
    winners = tuple(s for s in range(n) if s != seat)
    return Outcome("fault", winners, tuple(payoffs), totals, seat)


__all__ = ["drop", "fault", "out", "showdown", "tonk"]
