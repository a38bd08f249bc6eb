"""The engine's errors. Each is a :class:`ValueError` so callers can catch bad input broadly,
and each names one kind of problem so they can also catch it narrowly."""

from __future__ import annotations


class TonkError(ValueError):
    """Base of every error the engine raises for bad input."""


class NotationError(TonkError):
    """Text that cannot be parsed: an unknown card, a malformed action."""


class RulesError(TonkError):
    """An unknown rule set or rule option, or an option with a bad value."""


class RecordError(TonkError):
    """A hand record that is malformed: wrong shape, bad JSON, missing fields."""


class DeckError(RecordError):
    """Cards that do not make exactly one 52-card deck: duplicated or missing cards."""


class IllegalActionError(TonkError):
    """A well-formed action that the rules do not allow now.

    ``rule`` is a short stable identifier of the rule it breaks (for fault reports),
    ``action_index`` is filled in when the action came from a record.
    """

    def __init__(self, message: str, rule: str = "illegal", action_index: int | None = None):
        super().__init__(message)
        self.rule = rule
        self.action_index = action_index


class OutcomeMismatchError(TonkError):
    """A record whose stored outcome disagrees with the replayed one."""
