"""The referee: plays a seeded match between players and enforces every rule and deadline.

The same code referees ``tonk play`` on a laptop and every match in the arena, so a bot's
local games follow the server's rules, deadlines and fault handling exactly.

Fault policy (docs/protocol.md): a seat that times out, is unreachable, crashes, or replies
with a malformed or illegal action gets a :class:`Fault` recorded with its kind and reason and
loses that hand as a penalty (it pays every other seat 2x). A seat that faults
``max_faults`` times in a match forfeits the rest of it: the match stops there and each hand
not yet played is charged to that seat as a penalty. The other seats are never charged for it.
"""

from __future__ import annotations

import contextlib
import enum
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sdk.actions import Action
from sdk.bot import Bot, DealSummary, HandResult, MatchInfo, MatchSummary
from sdk.cards import Card
from sdk.dealing import check_seed, deck_order
from sdk.engine import HandState
from sdk.errors import IllegalActionError
from sdk.observation import Observation, observe
from sdk.record import HandRecord
from sdk.rules import MAX_PLAYERS, MIN_PLAYERS, STANDARD, Rules


class FaultKind(enum.Enum):
    TIMEOUT = "timeout"  # no reply within the decision deadline or the time bank
    UNREACHABLE = "unreachable"  # could not connect, or the connection dropped
    CRASH = "crash"  # the bot raised or answered with an error status
    MALFORMED = "malformed"  # a reply that is not an action at all
    ILLEGAL = "illegal"  # a well-formed action the rules do not allow now


class PlayerFaultError(Exception):
    """Raised by a :class:`Player` when its bot failed to give a usable reply."""

    def __init__(self, kind: FaultKind, reason: str):
        super().__init__(f"{kind.value}: {reason}")
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Fault:
    seat: int
    hand_index: int
    decision: int  # index of the decision within the hand
    kind: FaultKind
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "hand": self.hand_index,
            "decision": self.decision,
            "kind": self.kind.value,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class DecisionRequest:
    """Everything a bot is told when it must act: exactly its seat's observation."""

    match_id: str
    hand_index: int
    decision_id: str
    observation: Observation
    deadline_ms: int


class Player(Protocol):
    """A seat's connection to a bot (in-process, or over gRPC).

    A player that talks to a remote bot may set an attribute ``last_charged_us`` (int µs,
    or None) in :meth:`act`: the time from sending the request to receiving the reply,
    without its own process's lag (sdk.clock.charged_ns). The referee charges that, when
    smaller than its own measure, to the seat's deadline and time bank.

    A player may also have ``turns()`` (a context manager) and ``turn_over()``: the referee
    then plays the match inside ``turns()`` and calls ``turn_over()`` whenever its run of
    consecutive calls ends (the next call is another seat's, the referee reports a hand, or
    the match is over). A hosted bot's sandbox, stopped between its turns, is thus not
    stopped and woken between the calls of one turn (arena/play/hosted.py)."""

    def describe(self) -> dict[str, str]: ...
    def match_start(self, info: MatchInfo) -> None: ...
    def act(self, request: DecisionRequest) -> Action | int: ...
    def hand_end(self, result: HandResult) -> None: ...
    def match_end(self, summary: MatchSummary) -> None: ...
    def close(self) -> None: ...


class LocalPlayer:
    """An in-process Python bot; a fresh instance per match, like ``serve`` gives.

    ``tracebacks`` keeps the traceback of each crash in :meth:`act` (the fault's reason has
    only the exception's line): ``tonk play`` shows the author where their bot failed."""

    def __init__(self, factory: Callable[[], Bot]):
        self.factory = factory
        self.bot = factory()
        self.tracebacks: list[str] = []

    def describe(self) -> dict[str, str]:
        return {"name": self.bot.name, "version": self.bot.version, "author": self.bot.author}

    def match_start(self, info: MatchInfo) -> None:
        self.bot = self.factory()
        self.bot.start_match(info)

    def act(self, request: DecisionRequest) -> Action | int:
        try:
            return self.bot.act(request.observation)
        except Exception as exc:  # a bot's bug is its fault, never the referee's crash
            if len(self.tracebacks) < 8:  # bounded: a player may serve many matches
                self.tracebacks.append("".join(traceback.format_exception(exc)))
            raise PlayerFaultError(FaultKind.CRASH, f"{type(exc).__name__}: {exc}") from None

    def hand_end(self, result: HandResult) -> None:
        self.bot.on_hand_end(result)

    def match_end(self, summary: MatchSummary) -> None:
        self.bot.on_match_end(summary)

    def deal_end(self, deal: DealSummary) -> None:
        # After the match, like ``tonk serve``: a fresh instance hears it.
        self.factory().on_deal_end(deal)

    def close(self) -> None:
        pass


