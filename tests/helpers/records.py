"""The case records as data, one change made to a copy, and the error a call must raise."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from helpers.case_files import CASES

EXAMPLE_1: dict[str, Any] = json.loads((CASES / "seed-example-1.json").read_text())
EXAMPLE_2: dict[str, Any] = json.loads((CASES / "seed-example-2.json").read_text())


def changed(data: dict[str, Any], change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    """A deep copy of ``data`` with ``change`` applied to it."""
    data = copy.deepcopy(data)
    change(data)
    return data


def raises(kind: type[Exception], pattern: str, call: Callable[[], object]) -> Exception:
    """``call`` raises ``kind`` (exactly that class or a subclass), a ValueError as all bad input
    is, with ``pattern`` in its message."""
    with pytest.raises(kind) as info:
        call()
    assert isinstance(info.value, ValueError)
    assert re.search(pattern, str(info.value)), str(info.value)
    return info.value
