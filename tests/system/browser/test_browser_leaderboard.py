"""The leaderboard and the bots' pages in the browser: the ratings, their charts (each drawn at
several widths, the one that fits shown) and the charts' text, and the API page's examples."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers.browser import expect, expect_step, fitting_chart, new_context

if TYPE_CHECKING:
    from helpers.dashboard_fixtures import Seeded

pytestmark = pytest.mark.browser


def test_leaderboard(page: Any, base_url: str, screenshots: Path) -> None:
    page.goto(base_url + "/")
    rows = page.locator("table.leaderboard tbody tr")
    expect(rows).to_have_count(4)
    assert rows.nth(0).locator("td").nth(0).inner_text() == "1"
    expect(fitting_chart(page, "svg.interval-chart").locator("g.bot")).to_have_count(3)
    expect(page.locator("table.leaderboard abbr.prov")).to_have_count(3)
    page.screenshot(path=str(screenshots / "leaderboard.png"), full_page=True)
    page.click("table.leaderboard tbody tr:first-child a.bot")
    page.wait_for_url(re.compile(r"/bots/[^/]+$"))
    # Its rating history, at the width that fits (while the new page's stylesheet was still
    # loading, every width showed: `:visible` found four).
    fitting_chart(page, "svg.history-chart")


def test_charts_and_their_text(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    # A match's chips per seat: a hand of the chart opens the replay there.
    page.goto(f"{base_url}/matches/{seeded_sqlite.done_match}")
    page.wait_for_selector("#viewer.ready")
    expect(page.locator("#chips-chart")).to_be_hidden()  # a spoiler until results are asked for
    page.check("#show-results")
    chart = fitting_chart(page, "svg.chips-chart", scope="#chips-chart")
    expect(chart.locator("polyline.series")).to_have_count(2)
    chart.locator('a.hand-link[href="#hand=3&step=0"]').click()
    expect_step(page, 3, 0)
    expect(page).to_have_url(re.compile(r"#hand=3&step=0&results=1$"))
    page.click("#chips-chart details.chart-text summary")
    expect(page.locator("#chips-chart details.chart-text tbody tr")).to_have_count(6)
    # A bot's distributions and recent matches; every bot's rating over time.
    page.goto(f"{base_url}/bots/lowball")
    assert page.locator("svg.chips-dist rect.bar").count() >= 1
    assert page.locator("svg.time-dist rect.bar").count() >= 1
    expect(page.locator("details.chart-text")).to_have_count(2)
    page.locator("table.recent-matches a.watch").first.click()
    page.wait_for_selector("#viewer.ready")
    expect_step(page, 0, 0)
    page.goto(base_url + "/")
    expect(fitting_chart(page, "svg.ratings-chart").locator("polyline.series")).to_have_count(3)
    expect(page.locator(".chart-legend li")).to_have_count(3)
    page.goto(base_url + "/api/")
    expect(page.locator("header.site nav a[aria-current=page]")).to_have_text("API")
    examples = page.eval_on_selector_all("table.api a", "els => els.map(e => e.getAttribute('href'))")
    assert len(examples) >= 12
    for href in examples:  # every example works on this arena
        assert page.request.get(base_url + href).status == 200, href


def test_a_phones_first_screen_shows_the_board(browser: Any, base_url: str) -> None:
    """At 390 x 844 the leaderboard leads with its table: its first rows are on the first
    screen, and the legend of what the numbers mean is folded (a <details>) below it, where
    before its four bullets filled the screen and only bot #1 showed (issue #40, point 11)."""
    context = new_context(browser, 390, 844)
    try:
        tab = context.new_page()
        tab.goto(base_url + "/")
        expect(tab.locator("table.leaderboard.stacks")).to_have_count(1)  # laid out as cards
        rows = tab.locator("table.leaderboard tbody tr")
        expect(rows).to_have_count(4)
        for k in (0, 1):
            box = rows.nth(k).bounding_box()
            assert box and box["y"] >= 0 and box["y"] + box["height"] <= 844, (k, box)
        legend = tab.locator("details.rating-legend")
        expect(legend).to_have_count(1)
        assert legend.get_attribute("open") is None
        expect(legend.locator("li").first).to_be_hidden()
        legend.locator("summary").click()
        expect(legend.locator("li").first).to_be_visible()
    finally:
        context.close()
