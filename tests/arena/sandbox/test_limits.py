"""The sandbox's settings are read strictly (arena/sandbox/limits.py): a malformed one is a
ValueError naming it, never a silent default."""

from __future__ import annotations

import pytest

from arena.sandbox.limits import Limits, sandbox_nice


def test_the_start_up_budget_is_seconds_of_cpu() -> None:
    assert Limits.from_env({}).start_cpu_s == 10.0
    assert Limits.from_env({"TONK_SANDBOX_START_CPU_S": "2.5"}).start_cpu_s == 2.5
    for bad in ("soon", "0", "-1"):
        with pytest.raises(ValueError, match="TONK_SANDBOX_START_CPU_S"):
            Limits.from_env({"TONK_SANDBOX_START_CPU_S": bad})


def test_the_sandboxes_nice_value_is_a_whole_number_from_minus_20_to_19() -> None:
    assert sandbox_nice({}) == 0
    assert sandbox_nice({"TONK_SANDBOX_NICE": " 5 "}) == 5
    assert sandbox_nice({"TONK_SANDBOX_NICE": "-20"}) == -20
    for bad in ("20", "-21", "1.5", "low"):
        with pytest.raises(ValueError, match="TONK_SANDBOX_NICE"):
            sandbox_nice({"TONK_SANDBOX_NICE": bad})
