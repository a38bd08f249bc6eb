"""House bots (greedy, heuristic): always legal, deterministic, and ordered by strength."""

from __future__ import annotations

import pytest
from helpers.clocks import still

from bots.greedy import GreedyBot
from bots.heuristic import HeuristicBot
from bots.random_bot import RandomBot
from sdk.bot import Bot
from sdk.referee import LocalPlayer, MatchResult, play_match
from sdk.rules import Rules

HOUSE = [GreedyBot, HeuristicBot]


def _match(classes: list[type[Bot]], seed: int, hands: int, **kw: object) -> MatchResult:
    # Timed by a clock that never moves: the machine's load is not these tests' business.
    kw.setdefault("clock", still)
    return play_match([LocalPlayer(c) for c in classes], seed, hands, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("bot", HOUSE, ids=lambda c: c.name)
@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_only_legal_actions(bot: type[Bot], players: int) -> None:
    # Against itself and against random opponents (odd and even seats), so it meets both
    # sensible and wild positions; the referee records any illegal reply as a fault.
    for seed, table in ((players, [bot] * players), (100 + players, [bot, RandomBot] * 3)):
        result = _match(table[:players], seed, 30, first_dealer=seed % players)
        assert result.faults == []
        assert len(result.hands) == 30
        assert any(h.record.outcome and h.record.outcome["end"] != "tonk" for h in result.hands)


VARIANTS = [
    Rules(discard_pickup_may_return=True, book_layoff=True),
    Rules(ace_high_or_low=True, meld_out_double=True),
    Rules(hit_lock=True, stock_reshuffle=True, turn_cap=60),
]


@pytest.mark.parametrize("bot", HOUSE, ids=lambda c: c.name)
@pytest.mark.parametrize("rules", VARIANTS, ids=["pickup-book", "acehigh-double", "hitlock-reshuffle"])
def test_legal_under_rule_variants(bot: type[Bot], rules: Rules) -> None:
    result = _match([bot, GreedyBot, bot], 7, 25, rules=rules)
    assert result.faults == []


@pytest.mark.parametrize("bot", HOUSE, ids=lambda c: c.name)
def test_same_match_same_records(bot: type[Bot]) -> None:
    def records() -> list[dict[str, object]]:
        result = _match([bot, HeuristicBot, bot], 12345, 20, match_id="det")
        return [h.record.to_json() for h in result.hands]

    assert records() == records()


def _duplicate_chips(hero: type[Bot], villain: type[Bot], deals: int, seed: int) -> list[int]:
    """The hero's chips per deal, each deal played twice with the seats swapped."""
    first = _match([hero, villain], seed, deals, match_id="a")
    second = _match([villain, hero], seed, deals, match_id="b")
    assert first.faults == [] and second.faults == []
    return [
        a.record.outcome["payoffs"][0] + b.record.outcome["payoffs"][1]  # type: ignore[index]
        for a, b in zip(first.hands, second.hands, strict=True)
    ]


@pytest.mark.parametrize(
    ("hero", "villain"),
    [(GreedyBot, RandomBot), (HeuristicBot, GreedyBot)],
    ids=["greedy>random", "heuristic>greedy"],
)
def test_strength_order(hero: type[Bot], villain: type[Bot]) -> None:
    # Fixed seeds make this a deterministic computation (it cannot flake); the margins
    # measured by bench/bots.py are several standard errors wide, so 300 deals suffice.
    chips = _duplicate_chips(hero, villain, 300, seed=2024)
    won, lost = sum(c > 0 for c in chips), sum(c < 0 for c in chips)
    assert sum(chips) > 0
    assert won > lost
