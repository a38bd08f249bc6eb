"""The dashboard in real headless Chromium (Playwright): the leaderboard, and a replay stepped
through, played, and seen from one seat. Screenshots go to docs/screenshots/ with TONK_UPDATE_SCREENSHOTS=1.

Uses Debian's Chromium (/usr/bin/chromium, or TONK_CHROMIUM); nothing is downloaded. Without
it these tests skip locally and fail in CI.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from dashboard_fixtures import Seeded

pytest_plugins = ["dashboard_fixtures"]
pytestmark = pytest.mark.browser

# The committed screenshots are refreshed only on request (TONK_UPDATE_SCREENSHOTS=1), so a
# test run never leaves the working tree dirty; otherwise they go to a scratch folder.
SCREENSHOTS = (
    Path(__file__).resolve().parents[1] / "docs" / "screenshots"
    if os.environ.get("TONK_UPDATE_SCREENSHOTS")
    else Path(tempfile.gettempdir()) / "tonk-screenshots"
)
SCREENSHOTS.mkdir(parents=True, exist_ok=True)
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def chromium_path() -> str:
    path = os.environ.get("TONK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        message = "Chromium is not installed (apt-get install chromium); the browser tests need it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def base_url(seeded_sqlite: Seeded) -> Iterator[str]:
    from dashboard_fixtures import OPERATOR_TOKEN

    from dashboard.server import serve_in_thread

    server, thread = serve_in_thread(
        "127.0.0.1", 0, None, DATABASE_URL=seeded_sqlite.url, OPERATOR_TOKEN=OPERATOR_TOKEN, TESTING=True,
        CACHE_REFRESH_SECONDS=0, CACHE_STALE_OK=False, PROGRESS_POLL_MS=300,
    )
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1360, "height": 900}, device_scale_factor=1)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    tab.set_default_timeout(10_000)
    yield tab
    context.close()
    assert not errors, errors  # no script errors, no blocked or missing assets


def cards_of(page: Any, seat: int) -> list[str]:
    cards: list[str] = page.eval_on_selector_all(
        f'#felt .hand-cards[data-seat="{seat}"] svg.card', "els => els.map(e => e.dataset.card)"
    )
    return cards


def step_of(page: Any) -> tuple[int, int]:
    felt = page.locator("#felt")
    return int(felt.get_attribute("data-hand")), int(felt.get_attribute("data-step"))


def test_leaderboard(page: Any, base_url: str) -> None:
    page.goto(base_url + "/")
    rows = page.locator("table.leaderboard tbody tr")
    assert rows.count() == 4
    assert rows.nth(0).locator("td").nth(0).inner_text() == "1"
    assert page.locator("svg.interval-chart g.bot").count() == 3
    assert page.locator("table.leaderboard abbr.prov").count() == 3
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "leaderboard.png"), full_page=True)
    page.click("table.leaderboard tbody tr:first-child a.bot")
    page.wait_for_selector("svg.history-chart")


def test_tournament_page(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    page.goto(f"{base_url}/tournaments/{seeded_sqlite.tournaments['spring']}")
    shaded = "table.matrix td.sig-none, table.matrix td.sig-significant, table.matrix td.sig-strong"
    assert page.locator(shaded).count() == 6
    page.screenshot(path=str(SCREENSHOTS / "tournament.png"), full_page=True)
    # A running tournament polls its progress from the API.
    page.goto(f"{base_url}/tournaments/{seeded_sqlite.tournaments['summer']}")
    with page.expect_response(lambda r: r.url.endswith("/progress") and r.status == 200, timeout=8000):
        pass
    assert page.locator("#progress .live-dot").is_visible()


def showcase(base_url: str, page: Any, seeded: Seeded) -> tuple[int, int, int]:
    """A 3-seat match, and a hand and step of it with melds on the table: for the screenshot."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"{base_url}/api/v1/matches?per_page=100&status=done") as r:
        matches = json.load(r)["matches"]
    for m in matches:
        if len(m["seats"]) != 3:
            continue
        with urllib.request.urlopen(f"{base_url}/api/v1/matches/{m['id']}/replay") as r:
            hands = json.load(r)["hands"]
        for h, hand in enumerate(hands):
            kinds = [next(k for k in ("draw", "meld", "layoff", "discard", "drop") if k in a)
                     for a in hand["actions"]]
            if "meld" in kinds and len(kinds) >= 10 and not hand.get("faults"):
                return m["id"], h, max(i for i, k in enumerate(kinds) if k == "meld") + 2
    raise AssertionError("no 3-seat hand with a meld in the seeded arena")