class PlayerWrapper:
    """A :class:`Player` that hands every call to ``inner``: subclass it and override only
    what the wrapper adds (the checker's recorder, the admission check's counter). The inner
    player's own clock (``last_charged_us``) shows through, so wrapping a remote bot never
    charges it the wrapper's or this process's time."""

    def __init__(self, inner: Player):
        self.inner = inner

    @property
    def last_charged_us(self) -> int | None:
        own = getattr(self.inner, "last_charged_us", None)
        return own if type(own) is int else None

    def describe(self) -> dict[str, str]:
        return dict(self.inner.describe())

    def match_start(self, info: MatchInfo) -> None:
        self.inner.match_start(info)

    def act(self, request: DecisionRequest) -> Action | int:
        return self.inner.act(request)

    def hand_end(self, result: HandResult) -> None:
        self.inner.hand_end(result)

    def match_end(self, summary: MatchSummary) -> None:
        self.inner.match_end(summary)

    def close(self) -> None:
        self.inner.close()

    def turns(self) -> contextlib.AbstractContextManager[object]:
        turns = getattr(self.inner, "turns", None)
        return turns() if callable(turns) else contextlib.nullcontext()

    def turn_over(self) -> None:
        _turn_over(self.inner)


@dataclass(frozen=True, slots=True)
class RefereeConfig:
    decision_deadline_ms: int = 1000
    time_bank_ms: int = 0  # extra time a seat may spend over its deadlines in a match; 0 = none
    max_faults: int = 3
    #: StartMatch, EndHand and EndMatch are cut off after this long (a gRPC seat's own
    #: lifecycle timeout applies when shorter): a StartMatch cut off is a fault, a notice
    #: (EndHand, EndMatch) cut off ends that seat's notices for the match, so a bot slow to
    #: take notices costs the match one deadline, not one a hand. Any of them taking over half
    #: of it is recorded as slow.
    lifecycle_deadline_ms: int = 1000


@dataclass(frozen=True, slots=True)
class SlowNotice:
    """A lifecycle notice that took too long: not a fault (notices are a courtesy and cost
    the bot no chips), but recorded, so slowness is never free and never invisible."""

    seat: int
    hand_index: int  # the hand an EndHand was about; the number of hands played for EndMatch
    rpc: str  # "StartMatch", "EndHand" or "EndMatch"
    elapsed_ms: int
    cut_off: bool  # it hit the deadline: no more notices for this seat in the match

    @property
    def reason(self) -> str:
        ended = "; no more notices to this seat in the match" if self.cut_off else ""
        return f"{self.rpc}: slow lifecycle notice, took {self.elapsed_ms} ms{ended}"


#: The keys :meth:`HandLog.to_json` adds to the hand's ``tonk-hand/1`` record.
REFEREE_KEYS = ("latency_us", "faults")


def plain_record(log: Mapping[str, Any]) -> dict[str, Any]:
    """A hand log (:meth:`HandLog.to_json`) as a plain ``tonk-hand/1`` record: without what the
    referee measured (as a replay download, an export and a bot's EndDeal give it)."""
    return {k: v for k, v in log.items() if k not in REFEREE_KEYS}


@dataclass
class HandLog:
    """One played hand: its record, plus what the referee measured."""

    record: HandRecord
    latencies_us: list[int]  # one per action, in the order of record.actions
    faults: list[Fault]

    def to_json(self) -> dict[str, Any]:
        data = self.record.to_json()
        data["latency_us"] = self.latencies_us
        if self.faults:
            data["faults"] = [f.to_json() for f in self.faults]
        return data


