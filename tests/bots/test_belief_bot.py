"""The belief bot: its worlds agree with what the seat saw (no card it has seen elsewhere is
ever dealt to an opponent), its evidence is what really happened at the table, the belief
moves the way each piece of evidence says, and it plays legally and reproducibly."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from functools import partial

import pytest
from helpers.clocks import still
from helpers.worlds import assert_consistent, observations, searched_observations
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bots.belief import MODEL, BeliefBot, BeliefSampler, SeatEvidence, evidence
from bots.greedy import GreedyBot
from bots.heuristic import HeuristicBot
from bots.random_bot import RandomBot
from sdk.actions import Discard, Draw
from sdk.bot import Bot, MatchInfo
from sdk.cards import Card
from sdk.dealing import deck_order
from sdk.engine import HandState
from sdk.observation import Observation, observe
from sdk.referee import LocalPlayer, play_match
from sdk.rules import STANDARD, Rules


def _seen_elsewhere(obs: Observation, seat: int) -> set[Card]:
    """Cards the observing seat has seen anywhere but in ``seat``'s known pick-ups."""
    return obs.cards_seen() - set(obs.opponent_known_cards(seat))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), players=st.integers(2, 6), which=st.integers(0, 2**16))
def test_never_deals_a_card_seen_elsewhere(seed: int, players: int, which: int) -> None:
    seen = observations(players, seed)
    assume(seen)  # both hands ended as dealt (a Tonk each): no decision, nothing to sample
    rng = random.Random(which)
    for obs in seen[which % len(seen) :: 3]:
        sampler = BeliefSampler(obs)
        for _ in range(3):
            world = sampler.sample_modelled(rng)
            assert_consistent(obs, world)
            for seat, hand in enumerate(world.hands):
                if seat != obs.seat:
                    assert not set(hand) & _seen_elsewhere(obs, seat)
                    assert set(obs.opponent_known_cards(seat)) <= set(hand)


@pytest.mark.parametrize("players", [2, 3, 4])
def test_consistent_at_every_decision_of_its_own_play(players: int) -> None:
    seen = searched_observations(BeliefBot, players, 60 + players)
    rng = random.Random(players)
    for obs in seen:
        assert_consistent(obs, BeliefSampler(obs).sample_modelled(rng))


def _play_noting_evidence(seed: int, players: int) -> tuple[HandState, list[SeatEvidence]]:
    """Heuristic play of one hand on the real engine, noting at each draw the pile's top card."""
    state = HandState.deal(deck_order(seed, 0), players, 0, STANDARD)
    bots = [HeuristicBot() for _ in range(players)]
    truth = [SeatEvidence() for _ in range(players)]
    while state.outcome is None:
        seat = state.to_act
        obs = observe(state, seat)
        reply = bots[seat].act(obs)
        action = obs.legal_actions[reply] if isinstance(reply, int) else reply
        if isinstance(action, Draw) and state.discard:
            mine = truth[seat]
            (mine.picked if action.source == "discard" else mine.passed).append(state.discard[-1])
        if isinstance(action, Discard):
            truth[seat].discarded.append(action.card)
        state.apply(action)
    return state, truth


def test_evidence_is_what_happened() -> None:
    # evidence() must recover the same passes, pick-ups and discards from the public history.
    checked = 0
    for seed in range(20):
        state, truth = _play_noting_evidence(seed, 3)
        found = evidence(observe(state, seed % 3))
        for mine, real in zip(found, truth, strict=True):
            assert mine.passed == real.passed
            assert mine.picked == real.picked
            assert mine.discarded == real.discarded
        checked += sum(len(t.passed) + len(t.picked) for t in truth)
    assert checked > 50


def _weight(card: str, seen: SeatEvidence) -> float:
    return MODEL.weights([Card.parse(card)], seen)[0]


