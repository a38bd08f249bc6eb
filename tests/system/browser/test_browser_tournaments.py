"""Tournaments in the browser: a finished one's matrix, the list, and the live pages (a running
tournament's page and the home page's "now showing") following the arena without a reload.

The live tests play the matches themselves, one at a time, and after each wait until the page
shows as many matches done as the store holds: what the page is seen to show does not depend
on how fast the machine polls."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers.browser import check_layout, expect, expect_step, new_context, served
from helpers.dashboard_fixtures import live_arena

if TYPE_CHECKING:
    from helpers.dashboard_fixtures import Seeded

pytestmark = pytest.mark.browser

SHADED = "table.matrix td.sig-none, table.matrix td.sig-significant, table.matrix td.sig-strong"


def done_in_store(url: str, tournament_id: int) -> int:
    from sqlalchemy import func, select

    from arena.store.db import session_scope
    from arena.store.models import Match
    from arena.store.statuses import MatchStatus

    with session_scope(url) as session:
        done = select(func.count()).where(Match.tournament_id == tournament_id,
                                          Match.status == MatchStatus.DONE)
        return int(session.scalar(done) or 0)


def test_tournament_page(page: Any, base_url: str, seeded_sqlite: Seeded, screenshots: Path) -> None:
    page.goto(f"{base_url}/tournaments/{seeded_sqlite.tournaments['spring']}")
    expect(page.locator(SHADED)).to_have_count(6)
    page.screenshot(path=str(screenshots / "tournament.png"), full_page=True)
    # A running tournament polls its progress from the API.
    page.goto(f"{base_url}/tournaments/{seeded_sqlite.tournaments['summer']}")
    with page.expect_response(lambda r: "/live?html=1" in r.url and r.status == 200):
        pass
    expect(page.locator("#progress .live-dot")).to_be_visible()


def test_the_tournaments_table_is_not_clipped_at_1360(page: Any, base_url: str) -> None:
    page.goto(base_url + "/tournaments/")
    wrap = page.locator(".table-wrap").first
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1360


def test_the_tournament_page_follows_a_tournament_live(browser: Any, tmp_path: Path) -> None:
    from sqlalchemy import select, update

    from arena.runtime.jobs import play_match_job
    from arena.store.db import session_scope
    from arena.store.models import Match, MatchSeat

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
    context = new_context(browser)
    with served(url, PROGRESS_POLL_MS=250) as base:
        try:
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{base}/tournaments/{tournament_id}")
            first = page.locator("#standings").inner_text()
            page.evaluate("window.tonkMarker = 42")  # gone if the page were reloaded
            running = page.locator("#running li")
            assert "2 of 6 hands" in running.inner_text() and "+3" in running.inner_text()
            # No deal is finished yet: nothing is showing (its first deal has a rotation running).
            assert page.locator("#now_showing a.watch").count() == 0

            # A match at a time, each seen on the page (its poll brings the count done and the
            # standings in one go) before the next is played.
            seen = {first}
            done = page.locator("#progress [data-field=done]")
            for match_id in matches:
                if match_id == last:  # its worker plays it on (a claim taking a running match
                    # over would deal it afresh, #37: here the shown score was staged)
                    with session_scope(url) as session:
                        staged = update(Match).where(Match.id == last)
                        session.execute(staged.values(status="pending", hands_played=0))
                assert play_match_job(match_id, url) == "done"
                expect(done).to_have_text(str(done_in_store(url, tournament_id)))
                seen.add(page.locator("#standings").inner_text())
            expect(page.locator("#t-status .status-finished")).to_have_count(1)
            assert len(seen) >= 3, seen  # the standings changed several times as matches finished
            expect(page.locator("#timing .finished-note")).to_have_text("finished")
            expect(page.locator("#progress [data-field=percent]")).to_have_text("100")
            expect(page.locator(SHADED)).to_have_count(6)
            expect(page.locator("#running li")).to_have_count(0)
            assert page.evaluate("window.tonkMarker") == 42 and not errors
            # The headline came in with the last poll, its closest hands linked to their moment.
            expect(page.locator("#result #headline")).to_have_count(1)
            expect(page.locator("#headline")).to_contain_text("How sure")
            closest = page.locator("#headline a[href*='#hand=']")
            assert closest.count() >= 1
            hand_link = closest.first.get_attribute("href")
            # The finished deals landed in "now showing" without a reload, newest first; a link
            # opens its replay playing.
            watch = page.locator("#now_showing a.watch")
            expect(watch).to_have_count(6)
            watch.first.click()
            page.wait_for_selector("#viewer.ready")
            page.wait_for_selector('#viewer [data-cmd="play"].playing')
            page.wait_for_function("() => !/step=0(&|$)/.test(location.hash)", polling=100)
            # A closest hand opens its replay at that hand's first step.
            page.goto(f"{base}{hand_link}")
            page.wait_for_selector("#viewer.ready")
            hand = int(hand_link.split("#hand=")[1].split("&")[0])
            expect_step(page, hand, 0)
            assert not errors
        finally:
            context.close()


def test_the_home_pages_now_showing_follows_the_arena_live(browser: Any, tmp_path: Path) -> None:
    """The home page's "now showing" brings in each deal as it is finished (no reload)."""
    from arena.runtime.jobs import play_match_job

    url = f"sqlite:///{tmp_path / 'home.sqlite'}"
    _, matches = live_arena(url)
    context = new_context(browser)
    with served(url, PROGRESS_POLL_MS=250) as base:
        try:
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{base}/")
            assert page.locator("#now_showing a.watch").count() == 0  # nothing played yet
            page.evaluate("window.tonkMarker = 9")  # gone if the page were reloaded
            for match_id in matches:
                assert play_match_job(match_id, url) == "done"
            expect(page.locator("#now_showing a.watch")).to_have_count(6)
            expect(page.locator("#now-showing-section .live-dot")).to_be_visible()
            assert page.locator("#now_showing").inner_text().startswith("Live Cup")  # its tournament named
            assert page.evaluate("window.tonkMarker") == 9 and not errors
            check_layout(page, "/", 1360)
        finally:
            context.close()

