#!/usr/bin/env python3
"""Write pytest's rewritten test modules once, before the run's workers collect (Makefile's
``BYTECODE`` step).

pytest rewrites the asserts of every test module, conftest.py and helper it imports, and keeps
the result beside the source (``__pycache__/*-pytest-*.pyc``), unless ``PYTHONDONTWRITEBYTECODE``
is set, as on the machines the suite is measured on: then each pytest process rewrites all
of them again, and under pytest-xdist every worker collects the whole suite. Rewriting was
half of a collection's CPU (15.5 s of a ``--collect-only``, 7.2 s with these files present),
paid by each of ``make test``'s four workers. pytest reads such a file whatever that setting
(it is checked against the source's hash, so an edited module is rewritten as before).

Written here as pytest writes them (its own functions, no configuration: the rewritten code
depends on none the suite sets). The files only save time: if this pytest has moved its
internals, the script says so and exits 0, and the workers rewrite as they used to.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def modules() -> list[Path]:
    """What pytest rewrites in this suite: test modules, conftest.py files, and the helpers
    package (tests/conftest.py registers it for rewriting)."""
    found = {p for p in TESTS.rglob("*.py") if p.name.startswith("test_") or p.name == "conftest.py"}
    found |= set((TESTS / "helpers").rglob("*.py"))
    return sorted(p for p in found if "__pycache__" not in p.parts)


def rewrite(path: Path) -> bool:
    """Write ``path``'s rewritten code where pytest looks for it; False if already there."""
    from _pytest.assertion import rewrite as pytest_rewrite

    pyc = pytest_rewrite.get_cache_dir(path) / (path.name[:-3] + pytest_rewrite.PYC_TAIL)
    if pytest_rewrite._read_pyc(path, pyc) is not None:
        return False
    source_hash, code = pytest_rewrite._rewrite_test(path, None)  # type: ignore[arg-type]
    pyc.parent.mkdir(exist_ok=True)
    partial = pyc.with_name(f"{pyc.name}.{os.getpid()}")
    with open(partial, "wb") as out:
        pytest_rewrite._write_pyc_fp(out, source_hash, code)
    os.replace(partial, pyc)  # whole or absent, as pytest's own: a worker may read it meanwhile
    return True


def main() -> int:
    try:
        from _pytest.assertion import rewrite as pytest_rewrite

        for name in ("get_cache_dir", "PYC_TAIL", "_read_pyc", "_rewrite_test", "_write_pyc_fp"):
            getattr(pytest_rewrite, name)
    except (ImportError, AttributeError) as exc:
        print(f"rewrite_tests: not written ({exc}); each pytest rewrites its tests", file=sys.stderr)
        return 0
    paths = modules()
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(rewrite, paths, chunksize=8))
    return 0


if __name__ == "__main__":
    sys.exit(main())
