"""``tonk check``: does a bot follow the protocol, in every situation the game can produce?

The checker talks to the bot over gRPC exactly as the arena does (a ``MODULE:CLASS`` is first
served on a loopback port) and runs three kinds of test under the real referee:

* **matches**: short seeded matches at 2 to 6 seats under every rule variant, the bot in a
  different seat each time, against house-bot-like sparring partners that meld and lay off
  eagerly (so tables fill up and the bot meets lay-offs, hit locks and pickups);
* **positions**: crafted hands that put the bot in front of each rare situation for sure (a
  drop forbidden by ``hit_lock``, an empty discard pile, the discard-pickup restriction, a
  pickup that is the last card, book lay-offs, ace-high spreads...), one decision each, judged
  by the referee's own :func:`~sdk.referee.resolve_reply`;
* **determinism**: one match played twice with the same seed and match id must get the same
  actions from the bot (seed your randomness from ``Bot.rng``); a bot the check serves itself
  (``MODULE:CLASS``, a house bot) plays it a third time from a new process
  (:mod:`sdk.fresh_process`), which is how a set iterated in an identity-hash order shows.

It reports every fault (illegal or malformed replies, timeouts, crashes, unreachable),
latency percentiles, the situations reached, and passes only when there is no fault and no
nondeterminism.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from sdk.actions import DRAW_DISCARD, DRAW_STOCK, Action, Discard, Layoff, Meld
from sdk.bot import Bot, MatchInfo, MatchSummary
from sdk.cards import DECK, Card
from sdk.check_report import SITUATIONS as SITUATIONS  # re-exported: first defined here
from sdk.check_report import CheckReport, Decision, situations_of
from sdk.engine import HandState
from sdk.melds import completes_meld, make_meld
from sdk.observation import Observation, observe
from sdk.players import is_address, load_bot_class
from sdk.protocol import PROTOCOL_VERSION
from sdk.referee import (
    DecisionRequest,
    FaultKind,
    LocalPlayer,
    Player,
    PlayerFaultError,
    PlayerWrapper,
    RefereeConfig,
    play_match,
    resolve_reply,
)
from sdk.rules import STANDARD, Rules

DEFAULT_SEED: Final = 20_250_101


def played_out(**options: Any) -> Rules:
    """Rules with ``options`` under which no hand ends at the deal (TONK is out of reach)."""
    return Rules(tonk_low=0, tonk_high=999, **options)


class ConformanceError(Exception):
    """The checker itself could not run (bad target, no server could be started)."""


# -- sparring partners ----------------------------------------------------------------------


class SparringBot(Bot):
    """A plain, deterministic house-style player: goes down low, takes a discard that makes a
    meld, melds and lays off whenever it can, and discards its highest card."""

    name = "sparring"
    version = "1"
    author = "tonk check"

    def act(self, obs: Observation) -> Action | int:
        legal = obs.legal_actions
        if obs.phase == "start":
            if obs.can_drop() and obs.hand_value <= 5:
                return 0
            top = obs.top_discard
            if top is not None and DRAW_DISCARD in legal and completes_meld(top, obs.hand, obs.rules):
                return legal.index(DRAW_DISCARD)
            return legal.index(DRAW_STOCK) if DRAW_STOCK in legal else len(legal) - 1
        for i, action in enumerate(legal):
            if isinstance(action, Meld | Layoff):
                return i
        discards = [(a.card.value, i) for i, a in enumerate(legal) if isinstance(a, Discard)]
        return max(discards)[1] if discards else 0


class WildBot(Bot):
    """Random legal play from its seeded rng: odd discards, unexpected drops."""

    name = "wild"
    version = "1"
    author = "tonk check"

    def act(self, obs: Observation) -> Action | int:
        return self.rng.randrange(len(obs.legal_actions))


class RecordingPlayer(PlayerWrapper):
    """Wraps the checked bot's player and records every decision it makes."""

    def __init__(self, inner: Player, log: list[Decision]):
        super().__init__(inner)
        self.log = log
        self.scenario = ""

    def act(self, request: DecisionRequest) -> Action | int:
        obs = request.observation
        decision = Decision(self.scenario, request, situations_of(obs), 0)
        self.log.append(decision)
        started = time.perf_counter_ns()
        try:
            reply = self.inner.act(request)
        except PlayerFaultError as exc:
            decision.latency_us = (time.perf_counter_ns() - started) // 1000
            decision.fault, decision.reason = exc.kind, exc.reason
            raise
        decision.latency_us = (time.perf_counter_ns() - started) // 1000
        decision.reply = reply
        try:
            decision.action = resolve_reply(obs, reply)
        except PlayerFaultError as exc:  # the referee will charge it the same way
            decision.fault, decision.reason = exc.kind, exc.reason
        return reply


