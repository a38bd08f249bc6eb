"""Where the project's example hand records live: ``tests/data/cases/`` (``tonk-hand/1``
records, docs/hand-record.md). The two ``seed-example-*`` files are the examples of play of
the rules text docs/rules.md is built on, written out in full."""

from __future__ import annotations

from pathlib import Path

CASES = Path(__file__).resolve().parents[1] / "data" / "cases"
