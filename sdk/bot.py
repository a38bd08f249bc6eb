"""What a bot author writes: a subclass of :class:`Bot` with one method, :meth:`Bot.act`.

```python
from sdk import Bot, Observation, Action

class Lowball(Bot):
    name = "lowball"

    def act(self, obs: Observation) -> Action | int:
        if obs.can_drop() and obs.hand_value <= 5:
            return obs.legal_actions[0]
        return obs.legal_actions[-1]
```

A fresh instance is made for every match, so a bot may keep per-match state on ``self``.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from sdk.actions import Action
from sdk.cards import Card
from sdk.observation import Observation
from sdk.rules import Rules

#: A bot's name in an arena: 2 to 32 of a-z, 0-9, '_' and '-', starting with a letter or digit.
#: The registry refuses any other (arena.bots.addresses.validate_bot_name), and every page and API
#: path that names a bot uses the same rule.
BOT_NAME_RE: Final = re.compile(r"^[a-z0-9][a-z0-9_-]{1,31}$")



@dataclass(frozen=True, slots=True)
class MatchInfo:
    """Told to every seat when a match starts. The seed is not in it: seeds stay secret
    until the match is over."""

    match_id: str
    seat: int
    players: tuple[str, ...]
    rules: Rules
    hands: int
    first_dealer: int = 0
    decision_deadline_ms: int = 1000
    time_bank_ms: int = 0


@dataclass(frozen=True, slots=True)
class HandResult:
    """Told to every seat after each hand: its own view of the hand as it ended, the cards
    the rules show at the end, and the complete record when it may be revealed.

    In a duplicate deal (other matches are dealt from the same cards) ``record`` is empty and
    ``record_withheld`` is true: the complete records come with :meth:`Bot.on_deal_end`.
    """

    match_id: str
    hand_index: int
    record: dict[str, Any]  # tonk-hand/1; {} while withheld
    payoffs: tuple[int, ...]
    scores: tuple[int, ...]  # match scores after this hand
    #: This seat's observation at the end of the hand (phase "over", outcome set).
    view: Observation | None = None
    #: Per seat, the cards the rules show at the end (every hand after a drop or a showdown,
    #: the TONK hands after TONK); empty for a seat whose cards stay hidden.
    shown: tuple[tuple[Card, ...], ...] = ()
    record_withheld: bool = False


@dataclass(frozen=True, slots=True)
class MatchSummary:
    """Told to every seat when the match ends, with the seed now revealed."""

    match_id: str
    scores: tuple[int, ...]
    seed: int | None = None
    forfeited: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class DealMatch:
    """One match of a finished deal, as this bot played it."""

    match_id: str
    players: tuple[str, ...]
    seats: tuple[int, ...]  # the seats this bot played
    scores: tuple[int, ...]
    records: tuple[dict[str, Any], ...] = ()  # tonk-hand/1, hand order; () when omitted
    records_omitted: bool = False


@dataclass(frozen=True, slots=True)
class DealSummary:
    """Told once a deal is over (every seat rotation of a duplicate deal played): the seed
    and the complete records, now revealed."""

    matches: tuple[DealMatch, ...]
    seed: int | None = None


class Bot:
    """Base class for bots. Override :meth:`act`; the hooks are optional.

    ``self.rng`` is a :class:`random.Random` seeded from the match id and seat, so a bot that
    draws its randomness from it is deterministic for a given match.
    """

    name: ClassVar[str] = "bot"
    version: ClassVar[str] = "0.1.0"
    author: ClassVar[str] = ""
    #: Matches this bot plays at once at most (GetInfo ``max_concurrent_matches``); 0 leaves
    #: it to the arena's default. ``tonk serve --max-matches`` overrides it.
    max_concurrent_matches: ClassVar[int] = 0

    def __init__(self) -> None:
        self.rng = random.Random(0)
        self.match: MatchInfo | None = None

    # Called by the runtime; authors normally override the on_* hooks instead.
    def start_match(self, info: MatchInfo) -> None:
        self.match = info
        self.rng = random.Random(f"{info.match_id}:{info.seat}:{self.name}")
        self.on_match_start(info)

    def act(self, obs: Observation) -> Action | int:
        """Choose one of ``obs.legal_actions`` (the action itself, or its index)."""
        raise NotImplementedError(f"{type(self).__name__} must implement act(observation)")

    def on_match_start(self, info: MatchInfo) -> None:
        """A match begins (``info.seat`` is this bot's seat)."""

    def on_hand_end(self, result: HandResult) -> None:
        """A hand ended: ``result.view`` is what this seat saw, ``result.shown`` the hands
        the rules show; ``result.record`` reveals every card unless ``record_withheld``."""

    def on_match_end(self, summary: MatchSummary) -> None:
        """The match is over."""

    def on_deal_end(self, deal: DealSummary) -> None:
        """A deal this bot played is over (every match dealt from it): its seed and records.

        It arrives after the deal's matches have ended, so it is called on a fresh instance
        (``tonk serve`` keeps none past EndMatch): keep what should outlive a match elsewhere."""
