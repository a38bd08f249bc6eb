"""Ladders in the browser: a ladder's page followed live while the ladder goes on, at a laptop's
width and a phone's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import check_phone_page, expect, new_context, served

pytestmark = pytest.mark.browser


def test_the_ladder_page_follows_a_ladder_live_on_a_laptop_and_a_phone(
    browser: Any, tmp_path: Path, screenshots: Path
) -> None:
    """The ladder page: its board, its recent matches with why each was scheduled, updating as
    the ladder goes on (no reload); it fits a laptop and a phone, targets a finger can hit."""
    from helpers.ladder import ladder_arena, play_pending, run_tick

    from arena.ladder.lease import give_up, lease_name
    from arena.store.db import session_scope

    url = f"sqlite:///{tmp_path / 'ladder.sqlite'}"
    ladder = ladder_arena(url, bots=4, rounds=2, target=4)
    with served(url, PROGRESS_POLL_MS=250) as base:
        for width, height in ((1360, 900), (390, 844)):
            context = new_context(browser, width, height)
            try:
                page = context.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
                page.goto(f"{base}/ladders/{ladder}")
                expect(page.locator("table.ladder-board tbody tr")).to_have_count(4)
                reasons = page.locator("table.ladder-recent td.reason").all_inner_texts()
                assert reasons and "placement" in reasons
                if width <= 390:
                    check_phone_page(page, "/ladders/")
                else:
                    assert page.evaluate("document.documentElement.scrollWidth") <= width
                page.screenshot(path=str(screenshots / f"ladder-{width}.png"))
                page.evaluate("window.tonkMarker = 7")  # gone if the page were reloaded
                first = page.locator("#counts").inner_text()
                # The ladder goes on (played here, while the page polls on its own)...
                for _ in range(3):
                    run_tick(url, ladder)
                    play_pending(url, ladder)
                # ...and the page brings its new counts in.
                page.wait_for_function("t => document.getElementById('counts').innerText !== t", arg=first)
                expect(page.locator("#ladder-live .live-dot")).to_be_visible()
                assert page.evaluate("window.tonkMarker") == 7 and not errors
                # Its scheduler stops: the badge says so as the page polls (it said "running").
                expect(page.locator("#l-status .status")).to_have_text("running")
                with session_scope(url) as session:
                    give_up(session, lease_name(ladder), "me")
                expect(page.locator("#l-status .status")).to_have_text("stopped")
                expect(page.locator("#counts")).to_contain_text("no scheduler")
                run_tick(url, ladder)  # ...and it is running again once one takes it
                expect(page.locator("#l-status .status")).to_have_text("running")
                # A bot's count opens its ladder matches, each with its reason.
                page.locator("table.ladder-board tbody tr:first-child td.num a").click()
                page.wait_for_selector("span.reason")
                expect(page).to_have_url(re.compile(rf"tournament={ladder}(&|$)"))
            finally:
                context.close()