# -- scenarios ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MatchScenario:
    name: str
    seats: int
    rules: Rules
    bot_seat: int


MATCHES: Final = (
    MatchScenario("2 seats, standard rules", 2, STANDARD, 0),
    MatchScenario("3 seats, hit_lock", 3, played_out(hit_lock=True), 1),
    MatchScenario("4 seats, discard_pickup_may_return, book_layoff", 4,
                  played_out(discard_pickup_may_return=True, book_layoff=True), 2),
    MatchScenario("5 seats, ace_high_or_low, meld_out_double", 5,
                  played_out(ace_high_or_low=True, meld_out_double=True), 4),
    MatchScenario("6 seats, stock_reshuffle, turn_cap 60", 6,
                  played_out(stock_reshuffle=True, turn_cap=60), 3),
    MatchScenario("2 seats, every variant, long hands", 2,
                  played_out(hit_lock=True, book_layoff=True, ace_high_or_low=True,
                             discard_pickup_may_return=True, stock_reshuffle=True, turn_cap=120), 1),
)  # fmt: skip


@dataclass(frozen=True)
class Position:
    """A crafted hand: the bot is seat 0 of ``players``; ``setup`` actions are played first
    (by whoever is to act), then the bot decides once."""

    name: str
    hands: tuple[str, ...]  # seat 0 first; "" = fill with the next unused cards
    discard: str = "7d"  # the discard pile, bottom first
    table: tuple[tuple[int, str], ...] = ()
    rules: Rules = STANDARD
    to_act: int = 0
    setup: tuple[str, ...] = ()  # actions in one-line text form


POSITIONS: Final = (
    Position("turn start, drop available", ("2c 3d 4h 9s Kc", "", "")),
    Position(
        "turn start, hit-locked: no drop",
        ("2c 3d 9s Kc Qd", "8h 2h 3s Jd Kd", ""),
        table=((0, "5h 6h 7h"),),
        rules=Rules(hit_lock=True),
        to_act=1,
        setup=("draw stock", "layoff 8h 0", "discard Kd", "draw stock", "discard {first}"),
    ),
    Position("turn start, empty discard pile", ("2c 3d 4h 9s Kc", "", ""), discard=""),
    Position("after draw, a book to meld", ("8h 8d 8s 2c Kd", "", ""), setup=("draw stock",)),
    Position(
        "after draw, a lay-off onto an opponent's spread",
        ("4s 5s 9h Jc 2d", "", ""),
        table=((1, "10h Jh Qh"),),
        setup=("draw stock",),
    ),
    Position("after taking the discard, it may not go back", ("2c 5d 9h Kc Ks", "", ""), "Qd",
             setup=("draw discard",)),
    Position("after taking the discard, it is the last card", ("5h 5d 5c", "", ""), "9s",
             setup=("draw discard", "meld 5h 5d 5c")),
    Position("discard_pickup_may_return: the pickup may go back", ("2c 5d 9h Kc Ks", "", ""), "Qd",
             rules=Rules(discard_pickup_may_return=True), setup=("draw discard",)),
    Position("book_layoff: a fourth card onto a book", ("7s 2d 9h Jc 3c", "", ""), "3h",
             table=((1, "7c 7d 7h"),), rules=Rules(book_layoff=True), setup=("draw stock",)),
    Position("ace_high_or_low: Q K A", ("Qs Ks As 2d 3c", "", ""), rules=Rules(ace_high_or_low=True),
             setup=("draw stock",)),
    Position("six seats, late in a hand", ("2c 3d 4h 9s Kc", "", "", "", "", ""), "7d 8c 9d Jh"),
)  # fmt: skip


