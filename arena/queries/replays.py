"""A finished match's replay, one hand's ``tonk-hand/1`` record, and one decision's request.

A decision download is rebuilt, not stored: the hand record is replayed up to that decision
and :func:`sdk.observation.observe` gives exactly the view the referee sent the bot, so the
file can be fed to ``tonk replay-decision FILE MODULE:CLASS`` to debug a bot locally.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from arena.errors import MatchNotFoundError, NotFinishedError, NotFoundError
from arena.queries.cache import cached
from arena.queries.matches import deal_done, get_replay
from arena.store.models import Match, Tournament
from arena.store.statuses import MatchStatus
from arena.tournaments.layout import public_match_id
from arena.tournaments.settings import TournamentSettings
from sdk.observation import observe
from sdk.record import HandRecord
from sdk.referee import DecisionRequest, RefereeConfig, plain_record


def get_match(session: Session, match_id: int) -> Match:
    match = session.get(Match, match_id)
    if match is None:
        raise MatchNotFoundError(f"there is no match {match_id}")
    return match


def load_hands(session: Session, url: str, match: Match) -> list[dict[str, Any]]:
    """The hand logs of a finished match; NotFinishedError before it is done."""
    if match.status != MatchStatus.DONE:
        raise NotFinishedError(
            f"match {match.id} is {match.status}; "
            "its replay is published when every match of its deal is done"
        )
    if not deal_done(session, match):
        raise NotFinishedError(
            f"match {match.id} is done, but other matches of its deal (dealt the same cards) are still to "
            "be played; its replay is published when every match of its deal is done"
        )

    def read() -> list[dict[str, Any]]:
        hands = get_replay(session, match.id)
        if hands is None:
            raise NotFoundError(f"match {match.id} has no stored replay")
        return hands

    # A done match's replay never changes, so it may stay cached while it is wanted.
    return cached(("replay", url, match.id), "done", read)


def hand_log(hands: list[dict[str, Any]], match: Match, hand_index: int) -> dict[str, Any]:
    if not 0 <= hand_index < len(hands):
        raise NotFoundError(
            f"match {match.id} has {len(hands)} hands (0 to {len(hands) - 1}); there is no hand {hand_index}"
        )
    return hands[hand_index]


def decisions_in(log: dict[str, Any]) -> int:
    # Each decision played one action, except a faulted one, which ended the hand.
    return len(log.get("actions", [])) + len(log.get("faults", []) or [])


def referee_settings(session: Session, match: Match) -> tuple[str, RefereeConfig]:
    """The match id the bots were given and the referee settings, as the worker had them."""
    tournament = session.get(Tournament, match.tournament_id)
    assert tournament is not None  # a foreign key
    public_id = match.public_id or public_match_id(tournament.seed, match.key)
    return public_id, TournamentSettings.from_column(tournament.config).referee()


def decision_request(
    hands: list[dict[str, Any]],
    match: Match,
    hand_index: int,
    decision: int,
    public_id: str,
    config: RefereeConfig,
) -> dict[str, Any]:
    """``{match_id, hand_index, decision_id, deadline_ms, observation}``, as the bot got it."""
    log = hand_log(hands, match, hand_index)
    count = decisions_in(log)
    if not 0 <= decision < count:
        raise NotFoundError(
            f"hand {hand_index} of match {match.id} has {count} decisions; there is no decision {decision}"
        )
    record = HandRecord.from_json(plain_record(log))
    state = record.initial_state()
    for seat, action in record.actions[:decision]:
        state.apply(action, seat)
    scores = [0] * len(record.players)
    for earlier in hands[:hand_index]:
        for seat, payoff in enumerate((earlier.get("outcome") or {}).get("payoffs", [])):
            scores[seat] += payoff
    seat = state.to_act
    obs = observe(state, seat, tuple(record.players), tuple(scores), hand_index, match.hands)
    bank_ms = _bank_left_us(hands, hand_index, decision, seat, config, len(record.players)) // 1000
    request = DecisionRequest(
        match_id=public_id,
        hand_index=hand_index,
        decision_id=f"{public_id}/{hand_index}/{decision}",  # as sdk/referee.py numbers them
        observation=obs,
        deadline_ms=config.decision_deadline_ms + bank_ms,
    )
    # The proto3 JSON of the DecideRequest, as the bot received it (tonk replay-decision reads
    # it). Imported here: protobuf takes over a second to load and only this download needs it.
    from sdk.decision_file import decision_to_proto_dict

    return decision_to_proto_dict(request)


def _bank_left_us(
    hands: list[dict[str, Any]],
    hand_index: int,
    decision: int,
    seat: int,
    config: RefereeConfig,
    players: int,
) -> int:
    """The seat's time bank before this decision, spent as sdk/referee.py spends it: by the
    time each earlier call took over the deadline. A faulted call's time is not recorded;
    only a timeout can have run over, and it waited out the whole bank."""
    bank = [config.time_bank_ms * 1000] * players
    limit_us = config.decision_deadline_ms * 1000
    for index, log in enumerate(hands[: hand_index + 1]):
        actions = log.get("actions", [])
        latencies = log.get("latency_us", [])
        upto = decision if index == hand_index else len(actions)
        for action, elapsed in zip(actions[:upto], latencies[:upto], strict=False):
            s = action.get("seat", 0)
            if elapsed > limit_us and 0 <= s < players:
                bank[s] = max(0, bank[s] - (elapsed - limit_us))
        if index < hand_index:
            for fault in log.get("faults", []) or []:
                s = fault.get("seat", 0)
                if fault.get("kind") == "timeout" and 0 <= s < players:
                    bank[s] = 0
    return bank[seat]
