"""Every dashboard page through Flask's test client, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest
from helpers.arena import TEST_DEAL_SECRET
from helpers.paths import ROOT
from markupsafe import escape

from arena.ratings.terms import PAIRWISE, legend
from arena.tournaments.layout import keyed_seed
from dashboard.charts import WIDTHS

if TYPE_CHECKING:
    from helpers.dashboard_fixtures import Seeded
from flask.testing import FlaskClient

DASHBOARD = ROOT / "dashboard"


def page(client: FlaskClient, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, (url, response.status_code, response.data[:300])
    assert response.mimetype == "text/html"
    return response.get_data(as_text=True)


def test_leaderboard_page(client: FlaskClient) -> None:
    html = page(client, "/")
    for name in ("random", "lowball", "flaky", "croaker"):
        assert f'data-bot="{name}"' in html
    assert 'class="chart interval-chart"' in html  # the server-drawn interval chart
    # One dot per rated bot in the interval chart, drawn at each of its widths.
    assert html.count('<circle class="point"') == 3 * len(WIDTHS)
    assert 'class="prov"' in html  # provisional marks
    assert "unrated" in html


def test_tournament_pages(client: FlaskClient, seeded: Seeded) -> None:
    html = page(client, "/tournaments/")
    assert "Spring Open" in html and "Summer Cup" in html and 'class="progress"' in html
    spring = page(client, f"/tournaments/{seeded.tournaments['spring']}")
    assert 'class="matrix"' in spring and "sig-" in spring
    assert f"seed <code>{keyed_seed(TEST_DEAL_SECRET, 20260401)}</code>" in spring  # as dealt
    assert "Table 3" in spring
    summer = page(client, f"/tournaments/{seeded.tournaments['summer']}")
    assert str(keyed_seed(TEST_DEAL_SECRET, 20260701)) not in summer  # a running one's stays secret
    assert 'data-progress-url="/api/v1/tournaments/' in summer and 'data-status="running"' in summer
    assert "js/live.js" in summer


def test_match_list_page_filters_and_pager(client: FlaskClient, seeded: Seeded) -> None:
    html = page(client, "/matches/?per_page=5")
    assert "Page 1 of 5" in html and 'rel="next"' in html
    assert page(client, "/matches/?per_page=5&page=5").count('rel="next"') == 0
    filtered = page(client, f"/matches/?bot=croaker&tournament={seeded.tournaments['summer']}&status=pending")
    rows = re.findall(r'href="/matches/(\d+)"', filtered)
    assert rows and str(seeded.pending_match) in rows
    assert "<option selected>croaker</option>" in filtered
    page(client, "/matches/?status=bogus", 400)
    page(client, "/matches/?bot=nobody", 400)
    page(client, "/matches/?page=0", 400)


def test_lists_keep_match_scores_hidden_until_asked_as_the_match_page_does(
    client: FlaskClient, seeded: Seeded
) -> None:
    """A match's page hides its results until "Show results"; the lists that link to it do
    too, until ?results=1 (kept by the filters and the pager); a bad value is a 400."""
    score = re.compile(r'<b class="(pos|neg)?">[+\u2212]?\d+</b>')
    hidden = page(client, "/matches/?status=done&per_page=5")
    assert not score.search(hidden) and 'href="/matches/?status=done&amp;per_page=5&amp;results=1"' in hidden
    shown = page(client, "/matches/?status=done&per_page=5&results=1")
    assert score.search(shown) and "Seats and scores" in shown
    # The pager keeps it.
    assert 'href="/matches/?page=2&amp;status=done&amp;per_page=5&amp;results=1"' in shown
    assert '<input type="hidden" name="results" value="1">' in shown  # so does the filter form
    assert "Hide them" in shown
    bot = page(client, "/bots/lowball")
    recent = '<th class="num">Score</th><th>Finished</th>'  # its recent matches' column
    assert recent not in bot and 'href="/bots/lowball?results=1"' in bot
    assert recent in page(client, "/bots/lowball?results=1")
    page(client, "/matches/?results=yes", 400)
    page(client, "/bots/lowball?results=0", 400)


def test_decision_times_are_named_as_the_time_charged(client: FlaskClient, seeded: Seeded) -> None:
    """A fast bot's "0.00 ms" read as a bug: the columns say what the time is (the time
    charged), and a time under 0.005 ms reads "< 0.01 ms"."""
    from dashboard.templating import ms

    html = page(client, f"/matches/{seeded.done_match}")
    assert "Charged time, mean" in html and "Charged time, slowest" in html
    assert "Mean charged time" in page(client, "/bots/lowball")
    shown = [ms(0.0), ms(0.004), ms(0.05), ms(12.3), ms(None)]
    assert shown == ["< 0.01 ms", "< 0.01 ms", "0.05 ms", "12 ms", "\u2013"]


def test_the_pairwise_legend_reads_as_a_sentence(client: FlaskClient, seeded: Seeded) -> None:
    html = page(client, f"/tournaments/{seeded.tournaments['spring']}")
    legend = re.sub(r"<[^>]+>", "", html[html.index("Row bot's score"):].split("</p>")[0])
    assert " ; " not in legend and not re.search(r"\s;", legend)
    assert legend.endswith("p &lt; 0.01, p &lt; 0.05, not significant.")


def test_a_tournaments_tables_fold_when_there_are_many(client: FlaskClient, seeded: Seeded) -> None:
    spring = page(client, f"/tournaments/{seeded.tournaments['spring']}")  # 4 tables: open
    assert '<details class="tables-fold" open>' in spring and 'id="tables"' in spring


def test_done_match_page_has_the_replay_viewer(client: FlaskClient, seeded: Seeded) -> None:
    html = page(client, f"/matches/{seeded.done_match}")
    assert 'id="viewer"' in html and f'data-steps-url="/api/v1/matches/{seeded.done_match}/steps"' in html
    for script in ("cards.js", "replay.js"):
        assert f"js/{script}" in html
    assert "seed <code>" in html
    faulty = page(client, f"/matches/{seeded.fault_match}")
    assert 'class="faults"' in faulty and "crash" in faulty


@pytest.mark.parametrize("which", ["pending_match", "running_match", "failed_match"])
def test_unfinished_match_page_shows_no_replay_or_seed(
    client: FlaskClient, seeded: Seeded, which: str
) -> None:
    html = page(client, f"/matches/{getattr(seeded, which)}")
    assert 'id="viewer"' not in html and "seed <code>" not in html
    assert "published when every match of its deal is done" in html


def test_bot_pages(client: FlaskClient) -> None:
    html = page(client, "/bots/")
    assert "croaker" in html and "house" in html
    low = page(client, "/bots/lowball")
    assert 'class="chart history-chart"' in low and "Head to head" in low
    assert "Spring Open" in low
    flaky = page(client, "/bots/flaky")
    assert "crash \u00d7 " in flaky and "flaky bot fell over" in flaky
    croaker = page(client, "/bots/croaker")
    # Where a bot listens is its owner's business (arena/bots/claims.py): not on the public page.
    assert "No rating history yet" in croaker and "127.0.0.1:50999" not in croaker
    assert "served over gRPC" in croaker


def test_a_bots_recent_matches_say_which_version_played(client: FlaskClient) -> None:
    html = page(client, "/bots/lowball")
    table = html.split('<table class="recent-matches">', 1)[1].split("</table>", 1)[0]
    assert '<th class="num">Version</th>' in table
    rows = table.count("<tr><td>")
    assert rows > 0 and table.count('<td class="num">v1</td>') == rows, table


@pytest.mark.parametrize("url", ["/", "/bots/", "/bots/lowball", "/bots/flaky", "/tournaments/", "/matches/"])
def test_a_page_title_is_plain_text(client: FlaskClient, url: str) -> None:
    # The bot page's title once held the rating legend's <ul> (it sat inside the title block).
    title = re.search(r"<title>(.*?)</title>", page(client, url), re.S)
    assert title and "<" not in title.group(1) and "\n" not in title.group(1), title


@pytest.mark.parametrize(
    "url, status",
    [
        ("/matches/abc", 400),
        ("/matches/0", 404),
        ("/matches/999999", 404),
        ("/matches/99999999999999999999", 404),
        ("/tournaments/xyz", 400),
        ("/tournaments/999999", 404),
        ("/tournaments/?status=nope", 400),
        ("/bots/nobody", 404),
        ("/bots/%3Cscript%3E", 404),
        ("/no/such/page", 404),
    ],
)
def test_bad_page_urls_are_clean_html_errors(client: FlaskClient, url: str, status: int) -> None:
    html = page(client, url, status)
    assert "Traceback" not in html and "<script>" not in html


def test_static_assets_and_security_headers(client: FlaskClient) -> None:
    response = client.get("/")
    csp = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "default-src 'self'" in csp
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    for asset in ("css/site.css", "css/spectator.css", "js/cards.js", "js/replay.js", "js/live.js",
                  "img/favicon.svg", "img/card-back.svg"):
        assert client.get(f"/static/{asset}").status_code == 200, asset
    assert client.get("/healthz").get_json() == {"status": "ok"}


def test_nothing_is_loaded_from_elsewhere() -> None:
    """Every asset ships with the dashboard: no CDN, no web font, no remote script."""
    pattern = re.compile(r"""(src|href)\s*=\s*["'](https?:)?//""", re.I)
    for path in list(DASHBOARD.glob("templates/*.html")) + list(DASHBOARD.glob("static/**/*.*")):
        text = path.read_text(encoding="utf-8")
        assert not pattern.search(text), path
        assert "@import" not in text and "url(http" not in text, path


def test_rating_pages_say_what_the_numbers_mean(client: FlaskClient, seeded: Seeded) -> None:
    for path in ("/", "/bots/lowball"):
        html = page(client, path)
        for line in legend():  # worded once, in arena/ratings/terms.py, as the CLI prints it
            assert str(escape(line)) in html, (path, line)
    spring = page(client, f"/tournaments/{seeded.tournaments['spring']}")
    assert str(escape(PAIRWISE)) in spring  # the matrix says what it shows