def test_replay_viewer(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    match_id, hand, step = showcase(base_url, page, seeded_sqlite)
    page.goto(f"{base_url}/matches/{match_id}")
    page.wait_for_selector("#viewer.ready")
    assert step_of(page) == (0, 0)
    assert page.locator("#felt .seat").count() == 3
    first = page.locator("#caption").inner_text()
    assert "deals 5 cards to each player" in first

    # Step forward with the keyboard: the cards change and so does the caption.
    to_act = int(page.locator("#felt .seat.to-act").get_attribute("data-seat"))
    before = cards_of(page, to_act)
    assert len(before) == 5 and "back" not in before
    page.keyboard.press("ArrowRight")
    assert step_of(page) == (0, 1)
    after = cards_of(page, to_act)
    assert page.locator("#caption").inner_text() != first
    if "goes down" not in page.locator("#caption").inner_text():
        assert len(after) == 6 and set(before) < set(after)  # a draw adds a card
    page.keyboard.press("ArrowLeft")
    assert step_of(page) == (0, 0) and cards_of(page, to_act) == before
    page.keyboard.press("End")
    last = step_of(page)[1]
    assert last > 0 and page.locator("#felt .seat.winner").count() >= 1
    assert page.locator("#felt .payoff").count() == 3
    page.keyboard.press("Home")
    assert step_of(page) == (0, 0)

    # Next / previous hand, and jumping to a hand.
    page.keyboard.press("]")
    assert step_of(page) == (1, 0)
    page.keyboard.press("[")
    assert step_of(page) == (0, 0)
    page.select_option("#hand-select", str(hand))
    assert step_of(page)[0] == hand

    # Play and pause: it advances on its own at the chosen speed.
    page.select_option("#speed", "250")
    page.keyboard.press(" ")
    assert "Pause" in page.locator('[data-cmd="play"]').inner_text()
    page.wait_for_selector('#felt:not([data-step="0"]):not([data-step="1"])')  # no eval: the CSP forbids it
    page.keyboard.press(" ")
    assert "Play" in page.locator('[data-cmd="play"]').inner_text()

    # Jump to a step with melds on the table through the action log, as a person would.
    page.click(f'#log li[data-step="{step}"]')
    assert step_of(page) == (hand, step)
    assert page.locator("#felt .meld").count() >= 1
    assert page.locator("#log li.current").count() == 1 and page.locator("#log .lat").count() > 0
    assert page.locator("#payoffs tbody tr.current").get_attribute("data-hand") == str(hand)
    page.screenshot(path=str(SCREENSHOTS / "replay.png"), full_page=True)

    # One seat's view: the other hands become card backs, the stock stays face down.
    everyone = {s: cards_of(page, s) for s in range(3)}
    assert all("back" not in c for c in everyone.values())
    page.select_option("#perspective", "0")
    assert cards_of(page, 0) == everyone[0]
    for s in (1, 2):
        assert cards_of(page, s) == ["back"] * len(everyone[s])
    assert page.locator("#felt .stock svg.card").get_attribute("data-card") == "back"
    assert page.locator("#felt").get_attribute("data-view") == "0"
    me = page.locator('#felt .seat[data-seat="0"] .name').inner_text()
    lines = page.eval_on_selector_all(
        "#log li", "els => els.map(e => [e.querySelector('.who')?.textContent, e.textContent])"
    )
    others = [text for who, text in lines if who and who != me]
    assert others and not any("draws from the stock (" in text for text in others)
    # ...and nothing after the moment shown: later log lines are hidden until stepped to.
    assert page.locator(f'#log li[data-step="{step + 1}"]').is_hidden()
    assert page.locator(f'#log li[data-step="{step}"]').is_visible()
    page.locator("#viewer").screenshot(path=str(SCREENSHOTS / "replay-seat-view.png"))
    page.select_option("#perspective", "all")
    assert cards_of(page, 1) == everyone[1]


def test_downloads_from_the_viewer(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    page.goto(f"{base_url}/matches/{seeded_sqlite.fault_match}")
    page.wait_for_selector("#viewer.ready")
    href = page.get_attribute("#hand-download", "href")
    assert href == f"/api/v1/matches/{seeded_sqlite.fault_match}/hands/0"
    with page.expect_download() as download:
        page.click("#hand-download")
    record = Path(download.value.path()).read_text()
    assert '"format": "tonk-hand/1"' in record and "latency_us" not in record
    with page.expect_download() as download:
        page.click('#log li[data-step="1"] a.dl')
    request = Path(download.value.path()).read_text()
    assert '"decisionId"' in request and '"observation"' in request  # proto3 JSON
    # A faulted hand highlights the fault in the log.
    page.select_option("#hand-select", "1")
    faults = page.locator("#log li.fault")
    if faults.count():
        assert "FAULT" in faults.first.inner_text()
