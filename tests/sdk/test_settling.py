"""sdk.settling: docs/rules.md's "Settling" and "TONK", as functions of the totals alone.
test_rules_standard.py plays the same examples through the engine."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdk import settling
from sdk.rules import STANDARD

# docs/rules.md, Settling, the worked examples: (totals, dropper, payoffs)
DROPS = [
    ((3, 10, 9), 0, (2, -1, -1)),
    ((10, 7, 20), 0, (-2, 3, -1)),
    ((10, 10, 20), 0, (-2, 3, -1)),
    ((10, 10, 10), 0, (-4, 2, 2)),
    ((5, 12, 12, 30), 1, (4, -4, 1, -1)),
    ((8, 8, 20, 25), 2, (3, 3, -4, -2)),
    ((10, 20, 30, 30), 3, (4, 1, 1, -6)),
]


@pytest.mark.parametrize(("totals", "dropper", "payoffs"), DROPS)
def test_the_worked_examples_of_going_down(
    totals: tuple[int, ...], dropper: int, payoffs: tuple[int, ...]
) -> None:
    outcome = settling.drop(totals, dropper)
    assert (outcome.end, outcome.payoffs, outcome.totals) == ("drop", payoffs, totals)


def test_tonk_out_showdown_and_fault() -> None:
    assert settling.tonk((20, 30, 25), STANDARD) is None
    tonk = settling.tonk((15, 30, 49), STANDARD)
    assert tonk is not None and (tonk.winners, tonk.payoffs) == ((0, 2), (2, -4, 2))
    assert settling.out((0, 12, 7), 0, True, STANDARD).payoffs == (2, -1, -1)
    doubled = STANDARD.with_options(meld_out_double=True)
    assert settling.out((0, 12, 7), 0, False, doubled).payoffs == (4, -2, -2)
    assert settling.out((0, 12, 7), 0, True, doubled).payoffs == (2, -1, -1)
    showdown = settling.showdown((7, 7, 20), "stock")
    assert (showdown.end, showdown.winners, showdown.payoffs) == ("stock", (0, 1), (1, 1, -2))
    fault = settling.fault((7, 7, 20), 1)
    assert (fault.winners, fault.payoffs, fault.faulted) == ((0, 2), (2, -4, 2), 1)


TOTALS = st.lists(st.integers(0, 60), min_size=2, max_size=6).map(tuple)


@given(totals=TOTALS, data=st.data())
def test_payoffs_always_sum_to_zero(totals: tuple[int, ...], data: st.DataObject) -> None:
    seat = data.draw(st.integers(0, len(totals) - 1))
    tonk = settling.tonk(totals, STANDARD)
    for outcome in (
        settling.drop(totals, seat),
        settling.out(totals, seat, data.draw(st.booleans()), STANDARD),
        settling.showdown(totals, "cap"),
        settling.fault(totals, seat),
        *([tonk] if tonk is not None else []),
    ):
        assert sum(outcome.payoffs) == 0
        assert len(outcome.payoffs) == len(totals) and outcome.totals == totals
