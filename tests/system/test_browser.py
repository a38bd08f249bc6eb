"""The dashboard in real headless Chromium (Playwright): the leaderboard, and a replay stepped
through, played, and seen from one seat. Screenshots go to docs/screenshots/ with TONK_UPDATE_SCREENSHOTS=1.

`make screenshots` refreshes them all: every page at 1360x900 and 390x844
(``<page>-1360.png``, ``<page>-390.png``) plus the replay and leaderboard in full.

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
from helpers.dashboard_fixtures import live_arena
from helpers.paths import ROOT

if TYPE_CHECKING:
    from helpers.dashboard_fixtures import Seeded

pytestmark = pytest.mark.browser

# The committed screenshots are refreshed only on request (TONK_UPDATE_SCREENSHOTS=1), so a
# test run never leaves the working tree dirty; otherwise they go to a scratch folder.
SCREENSHOTS = (
    ROOT / "docs" / "screenshots"
    if os.environ.get("TONK_UPDATE_SCREENSHOTS")
    else Path(tempfile.gettempdir()) / "tonk-screenshots"
)
SCREENSHOTS.mkdir(parents=True, exist_ok=True)
SCRATCH = Path(tempfile.gettempdir()) / "tonk-screenshots"
SCRATCH.mkdir(parents=True, exist_ok=True)
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
    from helpers.dashboard_fixtures import OPERATOR_TOKEN

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
    assert page.locator("svg.interval-chart:visible g.bot").count() == 3  # drawn at the width that fits
    assert page.locator("table.leaderboard abbr.prov").count() == 3
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "leaderboard.png"), full_page=True)
    page.click("table.leaderboard tbody tr:first-child a.bot")
    page.locator("svg.history-chart:visible").wait_for()


def test_tournament_page(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    page.goto(f"{base_url}/tournaments/{seeded_sqlite.tournaments['spring']}")
    shaded = "table.matrix td.sig-none, table.matrix td.sig-significant, table.matrix td.sig-strong"
    assert page.locator(shaded).count() == 6
    page.screenshot(path=str(SCREENSHOTS / "tournament.png"), full_page=True)
    # A running tournament polls its progress from the API.
    page.goto(f"{base_url}/tournaments/{seeded_sqlite.tournaments['summer']}")
    with page.expect_response(lambda r: "/live?html=1" in r.url and r.status == 200, timeout=8000):
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

    # Jump to a step with melds on the table through the action log, as a person would (the
    # log shows later steps once results are asked for: they would spoil the hand's end).
    page.check("#show-results")
    page.click(f'#log li[data-step="{step}"]')
    assert step_of(page) == (hand, step)
    assert page.locator("#felt .meld").count() >= 1
    assert page.locator("#log li.current").count() == 1 and page.locator("#log .lat").count() > 0
    assert page.locator("#payoffs tbody tr.current").get_attribute("data-hand") == str(hand)
    page.screenshot(path=str(SCREENSHOTS / "replay.png"))  # the replay fits one screen

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
    page.check("#show-results")  # later log lines show once results may be seen
    # The first hand that has a decision (a hand can end in TONK on the deal, with none).
    for hand in range(int(page.locator("#hand-select option").count())):
        page.select_option("#hand-select", str(hand))
        if page.locator('#log li[data-step="1"] a.dl').count():
            break
    with page.expect_download() as download:
        page.click('#log li[data-step="1"] a.dl')
    request = Path(download.value.path()).read_text()
    assert '"decisionId"' in request and '"observation"' in request  # proto3 JSON
    # A link to a fault opens its hand at the end, where the fault is.
    page.goto(f"{base_url}/bots/flaky")
    page.locator("ul.fault-list a").first.click()
    page.wait_for_selector("#viewer.ready")
    assert "fault" in page.locator("#log li.current").get_attribute("class").split()
    assert "faulted" in page.locator("#caption").inner_text()
    page.goto(f"{base_url}/matches/{seeded_sqlite.fault_match}")
    page.wait_for_selector("#viewer.ready")
    page.check("#show-results")
    # A faulted hand highlights the fault in the log.
    page.select_option("#hand-select", "1")
    faults = page.locator("#log li.fault")
    if faults.count():
        assert "FAULT" in faults.first.inner_text()


def visible_box(page: Any, selector: str) -> list[dict[str, float]]:
    boxes: list[dict[str, float]] = page.eval_on_selector_all(
        selector,
        "els => els.map(e => { const r = e.getBoundingClientRect();"
        " return {x: r.left, y: r.top, right: r.right, bottom: r.bottom, w: r.width, h: r.height}; })",
    )
    return boxes


REPLAY_PARTS = (
    "#hand-select", "#viewer .buttons button", "#speed", "#perspective", "#show-results", "#timeline",
    "#hand-strip button", "#caption", "#felt", "#felt .seat", "#felt .center", "#log",
)


def test_the_replay_fits_one_laptop_screen(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    match_id, hand, step = showcase(base_url, page, seeded_sqlite)
    page.goto(f"{base_url}/matches/{match_id}#hand={hand}&step={step}")
    page.wait_for_selector("#viewer.ready")
    assert step_of(page) == (hand, step) and page.locator("#felt .meld").count() >= 1
    assert page.evaluate("window.scrollY") == 0
    for selector in REPLAY_PARTS:
        boxes = visible_box(page, selector)
        assert boxes, selector
        for box in boxes:
            assert box["w"] > 0 and box["h"] > 0, selector
            inside = box["x"] >= 0 and box["right"] <= 1360 and box["y"] >= 0 and box["bottom"] <= 900
            assert inside, (selector, box)
    # Every control has an accessible name.
    unnamed = page.eval_on_selector_all(
        "#viewer button, #viewer select, #viewer input, #viewer a",
        "els => els.filter(e => !(e.getAttribute('aria-label')"
        " || e.labels?.length && e.labels[0].textContent.trim() || e.textContent.trim()))"
        ".map(e => e.outerHTML)",
    )
    assert not unnamed


def assert_replay_fits(page: Any) -> None:
    assert page.evaluate("window.scrollY") == 0
    for selector in REPLAY_PARTS:
        boxes = visible_box(page, selector)
        assert boxes, selector
        for box in boxes:
            inside = box["x"] >= 0 and box["right"] <= 1360 and box["y"] >= 0 and box["bottom"] <= 900
            assert inside and box["w"] > 0 and box["h"] > 0, (selector, box)


def test_a_six_seat_replay_fits_one_screen(browser: Any, tmp_path: Path) -> None:
    """The most crowded table: six seats, and the moment with the most melds out."""
    import json
    import urllib.request

    from helpers.dashboard_fixtures import OPERATOR_TOKEN
    from sqlalchemy import select

    from arena.bots.owners import get_or_create_operator
    from arena.bots.registry import host_bot
    from arena.config import Settings
    from arena.runtime.jobs import play_match_job
    from arena.store.db import session_scope
    from arena.store.models import Match
    from arena.tournaments.lifecycle import create_tournament, start_tournament
    from dashboard.server import serve_in_thread

    url = f"sqlite:///{tmp_path / 'six.sqlite'}"
    with session_scope(url) as session:
        house = get_or_create_operator(session, "house")
        targets = ["helpers.dashboard_fixtures:LowBot", "bots.greedy:GreedyBot", "bots.random_bot:RandomBot"]
        targets *= 2
        ids = [host_bot(session, house, f"player{k}", t, check=False).id for k, t in enumerate(targets)]
        t = create_tournament(session, name="Six", bot_ids=ids, table_sizes=[6], deals_per_table=1,
                              hands_per_match=4, seed=606, settings=Settings(database_url=url))
        start_tournament(session, t.id)
        query = select(Match.id).where(Match.tournament_id == t.id).order_by(Match.id)
        matches = list(session.scalars(query))
    for match_id in matches:
        assert play_match_job(match_id, url) == "done"
    server, thread = serve_in_thread("127.0.0.1", 0, None, DATABASE_URL=url, OPERATOR_TOKEN=OPERATOR_TOKEN,
                                     TESTING=True, CACHE_REFRESH_SECONDS=0, CACHE_STALE_OK=False)
    context = browser.new_context(viewport={"width": 1360, "height": 900}, device_scale_factor=1)
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        best = (-1, 0, 0, 0)
        for match_id in matches:
            with urllib.request.urlopen(f"{base}/api/v1/matches/{match_id}/steps") as r:
                hands = json.load(r)["hands"]
            for h, hand in enumerate(hands):
                for k, step in enumerate(hand["steps"]):
                    best = max(best, (len(step["table"]), match_id, h, k))
        melds, match_id, h, k = best
        page = context.new_page()
        page.goto(f"{base}/matches/{match_id}#hand={h}&step={k}")
        page.wait_for_selector("#viewer.ready")
        assert step_of(page) == (h, k) and page.locator("#felt .seat").count() == 6
        assert page.locator("#felt .meld").count() == melds >= 1
        assert_replay_fits(page)
        page.keyboard.press("End")  # the settlement: every seat's payment shown too
        assert page.locator("#felt .payoff").count() == 6
        assert_replay_fits(page)
        page.screenshot(path=str(SCREENSHOTS / "replay-six-seats.png"))
    finally:
        context.close()
        server.shutdown()
        thread.join(timeout=10)


def test_keyboard_steps_whatever_list_was_used(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    page.goto(f"{base_url}/matches/{seeded_sqlite.done_match}")
    page.wait_for_selector("#viewer.ready")
    uses = [
        ("#hand-select", lambda: page.select_option("#hand-select", "1")),
        ("#speed", lambda: page.select_option("#speed", "500")),
        ("#perspective", lambda: page.select_option("#perspective", "1")),
        ("#timeline", lambda: page.locator("#timeline").fill("1")),
        ("#show-results", lambda: page.click("#show-results")),
        ("#hand-strip button", lambda: page.click('#hand-strip button[data-hand="2"]')),
        ("button[data-cmd='first']", lambda: page.click("button[data-cmd='first']")),
    ]
    for selector, use in uses:
        use()
        page.focus(selector) if selector.startswith("#") and "button" not in selector else None
        hand, step = step_of(page)
        if step > 0:
            page.keyboard.press("Home")
            hand, step = step_of(page)
        page.keyboard.press("ArrowRight")
        assert step_of(page) == (hand, step + 1), selector
        page.keyboard.press("ArrowLeft")
        assert step_of(page) == (hand, step), selector
        page.keyboard.press("]")
        assert step_of(page) == (hand + 1, 0), selector
        page.keyboard.press("[")
        assert step_of(page) == (hand, 0), selector
    assert page.locator("#speed").input_value() == "500"  # the keys did not change the lists
    assert page.locator("#perspective").input_value() == "1"


def test_the_url_opens_the_moment_shown(
    page: Any, browser: Any, base_url: str, seeded_sqlite: Seeded
) -> None:
    page.goto(f"{base_url}/matches/{seeded_sqlite.done_match}")
    page.wait_for_selector("#viewer.ready")
    page.keyboard.press("]")
    page.keyboard.press("]")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert step_of(page) == (2, 3)
    url = page.url
    assert url.endswith("#hand=2&step=3")
    caption = page.locator("#caption").inner_text()
    other = browser.new_context(viewport={"width": 1360, "height": 900}).new_page()
    try:
        other.goto(url)
        other.wait_for_selector("#viewer.ready")
        assert step_of(other) == (2, 3)
        assert other.locator("#caption").inner_text() == caption
    finally:
        other.context.close()


def test_no_spoilers_until_asked(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    page.goto(f"{base_url}/matches/{seeded_sqlite.done_match}")
    page.wait_for_selector("#viewer.ready")
    names = [page.locator(f'#felt .seat[data-seat="{s}"] .name').inner_text() for s in range(2)]
    options = page.eval_on_selector_all("#hand-select option", "els => els.map(e => e.textContent)")
    assert options and not any(name in text for text in options for name in names)
    assert page.locator("#payoffs").is_hidden()
    assert page.locator('#log li[data-step="2"]').is_hidden()
    page.check("#show-results")
    options = page.eval_on_selector_all("#hand-select option", "els => els.map(e => e.textContent)")
    assert any(name in text for text in options for name in names)
    assert page.locator("#payoffs").is_visible() and page.url.endswith("&results=1")


def test_the_table_shows_the_engines_numbers(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    """What the page shows at every step is the server's (engine's) numbers, hand after hand."""
    import json
    import urllib.request

    match_id = seeded_sqlite.fault_match
    with urllib.request.urlopen(f"{base_url}/api/v1/matches/{match_id}/steps") as r:
        hands = json.load(r)["hands"]
    page.goto(f"{base_url}/matches/{match_id}")
    page.wait_for_selector("#viewer.ready")
    for h, hand in enumerate(hands[:3]):
        for k, step in enumerate(hand["steps"]):
            assert step_of(page) == (h, k)
            seats = len(hand["players"])
            shown = [int(page.get_attribute(f'#felt .seat[data-seat="{s}"] .meta', "data-total"))
                     for s in range(seats)]
            assert shown == step["totals"]
            assert [cards_of(page, s) for s in range(seats)] == step["hands"]
            assert page.locator("#caption").inner_text() == step["caption"]
            if "outcome" in step:
                paid = [int(page.get_attribute(f'#felt .seat[data-seat="{s}"] .payoff', "data-payoff"))
                        for s in range(seats)]
                assert paid == step["outcome"]["payoffs"]
            page.keyboard.press("ArrowRight")


def test_the_tournament_page_follows_a_tournament_live(browser: Any, tmp_path: Path) -> None:
    import threading
    import time

    from helpers.dashboard_fixtures import OPERATOR_TOKEN
    from sqlalchemy import select, update

    from arena.runtime.jobs import play_match_job
    from arena.store.db import session_scope
    from arena.store.models import Match, MatchSeat
    from dashboard.server import serve_in_thread

    url = f"sqlite:///{tmp_path / 'live.sqlite'}"
    tournament_id, matches = live_arena(url)
    # A match a worker is playing: 2 hands in, and the score so far (as its heartbeat writes),
    # the last rotation of its deal to finish (so its score may be shown).
    with session_scope(url) as session:
        tables = dict(session.execute(select(Match.id, Match.table_index).where(Match.id.in_(matches))).all())
    last = next(m for m in matches[1:] if tables[m] == tables[matches[0]])
    assert play_match_job(matches[0], url) == "done"
    matches.remove(matches[0])
    with session_scope(url) as session:
        session.execute(update(Match).where(Match.id == last).values(status="running", hands_played=2))
        for seat, score in enumerate((3, -3)):
            session.execute(update(MatchSeat).where(MatchSeat.match_id == last, MatchSeat.seat == seat)
                            .values(score=score))
    server, thread = serve_in_thread(
        "127.0.0.1", 0, None, DATABASE_URL=url, OPERATOR_TOKEN=OPERATOR_TOKEN, TESTING=True,
        CACHE_REFRESH_SECONDS=0, CACHE_STALE_OK=False, PROGRESS_POLL_MS=250,
    )
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    player: threading.Thread | None = None
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"http://127.0.0.1:{server.server_port}/tournaments/{tournament_id}")
        first = page.locator("#standings").inner_text()
        page.evaluate("window.tonkMarker = 42")  # gone if the page were reloaded
        running = page.locator("#running li")
        assert "2 of 6 hands" in running.inner_text() and "+3" in running.inner_text()
        # No deal is finished yet: nothing is showing (its first deal has a rotation running).
        assert page.locator("#now_showing a.watch").count() == 0

        def play() -> None:
            for match_id in matches:
                assert play_match_job(match_id, url) == "done"
                time.sleep(0.7)  # the page polls every 0.25 s: it sees each match finish

        player = threading.Thread(target=play, daemon=True)
        player.start()
        seen = {first}
        deadline = time.monotonic() + 30
        while not page.locator("#t-status .status-finished").count() and time.monotonic() < deadline:
            seen.add(page.locator("#standings").inner_text())
            page.wait_for_timeout(100)
        assert page.locator("#t-status .status-finished").count() == 1
        assert len(seen) >= 3, seen  # the standings changed several times as matches finished
        assert page.locator("#timing .finished-note").inner_text() == "finished"
        assert page.locator("#progress [data-field=percent]").inner_text() == "100"
        assert page.locator("table.matrix td.sig-none, table.matrix td.sig-significant, "
                            "table.matrix td.sig-strong").count() == 6
        assert not page.locator("#running li").count()
        assert page.evaluate("window.tonkMarker") == 42 and not errors
        # The headline came in with the last poll, its closest hands linked to their moment.
        assert page.locator("#result #headline").count() == 1
        assert "How sure" in page.locator("#headline").inner_text()
        closest = page.locator("#headline a[href*='#hand=']")
        assert closest.count() >= 1
        hand_link = closest.first.get_attribute("href")
        # The finished deals landed in "now showing" without a reload, newest first; a link
        # opens its replay playing.
        watch = page.locator("#now_showing a.watch")
        assert watch.count() == 6
        watch.first.click()
        page.wait_for_selector("#viewer.ready")
        page.wait_for_selector('#viewer [data-cmd="play"].playing')
        page.wait_for_function("() => !/step=0(&|$)/.test(location.hash)", polling=100, timeout=30_000)
        # A closest hand opens its replay at that hand's first step.
        page.goto(f"http://127.0.0.1:{server.server_port}{hand_link}")
        page.wait_for_selector("#viewer.ready")
        hand = int(hand_link.split("#hand=")[1].split("&")[0])
        assert step_of(page) == (hand, 0)
        assert not errors
    finally:
        if player is not None:
            player.join(timeout=60)
        context.close()
        server.shutdown()
        thread.join(timeout=10)


def test_the_home_pages_now_showing_follows_the_arena_live(browser: Any, tmp_path: Path) -> None:
    """The home page's "now showing" brings in each deal as it is finished (no reload)."""
    from helpers.dashboard_fixtures import OPERATOR_TOKEN

    from arena.runtime.jobs import play_match_job
    from dashboard.server import serve_in_thread

    url = f"sqlite:///{tmp_path / 'home.sqlite'}"
    _, matches = live_arena(url)
    server, thread = serve_in_thread(
        "127.0.0.1", 0, None, DATABASE_URL=url, OPERATOR_TOKEN=OPERATOR_TOKEN, TESTING=True,
        CACHE_REFRESH_SECONDS=0, CACHE_STALE_OK=False, PROGRESS_POLL_MS=250,
    )
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"http://127.0.0.1:{server.server_port}/")
        assert page.locator("#now_showing a.watch").count() == 0  # nothing played yet
        page.evaluate("window.tonkMarker = 9")  # gone if the page were reloaded
        for match_id in matches:
            assert play_match_job(match_id, url) == "done"
        page.wait_for_function("() => document.querySelectorAll('#now_showing a.watch').length === 6",
                               timeout=10_000)
        assert page.locator("#now-showing-section .live-dot").is_visible()
        assert page.locator("#now_showing").inner_text().startswith("Live Cup")  # its tournament named
        assert page.evaluate("window.tonkMarker") == 9 and not errors
        check_layout(page, "/", 1360)
    finally:
        context.close()
        server.shutdown()
        thread.join(timeout=10)


