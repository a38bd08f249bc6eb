"""The spectator's SVG charts (dashboard/charts_spectator.py): what they draw, their text
equivalents, and their limits on big inputs."""

from __future__ import annotations

import itertools
import re

from dashboard.charts import CHAR, WIDTHS, history_chart
from dashboard.charts_spectator import (
    RATED_TOURNAMENTS,
    SERIES,
    bot_distributions,
    chips_bins,
    match_chips_chart,
    ratings_chart,
    time_bins,
)


def at_width(markup: object, width: int) -> str:
    """The one drawing of a chart made for ``width`` (each chart comes at every WIDTHS)."""
    text = str(markup)
    start = text.index(f'<div class="chart-size w{width}">')
    return text[start:text.index("</svg>", start)]


def texts(svg: str, klass: str = "tick") -> list[tuple[float, float, str, str]]:
    """Each ``<text class=klass>``: its x, y, anchor and words."""
    pattern = rf'<text class="{klass}[^"]*" x="([-\d.]+)" y="([-\d.]+)"(?: text-anchor="(\w+)")?>([^<]*)<'
    found = re.findall(pattern, svg)
    return [(float(x), float(y), a or "start", t) for x, y, a, t in found]


def spans(labels: list[tuple[float, float, str, str]]) -> list[tuple[float, float]]:
    """Where each label runs along x, at CHAR units a letter."""
    out = []
    for x, _, anchor, words in labels:
        w = len(words) * CHAR
        left = x - w / 2 if anchor == "middle" else x - w if anchor == "end" else x
        out.append((left, left + w))
    return sorted(out)


def test_match_chips_chart_links_every_hand_to_the_replay() -> None:
    payoffs = [[2, -1, -1], [-2, 4, -2], [1, 1, -2]]
    chart = str(match_chips_chart(["a", "b<c", "d"], payoffs))
    assert chart.count("<svg") == len(WIDTHS)
    svg = at_width(chart, 1100) + chart[chart.index('<ul class="chart-legend"'):]
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
    assert page.count("<svg") == 2 * len(WIDTHS) and page.count('class="chart-text"') == 2
    assert "No finished matches" in str(bot_distributions([], []))


def test_ratings_chart_keeps_to_the_latest_tournaments_and_best_bots() -> None:
    history = [
        {"tournament": f"T{t}", "order": t, "bot": f"bot{b}", "elo": 1500 + 10 * b + t}
        for t in range(60) for b in range(12)
    ]
    svg = str(ratings_chart(history))
    assert svg.count('<polyline class="series') == SERIES * len(WIDTHS)
    assert "bot11" in svg and "bot0<" not in svg and ">bot0<" not in svg
    assert len(re.findall(r"<tr><td>T\d+</td>", svg)) == RATED_TOURNAMENTS
    assert "<td>T59</td>" in svg and "<td>T19</td>" not in svg
    assert "No rating history" in str(ratings_chart([]))


def test_count_axes_tick_whole_numbers() -> None:
    """A histogram of 2 matches at most ticks 0, 1, 2: not 0.5 (a count has no halves)."""
    page = bot_distributions([1, 1, -1], [0.1, 0.2, 0.3])
    for width in WIDTHS:
        ticks = [t for _, _, anchor, t in texts(at_width(page, width)) if anchor == "end"]
        assert ticks == ["0", "1", "2"], (width, ticks)
    many = bot_distributions([0] * 37 + [1], [1.0] * 38)
    ticks = [t for _, _, anchor, t in texts(at_width(many, 540)) if anchor == "end"]
    assert all(t.isdigit() for t in ticks) and ticks[0] == "0" and len(ticks) <= 6


def test_labels_along_an_axis_never_run_into_each_other_at_any_width() -> None:
    history = [{"tournament": f"The Grand Tournament number {t}", "order": t, "bot": f"bot{b}",
                "elo": 1500 + 40 * b + t} for t in range(30) for b in range(3)]
    scores = list(range(-60, 61, 3))
    charts = [ratings_chart(history), bot_distributions(scores, [0.01 * 2 ** k for k in range(20)]),
              match_chips_chart(["a", "b"], [[k % 3 - 1, 1 - k % 3] for k in range(200)]),
              history_chart([{"tournament": {"name": f"Long name of tournament {t}"}, "elo": 1500 + t,
                              "low": 1400 + t, "high": 1600 + t, "text": "x"} for t in range(25)])]
    for chart in charts:
        for width in WIDTHS:
            svg = at_width(chart, width)
            rows: dict[float, list[tuple[float, float, str, str]]] = {}
            for label in texts(svg):
                rows.setdefault(label[1], []).append(label)
            under = max(rows.values(), key=len)  # the labels along the x axis
            assert len(under) >= 2, width
            along = spans(under)
            assert all(a[1] + 4 <= b[0] for a, b in itertools.pairwise(along)), (width, along)
            assert along[0][0] >= 0 and along[-1][1] <= width + 1, (width, along)


def test_more_than_five_rating_lines_are_named_at_their_ends() -> None:
    history = [{"tournament": f"T{t}", "order": t, "bot": f"a-rather-long-bot-name-{b}", "elo": 1500 + b}
               for t in range(3) for b in range(7)]
    chart = ratings_chart(history)
    for width in WIDTHS:
        labels = texts(at_width(chart, width), "series-label")
        if width < 760:
            assert not labels  # a narrow chart has no room: its legend names the colours
            continue
        assert len(labels) == 7
        ys = sorted(y for _, y, _, _ in labels)
        assert all(b - a >= 15.9 for a, b in itertools.pairwise(ys)), ys  # lines 1 Elo apart
        assert all(x + len(t) * CHAR <= width for x, _, _, t in labels)


def test_rating_lines_close_together_have_their_labels_joined_to_them() -> None:
    """Lines ending close together push their labels into a column at the right edge, away from
    their lines (issue #40, point 18): a leader runs from each line's end to its own label."""
    history = [{"tournament": f"T{t}", "order": t, "bot": f"bot-{b}", "elo": 1500 + b + t}
               for t in range(3) for b in range(6)]
    svg = at_width(ratings_chart(history), 1100)
    labels = {k: (float(x), float(y)) for k, x, y in
              re.findall(r'<text class="series-label t(\d)" x="([\d.]+)" y="([\d.]+)">', svg)}
    number = r'"([\d.]+)"'
    leader = rf'<line class="leader s(\d)" x1={number} y1={number} x2={number} y2={number}/>'
    leaders = re.findall(leader, svg)
    assert len(leaders) == len(labels) == 6
    moved = 0
    for k, x1, y1, x2, y2 in leaders:
        dots = re.findall(rf'<circle class="dot s{k}" cx={number} cy={number}', svg)
        end_x, end_y = map(float, dots[-1])
        assert abs(float(y1) - end_y) < 0.2 and float(x1) > end_x, (k, y1, end_y)  # from its line's end...
        label_x, label_y = labels[k]
        assert abs(float(y2) - (label_y - 4)) < 0.2 and float(x2) < label_x, k  # ...to its own label
        moved += abs(float(y2) - float(y1)) > 3
    assert moved >= 3  # lines 1 Elo apart: most labels had to move, and their leaders show where