@dataclass
class MatchResult:
    match_id: str
    seed: int
    players: list[str]
    rules: Rules
    hands_planned: int
    scores: list[int]
    hands: list[HandLog] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    forfeited: int | None = None  # seat that forfeited the rest of the match
    hands_forfeited: int = 0
    slow_notices: list[SlowNotice] = field(default_factory=list)

    @property
    def decisions(self) -> int:
        return sum(len(h.latencies_us) for h in self.hands)


def play_match(
    players: Sequence[Player],
    seed: int,
    hands: int,
    *,
    match_id: str = "local",
    names: Sequence[str] | None = None,
    rules: Rules = STANDARD,
    first_dealer: int = 0,
    config: RefereeConfig | None = None,
    on_hand: Callable[[HandLog, list[int]], None] | None = None,
    reveal: bool = True,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> MatchResult:
    """Play ``hands`` hands of the match with ``seed`` between ``players`` (seat order).

    ``reveal=False`` is for a match whose cards are dealt again in other matches (a seat
    rotation of a duplicate deal): EndHand then carries only each seat's own view and the
    hands the rules show, EndMatch no seed; the arena reveals both once the deal is over.

    ``clock`` (ns) is what the referee times each call by (a test passes one of its own to
    time a bot exactly); a player's own measure (``last_charged_us``) and a transport's
    deadline are their own."""
    n = len(players)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise ValueError(f"a match has {MIN_PLAYERS} to {MAX_PLAYERS} players, got {n}")
    check_seed(seed)
    with _Turns(players) as turn:
        return _play(
            players, turn, seed, hands, match_id, names, rules, first_dealer, config, on_hand, reveal, clock
        )


def _play(
    players: Sequence[Player],
    turn: _Turns,
    seed: int,
    hands: int,
    match_id: str,
    names: Sequence[str] | None,
    rules: Rules,
    first_dealer: int,
    config: RefereeConfig | None,
    on_hand: Callable[[HandLog, list[int]], None] | None,
    reveal: bool,
    clock: Callable[[], int],
) -> MatchResult:
    n = len(players)
    cfg = config or RefereeConfig()
    seat_names: tuple[str, ...]
    if names is not None:
        seat_names = tuple(names)
    else:
        described = []
        for seat, p in enumerate(players):
            turn.to(seat)
            described.append(p.describe()["name"])
        seat_names = tuple(described)
    result = MatchResult(match_id, seed, list(seat_names), rules, hands, [0] * n)
    fault_count = [0] * n
    bank_us = [cfg.time_bank_ms * 1000] * n
    notify = _Notices(players, cfg.lifecycle_deadline_ms, result.slow_notices, clock, turn)
    for seat, player in enumerate(players):
        info = MatchInfo(
            match_id, seat, seat_names, rules, hands, first_dealer, cfg.decision_deadline_ms, cfg.time_bank_ms
        )
        _bound_lifecycle(player, cfg.lifecycle_deadline_ms)
        turn.to(seat)
        started = clock()
        try:
            player.match_start(info)
        except PlayerFaultError as exc:
            result.faults.append(Fault(seat, 0, -1, exc.kind, exc.reason))
            fault_count[seat] = cfg.max_faults  # a bot that cannot start cannot play
        else:
            elapsed_ms = (clock() - started) // 1_000_000
            if 2 * elapsed_ms > cfg.lifecycle_deadline_ms:  # started, but slowly: on the record
                result.slow_notices.append(SlowNotice(seat, 0, "StartMatch", int(elapsed_ms), False))
    forfeiter = next((s for s in range(n) if fault_count[s] >= cfg.max_faults), None)
    hand_index = 0
    while hand_index < hands and forfeiter is None:
        dealer = (first_dealer + hand_index) % n
        state = HandState.deal(deck_order(seed, hand_index), n, dealer, rules)
        latencies: list[int] = []
        hand_faults: list[Fault] = []
        decision = 0
        while state.outcome is None:
            seat = state.to_act
            obs = observe(state, seat, seat_names, tuple(result.scores), hand_index, hands)
            deadline_ms = cfg.decision_deadline_ms + bank_us[seat] // 1000
            request = DecisionRequest(
                match_id, hand_index, f"{match_id}/{hand_index}/{decision}", obs, deadline_ms
            )
            turn.to(seat)
            started = clock()
            fault: Fault | None = None
            try:
                reply = players[seat].act(request)
                elapsed_us = _charged(players[seat], clock() - started)
                over_us = elapsed_us - cfg.decision_deadline_ms * 1000
                if over_us > 0:
                    bank_us[seat] -= over_us
                    if bank_us[seat] < 0:
                        bank_us[seat] = 0
                        raise PlayerFaultError(
                            FaultKind.TIMEOUT,
                            f"no reply within {cfg.decision_deadline_ms} ms and the time bank is "
                            f"spent (took {elapsed_us / 1000:.1f} ms)",
                        )
                action = resolve_reply(obs, reply, state)
                state.apply(action, seat)
                latencies.append(elapsed_us)
            except PlayerFaultError as exc:
                # A call that failed late (a transport timeout waits out deadline + bank) spends
                # the bank too; otherwise a hanging bot would get its whole bank back every call.
                over_us = _charged(players[seat], clock() - started) - cfg.decision_deadline_ms * 1000
                if over_us > 0:
                    bank_us[seat] = max(0, bank_us[seat] - over_us)
                fault = Fault(seat, hand_index, decision, exc.kind, exc.reason)
            except IllegalActionError as exc:  # cannot happen after resolve_reply; belt and braces
                fault = Fault(seat, hand_index, decision, FaultKind.ILLEGAL, str(exc))
            if fault is not None:
                hand_faults.append(fault)
                result.faults.append(fault)
                fault_count[seat] += 1
                state.forfeit(seat)
                if fault_count[seat] >= cfg.max_faults:
                    forfeiter = seat
            decision += 1
        outcome = state.outcome
        assert outcome is not None
        before = tuple(result.scores)
        for s in range(n):
            result.scores[s] += outcome.payoffs[s]
        log = HandLog(HandRecord.from_state(state, list(seat_names)), latencies, hand_faults)
        result.hands.append(log)
        record = log.record.to_json() if reveal else {}
        shown = shown_hands(state)
        for seat in range(n):
            view = observe(state, seat, seat_names, before, hand_index, hands)
            hand_end = HandResult(
                match_id, hand_index, record, outcome.payoffs, tuple(result.scores), view, shown, not reveal
            )
            notify(seat, "EndHand", hand_index, hand_end)
        if on_hand is not None:
            turn.over()  # the arena stores the hand: no seat's turn
            on_hand(log, list(result.scores))
        hand_index += 1
    if forfeiter is not None:
        remaining = hands - hand_index
        result.forfeited = forfeiter
        result.hands_forfeited = remaining
        for s in range(n):
            result.scores[s] += (-2 * (n - 1) if s == forfeiter else 2) * remaining
    summary = MatchSummary(
        match_id, tuple(result.scores), seed if reveal else None, () if forfeiter is None else (forfeiter,)
    )
    for seat in range(n):
        notify(seat, "EndMatch", hand_index, summary)
    return result


#: Ends after which the rules show every seat's hand: a drop is settled, and a showdown
#: decided, by comparing every hand's total (docs/rules.md, Settling).
_SHOW_ALL = frozenset({"drop", "stock", "cap"})


def shown_hands(state: HandState) -> tuple[tuple[Card, ...], ...]:
    """Per seat, the cards the rules show when the hand is over: every hand after a drop or a
    showdown, the TONK hands after TONK, nothing after going out or a fault."""
    outcome = state.outcome
    if outcome is None:
        return ()
    show = set(range(state.players)) if outcome.end in _SHOW_ALL else set()
    if outcome.end == "tonk":
        show = set(outcome.winners)
    return tuple(
        tuple(sorted(state.hands[s], key=_by_index)) if s in show else () for s in range(state.players)
    )


def _by_index(card: Card) -> int:
    return card.index


def resolve_reply(obs: Observation, reply: object, state: HandState | None = None) -> Action:
    """Turn a bot's reply (an action, or an index into the legal actions) into a legal action,
    or raise :class:`PlayerFaultError` saying exactly what was wrong with it (the rule it
    breaks, when ``state`` is given)."""
    legal = obs.legal_actions
    if type(reply) is int:
        if 0 <= reply < len(legal):
            return legal[reply]
        raise PlayerFaultError(
            FaultKind.ILLEGAL,
            f"action index {reply} is out of range: there are {len(legal)} "
            f"legal actions (0..{len(legal) - 1})",
        )
    if not isinstance(reply, Action):
        raise PlayerFaultError(FaultKind.MALFORMED, f"reply {reply!r:.200} is not an action")
    if reply in legal:
        return reply
    reason = "it is not among the legal actions"
    if state is not None:
        try:
            state.verify(reply, obs.seat)
        except IllegalActionError as exc:
            reason = str(exc)
    raise PlayerFaultError(FaultKind.ILLEGAL, f"{reply} is not legal now: {reason}")


def _bound_lifecycle(player: Player, deadline_ms: int) -> None:
    """Cut a gRPC seat's lifecycle calls at ``deadline_ms`` (an in-process seat cannot be cut;
    it is measured like any other)."""
    timeout = getattr(player, "lifecycle_timeout_s", None)
    if isinstance(timeout, int | float) and not isinstance(timeout, bool):
        player.lifecycle_timeout_s = min(float(timeout), deadline_ms / 1000)  # type: ignore[attr-defined]


class _Notices:
    """Sends EndHand and EndMatch: a courtesy (a bot that fails one only hurts itself), with a
    bounded cost: each is cut at the lifecycle deadline, one that is slow is recorded, and a
    seat cut off once gets no more notices in the match."""

    def __init__(
        self,
        players: Sequence[Player],
        deadline_ms: int,
        slow: list[SlowNotice],
        clock: Callable[[], int],
        turn: _Turns,
    ):
        self.players = players
        self.turn = turn
        self.clock = clock
        self.deadline_ms = deadline_ms
        self.slow = slow
        self.off = [False] * len(players)

    def __call__(self, seat: int, rpc: str, hand_index: int, message: Any) -> None:
        if self.off[seat]:
            return
        player = self.players[seat]
        call = player.hand_end if rpc == "EndHand" else player.match_end
        _bound_lifecycle(player, self.deadline_ms)
        self.turn.to(seat)
        started = self.clock()
        timed_out = False
        try:
            call(message)
        except PlayerFaultError as exc:
            timed_out = exc.kind is FaultKind.TIMEOUT
        except Exception:  # a courtesy notice that fails is the bot's own business
            pass
        elapsed_ms = (self.clock() - started) // 1_000_000
        cut_off = timed_out or elapsed_ms >= self.deadline_ms
        if cut_off or 2 * elapsed_ms > self.deadline_ms:
            self.slow.append(SlowNotice(seat, hand_index, rpc, int(elapsed_ms), cut_off))
            self.off[seat] = self.off[seat] or cut_off


class _Turns:
    """Whose turn it is: the seat the referee called last, told ``turn_over()`` (see
    :class:`Player`) before another seat is called, before the referee reports a hand, and at
    the end of the match, however it ends."""

    def __init__(self, players: Sequence[Player]):
        self.players = players
        self.seat: int | None = None
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> _Turns:
        with self._stack as stack:
            for player in self.players:
                turns = getattr(player, "turns", None)
                if callable(turns):
                    stack.enter_context(turns())
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.over()
        finally:
            self._stack.close()

    def to(self, seat: int) -> None:
        if self.seat != seat:
            self.over()
            self.seat = seat

    def over(self) -> None:
        seat, self.seat = self.seat, None
        if seat is not None:
            _turn_over(self.players[seat])


def _turn_over(player: object) -> None:
    over = getattr(player, "turn_over", None)
    if callable(over):
        over()


def _charged(player: Player, wall_ns: int) -> int:
    """µs charged for a call that took ``wall_ns`` by the referee's clock: the player's own
    measure of the bot's time when it has one (it excludes this process's lag), else that."""
    wall_us = wall_ns // 1000
    own = getattr(player, "last_charged_us", None)
    return min(wall_us, own) if type(own) is int and own >= 0 else wall_us