def every_page(seeded: Seeded) -> dict[str, str]:
    """Every page of the dashboard, by a short name (also the screenshot's file name)."""
    return {
        "leaderboard": "/",
        "tournaments": "/tournaments/",
        "tournament": f"/tournaments/{seeded.tournaments['spring']}",
        "tournament-running": f"/tournaments/{seeded.tournaments['summer']}",
        "ladders": "/ladders/",
        "matches": "/matches/",
        "match": f"/matches/{seeded.fault_match}",
        "match-running": f"/matches/{seeded.running_match}",
        "bots": "/bots/",
        "bot": "/bots/lowball",
        "api": "/api/",
        "not-found": "/matches/999999",
    }


# What a finger must be able to hit: controls, the navigation, links in lists and tables.
TARGETS = ("header.site a, main button, main select, main input, .pager a, main table a, .hand-strip button,"
           " .tables-grid a, .crumbs a")


def check_phone_page(tab: Any, path: str) -> None:
    width = tab.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, (path, width)
    small = tab.eval_on_selector_all(
        TARGETS,
        "els => els.filter(e => e.offsetParent !== null && getComputedStyle(e).visibility !== 'hidden')"
        # A checkbox is hit through its label.
        ".map(e => e.type === 'checkbox' && e.closest('label') || e)"
        ".map(e => [e.outerHTML.slice(0, 80), e.getBoundingClientRect()])"
        ".map(([html, r]) => [html, r.width, r.height])"
        ".filter(([_, w, h]) => w < 44 || h < 44)",
    )
    assert not small, (path, small[:5])


