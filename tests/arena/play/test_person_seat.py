"""A person's seat over Redis (arena/play/seat_channel.py's RedisChannel, arena/play/person.py):
the channel the arena uses when TONK_REDIS_URL is set, against the real Redis of the suite.
The store's channel is played end to end by tests/dashboard/test_tables.py.

A whole match is refereed with a PersonPlayer in seat 0 and the house's greedy bot in seat 1,
the person answering through the channel as the web process does; a move is accepted once,
for the view it was chosen from; a seat left alone faults on its clock and forfeits.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from arena.play import seat_channel
from arena.play.person import PersonPlayer
from arena.play.seat_channel import ActionRefusedError, RedisChannel, redis_client, wait_for
from bots.greedy import GreedyBot
from sdk.referee import FaultKind, LocalPlayer, MatchResult, RefereeConfig, play_match


@pytest.fixture
def channel(redis_url: str, redis_prefix: str) -> Iterator[RedisChannel]:
    yield RedisChannel(redis_client(redis_url), f"{redis_prefix}:seat:1")


def referee(channel: RedisChannel, clock_ms: int, hands: int) -> tuple[threading.Thread, list[MatchResult]]:
    """The match played on a thread of its own, as a worker plays it."""
    person = PersonPlayer("@someone", channel, clock_ms=clock_ms, max_faults=3)
    out: list[MatchResult] = []

    def run() -> None:
        players = [person, LocalPlayer(GreedyBot)]
        try:
            names = ["@someone", "greedy"]
            out.append(play_match(players, 20261207, hands, names=names, config=RefereeConfig()))
        finally:
            person.close()

    thread = threading.Thread(target=run, name="test-person-match", daemon=True)
    thread.start()
    return thread, out


def test_a_whole_match_over_redis(channel: RedisChannel) -> None:
    thread, out = referee(channel, 30_000, 3)
    seen = -1
    moves = 0
    while True:
        view = wait_for(channel.read, seen, 30.0)
        assert view is not None and view["version"] > seen, "the match stalled"
        seen = view["version"]
        if view["status"] == "match_over":
            break
        if view["status"] == "your_turn":
            sent = channel.send(view["version"], view["legal"][0]["id"])
            assert sent["status"] == "waiting" and sent["version"] == view["version"] + 1
            seen = sent["version"]
            moves += 1
    thread.join(30)
    (result,) = out
    assert not result.faults and len(result.hands) == 3 and moves > 0
    assert view["result"]["match"]["scores"] == result.scores


def test_a_move_is_taken_once_and_only_for_the_view_it_was_chosen_from(
    channel: RedisChannel, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: dict[str, Any] = {"status": "your_turn", "legal": [{"id": "draw stock"}, {"id": "drop"}]}
    view = channel.publish(asked, "m/0/0")
    with pytest.raises(ActionRefusedError, match="not one of your legal"):
        channel.send(view["version"], "discard 10h")
    with pytest.raises(ActionRefusedError, match="out of date"):
        channel.send(view["version"] - 1, "drop")
    assert channel.read() == view  # refusals change nothing
    # Two pages send at once: each passes the check before either writes (a barrier after
    # it), so the second's write meets the first's under WATCH; one is taken, the other,
    # reading again, refused.
    both_checked = threading.Barrier(2, timeout=3.0)
    overlapped: list[bool] = []
    check = seat_channel.check_send

    def check_then_wait(*args: Any) -> dict[str, Any]:
        view = check(*args)
        with contextlib.suppress(threading.BrokenBarrierError):  # the retry finds no partner
            both_checked.wait()
            overlapped.append(True)
        return view

    monkeypatch.setattr(seat_channel, "check_send", check_then_wait)
    answers: list[str] = []

    def send(action: str) -> None:
        try:
            channel.send(view["version"], action)
            answers.append("ok " + action)
        except ActionRefusedError:
            answers.append("refused")

    threads = [threading.Thread(target=send, args=(a,)) for a in ("drop", "draw stock")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert overlapped == [True, True], "the two sends did not overlap"
    assert sorted(answers)[-1] == "refused" and len([a for a in answers if a.startswith("ok")]) == 1
    taken = channel.take("m/0/0", 1.0)
    assert taken is not None and f"ok {taken}" in answers
    assert channel.take("m/0/0", 0.1) is None  # once


def test_a_seat_left_alone_faults_on_its_clock_and_forfeits(channel: RedisChannel) -> None:
    thread, out = referee(channel, 200, 8)
    thread.join(60)
    (result,) = out
    assert [(f.seat, f.kind) for f in result.faults] == [(0, FaultKind.TIMEOUT)] * 3
    assert result.forfeited == 0
    last = channel.read()
    assert last is not None and last["status"] == "match_over" and last["faults"] == {"count": 3, "max": 3}
