"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

from hypothesis import strategies as st

from sdk.rules import Rules

#: Any rule set: every named variant on or off, turn caps from none (0) to long, and TONK
#: thresholds that make it impossible (0, 200) as well as the standard ones.
rules_st = st.builds(
    Rules,
    discard_pickup_may_return=st.booleans(),
    meld_out_double=st.booleans(),
    book_layoff=st.booleans(),
    ace_high_or_low=st.booleans(),
    hit_lock=st.booleans(),
    stock_reshuffle=st.booleans(),
    turn_cap=st.sampled_from([0, 1, 3, 9, 40, 200, 1000]),
    tonk_low=st.sampled_from([0, 15]),
    tonk_high=st.sampled_from([49, 200]),
)
