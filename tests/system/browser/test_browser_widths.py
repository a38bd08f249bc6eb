"""Every page of the dashboard at a phone's width and a laptop's (the committed screenshots:
``<page>-390.png`` and ``<page>-1360.png``), and a crowded arena (long names, six seats, seven
bots, 21 tables) at both: no sideways scroll, no clipped column, readable charts, targets a
finger can hit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers.browser import check_page, expect, fitting_chart, new_context, served

if TYPE_CHECKING:
    from helpers.dashboard_fixtures import Seeded

pytestmark = pytest.mark.browser


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


def visit_every_page(browser: Any, base_url: str, seeded: Seeded, width: int, height: int,
                     screenshots: Path) -> None:
    """Each page at this size: no page wider than the screen, no script error, no clipped
    column, readable charts, and (at phone width) targets a finger can hit; its first screen
    saved as ``<page>-<width>.png``."""
    context = new_context(browser, width, height)
    try:
        tab = context.new_page()
        errors: list[str] = []
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
        for name, path in every_page(seeded).items():
            check_page(tab, base_url, path, width)
            tab.screenshot(path=str(screenshots / f"{name}-{width}.png"))  # the first screen: small files
        assert not errors
    finally:
        context.close()


def test_every_page_fits_a_phone(browser: Any, base_url: str, seeded_sqlite: Seeded,
                                 screenshots: Path) -> None:
    visit_every_page(browser, base_url, seeded_sqlite, 390, 844, screenshots)


def test_every_page_at_a_laptop_width(browser: Any, base_url: str, seeded_sqlite: Seeded,
                                      screenshots: Path) -> None:
    visit_every_page(browser, base_url, seeded_sqlite, 1360, 900, screenshots)


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
    url = f"sqlite:///{tmp_path_factory.mktemp('crowded') / 'arena.sqlite'}"
    pages = crowded_arena(url)
    with served(url) as base:
        yield base, pages


def colour_distance(a: str, b: str) -> float:
    """How far apart two CSS ``rgb(r, g, b)`` colours are (0 the same, 441 black and white)."""
    pa, pb = ([int(v) for v in c[c.index("(") + 1:-1].split(",")[:3]] for c in (a, b))
    return float(sum((x - y) ** 2 for x, y in zip(pa, pb, strict=True)) ** 0.5)


@pytest.mark.parametrize("width,height", [(1360, 900), (390, 844)])
def test_a_crowded_arena_fits_both_widths(browser: Any, crowded: tuple[str, dict[str, str]],
                                          width: int, height: int, scratch: Path) -> None:
    """Long names, six seats, seven bots, 21 tables: no clipped column, readable charts, the
    running tournament's tables folded, seven rating lines told apart."""
    base, pages = crowded
    context = new_context(browser, width, height)
    try:
        tab = context.new_page()
        errors: list[str] = []
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
        for name, path in pages.items():
            check_page(tab, base, path, width)
            # Not among the committed screenshots: a scratch folder, to look at when it fails.
            tab.screenshot(path=str(scratch / f"crowded-{name}-{width}.png"))
        # A tournament's tables fold away (21 cards were a wall of them on a phone).
        tab.goto(base + pages["running"])
        folded = tab.locator("details.tables-fold")
        assert folded.count() == 1 and folded.get_attribute("open") is None
        assert tab.evaluate("document.documentElement.scrollHeight") <= 2 * height  # was 5,156 px
        expect(tab.locator(".tables-grid .card-box").first).to_be_hidden()
        folded.locator("summary").click()
        expect(tab.locator(".tables-grid .card-box")).to_have_count(21)
        expect(tab.locator(".tables-grid .card-box").first).to_be_visible()
        # Seven bots over time: colours far apart, and each line named at its end.
        tab.goto(base + "/")
        chart = fitting_chart(tab, "svg.ratings-chart")  # one of the widths it is drawn at
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