def test_each_piece_of_evidence_moves_the_belief() -> None:
    nothing = SeatEvidence()
    passed = SeatEvidence()
    passed.passed.append(Card.parse("7h"))
    assert _weight("7s", passed) < _weight("7s", nothing)  # it did not want a second 7
    discarded = SeatEvidence()
    discarded.discarded.append(Card.parse("9c"))
    assert _weight("9d", discarded) < _weight("8d", discarded)  # it would have kept a pair
    assert _weight("10d", discarded) < _weight("9d", discarded)  # above its last discard
    picked = SeatEvidence()
    picked.picked.append(Card.parse("5s"))
    assert _weight("6s", picked) > _weight("6s", nothing)  # it took the 5 to build a spread
    late = SeatEvidence()
    late.discarded += [Card.parse(c) for c in ("Kc", "Qd", "Jh", "10s", "9h")]
    assert _weight("Ks", late) < _weight("Ks", nothing) / 5  # high cards go first


def test_sampled_hands_follow_the_belief() -> None:
    # A position where the opponent has discarded several times: its sampled hands hold
    # fewer high cards than a uniform deal of the same unseen cards would give it.
    obs = next(o for o in observations(2, 11, hands=2) if o.phase == "start" and o.turn >= 8)
    opponent = 1 - obs.seat
    sampler = BeliefSampler(obs)
    rng = random.Random(3)
    belief: Counter[int] = Counter()
    uniform: Counter[int] = Counter()
    for _ in range(400):
        for counter, world in ((belief, sampler.sample_modelled(rng)), (uniform, sampler.sample(rng))):
            counter.update(c.value for c in world.hands[opponent][len(sampler.known[opponent]) :])
    assert belief[10] < 0.8 * uniform[10]


@pytest.mark.parametrize("players", [2, 3, 5])
def test_only_legal_actions(players: int) -> None:
    table: list[Callable[[], Bot]] = [partial(BeliefBot, budget_ms=0, iterations=3)]
    table += [RandomBot, HeuristicBot] * 3
    result = play_match([LocalPlayer(f) for f in table[:players]], 9 * players, 5, clock=still)
    assert result.faults == []


def test_legal_under_rule_variants() -> None:
    rules = Rules(hit_lock=True, stock_reshuffle=True, meld_out_double=True, turn_cap=40)
    bots: list[Callable[[], Bot]] = [partial(BeliefBot, budget_ms=0, iterations=3), GreedyBot, HeuristicBot]
    result = play_match([LocalPlayer(b) for b in bots], 3, 6, rules=rules, clock=still)
    assert result.faults == []


def test_deterministic_with_an_iteration_budget() -> None:
    def records() -> list[dict[str, object]]:
        bots: list[Callable[[], Bot]] = [partial(BeliefBot, budget_ms=0, iterations=5), HeuristicBot]
        result = play_match([LocalPlayer(b) for b in bots], 777, 4, match_id="det", clock=still)
        return [h.record.to_json() for h in result.hands]

    assert records() == records()


def test_same_choices_on_a_slow_or_a_fast_machine() -> None:
    # Its budget counts rollout turns, so under a time budget the same match plays the same
    # whether the machine is idle or busy: here its clock runs 0.1 ms or 1 ms per reading. A
    # budget counted on the clock would search fewer worlds on the "busy" one.
    def records(tick: float) -> list[dict[str, object]]:
        class Clocked(BeliefBot):
            def __init__(self) -> None:
                super().__init__(budget_ms=40)
                self.now = 0.0
                self.clock = self.reading

            def reading(self) -> float:
                self.now += tick
                return self.now

        bots: list[Callable[[], Bot]] = [Clocked, HeuristicBot, GreedyBot]
        result = play_match([LocalPlayer(b) for b in bots], 31, 3, match_id="timed", clock=still)
        return [h.record.to_json() for h in result.hands]

    assert records(0.0001) == records(0.001)


def test_a_tighter_clock_shrinks_the_budget() -> None:
    bot = BeliefBot(budget_ms=200)
    bot.start_match(MatchInfo("m", 0, ("a", "b"), STANDARD, 1, decision_deadline_ms=100))
    assert bot.budget == pytest.approx(0.05)  # half the deadline
    assert bot.hard_stop == pytest.approx(0.08)  # the clock stops a search only past 80% of it
    roomy = BeliefBot(budget_ms=200)
    roomy.start_match(MatchInfo("m", 0, ("a", "b"), STANDARD, 1, decision_deadline_ms=10_000))
    assert roomy.budget == pytest.approx(0.2)
