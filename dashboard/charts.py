"""Charts drawn on the server as inline SVG: no script and no chart library needed.

Colours come from classes styled in static/css/site.css.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

#: The widths (in the SVG's own units) each chart is drawn at. The page shows the widest one
#: that fits its box (container queries in static/css/spectator.css), so a chart is drawn at
#: close to its own size: its 13-unit text is never under 11 px in a phone's 348 px box, nor
#: a desktop chart squeezed into a half-width card. Each width places its own labels.
WIDTHS = (380, 540, 760, 1100)
#: Roughly how wide a character of the charts' 13-unit text is.
CHAR = 8.0


def responsive(draw: Callable[[int], str]) -> Markup:
    """The chart drawn at every width of ``WIDTHS``; CSS shows the one that fits."""
    sizes = "".join(f'<div class="chart-size w{w}">{draw(w)}</div>' for w in WIDTHS)
    return Markup(f'<div class="chart-sizes">{sizes}</div>')


def fit(text: str, width: float, char: float = CHAR) -> str:
    """``text`` cut (with an ellipsis) to about ``width`` units of text ``char`` units a letter."""
    most = max(4, int(width / char))
    return text if len(text) <= most else text[: most - 1] + "\u2026"


def every(count: int, width: float, label: float) -> int:
    """Label every n-th of ``count`` evenly spaced things across ``width`` units, so labels
    about ``label`` units wide do not run into each other."""
    return max(1, math.ceil(count * (label + 16) / max(width, 1.0)))


def _line(klass: str, x1: float, y1: float, x2: float, y2: float) -> str:
    return f'<line class="{klass}" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}"/>'


def _text(klass: str, x: float, y: float, anchor: str, text: str) -> str:
    return f'<text class="{klass}" x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}">{escape(text)}</text>'


def _ticks(lo: float, hi: float, most: int = 8) -> list[float]:
    span = hi - lo
    step = next((s for s in (25, 50, 100, 200, 250, 500, 1000, 2500) if span / s <= most), 5000)
    first = step * -(-lo // step)
    out = []
    value = first
    while value <= hi + 1e-9:
        out.append(value)
        value += step
    return out


def elo_range(lo: float, hi: float) -> tuple[float, float]:
    """The Elo span of a chart showing ``lo`` to ``hi``: 10 to spare, rounded out to 50s."""
    return 50.0 * ((lo - 10) // 50), 50.0 * -(-(hi + 10) // 50)


@dataclass(frozen=True)
class TournamentAxes:
    """The frame of a rating-after-each-tournament chart (a bot's history, every bot's
    ratings): ``n`` tournaments in finishing order along x, Elo ``lo`` to ``hi`` up y."""

    lo: float
    hi: float
    n: int
    width: int = 1100
    height: int = 300
    left: int = 56
    right: int = 30
    top: int = 16
    bottom: int = 46

    @classmethod
    def spanning(cls, lo: float, hi: float, n: int, width: int = 1100, right: int = 30) -> TournamentAxes:
        return cls(*elo_range(lo, hi), n, width=width, right=right)

    def x(self, i: int) -> float:
        plot_w = self.width - self.left - self.right
        return self.left + (plot_w / 2 if self.n == 1 else plot_w * i / (self.n - 1))

    def y(self, elo: float) -> float:
        plot_h = self.height - self.top - self.bottom
        return self.top + plot_h * (self.hi - elo) / (self.hi - self.lo)

    def open(self, klass: str, label: str, title: str) -> list[str]:
        """The ``<svg>`` start, its title, and the Elo gridlines with their values."""
        parts = [
            f'<svg class="chart {klass}" viewBox="0 0 {self.width} {self.height}" width="100%" role="img" '
            f'aria-label="{escape(label)}">',
            f"<title>{escape(title)}</title>",
        ]
        for tick in _ticks(self.lo, self.hi, 6):
            parts.append(_line("grid", self.left, self.y(tick), self.width - self.right, self.y(tick)))
            parts.append(_text("tick", self.left - 6, self.y(tick) + 4, "end", f"{tick:.0f}"))
        return parts

    def tournament_label(self, i: int, name: str) -> str | None:
        """Tournament ``i``'s name under the plot: as many as fit the width without touching,
        always the last; the end labels hug the plot's edges instead of spilling past them."""
        n, last, room = self.n, self.n - 1, 140.0
        if n > 1:
            # An end label runs inward its whole width, a middle one half of it either way:
            # labels 1.5 widths (and a gap) apart never touch, the last one included.
            apart = 1.5 * room + 12
            step = max(1, math.ceil(apart / (self.x(1) - self.x(0))))
            if i != last and (i % step or self.x(last) - self.x(i) < apart):
                return None
        anchor = "middle" if n == 1 else "start" if i == 0 else "end" if i == last else "middle"
        return _text("tick", self.x(i), self.height - self.bottom + 20, anchor, fit(name, room))


