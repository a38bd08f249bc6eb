"""Sequential tests (SPRT) in the browser: the LLR chart following a test's pairs live, look by
look, with the verdict and headline at the end; the finished page at a phone's and a laptop's
width."""

from __future__ import annotations

import queue
import threading
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers.arena import InlineBackend
from helpers.browser import check_layout, expect, fitting_chart, new_context, served

pytestmark = pytest.mark.browser


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


# The bound labels a bound line runs through: each label's box (as drawn) against the height
# of its line at every point across the label's width.
STRUCK = """svg => [...svg.querySelectorAll('text.bound-label')].filter(t => {
  const key = t.classList.contains('bound-label-upper') ? 'upper' : 'lower';
  const points = [...svg.querySelector('polyline.bound-' + key).points].map(p => [p.x, p.y]);
  const box = t.getBBox();
  const at = x => {
    for (let k = 1; k < points.length; k++) {
      const [x0, y0] = points[k - 1], [x1, y1] = points[k];
      if (x0 <= x && x <= x1) return x1 === x0 ? y0 : y0 + (y1 - y0) * (x - x0) / (x1 - x0);
    }
    return x < points[0][0] ? points[0][1] : points[points.length - 1][1];
  };
  for (let x = box.x; x <= box.x + box.width; x += 1) {
    const y = at(x);
    if (y >= box.y && y <= box.y + box.height) return true;
  }
  return false;
}).map(t => t.textContent)"""


class StopPlayingError(Exception):
    """The test ended before the tournament did: its player stops."""


class TurnBackend(InlineBackend):
    """Plays what it is given only when the test says so: first it hands the test the number of
    matches done so far (``turns``), and waits for the test to have seen the page show them
    (``resume``). The test and the player take turns, so the page is seen at every look,
    however slowly the machine runs."""

    def __init__(self, url: str):
        super().__init__(url)
        self.turns: queue.Queue[int] = queue.Queue()
        self.resume: queue.Queue[bool] = queue.Queue()

    def done(self) -> int:
        from sqlalchemy import func, select

        from arena.store.db import session_scope
        from arena.store.models import Match
        from arena.store.statuses import MatchStatus

        with session_scope(self.url) as session:
            return int(session.scalar(select(func.count()).where(Match.status == MatchStatus.DONE)) or 0)

    def submit(self, match_ids: Sequence[int], *, replace: Collection[int] = ()) -> int:
        if match_ids:
            self.turns.put(self.done())
            if not self.resume.get(timeout=600):  # a safety net: the test resumes or stops it
                raise StopPlayingError("the test stopped the tournament")
        return super().submit(match_ids, replace=replace)


def test_a_sequential_tests_chart_follows_its_pairs_live(browser: Any, tmp_path: Path) -> None:
    """An SPRT page left open while the test plays: its LLR chart gains a point at each look
    and the verdict and headline come in at the end, all without a reload."""
    from arena.runtime.driver import run_tournament

    url, tid = heuristic_vs_random_sprt(tmp_path / 'sprt-live.sqlite')
    backend = TurnBackend(url)
    failed: list[BaseException] = []

    def play() -> None:
        try:
            run_tournament(url, tid, backend)
        except BaseException as exc:  # reported by the test, which would otherwise wait in vain
            failed.append(exc)

    context = new_context(browser)
    player = threading.Thread(target=play, daemon=True)
    with served(url, PROGRESS_POLL_MS=250) as base:
        try:
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{base}/tournaments/{tid}")
            assert page.locator("#sprt svg.sprt-chart").count() == 0  # no pair played yet
            expect(page.locator("#sprt")).to_contain_text("No pair of this test is scored yet")
            assert page.locator("#headline").count() == 0
            page.evaluate("window.tonkMarker = 5")  # gone if the page were reloaded
            player.start()
            # Before each batch is played, the page is seen showing the matches done so far,
            # and its chart's points counted.
            seen = set()
            done = page.locator("#progress [data-field=done]")
            while player.is_alive() or not backend.turns.empty():
                try:
                    count = backend.turns.get(timeout=0.1)
                except queue.Empty:
                    continue
                expect(done).to_have_text(str(count))
                if page.locator("#sprt svg.sprt-chart").count():
                    seen.add(fitting_chart(page, "svg.sprt-chart", "#sprt").locator(".point").count())
                else:
                    seen.add(0)
                backend.resume.put(True)
            assert not failed, failed
            expect(page.locator("#t-status .status-finished")).to_have_count(1)
            # Heuristic against random: H1 after nine looks of 6 pairs (test_story_pages.py).
            expect(fitting_chart(page, "svg.sprt-chart", "#sprt").locator(".point")).to_have_count(9)
            assert len(seen - {0, 9}) >= 2, seen  # the line grew look by look, as the pairs came in
            expect(page.locator("#sprt .verdict")).to_contain_text("better")
            expect(page.locator("#result #headline")).to_have_count(1)
            assert page.evaluate("window.tonkMarker") == 5 and not errors
            check_layout(page, f"/tournaments/{tid}", 1360)
        finally:
            backend.resume.put(False)  # a player still waiting for its turn stops
            player.join(timeout=60)
            context.close()
    assert not player.is_alive()


def test_a_sequential_test_page_fits_both_widths(browser: Any, tmp_path: Path, screenshots: Path) -> None:
    """The SPRT page's LLR chart and a finished tournament's headline: no sideways scroll at
    390 px, chart text 11 px or more, at a phone's width and a laptop's."""
    from arena.runtime.driver import run_tournament

    url, tid = heuristic_vs_random_sprt(tmp_path / 'sprt.sqlite')
    run_tournament(url, tid, InlineBackend(url))
    with served(url) as base:
        for width, height in ((390, 844), (1360, 900)):
            context = new_context(browser, width, height)
            try:
                tab = context.new_page()
                path = f"/tournaments/{tid}"
                tab.goto(f"{base}{path}")
                # The verdict is what the page is for: on the first screen as it opens, at a
                # laptop's 1360 x 900 and a phone's 390 x 844 (issue #40, point 16).
                verdict = tab.locator("#sprt .verdict")
                expect(verdict).to_contain_text("better")
                box = verdict.bounding_box()
                assert box and box["y"] >= 0 and box["y"] + box["height"] <= height, (width, box)
                chart = fitting_chart(tab, "svg.sprt-chart", "#sprt")  # one of the widths it is drawn at
                assert not chart.evaluate(STRUCK), width
                expect(tab.locator("#headline")).to_have_count(1)
                check_layout(tab, path, width)
                tab.screenshot(path=str(screenshots / f"sprt-{width}.png"), full_page=True)
            finally:
                context.close()
