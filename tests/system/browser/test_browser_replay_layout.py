"""The replay's layout in the browser: all of it on one laptop screen (a 3-seat table and the
most crowded, six seats with the most melds out), every control named, and on a phone the
table first with its step buttons right below."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers.browser import expect, expect_step, new_context, served, showcase

if TYPE_CHECKING:
    from helpers.dashboard_fixtures import Seeded

pytestmark = pytest.mark.browser


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


def test_the_replay_fits_one_laptop_screen(page: Any, base_url: str) -> None:
    match_id, hand, step = showcase(base_url)
    page.goto(f"{base_url}/matches/{match_id}#hand={hand}&step={step}")
    page.wait_for_selector("#viewer.ready")
    expect_step(page, hand, step)
    assert page.locator("#felt .meld").count() >= 1
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


def test_a_six_seat_replay_fits_one_screen(browser: Any, tmp_path: Path, screenshots: Path) -> None:
    """The most crowded table: six seats, and the moment with the most melds out."""
    import json
    import urllib.request

    from sqlalchemy import select

    from arena.bots.owners import get_or_create_operator
    from arena.bots.registry import host_bot
    from arena.config import Settings
    from arena.runtime.jobs import play_match_job
    from arena.store.db import session_scope
    from arena.store.models import Match
    from arena.tournaments.lifecycle import create_tournament, start_tournament

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
    context = new_context(browser)
    with served(url) as base:
        try:
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
            expect_step(page, h, k)
            expect(page.locator("#felt .seat")).to_have_count(6)
            assert page.locator("#felt .meld").count() == melds >= 1
            assert_replay_fits(page)
            page.keyboard.press("End")  # the settlement: every seat's payment shown too
            expect(page.locator("#felt .payoff")).to_have_count(6)
            assert_replay_fits(page)
            page.screenshot(path=str(screenshots / "replay-six-seats.png"))
        finally:
            context.close()


def test_the_replay_is_usable_on_a_phone(browser: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    context = new_context(browser, 390, 844, has_touch=True)
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
        # Wait for the step a tap makes (its click follows the touch events), not for the tap.
        tab.tap("[data-cmd=forward]")
        expect_step(tab, 0, 1)
        assert tab.locator("#caption").inner_text() != before
        tab.tap('#hand-strip button[data-hand="2"]')
        expect_step(tab, 2, 0)
        # Every seat is reachable by scrolling down, side by side within the width.
        for seat in tab.locator("#felt .seat").all():
            seat.scroll_into_view_if_needed()
            box = seat.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390
    finally:
        context.close()


def _dealer_to_play(base_url: str) -> tuple[int, int, int]:
    """A match, hand and step of the seeded arena where the dealer is the seat to play, in a
    two-seat match (each seat alone on its row: its head is as narrow as a phone makes it)."""
    import json
    import urllib.error
    import urllib.request

    with urllib.request.urlopen(f"{base_url}/api/v1/matches?per_page=100&status=done") as r:
        matches = json.load(r)["matches"]
    for m in matches:
        if len(m["seats"]) != 2:
            continue
        try:
            with urllib.request.urlopen(f"{base_url}/api/v1/matches/{m['id']}/steps") as r:
                hands = json.load(r)["hands"]
        except urllib.error.HTTPError:  # 409: a deal with a seat order still to play is withheld
            continue
        for h, hand in enumerate(hands):
            for s, step in enumerate(hand.get("steps", [])):
                if step.get("to_act") is not None and step["to_act"] == hand.get("dealer"):
                    return m["id"], h, s
    raise AssertionError("no step with the dealer to play in the seeded arena")


def test_a_seat_name_is_never_cut_on_a_phone(browser: Any, base_url: str) -> None:
    """At 390 px a seat showing both DEALER and TO PLAY cut its bot's name to "s." (issue #40,
    point 15): the name is shown whole, the chips going under it when they do not fit; and
    the lede's "seating" says what it is."""
    match_id, hand, step = _dealer_to_play(base_url)
    context = new_context(browser, 390, 844)
    try:
        tab = context.new_page()
        tab.goto(f"{base_url}/matches/{match_id}#hand={hand}&step={step}")
        tab.wait_for_selector("#viewer.ready")
        head = tab.locator("#felt .seat-head:has(.chip.dealer):has(.chip.turn)")
        expect(head).to_have_count(1)
        name = head.locator(".name")
        sizes = name.evaluate("e => [e.scrollWidth, e.clientWidth, e.getBoundingClientRect().width]")
        assert sizes[0] <= sizes[1] and sizes[2] > 0, sizes
        text = name.inner_text()
        assert text and name.evaluate("e => e.textContent") == text  # no ellipsis, nothing hidden
        seating = tab.locator(".lede abbr.seating")
        assert "seat order" in (seating.get_attribute("title") or ""), seating.get_attribute("title")
    finally:
        context.close()
