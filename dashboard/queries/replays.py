"""A finished match's replay, one hand's ``tonk-hand/1`` record, and one decision's request.

A decision download is rebuilt, not stored: the hand record is replayed up to that decision
and :func:`sdk.observation.observe` gives exactly the view the referee sent the bot, so the
file can be fed to ``tonk replay-decision FILE MODULE:CLASS`` to debug a bot locally.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from arena.config import Settings
from arena.models import Match, Replay, Tournament
from dashboard.errors import NotFoundError
from dashboard.queries.cache import cached
from dashboard.queries.codec import decode
from dashboard.queries.matches import require_done
from sdk.observation import observe
from sdk.record import HandRecord

#: Keys the referee adds to a hand record (HandLog.to_json); a tonk-hand/1 download drops them.
REFEREE_KEYS = ("latency_us", "faults")


def load_hands(session: Session, url: str, match: Match) -> list[dict[str, Any]]:
    """The hand logs of a finished match (NotFinishedError before it is done)."""
    require_done(match)

    def read() -> list[dict[str, Any]]:
        replay = session.get(Replay, match.id)
        if replay is None:
            raise NotFoundError(f"match {match.id} has no stored replay")
        return decode(replay.format, replay.data)

    # A finished match's replay never changes, so it can stay cached as long as it is hot.
    return cached(("replay", url, match.id), "done", read)


def hand_log(hands: list[dict[str, Any]], match: Match, hand_index: int) -> dict[str, Any]:
    if not 0 <= hand_index < len(hands):
        raise NotFoundError(
            f"match {match.id} has {len(hands)} hands (0 to {len(hands) - 1}); there is no hand {hand_index}"
        )
    return hands[hand_index]


def hand_record(log: dict[str, Any]) -> dict[str, Any]:
    """The hand as a plain ``tonk-hand/1`` record: without the referee's measurements."""
    return {k: v for k, v in log.items() if k not in REFEREE_KEYS}


def decisions_in(log: dict[str, Any]) -> int:
    # Each decision played one action, except a faulted one, which ended the hand.
    return len(log.get("actions", [])) + len(log.get("faults", []) or [])


@dataclass(frozen=True)
class Timing:
    deadline_ms: int
    time_bank_ms: int


def timing(session: Session, match: Match, settings: Settings) -> Timing:
    tournament = session.get(Tournament, match.tournament_id)
    config = (tournament.config if tournament else None) or {}

    def pick(key: str, default: int) -> int:
        value = config.get(key)
        return value if type(value) is int and value >= 0 else default

    return Timing(
        pick("decision_deadline_ms", settings.decision_deadline_ms),
        pick("time_bank_ms", settings.time_bank_ms),
    )


def referee_match_id(match: Match) -> str:
    """The ``match_id`` the referee gave the bots (and built decision ids from)."""
    return str(match.id)


def decision_request(
    hands: list[dict[str, Any]], match: Match, hand_index: int, decision: int, clock: Timing
) -> dict[str, Any]:
    """``{match_id, hand_index, decision_id, deadline_ms, observation}``, as the bot got it."""
    log = hand_log(hands, match, hand_index)
    count = decisions_in(log)
    if not 0 <= decision < count:
        raise NotFoundError(
            f"hand {hand_index} of match {match.id} has {count} decisions; there is no decision {decision}"
        )
    record = HandRecord.from_json(hand_record(log))
    state = record.initial_state()
    for seat, action in record.actions[:decision]:
        state.apply(action, seat)
    scores = [0] * len(record.players)
    for earlier in hands[:hand_index]:
        for seat, payoff in enumerate((earlier.get("outcome") or {}).get("payoffs", [])):
            scores[seat] += payoff
    seat = state.to_act
    obs = observe(state, seat, tuple(record.players), tuple(scores), hand_index, match.hands)
    bank_ms = _bank_left_us(hands, hand_index, decision, seat, clock, len(record.players)) // 1000
    match_id = referee_match_id(match)
    return {
        "match_id": match_id,
        "hand_index": hand_index,
        "decision_id": f"{match_id}/{hand_index}/{decision}",
        "deadline_ms": clock.deadline_ms + bank_ms,
        "observation": obs.to_json(),
    }


def _bank_left_us(
    hands: list[dict[str, Any]], hand_index: int, decision: int, seat: int, clock: Timing, players: int
) -> int:
    """The seat's time bank before this decision, spent as the referee spends it: by the time
    each earlier reply took over the deadline (sdk/referee.py)."""
    bank = [clock.time_bank_ms * 1000] * players
    limit_us = clock.deadline_ms * 1000
    for index, log in enumerate(hands[: hand_index + 1]):
        actions = log.get("actions", [])
        latencies = log.get("latency_us", [])
        upto = decision if index == hand_index else len(actions)
        for action, elapsed in zip(actions[:upto], latencies[:upto], strict=False):
            over = elapsed - limit_us
            s = action.get("seat", 0)
            if over > 0 and 0 <= s < players:
                bank[s] = max(0, bank[s] - over)
        if index < hand_index:
            for fault in log.get("faults", []) or []:
                if "time bank is spent" in str(fault.get("reason", "")):
                    bank[fault.get("seat", 0) % players] = 0
    return bank[seat]
