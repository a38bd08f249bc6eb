#!/usr/bin/env python3
"""What a bot gains by remembering a duplicate deal: a memory-keeping cheater, measured.

    .venv/bin/python bench/fairplay.py [--deals 400] [--villains greedy heuristic] [--jobs 2]

Every deal is played twice heads-up from one seed (duplicate, as the arena plays it): first
with the hero in seat 0, then in seat 1, holding the cards the villain held the first time.
The hero :class:`MemoryBot` plays like its honest base (``--base``, greedy by default) but keeps
everything it was sent about each hand in a class-level memory, recognises the deal when it
comes round again (same players, and the same first face-up card hand after hand, so it tells
the deals of a whole tournament apart) and uses what it remembers: an opponent whose hand it
knows exactly is gone down on only when the hero is strictly lowest, and never gone down
against otherwise; a stock card it knows is drawn or avoided.

It is measured under two referees:

* ``leak``: the referee as it was before issue #18 (``reveal=True``): EndHand carries the full
  record and EndMatch the seed, so the second time round the hero knows every hand and the
  whole stock order;
* ``closed``: the referee now (``reveal=False``): EndHand carries the seat's own view and the
  hands the rules show; all the hero carries over is what its seat saw: its own starting hand
  (the opponent's now) and its own stock draws (the hands shown at a drop or showdown are not
  used: heads-up, the second time round they are about the cards the hero holds itself);

each against two references, paired deal by deal (same deals, same villain): the honest base
bot (the whole edge of remembering), and the same cheater keeping only what its seat saw, its
own observations (``sight_only``): the edge the arena's messages add to a bot's own memory,
which must be zero within its interval once the leak is closed. Printed: chips per 100 hero
hands with a 95% interval over deals, and the chips over the hands played (the issue's probe
gained +292 chips in 400 hands against greedy).
This is a measuring instrument, and ``MemoryBot`` is the bot the fair-play check must flag
(docs/arena.md), as must ``EvaderBot``, which faults once in each match its memory paid in;
tests/arena/ratings/test_fairplay_check.py and test_fairplay_policy.py serve them, and
bench/fairplay_check.py measures the check on them in real tournaments.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

# Run as a script, this file's folder comes first on sys.path, and bench/bots.py would shadow
# the ``bots`` package: put the repository root there instead.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from bots.greedy import GreedyBot, completes_meld  # noqa: E402
from bots.heuristic import HeuristicBot  # noqa: E402
from sdk.actions import DRAW_DISCARD, DRAW_STOCK, DROP, Action, Discard, Draw, Layoff, Meld  # noqa: E402
from sdk.bot import Bot, DealSummary, HandResult, MatchInfo, MatchSummary  # noqa: E402
from sdk.cards import Card, hand_value  # noqa: E402
from sdk.dealing import deck_order, derive_seed  # noqa: E402
from sdk.engine import HandState  # noqa: E402
from sdk.observation import Observation  # noqa: E402
from sdk.players import load_bot_class  # noqa: E402
from sdk.record import HandRecord  # noqa: E402
from sdk.referee import LocalPlayer, RefereeConfig, play_match  # noqa: E402

Z95 = 1.959963984540054
REFEREES = ("leak", "closed")
BASES: dict[str, type[Bot]] = {"greedy": GreedyBot, "heuristic": HeuristicBot}


@dataclass
class Remembered:
    """What the cheater knows of one hand of a deal: starting hands by seat, stock by position."""

    hands: dict[int, frozenset[Card]] = field(default_factory=dict)
    stock: dict[int, Card] = field(default_factory=dict)


@dataclass(eq=False)
class Seen:
    """One match's deal as the cheater saw it: the first face-up card of each hand, and what it
    learned of each hand. The same players and the same upcards hand after hand are the same
    deal: that is how a later seat rotation (or one played at the same time) is recognised."""

    players: tuple[str, ...]
    ups: dict[int, Card | None] = field(default_factory=dict)
    hands: dict[int, Remembered] = field(default_factory=dict)

    def hand(self, index: int) -> Remembered:
        return self.hands.setdefault(index, Remembered())


class MemoryBot(Bot):
    """Plays like ``base``, and cheats with what it remembers of earlier seatings of a deal."""

    name = "memory"
    version = "1.0.0"
    author = "bench/fairplay.py"
    base: ClassVar[type[Bot]] = GreedyBot
    #: Shared by every instance (``tonk serve`` and the referee make one per match seat): a
    #: bot on its author's machine can keep anything, for as long as it likes.
    memory: ClassVar[list[Seen]] = []
    lock: ClassVar[threading.RLock] = threading.RLock()
    #: Decisions where memory changed what the base would have done (for the report).
    used: ClassVar[list[int]] = [0]
    #: True: remember only what the seat itself saw (its observations, EndHand's ``view``),
    #: ignoring everything else it is sent (records, shown hands, seeds): the reference that
    #: tells what the arena's messages add to a bot's own memory.
    sight_only: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        self.inner = self.base()
        self.changed = 0  # decisions memory changed in this match
        self.mine: Seen | None = None  # this match's deal

    def on_match_start(self, info: MatchInfo) -> None:
        self.inner.start_match(info)
        self.changed = 0
        self.mine = Seen(tuple(sorted(info.players)))
        with self.lock:
            self.memory.append(self.mine)

    def seen(self) -> Seen:
        if self.mine is None:  # EndDeal comes to a fresh instance
            self.mine = Seen(())
            with self.lock:
                self.memory.append(self.mine)
        return self.mine

    # -- remembering ----------------------------------------------------------------------

    def on_hand_end(self, result: HandResult) -> None:
        if result.record and not self.sight_only:  # the leak: the whole record
            self.learn_record(result.record, result.hand_index)
        elif result.view is not None:
            self.learn_view(result.view)

    def on_match_end(self, summary: MatchSummary) -> None:
        if summary.seed is None or self.sight_only or self.match is None:
            return
        # The seed re-deals every hand of the match: what a later seating will be dealt.
        info = self.match
        n = len(info.players)
        for index in range(info.hands):
            deck = deck_order(summary.seed, index)
            state = HandState.deal(deck, n, (info.first_dealer + index) % n, info.rules)
            with self.lock:
                self.seen().ups[index] = state.discard[0]
                memory = self.seen().hand(index)
                memory.hands.update((seat, frozenset(cards)) for seat, cards in enumerate(state.hands))
                memory.stock.update(enumerate(state.stock))

    def on_deal_end(self, deal: DealSummary) -> None:
        if self.sight_only:
            return
        for match in deal.matches:  # too late to help: every seating of the deal is over
            for index, record in enumerate(match.records):
                self.learn_record(record, index)

    def learn_record(self, data: dict[str, Any], hand_index: int) -> None:
        record = HandRecord.from_json(data)
        with self.lock:
            self.seen().ups[hand_index] = record.discard[0] if record.discard else None
            memory = self.seen().hand(hand_index)
            for seat, cards in enumerate(record.hands):
                memory.hands[seat] = frozenset(cards)
            memory.stock.update(enumerate(record.stock))

    def learn_view(self, view: Observation) -> None:
        """Only what the seat saw: its starting hand (rebuilt from its final hand and its own
        events) and its own stock draws, by position in the stock."""
        start = set(view.hand)
        stock: dict[int, Card] = {}
        position = 0
        for event in view.history:
            action = event.action
            if isinstance(action, Draw) and action.source == "stock":
                if event.seat == view.seat and event.card is not None:
                    stock[position] = event.card
                position += 1
            if event.seat != view.seat:
                continue
            if isinstance(action, Draw) and event.card is not None:
                start.discard(event.card)
            elif isinstance(action, Discard):
                start.add(action.card)
            elif isinstance(action, Meld):
                start.update(action.cards)
            elif isinstance(action, Layoff):
                start.add(action.card)
        up = self._first_up_of(view)
        with self.lock:
            self.seen().ups[view.hand_index] = up
            memory = self.seen().hand(view.hand_index)
            memory.hands[view.seat] = frozenset(start)
            memory.stock.update(stock)

    @staticmethod
    def _first_up_of(view: Observation) -> Card | None:
        # The card the deal turned up stays at the bottom of the pile, unless the first
        # player took it (stock_reshuffle aside, which the bench does not use).
        if view.history and view.history[0].action == DRAW_DISCARD and view.history[0].card is not None:
            return view.history[0].card
        return view.discard[0] if view.discard else None

    # -- using it -------------------------------------------------------------------------

    def recall(self, obs: Observation) -> Remembered | None:
        """What another match of this deal showed of this hand: the one deal remembered from
        another match with these players whose upcards agree with every hand of this match so
        far (two hands are enough to tell 40 deals apart), if it has reached this hand."""
        mine = self.seen()
        with self.lock:
            ups = dict(mine.ups)
            found = [
                other for other in self.memory
                if other is not mine and other.players == mine.players
                and all(other.ups.get(i, up) == up for i, up in ups.items())
                and sum(i in other.ups for i in ups) >= min(2, len(ups))
            ]  # fmt: skip
            if len(found) != 1:
                return None
            memory = found[0].hands.get(obs.hand_index)
            if memory is None or not any(seat != obs.seat for seat in memory.hands):
                return None
            return memory

    def opponent_hand(self, obs: Observation, memory: Remembered, seat: int) -> tuple[list[Card], int]:
        """The cards ``seat`` is known to hold now, and how many of its cards are unknown."""
        start = memory.hands.get(seat)
        if start is None:
            return [], obs.hand_sizes[seat]
        cards = set(start)
        unknown = 0
        position = 0
        for event in obs.history:
            action = event.action
            if isinstance(action, Draw) and action.source == "stock":
                if event.seat == seat:
                    card = memory.stock.get(position)
                    if card is None:
                        unknown += 1
                    else:
                        cards.add(card)
                position += 1
                continue
            if event.seat != seat:
                continue
            if isinstance(action, Draw) and event.card is not None:
                cards.add(event.card)
                continue
            played: tuple[Card, ...] = (action.card,) if isinstance(action, Discard | Layoff) else ()
            if isinstance(action, Meld):
                played = action.cards
            for card in played:
                if card in cards:
                    cards.discard(card)
                elif unknown:  # one of the cards we did not know
                    unknown -= 1
        return sorted(cards, key=lambda c: c.index), unknown

    def act(self, obs: Observation) -> Action | int:
        self.learn_view(obs)
        choice = self.inner.act(obs)
        memory = self.recall(obs)
        if memory is None:
            return choice
        base = obs.legal_actions[choice] if isinstance(choice, int) else choice
        if obs.phase != "start":
            return self._discard(obs, memory, base)
        mine = obs.hand_value
        exact: list[int] = []
        lowest_possible: list[int] = []
        for seat in range(len(obs.hand_sizes)):
            if seat == obs.seat:
                continue
            cards, unknown = self.opponent_hand(obs, memory, seat)
            if len(cards) + unknown != obs.hand_sizes[seat]:  # lost track: assume nothing
                lowest_possible.append(obs.hand_sizes[seat])
                continue
            if unknown == 0:
                exact.append(hand_value(cards))
            lowest_possible.append(hand_value(cards) + unknown)  # an unknown card is at least 1
        decision = base
        if obs.can_drop() and min(lowest_possible) > mine:
            decision = DROP  # strictly lowest whatever the unknown cards are
        elif base == DROP and exact and min(exact) <= mine:
            decision = self._draw(obs, memory)  # going down would lose
        elif base != DROP and base in (DRAW_STOCK, DRAW_DISCARD):
            decision = self._draw(obs, memory, base)
        if decision != base:
            MemoryBot.used[0] += 1
            self.changed += 1
        return decision

    def _discard(self, obs: Observation, memory: Remembered, base: Action) -> Action:
        """Do not throw an opponent a card that completes a meld with cards it is known to hold."""
        if not isinstance(base, Discard):
            return base
        seats = [seat for seat in range(len(obs.hand_sizes)) if seat != obs.seat]
        known = [self.opponent_hand(obs, memory, seat)[0] for seat in seats]

        def feeds(card: Card) -> bool:
            return any(len(cards) >= 2 and completes_meld(card, cards, obs.rules) for cards in known)

        if not feeds(base.card):
            return base
        safe = [d for d in obs.discards_available() if not feeds(d.card)]
        if not safe:
            return base
        MemoryBot.used[0] += 1
        self.changed += 1
        return max(safe, key=lambda d: (d.card.value, d.card.index))  # the highest safe card

    def _draw(self, obs: Observation, memory: Remembered, base: Action | None = None) -> Action:
        position = sum(
            1 for e in obs.history if isinstance(e.action, Draw) and e.action.source == "stock"
        )
        next_card = memory.stock.get(position)
        can_stock, can_discard = DRAW_STOCK in obs.legal_actions, DRAW_DISCARD in obs.legal_actions
        top = obs.top_discard
        if next_card is not None and can_stock and can_discard and top is not None:
            good = next_card.value <= 2 or completes_meld(next_card, obs.hand, obs.rules)
            if base == DRAW_DISCARD and good:
                return DRAW_STOCK  # the stock card is better than what the base wanted
            if base == DRAW_STOCK and next_card.value >= 9 and top.value <= 3:
                return DRAW_DISCARD  # a known high card is avoided
        if base is not None:
            return base
        return DRAW_STOCK if can_stock else DRAW_DISCARD


class EvaderBot(MemoryBot):
    """The memory cheater that hides its profitable deals from a check that leaves faulted
    deals out (issue #29): in a match where its memory changes a decision, it answers that
    decision once with an index no action has (one illegal reply; the referee plays for it)."""

    name = "evader"

    def act(self, obs: Observation) -> Action | int:
        before = self.changed
        choice = super().act(obs)
        if self.changed > before == 0:
            return len(obs.legal_actions) + 7  # the first time memory paid in this match
        return choice


def memory_bot(base: type[Bot], *, sight_only: bool = False) -> type[MemoryBot]:
    attrs = {"base": base, "name": f"memory-{base.name}", "sight_only": sight_only}
    return type(f"Memory{base.__name__}", (MemoryBot,), attrs)


# -- the duplicate runner ---------------------------------------------------------------------


@dataclass
class Run:
    deal_chips: list[int]  # hero's chips per deal, both seatings summed
    used: int = 0


def play_pair(hero: type[Bot], villain: type[Bot], deals: int, seed: int, *, reveal: bool) -> Run:
    """``deals`` hands of the match ``seed``, hero in seat 0 then in seat 1 (a fresh memory)."""
    MemoryBot.memory.clear()
    MemoryBot.used[0] = 0
    chips = [0] * deals
    config = RefereeConfig(decision_deadline_ms=60_000)
    for hero_seat in (0, 1):
        seats = [LocalPlayer(hero if s == hero_seat else villain) for s in range(2)]
        names = ["hero" if s == hero_seat else "villain" for s in range(2)]
        result = play_match(seats, seed, deals, match_id=f"fp-{seed}-{hero_seat}", names=names,
                            config=config, reveal=reveal)
        for h, log in enumerate(result.hands):
            assert log.record.outcome is not None
            chips[h] += log.record.outcome["payoffs"][hero_seat]
    return Run(chips, MemoryBot.used[0])


def measure(
    base: str, villain: str, deals: int, seed: int, referee: str, against: str
) -> tuple[list[int], list[int], int]:
    """(cheater's chips per deal, its reference's chips per deal, decisions memory changed).
    The reference is the honest base bot (``against="honest"``) or the same cheater keeping
    only what its seat saw (``"sight"``), under the same referee."""
    base_cls, villain_cls = BASES[base], load_bot_class(villain)
    reveal = referee == "leak"
    cheat = play_pair(memory_bot(base_cls), villain_cls, deals, seed, reveal=reveal)
    ref = memory_bot(base_cls, sight_only=True) if against == "sight" else base_cls
    reference = play_pair(ref, villain_cls, deals, seed, reveal=reveal)
    return cheat.deal_chips, reference.deal_chips, cheat.used


def mean_ci(samples: Sequence[float]) -> tuple[float, float, float]:
    n = len(samples)
    mean = statistics.fmean(samples)
    half = Z95 * statistics.stdev(samples) / math.sqrt(n) if n > 1 else math.inf
    return mean, mean - half, mean + half


def run(
    base: str, villain: str, deals: int, seed: int, referee: str, against: str, jobs: int, chunk: int = 100
) -> str:
    sizes = [min(chunk, deals - s) for s in range(0, deals, chunk)]
    args = [
        (base, villain, n, derive_seed(seed, f"fairplay/{villain}/{i}"), referee, against)
        for i, n in enumerate(sizes)
    ]
    if jobs <= 1:
        parts = [measure(*a) for a in args]
    else:
        with ProcessPoolExecutor(jobs) as pool:
            parts = list(pool.map(measure, *zip(*args, strict=True)))
    cheat = [c for p in parts for c in p[0]]
    honest = [c for p in parts for c in p[1]]
    used = sum(p[2] for p in parts)
    edge = [100 * (c - h) / 2 for c, h in zip(cheat, honest, strict=True)]  # per 100 hero hands
    m, lo, hi = mean_ci(edge)
    hands = 2 * len(edge)
    total = sum(cheat) - sum(honest)
    over = "its own sight" if against == "sight" else f"honest {base}"
    return (
        f"{referee:>6} referee  memory-{base} vs {villain:<9} {len(edge)} deals ({hands} hands)  "
        f"edge over {over}: {m:+.1f} chips/100 hands [{lo:+.1f}, {hi:+.1f}]  "
        f"= {total:+d} chips in {hands} hands  (memory changed {used} decisions)"
    )


# -- the cheater uploaded and hosted (issue #23) ----------------------------------------------

HOSTED_ENTRY = "hosted_memory:MemoryGreedy"


def hosted_bundle(folder: Path) -> Path:
    """The memory cheater as a built upload: this file, the house bots it builds on, and an
    entry module naming its class."""
    import shutil

    code = folder / "code"
    (folder / "deps").mkdir(parents=True)
    (code / "bench").mkdir(parents=True)
    # In a folder of its own, as here: this file puts its folder's parent first on the path.
    shutil.copy(Path(__file__), code / "bench" / "fairplay.py")
    shutil.copytree(_HERE.parent / "bots", code / "bots", ignore=shutil.ignore_patterns("__pycache__"))
    (code / "hosted_memory.py").write_text(
        "import os, sys\nsys.path.append(os.path.join(os.path.dirname(__file__), 'bench'))\n"
        "from fairplay import memory_bot  # noqa: E402\nfrom bots.greedy import GreedyBot  # noqa: E402\n\n"
        "MemoryGreedy = memory_bot(GreedyBot)\n"
    )
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def hosted_pair(bundle: Path, scope: str, villain: type[Bot], deals: int, seed: int) -> list[int]:
    """play_pair with the hero uploaded and hosted in the sandbox (closed referee): a fresh
    process per match (``match``), or one kept for both seatings (``worker``)."""
    from arena.play.hosted import POOL, HostedPlayer
    from arena.sandbox.launch import Launch

    chips = [0] * deals
    config = RefereeConfig(decision_deadline_ms=60_000)
    for hero_seat in (0, 1):
        hero = HostedPlayer("hero", lambda: bundle, Launch("python", entry=HOSTED_ENTRY), scope=scope,
                            scope_key=("fairplay", seed))  # fmt: skip
        hero.prepare()
        if hero.box is None:  # it must run: a seat that faults would measure nothing
            raise RuntimeError(f"the hosted cheater did not start: {hero.output()}")
        seats = [hero if s == hero_seat else LocalPlayer(villain) for s in range(2)]
        names = ["hero" if s == hero_seat else "villain" for s in range(2)]
        try:
            result = play_match(seats, seed, deals, match_id=f"fp-{seed}-{hero_seat}", names=names,
                                config=config, reveal=False)  # fmt: skip
        finally:
            hero.close()
        for h, log in enumerate(result.hands):
            assert log.record.outcome is not None
            chips[h] += log.record.outcome["payoffs"][hero_seat]
    if scope != "match":
        POOL.close_all()
    return chips


def run_hosted(villain: str, deals: int, seed: int, scope: str, chunk: int = 100) -> str:
    """The hosted cheater's edge over honest greedy, paired deal by deal (closed referee)."""
    import tempfile

    villain_cls = load_bot_class(villain)
    cheat: list[int] = []
    honest: list[int] = []
    with tempfile.TemporaryDirectory(prefix="fairplay-hosted-") as tmp:
        os.chmod(tmp, 0o755)
        bundle = hosted_bundle(Path(tmp) / "bundle")
        for i, start in enumerate(range(0, deals, chunk)):
            n = min(chunk, deals - start)
            part_seed = derive_seed(seed, f"fairplay/{villain}/{i}")
            cheat += hosted_pair(bundle, scope, villain_cls, n, part_seed)
            honest += play_pair(GreedyBot, villain_cls, n, part_seed, reveal=False).deal_chips
    edge = [100 * (c - h) / 2 for c, h in zip(cheat, honest, strict=True)]
    m, lo, hi = mean_ci(edge)
    if lo == hi == m:  # every deal the same: no spread to estimate
        lo = hi = m
    hands = 2 * len(edge)
    return (
        f"hosted ({scope:>6} memory)  memory-greedy vs {villain:<9} {len(edge)} deals ({hands} hands)  "
        f"edge over honest greedy: {m:+.1f} chips/100 hands [{lo:+.1f}, {hi:+.1f}]  "
        f"= {sum(cheat) - sum(honest):+d} chips in {hands} hands"
    )


# -- the check's false alarms, and what duplicate buys -------------------------------------


def honest_checks(a: str, b: str, checks: int, deals: int, hands: int, seed: int) -> list[float]:
    """p-values of the fair-play check (arena/ratings/fairplay.py) for both bots of an honest pair,
    over ``checks`` independent runs of ``deals`` duplicate deals of ``hands`` hands, played
    as the arena plays them (rotation 0 first)."""
    from arena.ratings.fairplay import heads_up, paired_check  # the arena's own check, unchanged

    cls_a, cls_b = load_bot_class(a), load_bot_class(b)
    config = RefereeConfig(decision_deadline_ms=60_000)
    out = []
    for check in range(checks):
        diffs = []
        for deal in range(deals):
            deal_seed = derive_seed(seed, f"honest/{a}/{b}/{check}/{deal}")
            first = play_match([LocalPlayer(cls_a), LocalPlayer(cls_b)], deal_seed, hands,
                               match_id=f"h{check}-{deal}-0", names=[a, b], config=config, reveal=False)
            later = play_match([LocalPlayer(cls_b), LocalPlayer(cls_a)], deal_seed, hands,
                               match_id=f"h{check}-{deal}-1", names=[b, a], config=config, reveal=False)
            diffs.append(100 * (later.scores[1] - first.scores[0]) / hands)
        for sign in (1, -1):  # bot a's differences, and bot b's (the opposite, heads-up)
            p = paired_check(heads_up([sign * d for d in diffs])).p_single_look  # the t-test's calibration
            out.append(1.0 if p is None else p)
    return out


def false_alarms(checks: int, deals: int, hands: int, seed: int) -> str:
    p_values = honest_checks("greedy", "random", checks, deals, hands, seed)
    n = len(p_values)
    parts = []
    for alpha in (0.05, 0.01, 0.001):
        k = sum(p < alpha for p in p_values)
        upper = 1 - 0.05 ** (1 / n) if k == 0 else None  # the 95% upper bound when none
        extra = f" (95% upper bound {upper:.2%})" if upper is not None else ""
        parts.append(f"p < {alpha}: {k}/{n} = {k / n:.2%}{extra}")
    return (
        f"false alarms of the fair-play check, honest greedy and random, {checks} runs of {deals} deals "
        f"x {hands} hands, both bots checked: " + "; ".join(parts)
    )


def twin_variance(a: str, b: str, deals: int, seed: int, *, duplicate: bool) -> list[int]:
    """Bot a's chips per deal summed over a twin pair of matches (a in seat 0, then seat 1):
    both dealt from one seed (duplicate) or from two (independent)."""
    cls_a, cls_b = load_bot_class(a), load_bot_class(b)
    config = RefereeConfig(decision_deadline_ms=60_000)
    first = play_match([LocalPlayer(cls_a), LocalPlayer(cls_b)], seed, deals, match_id="t0", names=[a, b],
                       config=config)
    second_seed = seed if duplicate else derive_seed(seed, "independent")
    second = play_match([LocalPlayer(cls_b), LocalPlayer(cls_a)], second_seed, deals, match_id="t1",
                        names=[b, a], config=config)
    return [
        x.record.outcome["payoffs"][0] + y.record.outcome["payoffs"][1]  # type: ignore[index]
        for x, y in zip(first.hands, second.hands, strict=True)
    ]


def variance_cost(a: str, b: str, deals: int, seed: int) -> str:
    dup = twin_variance(a, b, deals, seed, duplicate=True)
    ind = twin_variance(a, b, deals, seed, duplicate=False)
    v_dup, v_ind = statistics.variance(dup), statistics.variance(ind)
    return (
        f"{a} vs {b}, {deals} twin pairs of one hand each: chips variance per twin pair "
        f"duplicate {v_dup:.2f}, independent {v_ind:.2f}: independent deals need "
        f"{v_ind / v_dup:.2f}x as many deals for the same precision"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deals", type=int, default=400, help="deals per measurement (2 hands each)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the deals")
    parser.add_argument("--base", choices=sorted(BASES), default="greedy", help="the cheater's honest play")
    parser.add_argument("--villains", nargs="*", default=["greedy", "heuristic"], help="opponents")
    parser.add_argument(
        "--referees", nargs="*", choices=REFEREES, default=list(REFEREES),
        help="leak: the referee before #18 (full records in EndHand, the seed in EndMatch); closed: now",
    )
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--false-alarms", type=int, default=0, metavar="RUNS",
                        help="instead: simulate RUNS honest fair-play checks (20 deals of 4 hands each)")
    parser.add_argument("--hosted", action="store_true",
                        help="instead: the cheater uploaded and hosted in the sandbox, fresh per match "
                             "(and, for comparison, kept for both seatings)")
    parser.add_argument("--variance", action="store_true",
                        help="instead: the chips variance of a twin pair per deal, duplicate vs independent")
    args = parser.parse_args(argv)
    if args.false_alarms:
        started = time.perf_counter()
        line = false_alarms(args.false_alarms, 20, 4, args.seed)
        print(f"{line}  ({time.perf_counter() - started:.0f} s)", flush=True)
        return 0
    if args.hosted:
        for villain in args.villains:
            for scope in ("match", "worker"):
                started = time.perf_counter()
                line = run_hosted(villain, args.deals, args.seed, scope)
                print(f"{line}  ({time.perf_counter() - started:.0f} s)", flush=True)
        return 0
    if args.variance:
        for a, b in (("greedy", "random"), ("heuristic", "greedy")):
            print(variance_cost(a, b, args.deals, args.seed), flush=True)
        return 0
    for villain in args.villains:
        for referee in args.referees:
            for against in ("honest", "sight"):
                started = time.perf_counter()
                line = run(args.base, villain, args.deals, args.seed, referee, against, args.jobs)
                print(f"{line}  ({time.perf_counter() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    from arena.processes import ensure_watched  # here: its path is fixed above

    ensure_watched()  # nothing it starts outlives it, however it ends (arena/processes.py)
    raise SystemExit(main())
