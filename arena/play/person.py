"""A person's seat (issue #39): a player like any other, refereed by the same
:func:`sdk.referee.play_match`, recorded and replayed like any match, whose decisions come
from a person's page instead of a bot.

:class:`PersonPlayer` is the seat's :class:`~sdk.referee.Player`. Each call the referee makes
becomes a view on the match's :mod:`seat channel <arena.play.seat_channel>` (built by
arena/play/seat_view.py from what the seat is told, so only what it has seen); at a decision
it then waits for the person's action on the same channel, up to the person's clock:

- The clock (``TONK_PERSON_CLOCK_S``, fixed in the table's ``params`` when the table is made)
  is the person's own: a person needs seconds where a bot has milliseconds. The time the
  person takes is charged to the referee no further than the match's decision deadline, so
  it never spends the time bank the referee keeps for bots.
- When the clock runs out the seat faults exactly as a bot that does not answer in time: a
  ``timeout`` fault, with which the engine settles the hand (the faulting seat pays every
  other seat double: sdk/referee.py's fault policy), and after the match's ``max_faults`` the
  seat forfeits the rest of the match. A page that reconnects within the clock finds the
  same decision waiting (the channel keeps it), so a closed tab costs nothing if reopened.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from arena.play.seat_channel import SeatChannel, open_channel
from arena.play.seat_view import SeatView
from sdk.actions import Action
from sdk.bot import HandResult, MatchInfo, MatchSummary
from sdk.referee import DecisionRequest, FaultKind, PlayerFaultError

#: The person's clock when a table's params do not say (tables made before the setting).
DEFAULT_CLOCK_MS = 60_000


@dataclass(frozen=True, slots=True)
class PersonSeat:
    """What a worker needs to seat a person: the match's channel and the person's clock."""

    match_id: int
    channel: str  # "store" | "redis" (arena.play.seat_channel.CHANNELS)
    clock_ms: int
    max_faults: int


class PersonPlayer:
    """The person's seat, as the referee sees it."""

    def __init__(self, name: str, channel: SeatChannel, *, clock_ms: int, max_faults: int):
        self.name = name
        self.channel = channel
        self.clock_ms = clock_ms
        self.max_faults = max_faults
        self.view: SeatView | None = None
        #: What the referee charges for the last decision (sdk.referee._charged): the person's
        #: time, cut at the decision deadline so it never spends the bots' time bank.
        self.last_charged_us: int | None = None
        self._deadline_us = 0

    def describe(self) -> dict[str, str]:
        return {"name": self.name, "version": "person", "author": "", "protocol_version": ""}

    def match_start(self, info: MatchInfo) -> None:
        self.view = SeatView(info, self.clock_ms, self.max_faults)
        self._deadline_us = info.decision_deadline_ms * 1000
        self.channel.publish(self.view.starting(), None)

    def act(self, request: DecisionRequest) -> Action | int:
        assert self.view is not None, "act before match_start"
        started = time.perf_counter()
        self.channel.publish(self.view.asking(request.observation), request.decision_id)
        sent = self.channel.take(request.decision_id, self.clock_ms / 1000)
        took_us = int((time.perf_counter() - started) * 1_000_000)
        self.last_charged_us = min(took_us, self._deadline_us)
        action = self.view.action_of(sent) if sent is not None else None
        if action is None:
            self.view.fault()
            raise PlayerFaultError(
                FaultKind.TIMEOUT, f"the person did not move within their clock of {self.clock_ms / 1000:g} s"
            )
        return action

    def hand_end(self, result: HandResult) -> None:
        if self.view is not None:
            self.channel.publish(self.view.hand_over(result), None)

    def match_end(self, summary: MatchSummary) -> None:
        if self.view is not None:
            self.channel.publish(self.view.match_over(summary), None)

    def close(self) -> None:
        pass


def person_player(name: str, seat: PersonSeat, store_url: str) -> PersonPlayer:
    """The seat's player, talking over the channel its table was made with."""
    from arena.config import load_settings

    settings = load_settings()
    channel = open_channel(
        seat.channel, store_url, seat.match_id, redis_url=settings.redis_url, queue_name=settings.queue_name
    )
    return PersonPlayer(name, channel, clock_ms=seat.clock_ms, max_faults=seat.max_faults)
