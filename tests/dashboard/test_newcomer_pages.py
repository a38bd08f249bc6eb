"""What a newcomer reads on the spectator's pages without guessing (issue #40, points 11-18):
one-sided bounds that do not read as ratings, the replay's "seating", the live tournament's
notes in plain words, the ladder's state and who really plays, and every rated bot over time."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

from flask import Flask, render_template_string

from dashboard.charts import interval_chart


def _rating(elo: float, low: float | None, high: float | None, text: str) -> dict[str, Any]:
    basis = "one-sided" if low is None or high is None else "pool"
    return {"elo": elo, "low": low, "high": high, "text": text, "provisional": True,
            "why_provisional": "one-sided record", "basis": basis}


def test_a_one_sided_bound_is_said_in_words_not_shown_as_a_rating(app_factory: Any, tmp_path: Path) -> None:
    """Rank 7 "≤ 1516" read higher than ranks 4-6 (issue #40, point 12): a bound is now words
    ("beat nobody yet") with the number muted beside them, never the bold rating figure; the
    chart draws it as an open bar with no dot."""
    app: Flask = app_factory(f"sqlite:///{tmp_path / 'a.sqlite'}")
    source = '{% from "_macros.html" import rating %}{{ rating(r) }}'
    with app.test_request_context("/"):
        lower = render_template_string(source, r=_rating(1516, None, 1516, "\u2264 1516"))
        upper = render_template_string(source, r=_rating(1890, 1890, None, "\u2265 1890"))
        rated = render_template_string(source, r=_rating(1480, 1400, 1560, "1480 [1400, 1560]"))
    assert "beat nobody yet" in lower and 'class="elo' not in lower
    assert re.search(r'<span class="ci bound">\u2264 1516</span>', lower)
    assert "beat everyone so far" in upper and 'class="elo' not in upper
    assert '<span class="elo">1,480</span>' in rated and "bound" not in rated
    rows = [{"bot": "four", "rating": _rating(1480, 1400, 1560, "")},
            {"bot": "seven", "rating": _rating(1516, None, 1516, "\u2264 1516")}]
    svg = str(interval_chart(rows)).split('<div class="chart-size w760">')[1]
    four, seven = svg.split('<g class="bot')[1:3]
    assert 'class="point"' in four and 'class="point"' not in seven
    assert 'class="interval open"' in seven


def test_the_sprt_charts_bound_labels_clear_their_lines() -> None:
    """A test recorded before the bounds were fixed (issue #38) has bounds that move from look
    to look: a label placed by the line's last height was struck through by the line where it
    starts (issue #40, point 16). Each label now clears its line all along its width, at every
    width the chart is drawn at."""
    from dashboard.charts import CHAR, WIDTHS, sprt_chart

    points = [{"pairs": 6 * k, "llr": 0.3 * k, "lower": -3.6 + 0.08 * k, "upper": 3.6 - 0.08 * k}
              for k in range(9)]
    last = points[-1]
    test = {"history": {"points": points}, "llr": last["llr"], "pairs": last["pairs"],
            "lower": last["lower"], "upper": last["upper"]}
    drawn = str(sprt_chart(test))
    for width in WIDTHS:
        svg = drawn.split(f'<div class="chart-size w{width}">')[1].split("</svg>")[0]
        for key, name in (("upper", "H1"), ("lower", "H0")):
            line = [tuple(map(float, p.split(","))) for p in
                    re.search(rf'class="bound bound-{key}" points="([^"]+)"', svg)[1].split()]  # type: ignore[index]
            label = re.search(rf'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(accept {name} [^<]+)<',
                              svg)
            assert label, (width, key)
            x0, base, text = float(label[1]), float(label[2]), label[3]
            top, foot = base - 11, base + 3  # 13-unit text: its ascent and descent
            for x in range(int(x0), int(x0 + len(text) * CHAR) + 1):
                y = next(y0 + (y1 - y0) * (x - a) / (b - a) for (a, y0), (b, y1) in itertools.pairwise(line)
                         if a <= x <= b)
                assert not top <= y <= foot, (width, key, x, y, base)


def test_bots_rated_only_on_a_ladder_are_in_the_ratings_over_time(app_factory: Any, tmp_path: Path) -> None:
    """A ladder never finishes, so its matches never made a snapshot: a bot rated only there
    was missing from the ratings over time (issue #40, point 18). The chart ends with the
    board as it is now whenever that moved since the last snapshot."""
    from helpers.ladder import ladder_arena

    url = f"sqlite:///{tmp_path / 'ladder.sqlite'}"
    ladder_arena(url, bots=3, rounds=3)
    client = app_factory(url).test_client()
    rows = client.get("/api/v1/leaderboard").get_json()["leaderboard"]
    rated = {r["bot"] for r in rows if r.get("rating") and r["rating"]["low"] is not None
             and r["rating"]["high"] is not None}
    assert rated, rows  # the ladder rated someone: the test means something
    page = client.get("/").get_data(as_text=True)
    chart = page[page.index("<h2>Ratings over time</h2>"):]
    assert "No rating history yet" not in chart
    assert 'class="chart ratings-chart"' in chart and ">now<" in chart
    for bot in rated:
        assert f"<title>{bot}</title>" in chart, bot


def test_a_tournaments_subtitle_says_how_cards_were_dealt(app_factory: Any, tmp_path: Path) -> None:
    """The subtitle on duplicate dealing was jargon ("in duplicate (balanced seat orders) where
    the arena hosts every bot fresh, else each seat rotation dealt its own cards": issue #40,
    point 17): it says what happens to the cards, and why in its title."""
    from helpers.dashboard_fixtures import live_arena

    url = f"sqlite:///{tmp_path / 'live.sqlite'}"
    tournament_id, _ = live_arena(url)
    page = app_factory(url).test_client().get(f"/tournaments/{tournament_id}").get_data(as_text=True)
    lede = page[page.index('<p class="lede">'):]
    lede = lede[:lede.index("</p>")]
    assert "each replayed from every seat where the arena runs all the bots itself" in lede
    assert "balanced seat orders" not in lede and "rotation" not in lede
    assert re.search(r'<span class="dealing" title="[^"]*luck of the deal evens out[^"]*">', lede)