def position_state(position: Position) -> HandState:
    """The hand of ``position`` after its setup actions, with the bot (seat 0) to act."""
    rules = position.rules
    table = [make_meld(seat, [Card.parse(t) for t in cards.split()], rules) for seat, cards in position.table]
    discard = [Card.parse(t) for t in position.discard.split()]
    given = [[Card.parse(t) for t in h.split()] for h in position.hands]
    used = {c for h in given for c in h} | {c for m in table for c in m.cards} | set(discard)
    spare = [c for c in DECK if c not in used]
    hands = []
    for cards in given:
        if not cards:  # an unspecified hand: five more cards nobody asked for
            cards, spare = spare[:5], spare[5:]
        hands.append(cards)
    state = HandState.from_position(hands, discard, spare, table, dealer=len(hands) - 1,
                                    to_act=position.to_act, rules=rules)  # fmt: skip
    for text in position.setup:
        if text.endswith("{first}"):  # "discard {first}": whatever the actor holds first
            text = text.replace("{first}", state.hands[state.to_act][0].text)
        state.apply(Action.parse(text))
    if state.to_act != 0 or state.outcome is not None:
        raise ConformanceError(f"position {position.name!r} does not leave seat 0 to act")
    return state


# -- running a check ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckConfig:
    deadline_ms: int = 1000
    hands: int = 10  # per match scenario
    seed: int = DEFAULT_SEED
    max_faults: int = 8  # stop once this many faults are seen: a broken bot fails fast
    lifecycle_timeout_s: float = 2.0
    #: Stop the whole check after this many seconds (0: no limit), cutting the connection:
    #: the arena's registration checks must not be held for minutes by a slow bot.
    time_limit_s: float = 0.0
    time_bank_ms: int = 5000  # of the admission match, as the arena's default
    #: Run the arena's admission checks first (sdk.admission). The arena, which has just run
    #: them itself, turns this off.
    admission: bool = True


def check_bot(
    target: str,
    config: CheckConfig | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> CheckReport:
    """Check the bot at ``target`` (``HOST:PORT``, ``MODULE:CLASS`` or a house bot name)."""
    from sdk.grpc_player import GrpcPlayer  # gRPC is only needed when checking

    cfg = config or CheckConfig()
    report = CheckReport(target, deadline_ms=cfg.deadline_ms)
    began = time.perf_counter()
    running = None
    if is_address(target) and target not in _house_names():
        address = target
    else:
        from sdk.server import start_server

        try:
            running = start_server(load_bot_class(target), port=0)
        except (ValueError, OSError) as exc:
            raise ConformanceError(str(exc)) from None
        address = running.address
    player = GrpcPlayer(address, lifecycle_timeout_s=cfg.lifecycle_timeout_s)

    def cut() -> None:  # from the timer's thread: every call from now on fails at once
        report.time_limit_hit = True
        player.close()

    timer = threading.Timer(cfg.time_limit_s, cut) if cfg.time_limit_s > 0 else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        if cfg.admission:
            _check_admission(address, player, cfg, report, progress)
        else:
            _check_info(player, report)
        _run_all(player, cfg, report, progress, fresh_target=target if running is not None else "")
    except _StopCheckError:
        report.stopped_early = True
    finally:
        if timer is not None:
            timer.cancel()
        player.close()
        if running is not None:
            running.stop(0)
    pct = report.latency_percentiles_ms()
    if pct and pct["p99"] > cfg.deadline_ms / 2:
        report.warnings.append(
            f"p99 latency {pct['p99']:.1f} ms is over half the {cfg.deadline_ms} ms deadline: "
            "an arena machine under load may time it out"
        )
    report.elapsed_s = time.perf_counter() - began
    return report


def check_player(player: Any, config: CheckConfig | None = None, target: str = "") -> CheckReport:
    """:func:`check_bot` on a player already connected to the bot (the arena's gateway checks
    a connected bot this way, over its own connection)."""
    cfg = config or CheckConfig()
    report = CheckReport(target or str(getattr(player, "address", "bot")), deadline_ms=cfg.deadline_ms)
    began = time.perf_counter()
    try:
        _check_info(player, report)
        _run_all(player, cfg, report, None)
    except _StopCheckError:
        report.stopped_early = True
    report.elapsed_s = time.perf_counter() - began
    return report


class _StopCheckError(Exception):
    """Going on would only repeat the same failure (too many faults, or nobody there)."""


def _run_all(
    player: Any,
    cfg: CheckConfig,
    report: CheckReport,
    progress: Callable[[str], None] | None,
    fresh_target: str = "",
) -> None:
    probe = RecordingPlayer(player, report.decisions)
    steps: list[tuple[str, Callable[[], object]]] = [
        *((m.name, lambda m=m: _run_match(probe, m, cfg, report)) for m in MATCHES),
        *((p.name, lambda p=p: _run_position(probe, p, cfg, report)) for p in POSITIONS),
        ("determinism", lambda: _check_determinism(player, cfg, report, fresh_target)),
    ]
    for name, step in steps:
        if progress:
            progress(name)
        step()
        if len(report.faults) + len(report.problems) >= cfg.max_faults:
            raise _StopCheckError


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() or c == "_" else " " for c in text).split())


