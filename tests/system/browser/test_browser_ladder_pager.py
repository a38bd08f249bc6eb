"""A big ladder's board in the browser: its pager opens the next page, and the page's poll
goes on there (304s while nothing changes, the change brought in when a match is added,
still for the page the tab shows)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers.bench_modules import bench_module
from helpers.browser import expect, served
from helpers.paths import ROOT
from sqlalchemy import insert, select

from arena.store.db import session_scope
from arena.store.models import Bot, BotVersion, Match, MatchSeat
from arena.store.statuses import MatchStatus

pytestmark = pytest.mark.browser


def test_the_ladder_pager_and_its_poll(page: Any, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'big.sqlite'}"
    with bench_module(ROOT / "bench" / "dashboard.py", "bench_dashboard_pager") as bench:
        ladder = bench.big_ladder(url, 60, matches_per_bot=12)  # 50 rows a page: 2 pages
    with served(url, PROGRESS_POLL_MS=250) as base:
        # The page's first poll sends the ETag the page was rendered with: a 304, nothing swapped.
        with page.expect_response(lambda r: "/live?" in r.url) as first:
            page.goto(f"{base}/ladders/{ladder}")
        assert first.value.status == 304
        rows = page.locator("table.ladder-board tbody tr")
        expect(rows).to_have_count(50)
        page.locator("#board a[rel=next]").click()
        expect(page).to_have_url(re.compile(rf"/ladders/{ladder}\?page=2$"))
        expect(rows).to_have_count(10)
        expect(page.locator("#board .pager-where")).to_contain_text("Rows 51\u201360 of 60")
        shown = [name.strip() for name in page.locator("table.ladder-board a.bot").all_inner_texts()]
        # Nothing changes: the poll is answered 304, and the page stays as it is.
        with page.expect_response(lambda r: "/live?" in r.url and r.status == 304):
            pass
        # A match is added for two bots of this page: the poll brings it in, on this page.
        with session_scope(url) as session:
            seated = list(session.execute(
                select(Bot.id, BotVersion.id).join(BotVersion, BotVersion.bot_id == Bot.id)
                .where(Bot.name.in_(shown[:2]))
            ))  # fmt: skip
            match_id = session.execute(
                insert(Match).values(tournament_id=ladder, key="added", table_index=9999, deal_index=0,
                                     rotation=0, seed=1, hands=1, status=MatchStatus.PENDING)
            ).inserted_primary_key[0]  # fmt: skip
            session.execute(insert(MatchSeat), [
                {"match_id": match_id, "seat": k, "bot_id": b, "bot_version_id": v}
                for k, (b, v) in enumerate(seated)
            ])  # fmt: skip
        expect(page.locator('#counts [data-field="pending"]')).to_have_text("1")
        expect(page.locator("table.ladder-board td.num a .small")).to_have_count(2)  # their "+1"
        assert [name.strip() for name in page.locator("table.ladder-board a.bot").all_inner_texts()] == shown
        expect(page).to_have_url(re.compile(r"\?page=2$"))  # no reload, no other page
        page.goto("about:blank")  # the poll stops before the server does
