"""Where things are, wherever a test file sits: the checkout (``ROOT``) and its tests folder."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
