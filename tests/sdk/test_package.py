"""``sdk``'s public names: each one is importable from the package (``from sdk import Bot``),
and is the object its module defines, though the package imports a module only when one of its
names is first asked for."""

from __future__ import annotations

import sys
from importlib import import_module

import pytest
from helpers.paths import ROOT

import sdk
from arena.processes import run_process


@pytest.mark.parametrize("name", sdk.__all__)
def test_every_public_name_is_its_modules_object(name: str) -> None:
    value = getattr(sdk, name)
    module = import_module(sdk._MODULES[name])
    assert value is getattr(module, name)
    assert name in dir(sdk)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'sdk' has no attribute 'Nothing'"):
        sdk.Nothing  # noqa: B018


def test_a_star_import_gives_every_public_name() -> None:
    code = "from sdk import *; import sys; print(sorted(n for n in dir() if not n.startswith('_')))"
    run = run_process([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert run.stdout.strip() == str(sorted([*sdk.__all__, "sys"]))