def _house_names() -> set[str]:
    from sdk.players import HOUSE_BOTS

    return set(HOUSE_BOTS)


def _check_admission(
    address: str, player: Any, cfg: CheckConfig, report: CheckReport, progress: Callable[[str], None] | None
) -> None:
    """The arena's admission checks, by the arena's own code (sdk.admission): each failure is
    reported with the code and words of the refusal ``tonk submit`` would get."""
    from sdk import admission

    def step(name: str, run: Callable[[], object]) -> bool:
        if progress:
            progress(name)
        try:
            run()
        except admission.AdmissionError as exc:
            report.admission[name] = (exc.code, str(exc))
            return False
        report.admission[name] = None
        return True

    def info() -> None:
        report.info = admission.fetch_info(address)

    healthy = step("health service (grpc.health.v1, service \"\")", lambda: admission.check_health(address))
    if not healthy and report.refusals[-1][0] == "bot_unreachable":
        raise _StopCheckError  # nobody there: the rest would only repeat it
    if not step("GetInfo", info):
        report.info = {"name": "", "protocol_version": ""}
    match = admission.MatchCheck(cfg.deadline_ms, cfg.time_bank_ms, seed=cfg.seed)
    name = f"a {match.hands}-hand match against 'random'"
    step(name, lambda: admission.conformance_match(player, report.info.get("name", ""), match,
                                                   admission.where(address)))  # fmt: skip


def _check_info(player: Any, report: CheckReport) -> None:
    info = player.describe()
    report.info = info
    if info.get("name") == player.address and not info.get("protocol_version"):
        report.warnings.append("GetInfo did not answer: the arena will name this bot by its address")
        return
    if not info.get("name"):
        report.problems.append("GetInfo: the bot has no name")
    if info.get("protocol_version") != PROTOCOL_VERSION:
        report.warnings.append(
            f"GetInfo: protocol_version is {info.get('protocol_version')!r}, expected {PROTOCOL_VERSION!r}"
        )


def _opponents(scenario: MatchScenario) -> list[Player]:
    # Mostly sparring partners (full tables), one wild seat from 3 seats up (odd discards).
    return [LocalPlayer(WildBot if i == 1 else SparringBot) for i in range(scenario.seats - 1)]


def _seating(probe: RecordingPlayer, scenario: MatchScenario) -> tuple[list[Player], list[str]]:
    players = _opponents(scenario)
    players.insert(scenario.bot_seat, probe)
    names = [f"{i}:{'bot' if p is probe else p.describe()['name']}" for i, p in enumerate(players)]
    return players, names


def _run_match(
    probe: RecordingPlayer,
    scenario: MatchScenario,
    cfg: CheckConfig,
    report: CheckReport,
    match_id: str | None = None,
) -> list[Decision]:
    probe.scenario = scenario.name
    start = len(report.decisions)
    players, names = _seating(probe, scenario)
    referee = RefereeConfig(decision_deadline_ms=cfg.deadline_ms, time_bank_ms=0, max_faults=3)
    result = play_match(
        players,
        cfg.seed,
        cfg.hands,
        match_id=match_id or f"check/{_slug(scenario.name)}",
        names=names,
        rules=scenario.rules,
        config=referee,
    )
    mine = report.decisions[start:]
    by_id = {d.request.decision_id: d for d in mine}
    for fault in result.faults:
        if fault.seat != scenario.bot_seat:
            continue
        if fault.decision < 0:  # outside any decision: the bot could not even start
            report.problems.append(f"{scenario.name}: {fault.kind.value} at match start: {fault.reason}")
            if fault.kind is FaultKind.UNREACHABLE:
                raise _StopCheckError
            continue
        # The referee's own verdict is the one that counts, and it names the rule broken.
        decision = by_id.get(f"{result.match_id}/{fault.hand_index}/{fault.decision}")
        if decision is not None:
            decision.fault, decision.reason = fault.kind, fault.reason
    report.scenario_rows.append((scenario.name, len(mine), sum(1 for d in mine if d.fault)))
    return mine


