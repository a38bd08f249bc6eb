"""A person at the table, in real Chromium (issue #39): a visitor joins from the demo's invite
link, goes to `search`'s page, sits down, and plays a whole match against it (heads-up, and at
a table of three with `greedy`) with keys on a laptop and by taps on a phone; sees each hand's
result as it ends and the match's, opens the replay, and finds the match on the people's
board. Every response and event the page received carries no card the seat had not seen (the
replay, read afterwards, says what the seat saw). A tab closed mid-match and opened again
resumes the seat, with no fault charged.

The arena is a real one: the dashboard on a free port, the match played by the arena's own
backend with the house bots hosted, the page talking to it over HTTP and server-sent events.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from itertools import count
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from helpers.browser import PATIENCE_MS, check_phone_page, expect, new_context, served
from helpers.tables import check_nothing_unseen, record_of

from arena.bots.owners import get_or_create_operator
from arena.bots.registry import host_bot
from arena.config import Settings
from arena.runtime.backends import EmbeddedBackend
from arena.store.db import session_scope
from dashboard.commands import _visitor_invite

pytestmark = pytest.mark.browser

#: Hands a match plays here: the fewest the form offers.
HANDS = 3
#: The state the page is in once a view is drawn and nothing is on its way: the status and the
#: version, once either the person may act (enabled buttons), or a hand or the match is over.
SETTLED = """(last) => {
  const t = document.getElementById('table');
  if (!t || !t.classList.contains('ready')) return null;
  const v = +t.dataset.version, s = t.dataset.status;
  if (!(v > last)) return null;
  const can = document.querySelector('#table-actions button.act:not([disabled])');
  if (s === 'your_turn' && !can) return null;
  // The hand's result box as it was at that moment (the next hand may replace it at once).
  const shown = document.getElementById('hand-result');
  const result = shown ? shown.textContent : null;
  if (s === 'your_turn' || s === 'hand_over' || s === 'match_over') return {status: s, version: v, result};
  return null;
}"""
_names = count()


@pytest.fixture
def arena(sqlite_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """The dashboard over a store with the house bots search and greedy, and the demo's
    invite code for visitors: (base URL, code, the store's URL)."""
    monkeypatch.setenv("TONK_SEARCH_BUDGET_MS", "20")  # as the demo plays it: a person waits less
    with session_scope(sqlite_url) as session:
        house = get_or_create_operator(session, "house")
        host_bot(session, house, "search", "bots.search:SearchBot", check=False)
        host_bot(session, house, "greedy", "bots.greedy:GreedyBot", check=False)
    code = _visitor_invite(Settings(data_dir=str(tmp_path), database_url=sqlite_url))
    backend = EmbeddedBackend(sqlite_url, 2)  # the test's own: closed with its matches' processes
    try:
        # The tests press keys faster than a person may: the flood bound is tests/dashboard's.
        with served(sqlite_url, TOURNAMENT_BACKEND=backend, TOURNAMENT_SWEEP_S=0,
                    TABLE_ACT_LIMIT=(10_000, 1.0)) as base:  # fmt: skip
            yield base, code, sqlite_url
    finally:
        backend.close(cancel=True)


@contextmanager
def tab_at(browser: Any, width: int) -> Iterator[Any]:
    """A tab at a laptop's 1360 x 900 or a phone's 390 x 844 (taps), failing its test on any
    script error."""
    phone = width <= 390
    context = new_context(browser, width, 844 if phone else 900, has_touch=phone)
    errors: list[str] = []
    try:
        tab = context.new_page()
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
        yield tab
    finally:
        context.close()
    assert not errors, errors


def press(tab: Any, locator: Any, phone: bool) -> None:
    if phone:
        locator.tap()
    else:
        locator.click()


def join_and_sit(tab: Any, base: str, code: str, seats: int, phone: bool) -> str:
    """Join from the demo's link, go to search's page and sit down; the table's URL."""
    name = f"visitor{next(_names)}{seats}{'p' if phone else 'l'}"
    tab.goto(f"{base}/join?code={code}&bot=search")
    tab.locator("input[name=name]").fill(name)
    press(tab, tab.locator("form.account button[type=submit]"), phone)
    press(tab, tab.get_by_role("link", name="Now take a seat against search"), phone)
    form = tab.locator("#take-a-seat form")
    expect(form).to_be_visible()
    if phone:
        check_phone_page(tab, "/bots/search")
    form.locator("select[name=hands]").select_option(str(HANDS))
    if seats == 3:
        form.locator("select[name=with]").select_option("greedy")
        press(tab, form.get_by_role("button", name="Sit down at a table of three"), phone)
    else:
        press(tab, form.get_by_role("button", name="Sit down heads-up against search"), phone)
    tab.wait_for_url(re.compile(r"/tables/[^/]+$"))
    return str(tab.url)


def settle(tab: Any, last: int) -> dict[str, Any]:
    state: dict[str, Any] = tab.wait_for_function(SETTLED, arg=last, timeout=PATIENCE_MS).json_value()
    return state


# What the page shows of each seat: its cards as drawn (a face's notation, or "back").
_DRAWN = """() => {
  const cards = el => [...el.querySelectorAll('svg.card')].map(c => c.dataset.card);
  return Object.fromEntries([...document.querySelectorAll('#table .seat')].map(s => [s.dataset.seat,
    {cards: cards(s.querySelector('.hand-cards')),
     laid: [...s.querySelectorAll('.laid .meld-cards')].map(cards)}]));
}"""


def check_drawn(tab: Any, base_url: str, version: int) -> None:
    """The page draws exactly the view it was sent, no more: the person's hand card for card,
    each other seat's count as backs and what it laid down, the discard pile, the actions."""
    view = tab.request.get(base_url + "/view.json").json()
    assert view["version"] == version, (view["version"], version)  # the person's turn waits for them
    seats = tab.evaluate(_DRAWN)
    for p in view["players"]:
        drawn = seats[str(p["seat"])]
        assert drawn["cards"] == (view["hand"] if p["you"] else ["back"] * p["cards"]), (p, drawn)
        assert drawn["laid"] == p["spreads"], (p, drawn)
    pile = tab.eval_on_selector_all("#discard-pile svg.card", "es => es.map(e => e.dataset.card)")
    assert pile == view["discard"]
    expect(tab.locator("#stock-size")).to_have_text(f"Stock · {view['stock']}")
    actions = tab.eval_on_selector_all("#table-actions button.act", "es => es.map(e => e.dataset.action)")
    assert actions == [a["id"] for a in view["legal"]]


def play(tab: Any, phone: bool, *, stop_after: int | None = None) -> dict[str, Any]:
    """Play the seat until the match is over (or ``stop_after`` actions), always the first
    action listed (draw from the stock; then lay down, lay off or discard); checks each hand's
    result box as it shows. The last state seen."""
    last, acted = -1, 0
    while True:
        state = settle(tab, last)
        last = state["version"]
        if state["status"] == "match_over":
            return state
        if state["status"] == "hand_over":
            assert state["result"] and "result" in state["result"], state
            continue
        if stop_after is not None and acted >= stop_after:
            return state
        check_drawn(tab, str(tab.url), last)
        first = tab.locator("#table-actions button.act").first
        if phone:
            first.tap()
        else:
            expect(first).to_have_attribute("data-key", "1")
            tab.keyboard.press("1")
        acted += 1


def check_match_over(tab: Any, seats: int) -> str:
    """The match's result and every hand's on the page; the replay opens. The match's URL."""
    expect(tab.locator("#match-result")).to_contain_text("Match result")
    expect(tab.locator("#match-result ul.scores li")).to_have_count(seats)
    expect(tab.locator("#table-results li")).to_have_count(HANDS)
    for li in tab.locator("#table-results li").all():
        expect(li).to_contain_text("Hand ")
    expect(tab.locator("#table-actions button")).to_have_count(0)
    replay = tab.locator("#replay-link")
    href = str(replay.get_attribute("href"))
    assert re.fullmatch(r"/matches/\d+", href), href
    replay.click()
    tab.wait_for_selector("#viewer.ready")
    expect(tab.locator("#felt .seat")).to_have_count(seats)
    return href


def capture(tab: Any) -> list[str]:
    """Every body the page receives from its table (fetch answers and server-sent events, read
    off the network, as the browser got them)."""
    bodies: list[str] = []
    cdp = tab.context.new_cdp_session(tab)
    cdp.send("Network.enable")
    cdp.on("Network.eventSourceMessageReceived", lambda e: bodies.append(e["data"]))

    def answered(response: Any) -> None:
        if "/tables/" in response.url and not response.url.endswith("/events"):
            # A navigation away can drop a body: the next view carries what it did.
            with suppress(Exception):
                bodies.append(response.text())

    tab.on("response", answered)
    return bodies


def check_received(url: str, table: str, bodies: list[str]) -> None:
    """Every card in the views the page received about hand k (read off the network), the
    seat had seen in hand k, checked against the match's full record (helpers.tables)."""
    views = [json.loads(b) for b in bodies if b.lstrip().startswith("{")]
    views = [v for v in views if "version" in v]
    assert len(views) >= 10, len(views)
    _match, logs, seat = record_of(url, table)
    check_nothing_unseen(views, logs, seat)


@pytest.mark.parametrize(("seats", "width"), [(2, 1360), (2, 390), (3, 1360), (3, 390)],
                         ids=["two-keys", "two-taps", "three-keys", "three-taps"])  # fmt: skip
def test_a_visitor_plays_a_whole_match_against_search(browser: Any, arena: tuple[str, str, str], seats: int,
                                                      width: int) -> None:  # fmt: skip
    base, code, url = arena
    phone = width <= 390
    with tab_at(browser, width) as tab:
        bodies = capture(tab)
        table = urlparse(join_and_sit(tab, base, code, seats, phone)).path
        expect(tab.locator("#table .seat")).to_have_count(seats)
        expect(tab.locator("#table .seat.me")).to_have_count(1)
        state = settle(tab, -1)
        if phone:  # the table and its buttons fit the phone, each a finger's target
            check_phone_page(tab, "/tables/...")
        assert state["status"] in ("your_turn", "hand_over", "match_over")
        play(tab, phone)
        owner = str(tab.locator("#table .seat.me .name").inner_text()).removesuffix(" (you)")
        check_match_over(tab, seats)
        check_received(url, table, bodies)
        tab.goto(base + "/people")
        expect(tab.locator("main")).to_contain_text(owner.lstrip("@"))


def cards_and_actions(tab: Any) -> tuple[list[str], list[str]]:
    hand = tab.eval_on_selector_all("#table .seat.me .hand-cards svg", "es => es.map(e => e.dataset.card)")
    legal = tab.eval_on_selector_all("#table-actions button.act", "es => es.map(e => e.dataset.action)")
    return hand, legal


def test_a_closed_tab_reopened_resumes_the_seat(browser: Any, arena: tuple[str, str, str]) -> None:
    base, code, _url = arena
    with tab_at(browser, 1360) as tab:
        url = join_and_sit(tab, base, code, 2, False)
        state = play(tab, False, stop_after=3)
        if state["status"] != "your_turn":
            pytest.skip("the match ended in three moves")
        hand, legal = cards_and_actions(tab)
        context = tab.context
        tab.close()  # walks away mid-turn, the clock running
        again = context.new_page()
        again.goto(url)
        back = settle(again, -1)
        assert back["status"] == "your_turn" and back["version"] == state["version"], back
        assert cards_and_actions(again) == (hand, legal)  # the same moment of the same seat
        assert "Faults" not in again.locator("#table-status").inner_text()
        play(again, False)
        check_match_over(again, 2)
        view = again.request.get(url + "/view.json").json()
        assert view["status"] == "match_over"
        assert (view.get("faults") or {}).get("count", 0) == 0, view.get("faults")
