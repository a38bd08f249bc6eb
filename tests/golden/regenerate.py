"""Write the golden hand records in this folder: fixed seeds, seeded bots, every seat count
from 2 to 6, standard rules and several variants.

Run it only when the rules (or the record format) change on purpose, then review the diff
of the records before committing them::

    python tests/golden/regenerate.py

Each record is one hand of a match played by :func:`sdk.referee.play_match`, written with
``HandRecord.to_text(indent=1)`` plus a newline. ``tests/sdk/test_golden.py`` replays each one
from its seed and from the record itself and compares byte for byte.

The bots are the house ``RandomBot`` (uniform over the legal actions, from its seeded
``rng``) and :class:`PatientRandomBot`, a RandomBot that melds and lays off whenever it
can and goes down only at 10 or less, so that its hands run long enough to reach the
stock-out, the turn cap, the reshuffle, going out and a hit lock.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parents[1]) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(HERE.parents[1]))

from bots.random_bot import RandomBot  # noqa: E402
from sdk.actions import Action  # noqa: E402
from sdk.observation import Observation  # noqa: E402
from sdk.record import HandRecord  # noqa: E402
from sdk.referee import LocalPlayer, play_match  # noqa: E402
from sdk.rules import Rules  # noqa: E402


class PatientRandomBot(RandomBot):
    """Random, but melds and lays off when it can and goes down only at 10 or less."""

    name = "patient"

    def act(self, obs: Observation) -> Action | int:
        legal = obs.legal_actions
        if obs.can_drop() and obs.hand_value <= 10:
            return legal.index(next(a for a in legal if a.kind == "drop"))
        plays = [a for a in legal if a.kind in ("meld", "layoff")]
        if plays:
            return self.rng.choice(plays)
        return self.rng.choice([a for a in legal if a.kind != "drop"])


BOTS: dict[str, type[RandomBot]] = {"random": RandomBot, "patient": PatientRandomBot}


@dataclass(frozen=True)
class Golden:
    """Hand ``hand`` (from 0) of the match with ``seed`` among ``seats`` copies of ``bot``."""

    name: str
    seats: int
    seed: int
    hand: int
    end: str  # how the hand ends, as a check that the seed still gives the hand it was chosen for
    bot: str = "random"
    rules: dict[str, Any] = field(default_factory=dict)
    first_dealer: int = 0
    about: str = ""

    @property
    def path(self) -> Path:
        return HERE / f"{self.name}.json"

    @property
    def match_id(self) -> str:
        return f"golden-{self.seed}"

    @property
    def names(self) -> list[str]:
        return [f"{self.bot}{seat}" for seat in range(self.seats)]

    @property
    def rule_set(self) -> Rules:
        return Rules.from_json(self.rules or "standard")

    @property
    def dealer(self) -> int:
        return (self.first_dealer + self.hand) % self.seats


GOLDENS: tuple[Golden, ...] = (
    Golden("2p-standard-caught", 2, 13, 0, "drop", about="a meld, then a drop that is not strictly lowest"),
    Golden("3p-standard-two-melds", 3, 51, 2, "drop", about="two melds, then a caught drop"),
    Golden("4p-standard-tonk", 4, 24, 1, "tonk", about="TONK right after the deal"),
    Golden("5p-standard-tied-lowest", 5, 11, 1, "drop", first_dealer=3, about="a caught drop, two lowest"),
    Golden("6p-standard-drop", 6, 50, 0, "drop", about="six seats, a winning drop"),
    Golden("4p-ace-high-meld-out-double", 4, 1, 1, "drop",
           rules={"ace_high_or_low": True, "meld_out_double": True}),
    Golden("2p-reshuffle-pickup-return", 2, 73, 1, "drop",
           rules={"stock_reshuffle": True, "discard_pickup_may_return": True}),
    Golden("2p-standard-stock-showdown", 2, 8, 2, "stock", bot="patient", about="the stock runs out"),
    Golden("3p-reshuffle-cap-60", 3, 24, 2, "cap", bot="patient",
           rules={"stock_reshuffle": True, "turn_cap": 60},
           about="the discards are turned over as a new stock, then the turn cap ends the hand"),
    Golden("3p-hit-lock-book-layoff", 3, 69, 2, "drop", bot="patient",
           rules={"hit_lock": True, "book_layoff": True},
           about="a seat whose spread was hit must wait a turn to go down; a lay-off on a book "
           "locks nobody"),
    Golden("4p-hit-lock-out", 4, 16, 0, "out", bot="patient", rules={"hit_lock": True, "book_layoff": True},
           about="a lay-off locks a seat; another goes out"),
)


def play(golden: Golden) -> HandRecord:
    """Play the golden's match up to its hand and return that hand's record."""
    bot = BOTS[golden.bot]
    result = play_match(
        [LocalPlayer(bot) for _ in range(golden.seats)],
        seed=golden.seed,
        hands=golden.hand + 1,
        match_id=golden.match_id,
        names=golden.names,
        rules=golden.rule_set,
        first_dealer=golden.first_dealer,
    )
    assert not result.faults, result.faults
    return result.hands[golden.hand].record


def text_of(record: HandRecord) -> str:
    return record.to_text(indent=1) + "\n"


def main() -> int:
    for golden in GOLDENS:
        record = play(golden)
        golden.path.write_text(text_of(record), encoding="utf-8")
        outcome = record.outcome or {}
        summary = f"{outcome.get('end')} {outcome.get('payoffs')}"
        print(f"{golden.path.name}: {len(record.actions)} actions, {summary}")
    stale = {p.name for p in HERE.glob("*.json")} - {g.path.name for g in GOLDENS}
    for name in sorted(stale):
        print(f"{name}: no longer a golden; delete it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