def _run_position(probe: RecordingPlayer, position: Position, cfg: CheckConfig, report: CheckReport) -> None:
    state = position_state(position)
    players = tuple(f"seat{i}" for i in range(state.players))
    match_id = f"check/position/{_slug(position.name)}"
    probe.scenario = f"position: {position.name}"
    try:
        probe.match_start(MatchInfo(match_id, 0, players, position.rules, 1, state.dealer, cfg.deadline_ms))
    except PlayerFaultError as exc:
        report.problems.append(f"position {position.name!r}: StartMatch failed: {exc.reason}")
        report.position_rows.append((position.name, "StartMatch failed"))
        if exc.kind is FaultKind.UNREACHABLE:
            raise _StopCheckError from None
        return
    obs = observe(state, 0, players, (0,) * state.players, 0, 1)
    request = DecisionRequest(match_id, 0, f"{match_id}/0/{len(state.history)}", obs, cfg.deadline_ms)
    with contextlib.suppress(PlayerFaultError):  # the probe records it
        probe.act(request)
    decision = report.decisions[-1]
    if decision.fault is FaultKind.ILLEGAL:
        try:  # judged again with the hand's state, which names the rule broken
            resolve_reply(obs, decision.reply, state)
        except PlayerFaultError as exc:
            decision.reason = exc.reason
    fault = decision.fault
    report.position_rows.append((position.name, fault.value.upper() if fault else f"ok ({decision.action})"))
    with contextlib.suppress(PlayerFaultError):  # a notice: its failure costs the bot nothing
        probe.match_end(MatchSummary(match_id, (0,) * state.players, None))


def _check_determinism(player: Any, cfg: CheckConfig, report: CheckReport, fresh_target: str = "") -> None:
    """Play one match twice (same seed, same match id) and compare the bot's actions; then,
    for a bot this check serves itself (``fresh_target``), a third time from a new process."""
    first = _determinism_run(player, cfg, report)
    second = _determinism_run(player, cfg, report)
    if any(d.fault for d in first + second):
        report.warnings.append("determinism not compared: the bot faulted in the repeated match")
        return
    report.determinism_compared = len(first)
    hint = "use Bot.rng, seeded per match and seat, for any randomness"
    if _compare_runs(first, second, "second run", hint, report) or not fresh_target:
        return
    from sdk.fresh_process import FreshProcessError, serve_in_fresh_process
    from sdk.grpc_player import GrpcPlayer

    try:
        with serve_in_fresh_process(fresh_target) as address:
            fresh = GrpcPlayer(address, lifecycle_timeout_s=cfg.lifecycle_timeout_s)
            try:
                third = _determinism_run(fresh, cfg, report)
            finally:
                fresh.close()
    except FreshProcessError as exc:
        report.warnings.append(f"determinism compared in one process only: {exc}")
        return
    if any(d.fault for d in third):
        report.warnings.append("determinism not compared across processes: the bot faulted in a new one")
        return
    report.determinism_fresh_process = True
    hint = ("iterate no set or dict whose order depends on the process: objects hashed by identity, "
            "or strings under hash randomisation")  # fmt: skip
    _compare_runs(first, third, "a new process", hint, report)


def _determinism_run(player: Any, cfg: CheckConfig, report: CheckReport) -> list[Decision]:
    log: list[Decision] = []
    scratch = CheckReport(report.target, decisions=log)
    _run_match(RecordingPlayer(player, log), MATCHES[1], cfg, scratch, match_id="check/determinism")
    return log


def _compare_runs(
    first: list[Decision], other: list[Decision], which: str, hint: str, report: CheckReport
) -> bool:
    """Report the first decision where ``other`` differs from ``first``; whether there is one."""
    for a, b in zip(first, other, strict=False):
        if a.request.observation != b.request.observation:
            break  # the games diverged after an earlier difference: already reported
        if a.action != b.action:
            report.nondeterminism.append(
                f"decision {a.request.decision_id}: first run {a.action}, {which} {b.action} ({hint})"
            )
            return True
    else:
        if len(first) != len(other):
            report.nondeterminism.append(
                f"the repeated match took {len(other)} decisions instead of {len(first)} in {which}"
            )
            return True
    return False
