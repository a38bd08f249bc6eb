"""The replay viewer in the browser: stepped through with the keys, played and paused, seen from
one seat, opened at the moment a URL names, with no spoilers until asked, the engine's numbers
at every step, and what it offers to download.

Playing runs on Playwright's clock (installed in the page, then stopped): the test moves time,
so a busy machine cannot play the replay further than the test has looked."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers.browser import cards_of, expect, expect_step, new_context, showcase, step_of

if TYPE_CHECKING:
    from helpers.dashboard_fixtures import Seeded

pytestmark = pytest.mark.browser

#: How far ahead of the page's time a test stops its clock: whatever a busy machine takes
#: between reading the time and stopping the clock, the stop is still ahead (none of these
#: pages has a timer set then, so jumping there changes nothing).
CLOCK_AHEAD_MS = 60_000


def test_replay_viewer(page: Any, base_url: str, screenshots: Path) -> None:
    match_id, hand, step = showcase(base_url)
    page.clock.install()
    page.goto(f"{base_url}/matches/{match_id}")
    page.wait_for_selector("#viewer.ready")
    expect_step(page, 0, 0)
    expect(page.locator("#felt .seat")).to_have_count(3)
    first = page.locator("#caption").inner_text()
    assert "deals 5 cards to each player" in first

    # Step forward with the keyboard: the cards change and so does the caption.
    to_act = int(page.locator("#felt .seat.to-act").get_attribute("data-seat"))
    before = cards_of(page, to_act)
    assert len(before) == 5 and "back" not in before
    page.keyboard.press("ArrowRight")
    expect_step(page, 0, 1)
    after = cards_of(page, to_act)
    assert page.locator("#caption").inner_text() != first
    if "goes down" not in page.locator("#caption").inner_text():
        assert len(after) == 6 and set(before) < set(after)  # a draw adds a card
    page.keyboard.press("ArrowLeft")
    expect_step(page, 0, 0)
    assert cards_of(page, to_act) == before
    page.keyboard.press("End")
    expect(page.locator("#felt")).not_to_have_attribute("data-step", "0")
    last = step_of(page)[1]
    assert last > 0 and page.locator("#felt .seat.winner").count() >= 1
    expect(page.locator("#felt .payoff")).to_have_count(3)
    page.keyboard.press("Home")
    expect_step(page, 0, 0)

    # Next / previous hand, and jumping to a hand.
    page.keyboard.press("]")
    expect_step(page, 1, 0)
    page.keyboard.press("[")
    expect_step(page, 0, 0)
    page.select_option("#hand-select", str(hand))
    expect(page.locator("#felt")).to_have_attribute("data-hand", str(hand))

    # Play and pause: it advances on its own at the chosen speed, a step every 250 ms of the
    # page's clock (stopped first: installed, it still runs with real time).
    page.select_option("#speed", "250")
    page.clock.pause_at(page.evaluate("Date.now()") + CLOCK_AHEAD_MS)
    page.keyboard.press(" ")
    expect(page.locator('[data-cmd="play"]')).to_contain_text("Pause")
    page.clock.run_for(500)
    expect_step(page, hand, 2)  # no eval in the page: the CSP forbids it
    page.keyboard.press(" ")
    expect(page.locator('[data-cmd="play"]')).to_contain_text("Play")

    # Jump to a step with melds on the table through the action log, as a person would (the
    # log shows later steps once results are asked for: they would spoil the hand's end).
    page.check("#show-results")
    page.click(f'#log li[data-step="{step}"]')
    expect_step(page, hand, step)
    assert page.locator("#felt .meld").count() >= 1
    assert page.locator("#log li.current").count() == 1 and page.locator("#log .lat").count() > 0
    expect(page.locator("#payoffs tbody tr.current")).to_have_attribute("data-hand", str(hand))
    page.screenshot(path=str(screenshots / "replay.png"))  # the replay fits one screen

    # One seat's view: the other hands become card backs, the stock stays face down.
    everyone = {s: cards_of(page, s) for s in range(3)}
    assert all("back" not in c for c in everyone.values())
    page.select_option("#perspective", "0")
    expect(page.locator("#felt")).to_have_attribute("data-view", "0")
    assert cards_of(page, 0) == everyone[0]
    for s in (1, 2):
        assert cards_of(page, s) == ["back"] * len(everyone[s])
    assert page.locator("#felt .stock svg.card").get_attribute("data-card") == "back"
    me = page.locator('#felt .seat[data-seat="0"] .name').inner_text()
    lines = page.eval_on_selector_all(
        "#log li", "els => els.map(e => [e.querySelector('.who')?.textContent, e.textContent])"
    )
    others = [text for who, text in lines if who and who != me]
    assert others and not any("draws from the stock (" in text for text in others)
    # ...and nothing after the moment shown: later log lines are hidden until stepped to.
    expect(page.locator(f'#log li[data-step="{step + 1}"]')).to_be_hidden()
    expect(page.locator(f'#log li[data-step="{step}"]')).to_be_visible()
    page.locator("#viewer").screenshot(path=str(screenshots / "replay-seat-view.png"))
    page.select_option("#perspective", "all")
    expect(page.locator("#felt")).to_have_attribute("data-view", "all")
    assert cards_of(page, 1) == everyone[1]


def test_downloads_from_the_viewer(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    page.goto(f"{base_url}/matches/{seeded_sqlite.fault_match}")
    page.wait_for_selector("#viewer.ready")
    href = page.get_attribute("#hand-download", "href")
    assert href == f"/api/v1/matches/{seeded_sqlite.fault_match}/hands/0"
    with page.expect_download() as download:
        page.click("#hand-download")
    record = Path(download.value.path()).read_text()
    assert '"format": "tonk-hand/1"' in record and "latency_us" not in record
    page.check("#show-results")  # later log lines show once results may be seen
    # The first hand that has a decision (a hand can end in TONK on the deal, with none).
    for hand in range(int(page.locator("#hand-select option").count())):
        page.select_option("#hand-select", str(hand))
        expect(page.locator("#felt")).to_have_attribute("data-hand", str(hand))
        if page.locator('#log li[data-step="1"] a.dl').count():
            break
    with page.expect_download() as download:
        page.click('#log li[data-step="1"] a.dl')
    request = Path(download.value.path()).read_text()
    assert '"decisionId"' in request and '"observation"' in request  # proto3 JSON
    # A link to a fault opens its hand at the end, where the fault is.
    page.goto(f"{base_url}/bots/flaky")
    page.locator("ul.fault-list a").first.click()
    page.wait_for_selector("#viewer.ready")
    assert "fault" in page.locator("#log li.current").get_attribute("class").split()
    expect(page.locator("#caption")).to_contain_text("faulted")
    page.goto(f"{base_url}/matches/{seeded_sqlite.fault_match}")
    page.wait_for_selector("#viewer.ready")
    page.check("#show-results")
    # A faulted hand highlights the fault in the log.
    page.select_option("#hand-select", "1")
    expect(page.locator("#felt")).to_have_attribute("data-hand", "1")
    faults = page.locator("#log li.fault")
    if faults.count():
        expect(faults.first).to_contain_text("FAULT")


def test_keyboard_steps_whatever_list_was_used(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    page.goto(f"{base_url}/matches/{seeded_sqlite.done_match}")
    page.wait_for_selector("#viewer.ready")
    uses = [
        ("#hand-select", lambda: page.select_option("#hand-select", "1")),
        ("#speed", lambda: page.select_option("#speed", "500")),
        ("#perspective", lambda: page.select_option("#perspective", "1")),
        ("#timeline", lambda: page.locator("#timeline").fill("1")),
        ("#show-results", lambda: page.click("#show-results")),
        ("#hand-strip button", lambda: page.click('#hand-strip button[data-hand="2"]')),
        ("button[data-cmd='first']", lambda: page.click("button[data-cmd='first']")),
    ]
    for selector, use in uses:
        use()
        page.focus(selector) if selector.startswith("#") and "button" not in selector else None
        hand, step = step_of(page)
        if step > 0:
            page.keyboard.press("Home")
            expect_step(page, hand, 0, selector)
            hand, step = step_of(page)
        page.keyboard.press("ArrowRight")
        expect_step(page, hand, step + 1, selector)
        page.keyboard.press("ArrowLeft")
        expect_step(page, hand, step, selector)
        page.keyboard.press("]")
        expect_step(page, hand + 1, 0, selector)
        page.keyboard.press("[")
        expect_step(page, hand, 0, selector)
    expect(page.locator("#speed")).to_have_value("500")  # the keys did not change the lists
    expect(page.locator("#perspective")).to_have_value("1")


def test_the_url_opens_the_moment_shown(
    page: Any, browser: Any, base_url: str, seeded_sqlite: Seeded
) -> None:
    page.goto(f"{base_url}/matches/{seeded_sqlite.done_match}")
    page.wait_for_selector("#viewer.ready")
    page.keyboard.press("]")
    page.keyboard.press("]")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    expect_step(page, 2, 3)
    expect(page).to_have_url(re.compile(r"#hand=2&step=3$"))
    url = page.url
    caption = page.locator("#caption").inner_text()
    other = new_context(browser).new_page()
    try:
        other.goto(url)
        other.wait_for_selector("#viewer.ready")
        expect_step(other, 2, 3)
        assert other.locator("#caption").inner_text() == caption
    finally:
        other.context.close()


def test_no_spoilers_until_asked(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    page.goto(f"{base_url}/matches/{seeded_sqlite.done_match}")
    page.wait_for_selector("#viewer.ready")
    names = [page.locator(f'#felt .seat[data-seat="{s}"] .name').inner_text() for s in range(2)]
    options = page.eval_on_selector_all("#hand-select option", "els => els.map(e => e.textContent)")
    assert options and not any(name in text for text in options for name in names)
    expect(page.locator("#payoffs")).to_be_hidden()
    expect(page.locator('#log li[data-step="2"]')).to_be_hidden()
    page.check("#show-results")
    expect(page).to_have_url(re.compile(r"&results=1$"))
    options = page.eval_on_selector_all("#hand-select option", "els => els.map(e => e.textContent)")
    assert any(name in text for text in options for name in names)
    expect(page.locator("#payoffs")).to_be_visible()


def test_the_table_shows_the_engines_numbers(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    """What the page shows at every step is the server's (engine's) numbers, hand after hand."""
    import json
    import urllib.request

    match_id = seeded_sqlite.fault_match
    with urllib.request.urlopen(f"{base_url}/api/v1/matches/{match_id}/steps") as r:
        hands = json.load(r)["hands"]
    page.goto(f"{base_url}/matches/{match_id}")
    page.wait_for_selector("#viewer.ready")
    for h, hand in enumerate(hands[:3]):
        for k, step in enumerate(hand["steps"]):
            expect_step(page, h, k)
            seats = len(hand["players"])
            shown = [int(page.get_attribute(f'#felt .seat[data-seat="{s}"] .meta', "data-total"))
                     for s in range(seats)]
            assert shown == step["totals"]
            assert [cards_of(page, s) for s in range(seats)] == step["hands"]
            assert page.locator("#caption").inner_text() == step["caption"]
            if "outcome" in step:
                paid = [int(page.get_attribute(f'#felt .seat[data-seat="{s}"] .payoff', "data-payoff"))
                        for s in range(seats)]
                assert paid == step["outcome"]["payoffs"]
            page.keyboard.press("ArrowRight")


def long_hands(base_url: str, match_id: int) -> list[int]:
    """The hands of a match with at least three steps (not ended on the deal)."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"{base_url}/api/v1/matches/{match_id}/steps") as r:
        hands = json.load(r)["hands"]
    return [h for h, hand in enumerate(hands) if len(hand.get("steps", [])) >= 3]


