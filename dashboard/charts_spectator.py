"""The spectator's charts, drawn on the server as inline SVG (no script, no library), each
with a text equivalent: a match's chips per seat over its hands (each hand a link that opens
the replay there), a bot's chips-per-match and decision-time distributions, and every bot's
rating over time. Colours come from classes in static/css/spectator.css."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from markupsafe import Markup, escape

from dashboard.charts import CHAR, TournamentAxes, _line, _text, every, fit, responsive

#: Series colours (classes s0..s7 in spectator.css, chosen far apart, the last three also
#: dashed); the ratings chart shows at most this many bots and names each line at its end.
SERIES = 8
#: The rating chart shows at most this many of the latest tournaments.
RATED_TOURNAMENTS = 40
#: Decision-time bin edges in ms: roughly 1-2-5 steps, as times spread over decades.
TIME_EDGES = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0)


def _nice_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """About ``count`` round values from lo to hi (any scale, unlike charts._ticks)."""
    span = max(hi - lo, 1e-9)
    raw = span / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = step * math.ceil(lo / step)
    out = []
    value = first
    while value <= hi + 1e-9:
        out.append(round(value, 6))
        value += step
    return out


def _fmt(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:g}"


def _signed(value: int) -> str:
    return f"+{value}" if value > 0 else f"\u2212{-value}" if value < 0 else "0"


def _table(caption: str, head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A chart's text equivalent: a small table inside a closed <details>."""
    out = [f'<details class="chart-text"><summary>{escape(caption)}</summary><div class="table-wrap"><table>']
    out.append("<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>")
    out.append("</tbody></table></div></details>")
    return "".join(out)


def _legend(names: Sequence[str]) -> str:
    items = "".join(
        f'<li><span class="key s{i % SERIES}"></span>{escape(n)}</li>' for i, n in enumerate(names)
    )
    return f'<ul class="chart-legend">{items}</ul>'


# -- a match: chips per seat over its hands --------------------------------------------------


def match_chips_chart(players: Sequence[str], payoffs: Sequence[Sequence[int]]) -> Markup:
    """Each seat's running score after each hand; hand ``k`` links to ``#hand=k&step=0``,
    which the replay viewer opens."""
    if not payoffs or not players:
        return Markup("")
    n = len(payoffs)
    running = [[0] * len(players)]
    for hand in payoffs:
        running.append([a + (hand[s] if s < len(hand) else 0) for s, a in enumerate(running[-1])])
    lo = min(min(r) for r in running)
    hi = max(max(r) for r in running)
    lo, hi = min(lo, -1), max(hi, 1)
    seats = range(len(players))
    rows = [[k + 1, *(f"{_signed(payoffs[k][s])} ({_signed(running[k + 1][s])})" for s in seats)]
            for k in range(n)]
    caption = "The chart as a table: each hand's payment (and the running score)"
    text = _table(caption, ["Hand", *players], rows)
    chart = responsive(lambda width: _chips_svg(players, payoffs, running, lo, hi, width))
    return Markup(str(chart) + _legend(players) + text)


def _chips_svg(players: Sequence[str], payoffs: Sequence[Sequence[int]], running: list[list[int]],
               lo: int, hi: int, width: int) -> str:
    n = len(payoffs)
    height, left, right, top, bottom = 260, 52, 16, 12, 38
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(k: float) -> float:
        return left + plot_w * k / n

    def y(v: float) -> float:
        return top + plot_h * (hi - v) / (hi - lo)

    parts = [
        f'<svg class="chart chips-chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        'aria-label="Chips per seat over the hands of the match">',
        "<title>Chips per seat over the hands of the match</title>",
    ]
    for tick in _nice_ticks(lo, hi):
        parts.append(_line("grid zero" if tick == 0 else "grid", left, y(tick), width - right, y(tick)))
        parts.append(_text("tick", left - 6, y(tick) + 4, "end", _fmt(tick)))
    # One link per hand across the plot's full height: a click opens the replay at that hand.
    for k in range(n):
        paid = (f"{p} {_signed(payoffs[k][s])} (total {_signed(running[k + 1][s])})"
                for s, p in enumerate(players))
        tip = escape(f"Hand {k + 1}: " + ", ".join(paid))
        parts.append(
            f'<a class="hand-link" href="#hand={k}&amp;step=0" aria-label="Open hand {k + 1} in the replay">'
            f'<title>{tip}</title><rect x="{x(k):.1f}" y="{top}" width="{plot_w / n:.1f}" height="{plot_h}"/>'
            "</a>"
        )
        if k % every(n, plot_w, CHAR * len(str(n))) == 0:
            parts.append(_text("tick", x(k + 0.5), height - bottom + 18, "middle", str(k + 1)))
    for s in range(len(players)):
        points = " ".join(f"{x(k):.1f},{y(r[s]):.1f}" for k, r in enumerate(running))
        parts.append(f'<polyline class="series s{s % SERIES}" points="{points}"/>')
    parts.append(_text("tick", left + plot_w / 2, height - 2, "middle", "hand"))
    parts.append("</svg>")
    return "".join(parts)


