"""Debian's headless Chromium as the browser tests and bench/seat_roundtrip.py launch it: no
pytest here, so a bench can import it (tests/helpers/browser.py skips or fails without it)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def chromium_executable() -> str | None:
    """Debian's Chromium (or TONK_CHROMIUM), None if it is not there; nothing is downloaded."""
    path = os.environ.get("TONK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    return path if Path(path).exists() else None
