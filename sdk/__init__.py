"""Tonk Arena SDK: the rules engine, the bot base class and the tools to serve and test a bot.

Everything a bot author needs is importable from here::

    from sdk import Bot, Observation, Action, Card, serve

Each name is imported from its module when first asked for, so that importing one module of the
package (``tonk record`` imports sdk.record) loads only what that module needs: not the bot
and its observation, and not gRPC (``serve``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from sdk.server import serve

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

# Each public name and the module it comes from.
_MODULES: dict[str, str] = {
    "DECK": "sdk.cards",
    "STANDARD": "sdk.rules",
    "Action": "sdk.actions",
    "Bot": "sdk.bot",
    "Card": "sdk.cards",
    "DealMatch": "sdk.bot",
    "DealSummary": "sdk.bot",
    "DeckError": "sdk.errors",
    "Discard": "sdk.actions",
    "Draw": "sdk.actions",
    "Drop": "sdk.actions",
    "Event": "sdk.actions",
    "HandRecord": "sdk.record",
    "HandResult": "sdk.bot",
    "HandState": "sdk.engine",
    "IllegalActionError": "sdk.errors",
    "Layoff": "sdk.actions",
    "MatchInfo": "sdk.bot",
    "MatchSummary": "sdk.bot",
    "Meld": "sdk.actions",
    "NotationError": "sdk.errors",
    "Observation": "sdk.observation",
    "Outcome": "sdk.engine",
    "OutcomeMismatchError": "sdk.errors",
    "Phase": "sdk.engine",
    "RecordError": "sdk.errors",
    "Rules": "sdk.rules",
    "RulesError": "sdk.errors",
    "TonkError": "sdk.errors",
    "deck_order": "sdk.dealing",
    "hand_value": "sdk.cards",
    "observe": "sdk.observation",
    "serve": "sdk.server",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'sdk' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next look-up finds it without this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