# -- a bot: distributions ----------------------------------------------------------------------


def _count_ticks(peak: int, most: int = 4) -> list[int]:
    """Whole-number ticks from 0 to ``peak``, at most about ``most`` gaps: counts have no halves."""
    step = max(1, math.ceil(_nice_ticks(0, peak, most)[1])) if peak > 0 else 1
    return list(range(0, peak + 1, step))


def _histogram(klass: str, label: str, bins: Sequence[tuple[str, int]], unit: str) -> Markup:
    return responsive(lambda width: _histogram_svg(klass, label, bins, unit, width))


def _histogram_svg(klass: str, label: str, bins: Sequence[tuple[str, int]], unit: str, width: int) -> str:
    height, left, right, top, bottom = 220, 48, 16, 12, 42
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max((c for _, c in bins), default=0) or 1
    w = plot_w / max(1, len(bins))
    parts = [
        f'<svg class="chart histogram {klass}" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="{escape(label)}">',
        f"<title>{escape(label)}</title>",
    ]
    for tick in _count_ticks(peak):
        ty = top + plot_h * (1 - tick / peak)
        parts.append(_line("grid", left, ty, width - right, ty))
        parts.append(_text("tick", left - 6, ty + 4, "end", _fmt(tick)))
    step = every(len(bins), plot_w, CHAR * max((len(name) for name, _ in bins), default=1))
    for i, (name, count) in enumerate(bins):
        h = plot_h * count / peak
        tip = escape(f"{name} {unit}: {count}")
        parts.append(
            f'<g><title>{tip}</title><rect class="bar" x="{left + i * w + 1:.1f}" y="{top + plot_h - h:.1f}" '
            f'width="{max(1.0, w - 2):.1f}" height="{h:.1f}"/></g>'
        )
        if i % step == 0:  # under its bar, kept inside the chart
            half = len(name) * CHAR / 2
            at = min(max(left + (i + 0.5) * w, half), width - half)
            parts.append(_text("tick", at, height - bottom + 18, "middle", name))
    parts.append(_text("tick", left + plot_w / 2, height - 4, "middle", unit))
    parts.append("</svg>")
    return "".join(parts)


def chips_bins(scores: Sequence[int], most: int = 21) -> list[tuple[str, int]]:
    """Chips per match in integer bins (widened to keep at most ``most`` bins)."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    width = max(1, math.ceil((hi - lo + 1) / most))
    count = (hi - lo) // width + 1
    bins = [0] * count
    for s in scores:
        bins[(s - lo) // width] += 1
    starts = [lo + i * width for i in range(count)]
    names = [_signed(a) if width == 1 else f"{_signed(a)}..{_signed(a + width - 1)}" for a in starts]
    return list(zip(names, bins, strict=True))


def time_bins(times_ms: Sequence[float]) -> list[tuple[str, int]]:
    """Decision times (ms) in 1-2-5 bins, from the first to the last bin holding any."""
    if not times_ms:
        return []
    edges = [*TIME_EDGES, math.inf]
    counts = [0] * (len(edges) - 1)
    for t in times_ms:
        i = next(k for k in range(len(counts)) if t < edges[k + 1])
        counts[i] += 1
    used = [i for i, c in enumerate(counts) if c]
    first, last = used[0], used[-1]
    names = [f"<{_fmt(edges[i + 1])}" if math.isfinite(edges[i + 1]) else f"\u2265{_fmt(edges[i])}"
             for i in range(len(counts))]
    return [(names[i], counts[i]) for i in range(first, last + 1)]


def bot_distributions(scores: Sequence[int], times_ms: Sequence[float]) -> Markup:
    """A bot's chips per match and per-match mean decision time, as histograms and tables."""
    if not scores:
        return Markup('<p class="empty">No finished matches yet.</p>')
    chips = chips_bins(scores)
    times = time_bins(times_ms)
    out = ['<div class="dist-grid"><figure class="chart-box">',
           _histogram("chips-dist", "Chips per match", chips, "chips in a match"),
           f"<figcaption>Chips won or lost in each of its last {len(scores)} finished matches.</figcaption>",
           _table("The chart as a table", ["Chips in a match", "Matches"], chips), "</figure>"]
    if times:
        out += ['<figure class="chart-box">',
                _histogram("time-dist", "Mean charged time per match", times, "ms charged per decision"),
                "<figcaption>Its mean time charged per decision in each of those matches.</figcaption>",
                _table("The chart as a table", ["Mean charged time (ms)", "Matches"], times), "</figure>"]
    out.append("</div>")
    return Markup("".join(out))


# -- the leaderboard: every bot's rating over time ---------------------------------------------


