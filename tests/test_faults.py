"""Fault bots over real gRPC against house bots: the referee charges each fault correctly and
never crashes or hangs, and the seats that behave are scored exactly as the rules say.

Every bot here listens on 127.0.0.1; the fault bots are in tests/faultbots.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager

import pytest
from faultbots import FAULTS, LIFECYCLE_FAULTS, FaultSpec, LifecycleFaultBot, serve_fault

from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from sdk.dealing import deck_order
from sdk.engine import deal_from_deck
from sdk.grpc_player import GrpcPlayer
from sdk.referee import FaultKind, LocalPlayer, MatchResult, Player, RefereeConfig, play_match
from sdk.server import RunningServer, start_server

DEADLINE_MS = 400  # generous: a busy 2-core machine must not make a house bot late
LIFECYCLE_S = 0.5
CONFIG = RefereeConfig(decision_deadline_ms=DEADLINE_MS, time_bank_ms=0, max_faults=3)


@pytest.fixture(scope="module")
def house() -> Iterator[list[str]]:
    """The random and greedy house bots, each on its own gRPC server (many seats each)."""
    servers: list[RunningServer] = [start_server(RandomBot), start_server(GreedyBot)]
    try:
        yield [s.address for s in servers]
    finally:
        for s in servers:
            s.stop(0)


@contextmanager
def grpc_players(addresses: Sequence[str]) -> Iterator[list[Player]]:
    with ExitStack() as stack:
        players: list[Player] = []
        for address in addresses:
            player = GrpcPlayer(address, lifecycle_timeout_s=LIFECYCLE_S)
            stack.callback(player.close)
            players.append(player)
        yield players


def check_consistent(result: MatchResult, seed: int, n: int, first_dealer: int = 0) -> None:
    """Invariants of every match, whoever misbehaved in it."""
    for i, log in enumerate(result.hands):
        record = log.record
        outcome = record.verify()  # the actions replay to exactly the stored outcome
        assert sum(outcome.payoffs) == 0
        # The deal is the seed's deal, whatever the bots did.
        dealer = (first_dealer + i) % n
        hands, turned, stock = deal_from_deck(deck_order(seed, i), n, dealer)
        assert (record.hands, record.discard, record.stock) == (hands, [turned], stock)
        if log.faults:
            # The first fault ends the hand: the faulty seat pays every other seat 2x.
            (fault,) = log.faults
            assert outcome.end == "fault" and outcome.faulted == fault.seat
            assert outcome.payoffs == tuple(-2 * (n - 1) if s == fault.seat else 2 for s in range(n))
            assert fault.decision == len(record.actions)  # faulted at the decision after the last action
        else:
            assert outcome.end != "fault"
    assert len(result.hands) + result.hands_forfeited == result.hands_planned
    # Scores: the hands' payoffs plus the forfeited rest, zero-sum.
    expected = [sum(h.record.outcome["payoffs"][s] for h in result.hands) for s in range(n)]  # type: ignore[index]
    if result.forfeited is not None:
        for s in range(n):
            expected[s] += (-2 * (n - 1) if s == result.forfeited else 2) * result.hands_forfeited
    assert result.scores == expected
    assert sum(result.scores) == 0


def check_faults(result: MatchResult, seat: int, spec: FaultSpec, max_faults: int) -> None:
    assert result.faults, "the fault bot was never charged"
    for fault in result.faults:
        assert fault.seat == seat, f"a well-behaved seat was charged: {fault}"
        assert fault.kind is spec.kind, fault
        assert spec.reason in fault.reason, fault.reason
        assert 0 < len(fault.reason) <= 400  # clear, and short enough for a match log
    if spec.persistent:
        assert len(result.faults) == max_faults
        assert result.forfeited == seat
    else:
        assert result.forfeited in (None, seat)


CASES = sorted(FAULTS)


@pytest.mark.parametrize("fault", CASES)
def test_fault_bot_is_charged_and_the_match_survives(fault: str, house: list[str]) -> None:
    spec = FAULTS[fault]
    i = CASES.index(fault)
    n = 2 + i % 5  # 2..6 seats across the cases
    seat = i % n  # and the fault bot in every position
    seed = 1000 + i
    hands = 10
    # "sleep" answers 50 ms past the deadline; "slow_sometimes" does so on every third decision.
    delay = DEADLINE_MS / 1000 + 0.05
    every = 3 if fault == "slow_sometimes" else 1
    with serve_fault(fault, after=2, every=every, delay_s=delay) as bot:
        addresses = [house[s % 2] for s in range(n)]
        addresses[seat] = bot.address
        with grpc_players(addresses) as players:
            started = time.monotonic()
            result = play_match(players, seed, hands, match_id=f"faults-{fault}", config=CONFIG)
            elapsed = time.monotonic() - started
    check_faults(result, seat, spec, CONFIG.max_faults)
    check_consistent(result, seed, n)
    # Bounded by the deadlines: each fault costs at most one deadline (no time bank here).
    assert elapsed < CONFIG.max_faults * DEADLINE_MS / 1000 + 3.0


@pytest.mark.parametrize("fault", sorted(LIFECYCLE_FAULTS))
def test_a_bot_that_cannot_start_forfeits_the_match(fault: str, house: list[str]) -> None:
    spec = LIFECYCLE_FAULTS[fault]
    with serve_fault(fault) as bot, grpc_players([house[0], bot.address, house[1]]) as players:
        started = time.monotonic()
        result = play_match(players, 7, 5, match_id=f"start-{fault}", config=CONFIG)
        elapsed = time.monotonic() - started
    (only,) = result.faults
    assert (only.seat, only.kind, only.decision) == (1, spec.kind, -1)
    assert spec.reason in only.reason
    assert result.forfeited == 1 and result.hands == [] and result.hands_forfeited == 5
    assert result.scores == [10, -20, 10]
    assert elapsed < LIFECYCLE_S + 2.0


def test_hand_end_crash_costs_nothing_and_grpc_equals_in_process(house: list[str]) -> None:
    """A bot that fails every EndHand is not charged, and a match over gRPC plays exactly
    like the same match in-process (same bots, same seed)."""
    running = start_server(LifecycleFaultBot)
    try:
        with grpc_players([running.address, house[0], house[1]]) as players:
            remote = play_match(players, 99, 5, match_id="lifecycle", config=CONFIG)
    finally:
        running.stop(0)
    local = play_match(
        [LocalPlayer(LifecycleFaultBot), LocalPlayer(RandomBot), LocalPlayer(GreedyBot)],
        99,
        5,
        match_id="lifecycle",
        config=CONFIG,
    )
    assert remote.faults == [] and local.faults == []
    assert remote.scores == local.scores
    assert [h.record.to_json() for h in remote.hands] == [h.record.to_json() for h in local.hands]
    check_consistent(remote, 99, 3)


def test_a_timed_out_call_spends_the_time_bank(house: list[str]) -> None:
    """A hanging bot waits out deadline + bank once; after that only the bare deadline.
    (Before the fix in sdk/referee.py every timeout waited the whole bank again.)"""
    config = RefereeConfig(decision_deadline_ms=100, time_bank_ms=800, max_faults=3)
    with serve_fault("hang") as bot, grpc_players([bot.address, house[0]]) as players:
        started = time.monotonic()
        result = play_match(players, 5, 8, match_id="bank", config=config)
        elapsed = time.monotonic() - started
    reasons = [f.reason for f in result.faults]
    assert reasons == [
        "Decide: no reply within 900 ms",
        "Decide: no reply within 100 ms",
        "Decide: no reply within 100 ms",
    ]
    assert elapsed < 0.9 + 0.1 + 0.1 + 1.0
    check_consistent(result, 5, 2)


def test_slow_replies_spend_the_bank_then_fault(house: list[str]) -> None:
    """Replies just past the deadline are accepted while the bank lasts (same actions as an
    on-time bot would take), then become TIMEOUT faults."""
    config = RefereeConfig(decision_deadline_ms=100, time_bank_ms=400, max_faults=2)
    with serve_fault("sleep", delay_s=0.16) as bot, grpc_players([bot.address, house[1]]) as players:
        started = time.monotonic()
        result = play_match(players, 11, 6, match_id="slow", config=config)
        elapsed = time.monotonic() - started
    late_but_played = sum(
        1 for h in result.hands for s, _ in h.record.actions if s == 0
    )  # the slow seat's accepted actions
    assert 2 <= late_but_played <= 7  # ~60 ms over each: the 400 ms bank covers a handful
    assert [f.kind for f in result.faults] == [FaultKind.TIMEOUT] * 2
    assert result.forfeited == 0
    assert elapsed < 6.0
    check_consistent(result, 11, 2)


@pytest.mark.slow
def test_a_table_of_fault_bots(house: list[str]) -> None:
    """Five different fault bots and one house bot at one table, over several matches: faults
    are charged to the right seats with the right kinds, and no match breaks."""
    faults = ["garbage", "illegal", "crash", "out_of_range", "slow_sometimes"]
    total_faults = 0
    with ExitStack() as stack:
        bots = [
            stack.enter_context(serve_fault(f, after=2 + k, every=2, delay_s=0.3))
            for k, f in enumerate(faults)
        ]
        for m in range(3):
            addresses = [b.address for b in bots] + [house[m % 2]]
            # Rotate so each fault bot sits in each position over the matches.
            order = [(s + m) % 6 for s in range(6)]
            seated = [addresses[o] for o in order]
            kinds = [FAULTS[faults[o]] if o < 5 else None for o in order]
            with grpc_players(seated) as players:
                result = play_match(players, 500 + m, 16, match_id=f"table-{m}", config=CONFIG)
            check_consistent(result, 500 + m, 6)
            per_seat = [sum(1 for f in result.faults if f.seat == s) for s in range(6)]
            assert max(per_seat) <= CONFIG.max_faults
            if result.forfeited is not None:
                assert per_seat[result.forfeited] == CONFIG.max_faults
            for fault in result.faults:
                spec = kinds[fault.seat]
                assert spec is not None, f"the house bot was charged: {fault}"
                assert fault.kind is spec.kind and spec.reason in fault.reason
            total_faults += len(result.faults)
    assert total_faults >= 3 * CONFIG.max_faults