# What a page shows at a width, measured in the browser: how wide the page is, the tables whose
# box scrolls sideways (a column cut off), chart text smaller than 11 px as drawn, and charts
# wider than their box (drawn for another width and scrolled).
LAYOUT = """() => {
  const seen = e => e.offsetParent !== null && getComputedStyle(e).visibility !== 'hidden';
  const clipped = [...document.querySelectorAll('main .table-wrap, main table')].filter(seen)
    .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => [e.className, e.scrollWidth, e.clientWidth]);
  const charts = [...document.querySelectorAll('main svg.chart')]
    .filter(e => e.getBoundingClientRect().width > 0);
  const small = charts.flatMap(svg => [...svg.querySelectorAll('text')].map(t => [
      svg.className.baseVal, t.textContent,
      parseFloat(getComputedStyle(t).fontSize) * svg.getScreenCTM().a]))
    .filter(([, , px]) => px < 11);
  const wide = charts
    .filter(svg => svg.getBoundingClientRect().width > svg.closest('figure, div').clientWidth + 1)
    .map(svg => svg.className.baseVal);
  return {width: document.documentElement.scrollWidth, clipped, small: small.slice(0, 5), wide};
}"""


def check_layout(tab: Any, path: str, width: int) -> None:
    """No sideways page scroll, no clipped table column, every chart at its box's width with
    text at least 11 px as drawn; a replay on a phone shows its table on the first screen."""
    seen = tab.evaluate(LAYOUT)
    assert seen["width"] <= width, (path, seen["width"])
    assert not seen["clipped"], (path, seen["clipped"])
    assert not seen["small"], (path, seen["small"])
    assert not seen["wide"], (path, seen["wide"])
    if width <= 390 and tab.locator("#viewer.ready").count():
        felt = tab.locator("#felt").bounding_box()
        height = tab.viewport_size["height"]
        assert felt and felt["y"] >= 0 and felt["y"] + felt["height"] <= height, (path, felt)
        # ...and the controls come after it, a compact row right below.
        bar = tab.locator("[data-cmd=forward]").bounding_box()
        assert bar and felt["y"] + felt["height"] <= bar["y"] <= height - bar["height"], (path, bar)