def ratings_chart(history: Sequence[dict[str, Any]]) -> Markup:
    """One line per bot: its rating after each finished tournament it was rated in.
    ``history`` rows: ``tournament`` (name), ``order`` (0.. in finishing order), ``bot``, ``elo``."""
    if not history:
        return Markup(
            '<p class="empty">No rating history yet: it is recorded after each finished tournament.</p>'
        )
    # The last RATED_TOURNAMENTS tournaments, and the SERIES bots best rated after the last of
    # them (a legend of a hundred bots helps nobody): the leaderboard lists everyone.
    last = max(row["order"] for row in history)
    recent = [row for row in history if row["order"] > last - RATED_TOURNAMENTS]
    series: dict[str, list[tuple[int, float]]] = {}
    for row in recent:
        series.setdefault(row["bot"], []).append((row["order"], float(row["elo"])))
    names = sorted(series, key=lambda b: (-series[b][-1][0], -series[b][-1][1]))[:SERIES]
    names.sort(key=lambda b: -series[b][-1][1])  # best last rating first, like the leaderboard
    series = {b: series[b] for b in names}
    orders = sorted({i for pts in series.values() for i, _ in pts})
    renumber = {o: k for k, o in enumerate(orders)}
    tournaments = {renumber[row["order"]]: row["tournament"] for row in recent if row["order"] in renumber}
    series = {b: [(renumber[i], e) for i, e in pts] for b, pts in series.items()}
    chart = responsive(lambda width: _ratings_svg(names, series, tournaments, width))
    rows = [[tournaments[i], *(next((f"{e:.0f}" for j, e in series[b] if j == i), "\u2013") for b in names)]
            for i in sorted(tournaments)]
    text = _table("The chart as a table: each bot's rating after each tournament", ["After", *names], rows)
    return Markup(str(chart) + _legend(names) + text)


#: Direct labels at the lines' ends: their room to the right of the plot, and the narrowest
#: chart that has it (narrower ones keep to the legend).
LABEL_ROOM = 150
#: How far right of its line's end a label starts: room for its leader.
LEADER = 22
LABELLED_FROM = 760


def _ratings_svg(names: Sequence[str], series: dict[str, list[tuple[int, float]]],
                 tournaments: dict[int, str], width: int) -> str:
    n = len(tournaments)
    elos = [e for pts in series.values() for _, e in pts]
    labelled = width >= LABELLED_FROM
    axes = TournamentAxes.spanning(min(elos), max(elos), n, width, LABEL_ROOM if labelled else 30)
    x, y = axes.x, axes.y
    aria = "Every bot's rating after each finished tournament"
    parts = axes.open("ratings-chart", aria, "Ratings over time")
    for k, name in enumerate(names):
        pts = series[name]
        klass = f"s{k % SERIES}"
        parts.append(f'<g class="bot-line"><title>{escape(name)}</title>')
        if len(pts) > 1:
            line = " ".join(f"{x(i):.1f},{y(e):.1f}" for i, e in pts)
            parts.append(f'<polyline class="series {klass}" points="{line}"/>')
        for i, e in pts:
            tip = escape(f"{name} after {tournaments[i]}: {e:.0f}")
            parts.append(
                f'<circle class="dot {klass}" cx="{x(i):.1f}" cy="{y(e):.1f}" r="3.5">'
                f"<title>{tip}</title></circle>"
            )
        parts.append("</g>")
    if labelled:
        parts += _end_labels(names, series, x, y, axes.height - axes.bottom)
    for i in sorted(tournaments):
        label = axes.tournament_label(i, tournaments[i])
        if label is not None:
            parts.append(label)
    parts.append("</svg>")
    return "".join(parts)


def _end_labels(names: Sequence[str], series: dict[str, list[tuple[int, float]]],
                x: Callable[[int], float], y: Callable[[float], float], floor: float) -> list[str]:
    """Each line's name just right of its last point, in its colour, nudged apart so that
    no two overlap (16 units a line), top to bottom as the lines end."""
    ends = sorted(((y(series[b][-1][1]), k, b) for k, b in enumerate(names)), key=lambda t: t[0])
    placed: list[float] = []
    for want, _, _ in ends:
        placed.append(max(want, placed[-1] + 16) if placed else want)
    over = placed[-1] - floor if placed else 0  # pushed past the plot's foot: shift all up
    if over > 0:
        placed = [p - over for p in placed]
        for j in range(len(placed) - 2, -1, -1):
            placed[j] = min(placed[j], placed[j + 1] - 16)
    out = []
    for (want, k, name), at in zip(ends, placed, strict=True):
        # Close lines push their labels apart into a column: a leader joins each label to the
        # end of its own line, so the column does not leave the reader guessing whose is whose.
        end = x(series[name][-1][0])
        out.append(f'<line class="leader s{k % SERIES}" x1="{end + 4:.1f}" y1="{want:.1f}" '
                   f'x2="{end + LEADER - 4:.1f}" y2="{at:.1f}"/>')
        out.append(f'<text class="series-label t{k % SERIES}" x="{end + LEADER:.1f}" y="{at + 4:.1f}">'
                   f"{escape(fit(name, LABEL_ROOM - LEADER - 6, 8.6))}</text>")  # bold 13-unit text
    return out
