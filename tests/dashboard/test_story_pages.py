"""The story on the tournament page: a sequential test with a known result drawn as its LLR
line between its bounds with the Elo estimate, a finished tournament's headline, and the
time left naming its bottleneck bot."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flask import Flask, get_template_attribute
from helpers.arena import SETTINGS, InlineBackend, fix_deal_secret, hosted_bots

from arena.queries.tournaments import tournament_detail
from arena.runtime.driver import run_tournament
from arena.store.db import dispose_engines, session_scope
from arena.tournaments.lifecycle import create_tournament
from arena.tournaments.sprt import sprt_params


def test_a_sequential_test_draws_its_llr_line_to_the_verdict(
    sqlite_url: str, app_factory: Callable[..., Flask]
) -> None:
    # Heuristic against random, 6 pairs a look: H1 after 54 pairs (tests/arena/tournaments/
    # test_sprt.py plays the same test), so nine looks, the last one over the upper bound.
    heuristic, random = hosted_bots(sqlite_url, ["heuristic", "random"])
    with session_scope(sqlite_url) as session:
        fix_deal_secret(session)
        tid = create_tournament(
            session, name="test", bot_ids=[heuristic, random], table_sizes=[2], deals_per_table=6,
            hands_per_match=6, seed=777, settings=SETTINGS, kind="sprt", sprt=sprt_params(0, 20, batch=6),
        ).id
    run_tournament(sqlite_url, tid, InlineBackend(sqlite_url))
    with session_scope(sqlite_url) as session:
        test: dict[str, Any] = tournament_detail(session, sqlite_url, tid)["sprt"]
    points = test["history"]["points"]
    assert test["verdict"] == "H1" and test["pairs"] == 54
    assert [p["pairs"] for p in points] == list(range(0, 55, 6))
    assert points[-1]["llr"] == test["llr"] and points[-1]["upper"] == test["upper"]
    assert points[-1]["llr"] >= points[-1]["upper"]
    # It went on until then: no earlier look was past either bound. The bounds are fixed
    # (issue #38): the same at every look, the ones the state and `tonk sprt` show.
    assert all(p["lower"] < p["llr"] < p["upper"] for p in points[1:-1]), points
    fixed = {(test["lower"], test["upper"])}
    assert {(p["lower"], p["upper"]) for p in points} == fixed == {(-2.9957, 2.9957)}
    elo = test["estimate"]  # the state's (arena/tournaments/sprt.py, sdk.compare.elo_estimate)
    assert elo["pairs"] == 54 and 0 < elo["low"] < elo["elo"] < elo["high"], elo

    app = app_factory(sqlite_url)
    page = app.test_client().get(f"/tournaments/{tid}").get_data(as_text=True)
    assert "<meter" not in page
    sizes = re.findall(r'<svg class="chart sprt-chart" viewBox="0 0 (\d+) ', page)
    assert sizes == ["380", "540", "760", "1100"]
    first = page.split('<svg class="chart sprt-chart"')[1].split("</svg>")[0]
    assert first.count('class="point"') == 9  # one dot a look after the start
    assert 'class="bound bound-upper"' in first and 'class="bound bound-lower"' in first
    assert "Estimate from the pairs so far" in page
    dispose_engines()


def test_the_finished_page_has_its_headline(client: Any, seeded: Any) -> None:
    page = client.get(f"/tournaments/{seeded.tournaments['spring']}").get_data(as_text=True)
    assert 'id="headline"' in page and "How sure" in page and "Biggest swings" in page
    # The closest hands link to their replay at that hand (the viewer restores it from the URL).
    links = re.findall(r'<a href="/matches/(\d+)#hand=(\d+)&amp;step=0">match (\d+), hand (\d+)</a>',
                       page.split("Closest hands:")[1].split("</p>")[0])
    assert links and all(m == shown and int(h) + 1 == int(n) for m, h, shown, n in links), links
    running = client.get(f"/tournaments/{seeded.tournaments['summer']}").get_data(as_text=True)
    assert 'id="headline"' not in running


def test_time_left_names_its_bottleneck(app: Flask) -> None:
    with app.test_request_context():
        shown = str(get_template_attribute("_live.html", "timing")({
            "elapsed_s": 754, "hands_per_min": 12.0, "eta_s": 1260, "finished": False,
            "bottleneck": {"bot": "search", "matches_left": 7, "capacity": 1, "match_s": 180.0,
                           "seconds": 1260},
        }))
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", shown))
    said = ("Time left about 21 min 00 s (held up by search: 7 matches left, 1 at a time, "
            "about 3 min 00 s each)")
    assert said in text, text