def test_playing_pauses_on_each_hands_result(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    """Playing, a hand's result stays up a while before the next deal replaces it; the page's
    clock is the test's (Playwright's clock), so no real time is waited on."""
    match_id = seeded_sqlite.done_match
    hand = next(h for h in long_hands(base_url, match_id) if h + 1 in long_hands(base_url, match_id))
    page.clock.install()
    page.goto(f"{base_url}/matches/{match_id}#hand={hand}&step=end")
    page.wait_for_selector("#viewer.ready")
    last = step_of(page)[1]
    assert step_of(page) == (hand, last) and last > 0
    page.select_option("#speed", "250")
    # Installed, the clock still runs with real time: stop it, so a busy machine changes nothing.
    page.clock.pause_at(page.evaluate("Date.now()") + CLOCK_AHEAD_MS)
    page.keyboard.press(" ")
    page.clock.run_for(1000)  # four ticks at 4x: the result is still shown
    assert step_of(page) == (hand, last)
    page.clock.run_for(600)  # 1.5 s in all: the next deal
    expect_step(page, hand + 1, 0)
    page.clock.run_for(260)  # then a step a tick again
    expect_step(page, hand + 1, 1)
    page.keyboard.press(" ")


def test_a_seats_view_names_no_winner_ahead_of_the_moment(page: Any, base_url: str,
                                                            seeded_sqlite: Seeded) -> None:
    """With results shown, the hand list names each hand's winners; in one seat's view only
    of the hands that seat has seen end by the moment shown, as its log shows nothing ahead."""
    match_id = seeded_sqlite.done_match
    hand = long_hands(base_url, match_id)[0]
    page.goto(f"{base_url}/matches/{match_id}#hand={hand}&step=1&view=0&results=1")
    page.wait_for_selector("#viewer.ready")
    labels = "els => els.map(e => e.textContent)"
    options = page.eval_on_selector_all("#hand-select option", labels)
    assert all(":" not in o for o in options[hand:]), options  # this hand and later: not yet
    assert all(":" in o for o in options[:hand]), options  # earlier ones ended before
    strip = page.eval_on_selector_all("#hand-strip button", "els => els.map(e => e.title)")
    assert all(":" not in t for t in strip[hand:]), strip
    page.keyboard.press("End")  # this hand's end: its result is the seat's to see
    expect(page.locator("#felt")).not_to_have_attribute("data-step", "1")
    options = page.eval_on_selector_all("#hand-select option", labels)
    assert ":" in options[hand] and all(":" not in o for o in options[hand + 1:]), options
    page.select_option("#perspective", "all")  # everything: every hand's result
    expect(page.locator("#felt")).to_have_attribute("data-view", "all")
    assert all(":" in o for o in page.eval_on_selector_all("#hand-select option", labels))
    # The View list shows whose view it is in full (it read "Only what greedy sa...").
    page.select_option("#perspective", "1")
    expect(page.locator("#felt")).to_have_attribute("data-view", "1")
    fits = page.eval_on_selector(
        "#perspective",
        "s => { const c = document.createElement('canvas').getContext('2d');"
        " c.font = getComputedStyle(s).font;"
        " return c.measureText(s.options[s.selectedIndex].text).width + 24 <= s.clientWidth; }",
    )
    assert fits


def test_a_hash_changed_by_hand_keeps_its_view_and_results(
    page: Any, base_url: str, seeded_sqlite: Seeded
) -> None:
    """Changing only the URL's ``#...`` (typed, or a link within the page) applies its view and
    results as well as its hand and step; what it leaves out stays as shown, and stays in the
    address (before, view and results were ignored and then dropped: issue #40, point 15)."""
    page.goto(f"{base_url}/matches/{seeded_sqlite.done_match}")
    page.wait_for_selector("#viewer.ready")
    expect_step(page, 0, 0)
    assert not page.locator("#show-results").is_checked()
    page.evaluate("location.hash = '#hand=0&step=2&view=1&results=1'")
    expect_step(page, 0, 2)
    expect(page.locator("#felt")).to_have_attribute("data-view", "1")
    expect(page.locator("#show-results")).to_be_checked()
    expect(page.locator("#perspective")).to_have_value("1")
    expect(page).to_have_url(re.compile(r"#hand=0&step=2&view=1&results=1$"))
    # A hash naming only a moment: the view and results stay, in the page and in the address.
    page.evaluate("location.hash = '#hand=2&step=0'")
    expect_step(page, 2, 0)
    expect(page).to_have_url(re.compile(r"#hand=2&step=0&view=1&results=1$"))
    expect(page.locator("#felt")).to_have_attribute("data-view", "1")
    # ...and one that changes only them redraws the same moment.
    page.evaluate("location.hash = '#hand=2&step=0&view=all&results=0'")
    expect(page.locator("#felt")).to_have_attribute("data-view", "all")
    expect(page.locator("#show-results")).not_to_be_checked()
    expect(page).to_have_url(re.compile(r"#hand=2&step=0$"))
    expect_step(page, 2, 0)


def test_a_hands_label_is_not_cut_with_results_shown(page: Any, base_url: str, seeded_sqlite: Seeded) -> None:
    """With results shown a hand's label in the hand list names its winners and how it ended:
    the list is as wide as that label (it was cut at 220 px: issue #40, point 15)."""
    page.goto(f"{base_url}/matches/{seeded_sqlite.done_match}#hand=1&step=0&results=1")
    page.wait_for_selector("#viewer.ready")
    expect(page.locator("#hand-select option").nth(1)).to_contain_text("\u00b7")
    room = page.eval_on_selector("#hand-select", """s => {
      const probe = document.createElement('span');
      probe.style.font = getComputedStyle(s).font;
      probe.style.whiteSpace = 'pre';
      probe.style.position = 'absolute';
      probe.textContent = s.selectedOptions[0].textContent;
      document.body.appendChild(probe);
      const text = probe.getBoundingClientRect().width;
      probe.remove();
      return s.clientWidth - text;
    }""")
    assert room >= 20, room  # the text, and the list's padding and arrow beside it