def check_page(tab: Any, base_url: str, path: str, width: int) -> None:
    """Open ``path`` (a replay: until its viewer is ready) and check its layout at ``width``."""
    tab.goto(base_url + path)
    if tab.locator("#viewer").count():
        tab.wait_for_selector("#viewer.ready")
    if width <= 390:
        check_phone_page(tab, path)
    check_layout(tab, path, width)


def visit_every_page(browser: Any, base_url: str, seeded: Seeded, width: int, height: int) -> None:
    """Each page at this size: no page wider than the screen, no script error, no clipped
    column, readable charts, and (at phone width) targets a finger can hit; its first screen
    saved as ``<page>-<width>.png``."""
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
    try:
        tab = context.new_page()
        errors: list[str] = []
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
        for name, path in every_page(seeded).items():
            check_page(tab, base_url, path, width)
            tab.screenshot(path=str(SCREENSHOTS / f"{name}-{width}.png"))  # the first screen: small files
        assert not errors
    finally:
        context.close()


def test_every_page_fits_a_phone(browser: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    visit_every_page(browser, base_url, seeded_sqlite, 390, 844)


def test_every_page_at_a_laptop_width(browser: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    visit_every_page(browser, base_url, seeded_sqlite, 1360, 900)


CROWDED_BOTS = ("lowball-conservative", "greedy-melder-deluxe", "random-walk-baseline",
                "lowball-aggressive-v2", "greedy-second-opinion", "random-walk-control",
                "lowball-third-edition")


def crowded_arena(url: str) -> dict[str, str]:
    """Seven bots with long names: a finished heads-up tournament (21 tables), a finished
    six-seat one, and a started heads-up one with none played (21 tables waiting). Its pages."""
    from helpers.arena import fix_deal_secret
    from sqlalchemy import select

    from arena.bots.owners import get_or_create_operator
    from arena.bots.registry import host_bot
    from arena.config import Settings
    from arena.runtime.jobs import play_match_job
    from arena.store.db import session_scope
    from arena.store.models import Match
    from arena.tournaments.lifecycle import create_tournament, start_tournament

    targets = ["helpers.dashboard_fixtures:LowBot", "bots.greedy:GreedyBot", "bots.random_bot:RandomBot"]
    names = CROWDED_BOTS
    settings = Settings(database_url=url)
    with session_scope(url) as session:
        fix_deal_secret(session)
        house = get_or_create_operator(session, "house")
        ids = [host_bot(session, house, n, targets[k % 3], check=False).id for k, n in enumerate(names)]
        made = []
        for seed, (name, seats, bots) in enumerate((("Heads-up Autumn Invitational", 2, ids),
                                                    ("Six-seat Winter Open", 6, ids[:6]),
                                                    ("Heads-up Marathon", 2, ids))):
            t = create_tournament(session, name=name, bot_ids=bots, table_sizes=[seats], deals_per_table=1,
                                  hands_per_match=2, seed=700 + seed, settings=settings)
            start_tournament(session, t.id)
            made.append(t.id)
        query = select(Match.id).where(Match.tournament_id.in_(made[:2])).order_by(Match.id)
        played = list(session.scalars(query))
    for match_id in played:
        assert play_match_job(match_id, url) == "done"
    return {
        "leaderboard": "/", "tournaments": "/tournaments/", "matches": f"/matches/?tournament={made[1]}",
        "heads-up": f"/tournaments/{made[0]}", "six-seat": f"/tournaments/{made[1]}",
        "running": f"/tournaments/{made[2]}", "bot": f"/bots/{names[0]}",
        "six-seat-match": f"/matches/{played[-1]}",
    }


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    from helpers.dashboard_fixtures import OPERATOR_TOKEN

    from dashboard.server import serve_in_thread

    url = f"sqlite:///{tmp_path_factory.mktemp('crowded') / 'arena.sqlite'}"
    pages = crowded_arena(url)
    server, thread = serve_in_thread(
        "127.0.0.1", 0, None, DATABASE_URL=url, OPERATOR_TOKEN=OPERATOR_TOKEN, TESTING=True,
        CACHE_REFRESH_SECONDS=0, CACHE_STALE_OK=False,
    )
    try:
        yield f"http://127.0.0.1:{server.server_port}", pages
    finally:
        server.shutdown()
        thread.join(timeout=10)


def colour_distance(a: str, b: str) -> float:
    """How far apart two CSS ``rgb(r, g, b)`` colours are (0 the same, 441 black and white)."""
    pa, pb = ([int(v) for v in c[c.index("(") + 1:-1].split(",")[:3]] for c in (a, b))
    return float(sum((x - y) ** 2 for x, y in zip(pa, pb, strict=True)) ** 0.5)


@pytest.mark.parametrize("width,height", [(1360, 900), (390, 844)])
def test_a_crowded_arena_fits_both_widths(browser: Any, crowded: tuple[str, dict[str, str]],
                                          width: int, height: int) -> None:
    """Long names, six seats, seven bots, 21 tables: no clipped column, readable charts, the
    running tournament's tables folded, seven rating lines told apart."""
    base, pages = crowded
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
    try:
        tab = context.new_page()
        errors: list[str] = []
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
        for name, path in pages.items():
            check_page(tab, base, path, width)
            # Not among the committed screenshots: a scratch folder, to look at when it fails.
            tab.screenshot(path=str(SCRATCH / f"crowded-{name}-{width}.png"))
        # A tournament's tables fold away (21 cards were a wall of them on a phone).
        tab.goto(base + pages["running"])
        folded = tab.locator("details.tables-fold")
        assert folded.count() == 1 and folded.get_attribute("open") is None
        assert tab.evaluate("document.documentElement.scrollHeight") <= 2 * height  # was 5,156 px
        assert tab.locator(".tables-grid .card-box").first.is_hidden()
        folded.locator("summary").click()
        assert tab.locator(".tables-grid .card-box").count() == 21
        assert tab.locator(".tables-grid .card-box").first.is_visible()
        # Seven bots over time: colours far apart, and each line named at its end.
        tab.goto(base + "/")
        chart = tab.locator("svg.ratings-chart:visible")
        assert chart.count() == 1  # one of the widths it is drawn at
        stroke = "els => els.map(e => getComputedStyle(e).stroke)"
        colours = chart.locator("polyline.series").evaluate_all(stroke)
        assert len(colours) == 7
        assert min(colour_distance(a, b) for k, a in enumerate(colours) for b in colours[k + 1:]) >= 60
        if width > 390:  # ...and named at their ends (a name cut short ends in "…")
            labels = chart.locator("text.series-label").all_text_contents()
            assert len(labels) == 7
            named = {next(n for n in CROWDED_BOTS if n.startswith(label.rstrip("\u2026")))
                     for label in labels}
            assert named == set(CROWDED_BOTS)
        assert not errors
    finally:
        context.close()


def test_the_tournaments_table_is_not_clipped_at_1360(page: Any, base_url: str) -> None:
    page.goto(base_url + "/tournaments/")
    wrap = page.locator(".table-wrap").first
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1360


def test_charts_and_their_text(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    # A match's chips per seat: a hand of the chart opens the replay there.
    page.goto(f"{base_url}/matches/{seeded_sqlite.done_match}")
    page.wait_for_selector("#viewer.ready")
    assert page.locator("#chips-chart").is_hidden()  # a spoiler until results are asked for
    page.check("#show-results")
    chart = page.locator("#chips-chart svg.chips-chart:visible")
    assert chart.locator("polyline.series").count() == 2
    chart.locator('a.hand-link[href="#hand=3&step=0"]').click()
    page.wait_for_selector('#felt[data-hand="3"][data-step="0"]')
    assert page.url.endswith("#hand=3&step=0&results=1")
    page.click("#chips-chart details.chart-text summary")
    assert page.locator("#chips-chart details.chart-text tbody tr").count() == 6
    # A bot's distributions and recent matches; every bot's rating over time.
    page.goto(f"{base_url}/bots/lowball")
    assert page.locator("svg.chips-dist rect.bar").count() >= 1
    assert page.locator("svg.time-dist rect.bar").count() >= 1
    assert page.locator("details.chart-text").count() == 2
    page.locator("table.recent-matches a.watch").first.click()
    page.wait_for_selector("#viewer.ready")
    assert step_of(page) == (0, 0)
    page.goto(base_url + "/")
    assert page.locator("svg.ratings-chart:visible polyline.series").count() == 3
    assert page.locator(".chart-legend li").count() == 3
    page.goto(base_url + "/api/")
    assert page.locator("header.site nav a[aria-current=page]").inner_text() == "API"
    examples = page.eval_on_selector_all("table.api a", "els => els.map(e => e.getAttribute('href'))")
    assert len(examples) >= 12
    for href in examples:  # every example works on this arena
        assert page.request.get(base_url + href).status == 200, href


def long_hands(base_url: str, match_id: int) -> list[int]:
    """The hands of a match with at least three steps (not ended on the deal)."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"{base_url}/api/v1/matches/{match_id}/steps") as r:
        hands = json.load(r)["hands"]
    return [h for h, hand in enumerate(hands) if len(hand.get("steps", [])) >= 3]


def test_playing_pauses_on_each_hands_result(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    """Playing, a hand's result stays up a while before the next deal replaces it; the page's
    clock is the test's (Playwright's clock), so no real time is waited on."""
    match_id = seeded_sqlite.done_match
    hand = next(h for h in long_hands(base_url, match_id) if h + 1 in long_hands(base_url, match_id))
    page.clock.install()
    page.goto(f"{base_url}/matches/{match_id}#hand={hand}&step=end")
    page.wait_for_selector("#viewer.ready")
    last = step_of(page)[1]
    assert step_of(page) == (hand, last) and last > 0
    page.select_option("#speed", "250")
    # Installed, the clock still runs with real time: stop it, so a busy machine changes nothing.
    page.clock.pause_at(page.evaluate("Date.now()") + 1000)
    page.keyboard.press(" ")
    page.clock.run_for(1000)  # four ticks at 4x: the result is still shown
    assert step_of(page) == (hand, last)
    page.clock.run_for(600)  # 1.5 s in all: the next deal
    assert step_of(page) == (hand + 1, 0)
    page.clock.run_for(260)  # then a step a tick again
    assert step_of(page) == (hand + 1, 1)
    page.keyboard.press(" ")


def test_a_seats_view_names_no_winner_ahead_of_the_moment(page: Any, base_url: str,
                                                            seeded_sqlite: Seeded) -> None:
    """With results shown, the hand list names each hand's winners; in one seat's view only
    of the hands that seat has seen end by the moment shown, as its log shows nothing ahead."""
    match_id = seeded_sqlite.done_match
    hand = long_hands(base_url, match_id)[0]
    page.goto(f"{base_url}/matches/{match_id}#hand={hand}&step=1&view=0&results=1")
    page.wait_for_selector("#viewer.ready")
    labels = "els => els.map(e => e.textContent)"
    options = page.eval_on_selector_all("#hand-select option", labels)
    assert all(":" not in o for o in options[hand:]), options  # this hand and later: not yet
    assert all(":" in o for o in options[:hand]), options  # earlier ones ended before
    strip = page.eval_on_selector_all("#hand-strip button", "els => els.map(e => e.title)")
    assert all(":" not in t for t in strip[hand:]), strip
    page.keyboard.press("End")  # this hand's end: its result is the seat's to see
    options = page.eval_on_selector_all("#hand-select option", labels)
    assert ":" in options[hand] and all(":" not in o for o in options[hand + 1:]), options
    page.select_option("#perspective", "all")  # everything: every hand's result
    assert all(":" in o for o in page.eval_on_selector_all("#hand-select option", labels))
    # The View list shows whose view it is in full (it read "Only what greedy sa...").
    page.select_option("#perspective", "1")
    fits = page.eval_on_selector(
        "#perspective",
        "s => { const c = document.createElement('canvas').getContext('2d');"
        " c.font = getComputedStyle(s).font;"
        " return c.measureText(s.options[s.selectedIndex].text).width + 24 <= s.clientWidth; }",
    )
    assert fits


def test_the_replay_is_usable_on_a_phone(browser: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    phone = {"width": 390, "height": 844}
    context = browser.new_context(viewport=phone, device_scale_factor=1, has_touch=True)
    try:
        tab = context.new_page()
        tab.goto(f"{base_url}/matches/{seeded_sqlite.done_match}")
        tab.wait_for_selector("#viewer.ready")
        # The table leads, with a compact row of step buttons right below it, all on the first
        # screen (the caption and the other controls follow); a tap steps.
        for selector in ("#felt", "[data-cmd=back]", "[data-cmd=play]", "[data-cmd=forward]"):
            box = tab.locator(selector).bounding_box()
            assert box and box["y"] >= 0 and box["y"] + box["height"] <= 844, selector
            assert box["x"] + box["width"] <= 390, selector
        felt, buttons = (tab.locator(s).bounding_box() for s in ("#felt", "#viewer .buttons"))
        assert felt and buttons
        assert felt["y"] + felt["height"] <= buttons["y"] <= felt["y"] + felt["height"] + 4
        assert tab.locator(".viewer-bar .buttons").bounding_box()["height"] <= 60  # one row
        for selector in ("#caption", "#timeline", "#hand-select"):
            box = tab.locator(selector).bounding_box()
            assert box and box["y"] >= buttons["y"] + buttons["height"] - 1, selector
        before = tab.locator("#caption").inner_text()
        tab.tap("[data-cmd=forward]")
        assert step_of(tab) == (0, 1) and tab.locator("#caption").inner_text() != before
        tab.tap('#hand-strip button[data-hand="2"]')
        assert step_of(tab) == (2, 0)
        # Every seat is reachable by scrolling down, side by side within the width.
        for seat in tab.locator("#felt .seat").all():
            seat.scroll_into_view_if_needed()
            box = seat.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390
    finally:
        context.close()


def test_the_ladder_page_follows_a_ladder_live_on_a_laptop_and_a_phone(browser: Any, tmp_path: Path) -> None:
    """The ladder page: its board, its recent matches with why each was scheduled, updating as
    the ladder goes on (no reload); it fits a laptop and a phone, targets a finger can hit."""
    import threading

    from helpers.dashboard_fixtures import OPERATOR_TOKEN
    from helpers.ladder import ladder_arena, play_pending, run_tick

    from dashboard.server import serve_in_thread

    url = f"sqlite:///{tmp_path / 'ladder.sqlite'}"
    ladder = ladder_arena(url, bots=4, rounds=2, target=4)
    server, thread = serve_in_thread(
        "127.0.0.1", 0, None, DATABASE_URL=url, OPERATOR_TOKEN=OPERATOR_TOKEN, TESTING=True,
        CACHE_REFRESH_SECONDS=0, CACHE_STALE_OK=False, PROGRESS_POLL_MS=250,
    )  # fmt: skip
    base = f"http://127.0.0.1:{server.server_port}"
    player: threading.Thread | None = None
    try:
        for width, height in ((1360, 900), (390, 844)):
            context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
            try:
                page = context.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
                page.goto(f"{base}/ladders/{ladder}")
                assert page.locator("table.ladder-board tbody tr").count() == 4
                reasons = page.locator("table.ladder-recent td.reason").all_inner_texts()
                assert reasons and "placement" in reasons
                if width <= 390:
                    check_phone_page(page, "/ladders/")
                else:
                    assert page.evaluate("document.documentElement.scrollWidth") <= width
                page.screenshot(path=str(SCREENSHOTS / f"ladder-{width}.png"))
                page.evaluate("window.tonkMarker = 7")  # gone if the page were reloaded
                first = page.locator("#counts").inner_text()

                def more() -> None:
                    for _ in range(3):
                        run_tick(url, ladder)
                        play_pending(url, ladder)

                player = threading.Thread(target=more, daemon=True)
                player.start()
                player.join(120)
                page.wait_for_function(
                    "t => document.getElementById('counts').innerText !== t", arg=first, timeout=10_000
                )
                assert page.locator("#ladder-live .live-dot").is_visible()
                assert page.evaluate("window.tonkMarker") == 7 and not errors
                # A bot's count opens its ladder matches, each with its reason.
                page.locator("table.ladder-board tbody tr:first-child td.num a").click()
                page.wait_for_selector("span.reason")
                assert f"tournament={ladder}" in page.url
            finally:
                context.close()
    finally:
        if player is not None:
            player.join(timeout=60)
        server.shutdown()
        thread.join(timeout=10)


def heuristic_vs_random_sprt(path: Path) -> tuple[str, int]:
    """A store at ``path`` with a sequential test of heuristic against random, not yet played
    (H1 after nine looks of 6 pairs: test_story_pages.py): its URL and the test's id."""
    from helpers.arena import SETTINGS, fix_deal_secret, hosted_bots

    from arena.store.db import session_scope
    from arena.tournaments.lifecycle import create_tournament
    from arena.tournaments.sprt import sprt_params

    url = f"sqlite:///{path}"
    heuristic, random = hosted_bots(url, ["heuristic", "random"])
    with session_scope(url) as session:
        fix_deal_secret(session)
        tid = create_tournament(
            session, name="Heuristic vs random", bot_ids=[heuristic, random], table_sizes=[2],
            deals_per_table=6, hands_per_match=6, seed=777, settings=SETTINGS, kind="sprt",
            sprt=sprt_params(0, 20, batch=6),
        ).id
    return url, tid


def test_a_sequential_tests_chart_follows_its_pairs_live(browser: Any, tmp_path: Path) -> None:
    """An SPRT page left open while the test plays: its LLR chart gains a point at each look
    and the verdict and headline come in at the end, all without a reload."""
    import threading
    import time
    from collections.abc import Collection, Sequence

    from helpers.arena import InlineBackend
    from helpers.dashboard_fixtures import OPERATOR_TOKEN

    from arena.runtime.driver import run_tournament
    from dashboard.server import serve_in_thread

    class PacedBackend(InlineBackend):
        """Plays each batch of pairs, then waits: the page polls every 0.25 s, so it sees each look."""

        def submit(self, match_ids: Sequence[int], *, replace: Collection[int] = ()) -> int:
            played = super().submit(match_ids, replace=replace)
            time.sleep(0.8)
            return played

    url, tid = heuristic_vs_random_sprt(tmp_path / 'sprt-live.sqlite')
    server, thread = serve_in_thread(
        "127.0.0.1", 0, None, DATABASE_URL=url, OPERATOR_TOKEN=OPERATOR_TOKEN, TESTING=True,
        CACHE_REFRESH_SECONDS=0, CACHE_STALE_OK=False, PROGRESS_POLL_MS=250,
    )
    context = browser.new_context(viewport={"width": 1360, "height": 900}, device_scale_factor=1)
    player: threading.Thread | None = None
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"http://127.0.0.1:{server.server_port}/tournaments/{tid}")
        assert page.locator("#sprt svg.sprt-chart").count() == 0  # no pair played yet
        assert "No pair of this test is scored yet" in page.locator("#sprt").inner_text()
        assert page.locator("#headline").count() == 0
        page.evaluate("window.tonkMarker = 5")  # gone if the page were reloaded
        player = threading.Thread(target=run_tournament, args=(url, tid, PacedBackend(url)), daemon=True)
        player.start()
        seen = set()
        deadline = time.monotonic() + 60
        while not page.locator("#t-status .status-finished").count() and time.monotonic() < deadline:
            seen.add(page.locator("#sprt svg.sprt-chart:visible .point").count())
            page.wait_for_timeout(100)
        assert page.locator("#t-status .status-finished").count() == 1
        # Heuristic against random: H1 after nine looks of 6 pairs (test_story_pages.py).
        assert page.locator("#sprt svg.sprt-chart:visible .point").count() == 9
        assert len(seen - {0, 9}) >= 2, seen  # the line grew look by look, as the pairs came in
        assert "better" in page.locator("#sprt .verdict").inner_text()
        assert page.locator("#result #headline").count() == 1
        assert page.evaluate("window.tonkMarker") == 5 and not errors
        check_layout(page, f"/tournaments/{tid}", 1360)
    finally:
        if player is not None:
            player.join(timeout=60)
        context.close()
        server.shutdown()
        thread.join(timeout=10)


def test_a_sequential_test_page_fits_both_widths(browser: Any, tmp_path: Path) -> None:
    """The SPRT page's LLR chart and a finished tournament's headline: no sideways scroll at
    390 px, chart text 11 px or more, at a phone's width and a laptop's."""
    from helpers.arena import InlineBackend
    from helpers.dashboard_fixtures import OPERATOR_TOKEN

    from arena.runtime.driver import run_tournament
    from dashboard.server import serve_in_thread

    url, tid = heuristic_vs_random_sprt(tmp_path / 'sprt.sqlite')
    run_tournament(url, tid, InlineBackend(url))
    server, thread = serve_in_thread("127.0.0.1", 0, None, DATABASE_URL=url, OPERATOR_TOKEN=OPERATOR_TOKEN,
                                     TESTING=True, CACHE_REFRESH_SECONDS=0, CACHE_STALE_OK=False)
    try:
        for width, height in ((390, 844), (1360, 900)):
            context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
            try:
                tab = context.new_page()
                path = f"/tournaments/{tid}"
                tab.goto(f"http://127.0.0.1:{server.server_port}{path}")
                assert tab.locator("#sprt svg.sprt-chart:visible").count() == 1
                assert tab.locator("#headline").count() == 1
                check_layout(tab, path, width)
                tab.screenshot(path=str(SCREENSHOTS / f"sprt-{width}.png"), full_page=True)
            finally:
                context.close()
    finally:
        server.shutdown()
        thread.join(timeout=10)
