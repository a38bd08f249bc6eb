"""The spectator's SVG charts (dashboard/charts_spectator.py): what they draw, their text
equivalents, and their limits on big inputs."""

from __future__ import annotations

import re

from dashboard.charts_spectator import (
    RATED_TOURNAMENTS,
    SERIES,
    bot_distributions,
    chips_bins,
    match_chips_chart,
    ratings_chart,
    time_bins,
)


def test_match_chips_chart_links_every_hand_to_the_replay() -> None:
    payoffs = [[2, -1, -1], [-2, 4, -2], [1, 1, -2]]
    svg = str(match_chips_chart(["a", "b<c", "d"], payoffs))
    assert [int(k) for k in re.findall(r'href="#hand=(\d+)&amp;step=0"', svg)] == [0, 1, 2]
    assert svg.count('<polyline class="series') == 3
    assert "b&lt;c" in svg and "b<c" not in svg  # names are escaped
    rows = re.findall(r"<tr><td>(\d+)</td>(.*?)</tr>", svg)
    assert [r[0] for r in rows] == ["1", "2", "3"]
    # Hand 3: each seat's payment, then its running score (b: -1, +4, +1).
    assert rows[2][1] == "<td>+1 (+1)</td><td>+1 (+4)</td><td>\u22122 (\u22125)</td>"
    assert str(match_chips_chart([], [])) == ""


def test_bins() -> None:
    assert chips_bins([]) == [] and time_bins([]) == []
    bins = [("\u22122", 1), ("\u22121", 0), ("0", 2), ("+1", 0), ("+2", 0), ("+3", 1)]
    assert chips_bins([-2, 0, 0, 3]) == bins
    wide = chips_bins(list(range(-100, 101)))
    assert len(wide) <= 21 and sum(c for _, c in wide) == 201
    assert time_bins([0.03, 0.3, 0.3, 3000.0])[0] == ("<0.05", 1)
    assert time_bins([0.03, 0.3, 0.3, 3000.0])[-1] == ("\u22652000", 1)
    page = str(bot_distributions([1, -1, 2], [0.1, 0.2, 0.3]))
    assert page.count("<svg") == 2 and page.count('class="chart-text"') == 2
    assert "No finished matches" in str(bot_distributions([], []))


def test_ratings_chart_keeps_to_the_latest_tournaments_and_best_bots() -> None:
    history = [
        {"tournament": f"T{t}", "order": t, "bot": f"bot{b}", "elo": 1500 + 10 * b + t}
        for t in range(60) for b in range(12)
    ]
    svg = str(ratings_chart(history))
    assert svg.count('<polyline class="series') == SERIES
    assert "bot11" in svg and "bot0<" not in svg and ">bot0<" not in svg
    assert len(re.findall(r"<tr><td>T\d+</td>", svg)) == RATED_TOURNAMENTS
    assert "<td>T59</td>" in svg and "<td>T19</td>" not in svg
    assert "No rating history" in str(ratings_chart([]))
