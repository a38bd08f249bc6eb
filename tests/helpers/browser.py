"""What the browser tests (tests/system/browser/) share: Chromium and its tabs, the dashboard
served on a free port, and the page checks more than one of their modules makes.

Every check waits for the state it checks, never for time: Playwright's ``expect`` (which
retries until ``PATIENCE_MS``), ``wait_for_function`` polling the page, or a step a test
drives itself. A busy machine makes the tests slower, never wrong; the patience is only how
long a page may take to get there before the test gives up.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from helpers.chromium import CHROMIUM_ARGS as CHROMIUM_ARGS  # the fixtures' import
from helpers.chromium import chromium_executable

# Without Playwright the browser tests skip (in CI the browser fixture fails instead).
sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

#: How long a page may take to reach the state a test waits for: generous, so a loaded machine
#: (the tests run beside busy loops and other xdist workers) is slow, not failing.
PATIENCE_MS = 60_000



def chromium_path() -> str:
    """Debian's Chromium (or TONK_CHROMIUM); nothing is downloaded. Missing, the tests skip
    locally and fail in CI."""
    path = chromium_executable()
    if path is None:
        message = "Chromium is not installed (apt-get install chromium); the browser tests need it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def new_context(browser: Any, width: int = 1360, height: int = 900, **options: Any) -> Any:
    """A browser context at ``width`` x ``height`` (one CSS pixel a device pixel), whose every
    action and wait may take ``PATIENCE_MS``."""
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1,
                                  **options)
    context.set_default_timeout(PATIENCE_MS)
    return context


@contextmanager
def served(url: str, **config: Any) -> Iterator[str]:
    """The dashboard over the store at ``url`` on a free port of 127.0.0.1 (no fixed port:
    tests run side by side), its caches off; ``config`` adds to its settings. Its base URL."""
    from dashboard.server import serve_in_thread
    from helpers.dashboard_fixtures import OPERATOR_TOKEN

    server, thread = serve_in_thread(
        "127.0.0.1", 0, None, DATABASE_URL=url, OPERATOR_TOKEN=OPERATOR_TOKEN, TESTING=True,
        CACHE_REFRESH_SECONDS=0, CACHE_STALE_OK=False, **config,
    )
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()  # its listening socket too: a session serves many of these


# -- the replay viewer -------------------------------------------------------------------------


def cards_of(page: Any, seat: int) -> list[str]:
    cards: list[str] = page.eval_on_selector_all(
        f'#felt .hand-cards[data-seat="{seat}"] svg.card', "els => els.map(e => e.dataset.card)"
    )
    return cards


def step_of(page: Any) -> tuple[int, int]:
    """The hand and step the viewer shows now (for a moment it has already reached)."""
    felt = page.locator("#felt")
    return int(felt.get_attribute("data-hand")), int(felt.get_attribute("data-step"))


def expect_step(page: Any, hand: int, step: int, message: str | None = None) -> None:
    """Wait until the viewer shows ``hand`` and ``step`` (it draws a moment in one go, so the
    rest of the table is that moment's too once these are)."""
    felt = page.locator("#felt")
    expect(felt, message).to_have_attribute("data-hand", str(hand))
    expect(felt, message).to_have_attribute("data-step", str(step))


def showcase(base_url: str) -> tuple[int, int, int]:
    """A 3-seat match of the seeded arena, and a hand and step of it with melds on the table:
    for the screenshot."""
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


# -- charts ------------------------------------------------------------------------------------

# The width the page's stylesheet shows a chart at (dashboard/charts.py draws it at every one of
# WIDTHS; static/css/spectator.css shows the widest that fits its box's content): null until the
# stylesheet applies (before, every width shows) and the box is laid out.
_FITTING_WIDTH = """([scope, chart, widths]) => {
  const boxes = [...document.querySelectorAll(scope + ' .chart-sizes')].filter(b => b.querySelector(chart));
  if (boxes.length !== 1) return null;
  const box = boxes[0], style = getComputedStyle(box), rect = box.getBoundingClientRect();
  if (style.containerType !== 'inline-size' || rect.width === 0) return null;
  const inner = rect.width - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)
    - parseFloat(style.borderLeftWidth) - parseFloat(style.borderRightWidth);
  return widths.filter(w => w <= inner).pop() || widths[0];
}"""


def fitting_chart(page: Any, chart: str, scope: str = "main") -> Any:
    """The drawing of ``chart`` (an ``svg.<kind>-chart`` selector, the only one of its kind in
    ``scope``) the page shows: picked by the width class its box's width calls for, and checked
    shown while the other widths are hidden. Not ``:visible``, which matches every width while
    the stylesheet is still loading (a tab just navigated) and so picks several."""
    from dashboard.charts import WIDTHS

    width = page.wait_for_function(_FITTING_WIDTH, arg=[scope, chart, list(WIDTHS)]).json_value()
    for other in WIDTHS:
        if other != width:
            expect(page.locator(f"{scope} .chart-size.w{other} {chart}")).to_be_hidden()
    shown = page.locator(f"{scope} .chart-size.w{width} {chart}")
    expect(shown).to_be_visible()
    return shown


# -- layout at a width -------------------------------------------------------------------------

# The tables static/js/tables.js has not labelled yet (it labels a table swapped in by a live
# page at the next animation frame): until then a table is not stacked on a phone.
_UNLABELLED = "main table:has(> thead > tr):not(.stacks)"

# What a finger must be able to hit: controls, the navigation, links in lists and tables.
TARGETS = ("header.site a, main button, main select, main input, .pager a, main table a, .hand-strip button,"
           " .tables-grid a, .crumbs a")

# The page's width and the targets under 44 px, measured once every table is labelled.
_PHONE = """([targets, unlabelled]) => {
  if (document.querySelector(unlabelled)) return null;
  const small = [...document.querySelectorAll(targets)]
    .filter(e => e.offsetParent !== null && getComputedStyle(e).visibility !== 'hidden')
    // A checkbox or a radio button is hit through its label.
    .map(e => (e.type === 'checkbox' || e.type === 'radio') && e.closest('label') || e)
    .map(e => [e.outerHTML.slice(0, 80), e.getBoundingClientRect()])
    .map(([html, r]) => [html, r.width, r.height])
    .filter(([_, w, h]) => w < 44 || h < 44);
  return {width: document.documentElement.scrollWidth, small};
}"""


def check_phone_page(tab: Any, path: str) -> None:
    seen = tab.wait_for_function(_PHONE, arg=[TARGETS, _UNLABELLED]).json_value()
    assert seen["width"] <= 390, (path, seen["width"])
    assert not seen["small"], (path, seen["small"][:5])


# What a page shows at a width, measured in the browser (once every table is labelled): how
# wide the page is, the tables whose box scrolls sideways (a column cut off), chart text
# smaller than 11 px as drawn, and charts wider than their box (drawn for another width and
# scrolled).
LAYOUT = """(unlabelled) => {
  if (document.querySelector(unlabelled)) return null;
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
    seen = tab.wait_for_function(LAYOUT, arg=_UNLABELLED).json_value()
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

