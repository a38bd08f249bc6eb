"""Fixtures of the browser tests (the dashboard in real headless Chromium, Playwright), one
module per area of the site: leaderboard and bots, tournaments and live pages, the replay,
sequential tests, ladders, every page at a phone's and a laptop's width.

One Chromium per session (under pytest-xdist: per worker), shared by the modules; each test
has tabs of its own. The seeded arena is served once per session on a free port. Nothing is
written to a fixed path: screenshots go to the session's own temporary folder, or to
docs/screenshots/ with TONK_UPDATE_SCREENSHOTS=1 (`make screenshots`: every page at 1360x900
and 390x844 as ``<page>-1360.png`` and ``<page>-390.png``, plus the replay and leaderboard).
Uses Debian's Chromium (/usr/bin/chromium, or TONK_CHROMIUM); nothing is downloaded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers.browser import CHROMIUM_ARGS, PATIENCE_MS, chromium_path, expect, new_context, served, sync_api
from helpers.paths import ROOT

if TYPE_CHECKING:
    from helpers.dashboard_fixtures import Seeded

# Every expect() waits as long as an action may.
expect.set_options(timeout=PATIENCE_MS)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def base_url(seeded_sqlite: Seeded) -> Iterator[str]:
    """The seeded arena (read only), served for the session."""
    with served(seeded_sqlite.url, PROGRESS_POLL_MS=300) as url:
        yield url


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A tab at 1360x900 that fails its test on any script error or failed asset."""
    context = new_context(browser)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    yield tab
    context.close()
    assert not errors, errors  # no script errors, no blocked or missing assets


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the committed screenshots go: refreshed only on request (TONK_UPDATE_SCREENSHOTS=1),
    so a test run never leaves the working tree dirty; otherwise the session's scratch folder."""
    if os.environ.get("TONK_UPDATE_SCREENSHOTS"):
        folder = ROOT / "docs" / "screenshots"
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="session")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Screenshots that are not committed, to look at when a test fails (pytest keeps the
    last few sessions' temporary folders)."""
    return tmp_path_factory.mktemp("scratch-screenshots")
