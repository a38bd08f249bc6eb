"""A bench script imported as a module under a name of the test's choosing, so that its bots
(``NAME:MemoryBot``) can be loaded, served or hosted; the bench fixes its own path when run as
a script, which an import must not keep."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType


@contextlib.contextmanager
def bench_module(path: Path, name: str) -> Iterator[ModuleType]:
    saved = list(sys.path)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    try:
        yield module
    finally:
        del sys.modules[name]