def scale(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """The Elo range an interval chart of ``rows`` should span (rounded out to 50s)."""
    rated = [r["rating"] for r in rows if r["rating"]]
    if not rated:
        return 1300.0, 1700.0
    lo, hi = elo_range(min(_low(r) for r in rated), max(_high(r) for r in rated))
    return lo, max(hi, lo + 100)


def _low(r: dict[str, Any]) -> float:
    """The bar's lower end: a bound's open side ends at the bound (arena/ratings/terms.py)."""
    return float(r["elo"] if r["low"] is None else r["low"])


def _high(r: dict[str, Any]) -> float:
    return float(r["elo"] if r["high"] is None else r["high"])


def interval_chart(rows: Sequence[dict[str, Any]]) -> Markup:
    """Each rated bot's Elo (dot) and 95% interval (bar), best first."""
    rated = [r for r in rows if r.get("rating")]
    if not rated:
        return Markup('<p class="empty">No finished matches yet: nobody is rated.</p>')
    return responsive(lambda width: _interval_svg(rated, width))


def _interval_svg(rated: list[dict[str, Any]], width: int) -> str:
    lo, hi = scale(rated)
    left, right, top, row_h = (190 if width >= 760 else 130), 24, 30, 30
    height = top + row_h * len(rated) + 10
    plot = width - left - right

    def x(elo: float) -> float:
        return left + plot * (elo - lo) / (hi - lo)

    parts = [
        f'<svg class="chart interval-chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="Elo ratings with 95% intervals">',
        "<title>Elo ratings with 95% intervals</title>",
    ]
    for tick in _ticks(lo, hi, max(2, plot // 70)):
        tx = x(tick)
        parts.append(f'<line class="grid" x1="{tx:.1f}" y1="{top - 6}" x2="{tx:.1f}" y2="{height - 6}"/>')
        parts.append(f'<text class="tick" x="{tx:.1f}" y="{top - 12}" text-anchor="middle">{tick:.0f}</text>')
    for i, row in enumerate(rated):
        r = row["rating"]
        cy = top + row_h * i + row_h / 2
        klass = "provisional" if r["provisional"] else "settled"
        tip = escape(
            f"{row['bot']}: {r['text']}"
            + (", provisional" if r["provisional"] else "")
        )
        parts.append(f'<g class="bot {klass}"><title>{tip}</title>')
        label = escape(fit(row["bot"], left - 16, 8.6))  # bold 14-unit text
        parts.append(f'<text class="label" x="{left - 10}" y="{cy + 5:.1f}" text-anchor="end">{label}</text>')
        if r["low"] is None or r["high"] is None:
            # A bound, not a rating: no dot; an open bar from the bound to the side it opens on.
            edge = left if r["low"] is None else width - right
            parts.append(_line("interval open", x(r["elo"]), cy, edge, cy))
            parts.append(_line("whisker", x(r["elo"]), cy - 6, x(r["elo"]), cy + 6) + "</g>")
            continue
        parts.append(_line("interval", x(_low(r)), cy, x(_high(r)), cy))
        for end in (_low(r), _high(r)):
            parts.append(_line("whisker", x(end), cy - 6, x(end), cy + 6))
        parts.append(f'<circle class="point" cx="{x(r["elo"]):.1f}" cy="{cy:.1f}" r="5"/></g>')
    parts.append("</svg>")
    return "".join(parts)


def history_chart(history: Sequence[dict[str, Any]]) -> Markup:
    """Rating after each finished tournament: the line, with its 95% band."""
    if not history:
        return Markup(
            '<p class="empty">No rating history yet: it is recorded after each finished tournament.</p>'
        )
    return responsive(lambda width: _history_svg(history, width))


def _history_svg(history: Sequence[dict[str, Any]], width: int) -> str:
    n = len(history)
    axes = TournamentAxes.spanning(min(_low(h) for h in history), max(_high(h) for h in history), n, width)
    x, y = axes.x, axes.y
    parts = axes.open("history-chart", "Rating history", "Rating history with 95% intervals")
    band = [f"{x(i):.1f},{y(_high(h)):.1f}" for i, h in enumerate(history)]
    band += [f"{x(i):.1f},{y(_low(h)):.1f}" for i, h in reversed(list(enumerate(history)))]
    if n > 1:
        parts.append(f'<polygon class="band" points="{" ".join(band)}"/>')
        line = " ".join(f"{x(i):.1f},{y(h['elo']):.1f}" for i, h in enumerate(history))
        parts.append(f'<polyline class="line" points="{line}"/>')
    for i, h in enumerate(history):
        tip = escape(f"after {h['tournament']['name']}: {h['text']}")
        parts.append(f'<g><title>{tip}</title>')
        if n == 1:
            parts.append(_line("interval", x(i), y(_low(h)), x(i), y(_high(h))))
        parts.append(f'<circle class="point" cx="{x(i):.1f}" cy="{y(h["elo"]):.1f}" r="4"/></g>')
        label = axes.tournament_label(i, str(h["tournament"]["name"]))
        if label is not None:
            parts.append(label)
    parts.append("</svg>")
    return "".join(parts)


def sprt_chart(test: dict[str, Any]) -> Markup:
    """A sequential test's LLR after each look against the pairs played, between its bounds
    (accept H0 below the lower, H1 above the upper), as fishtest draws it. Each bound is drawn
    as a line through the history's points (level since the bounds are fixed, issue #38)."""
    points = test.get("history", {}).get("points", [])
    if len(points) < 2:
        return Markup('<p class="empty">No pair of this test is scored yet.</p>')
    return responsive(lambda width: _sprt_svg(points, test, width))


def _sprt_svg(points: Sequence[dict[str, Any]], test: dict[str, Any], width: int) -> str:
    height, left, right, top, bottom = 260, 50, 20, 16, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [float(v) for p in points for v in (p["llr"], p["lower"], p["upper"])]
    lo, hi = math.floor(min(values) - 0.25), math.ceil(max(values) + 0.25)
    most: int = max(int(p["pairs"]) for p in points) or 1

    def x(pairs: float) -> float:
        return left + plot_w * pairs / most

    def y(value: float) -> float:
        return top + plot_h * (hi - value) / (hi - lo)

    label = (f"LLR {test['llr']:.2f} after {test['pairs']} pairs, "
             f"bounds {test['lower']:.2f} and {test['upper']:.2f}")
    parts = [
        f'<svg class="chart sprt-chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="{escape(label)}">',
        f"<title>{escape(label)}</title>",
    ]
    step = max(1, math.ceil((hi - lo) / 6))
    for tick in range(int(lo), int(hi) + 1, step):
        parts.append(_line("grid zero" if tick == 0 else "grid", left, y(tick), width - right, y(tick)))
        parts.append(_text("tick", left - 6, y(tick) + 4, "end", f"{tick:d}"))
    xs = _pair_ticks(most, plot_w)
    for tick in xs:
        parts.append(_text("tick", x(tick), height - bottom + 18, "middle", str(tick)))
    parts.append(_text("tick", width - right, height - 4, "end", "pairs"))
    for key, name in (("upper", "H1"), ("lower", "H0")):
        bound = [(x(p["pairs"]), y(p[key])) for p in points]
        drawn = " ".join(f"{a:.1f},{b:.1f}" for a, b in bound)
        parts.append(f'<polyline class="bound bound-{key}" points="{drawn}"/>')
        end = points[-1][key]
        text = f"accept {name} ({end:.2f})"
        # Above the upper line and below the lower one all along the label's width: the bounds
        # move as the test goes, so the line's height at the label's end is not enough.
        ys = _heights(bound, left + 4, left + 4 + len(text) * CHAR)
        at = min(ys) - 6 if key == "upper" else max(ys) + 15
        parts.append(_text(f"tick bound-label bound-label-{key}", left + 4, at, "start", text))
    line = " ".join(f"{x(p['pairs']):.1f},{y(p['llr']):.1f}" for p in points)
    parts.append(f'<polyline class="line" points="{line}"/>')
    for p in points[1:]:
        tip = escape(f"after {p['pairs']} pairs: LLR {p['llr']:.2f} ({p['lower']:.2f} to {p['upper']:.2f})")
        parts.append(f'<g><title>{tip}</title><circle class="point" cx="{x(p["pairs"]):.1f}" '
                     f'cy="{y(p["llr"]):.1f}" r="3.5"/></g>')
    parts.append("</svg>")
    return "".join(parts)


def _heights(line: Sequence[tuple[float, float]], start: float, stop: float) -> list[float]:
    """The heights a polyline (points by x) takes between x ``start`` and ``stop``: at both
    ends (interpolated) and at every point in between."""

    def at(v: float) -> float:
        for (x0, y0), (x1, y1) in itertools.pairwise(line):
            if x0 <= v <= x1:
                return y0 if x1 == x0 else y0 + (y1 - y0) * (v - x0) / (x1 - x0)
        return line[0][1] if v < line[0][0] else line[-1][1]

    return [at(start), at(stop), *(b for a, b in line if start <= a <= stop)]


def _pair_ticks(most: int, plot_w: float) -> list[int]:
    """Round pair counts along x, no closer than about 60 units."""
    room = max(1, int(plot_w // 60))
    step = next((s for s in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000) if most / s <= room), 5000)
    return list(range(0, most + 1, step))
