"""Tonk Arena SDK: the rules engine, the bot base class and the tools to serve and test a bot.

Everything a bot author needs is importable from here::

    from sdk import Bot, Observation, Action, Card, serve
"""

from __future__ import annotations

from typing import Any

from sdk.actions import Action, Discard, Draw, Drop, Event, Layoff, Meld
from sdk.bot import Bot, DealMatch, DealSummary, HandResult, MatchInfo, MatchSummary
from sdk.cards import DECK, Card, hand_value
from sdk.dealing import deck_order
from sdk.engine import HandState, Outcome, Phase
from sdk.errors import (
    DeckError,
    IllegalActionError,
    NotationError,
    OutcomeMismatchError,
    RecordError,
    RulesError,
    TonkError,
)
from sdk.observation import Observation, observe
from sdk.record import HandRecord
from sdk.rules import STANDARD, Rules

__all__ = [
    "DECK",
    "STANDARD",
    "Action",
    "Bot",
    "Card",
    "DealMatch",
    "DealSummary",
    "DeckError",
    "Discard",
    "Draw",
    "Drop",
    "Event",
    "HandRecord",
    "HandResult",
    "HandState",
    "IllegalActionError",
    "Layoff",
    "MatchInfo",
    "MatchSummary",
    "Meld",
    "NotationError",
    "Observation",
    "Outcome",
    "OutcomeMismatchError",
    "Phase",
    "RecordError",
    "Rules",
    "RulesError",
    "TonkError",
    "deck_order",
    "hand_value",
    "observe",
    "serve",
]


def __getattr__(name: str) -> Any:
    # gRPC is only imported by code that serves or calls a bot.
    if name == "serve":
        from sdk.server import serve

        return serve
    raise AttributeError(f"module 'sdk' has no attribute {name!r}")
