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

The end of a hand and of the match are published by a thread of the seat's own, in order,
and a decision's view only after them: the referee's courtesy notices return at once, so a
slow store never gets the seat cut off from its notices (sdk.referee._Notices), and the
last view is out before the match is recorded (``close`` waits for it).
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from arena.play.seat_channel import SeatChannel, open_channel
from arena.play.seat_view import SeatView
from sdk.actions import Action
from sdk.bot import HandResult, MatchInfo, MatchSummary
from sdk.referee import DecisionRequest, FaultKind, PlayerFaultError

#: The person's clock when a table's params do not say (tables made before the setting).
DEFAULT_CLOCK_MS = 60_000
#: How long past the person's clock the seat still looks for a move sent in time.
TAKE_GRACE_S = 0.5
#: Tries at publishing a view before it is given up (a busy store: SQLite's write lock).
PUBLISH_TRIES = 5

log = logging.getLogger("tonk.person")


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
        self._publisher = ThreadPoolExecutor(1, thread_name_prefix="tonk-seat")
        self._pending: Future[None] | None = None

    def _publish(self, view: dict[str, Any], asked: str | None) -> None:
        for attempt in range(PUBLISH_TRIES):
            try:
                self.channel.publish(view, asked)
                return
            except Exception:  # a busy or briefly unreachable store: try again, then give up
                if attempt == PUBLISH_TRIES - 1:
                    log.exception("the seat's view (status %s) was not published", view.get("status"))
                    return
                time.sleep(0.2 * (attempt + 1))

    def _later(self, view: dict[str, Any]) -> None:
        self._pending = self._publisher.submit(self._publish, view, None)

    def _flush(self) -> None:
        if self._pending is not None:
            self._pending.result()
            self._pending = None

    def describe(self) -> dict[str, str]:
        return {"name": self.name, "version": "person", "author": "", "protocol_version": ""}

    def match_start(self, info: MatchInfo) -> None:
        self.view = SeatView(info, self.clock_ms, self.max_faults)
        self._deadline_us = info.decision_deadline_ms * 1000
        self._later(self.view.starting())

    def act(self, request: DecisionRequest) -> Action | int:
        assert self.view is not None, "act before match_start"
        started = time.perf_counter()
        self._flush()
        self._publish(self.view.asking(request.observation), request.decision_id)
        # A little past the clock: a move the page sent just before it ran out is still taken
        # (the channel refuses any sent after it).
        sent = self.channel.take(request.decision_id, self.clock_ms / 1000 + TAKE_GRACE_S)
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
            self._later(self.view.hand_over(result))

    def match_end(self, summary: MatchSummary) -> None:
        if self.view is not None:
            self._later(self.view.match_over(summary))

    def close(self) -> None:
        self._publisher.shutdown(wait=True)


def person_player(name: str, seat: PersonSeat, store_url: str) -> PersonPlayer:
    """The seat's player, talking over the channel its table was made with."""
    from arena.config import load_settings

    settings = load_settings()
    channel = open_channel(
        seat.channel, store_url, seat.match_id, redis_url=settings.redis_url, queue_name=settings.queue_name
    )
    return PersonPlayer(name, channel, clock_ms=seat.clock_ms, max_faults=seat.max_faults)
