"""The referee in the arena: one match from its stored plan to a result and per-seat stats.

A :class:`MatchPlan` is everything a worker needs to play a match, read from the store in
one go (:func:`load_plan`): the seed, the hands, the rules and referee settings fixed when
the tournament was created, and for each seat the bot version entered (its gRPC address, or
the ``module:Class`` of a bot the arena hosts in-process). Playing it is the same
:func:`sdk.referee.play_match` that ``tonk play`` runs, so a bot meets the same rules,
deadlines and fault handling locally and here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, func, select
from sqlalchemy.orm import Session

from arena.bots.addresses import resolve_for_dial
from arena.config import load_settings
from arena.errors import ArenaError, MatchNotFoundError, UnprocessableError
from arena.play.person import DEFAULT_CLOCK_MS, PersonSeat, person_player
from arena.store.models import Bot, BotVersion, Match, MatchSeat, Tournament
from arena.tournaments.layout import public_match_id
from arena.tournaments.settings import TournamentSettings
from sdk.actions import Action
from sdk.bot import HandResult, MatchInfo, MatchSummary
from sdk.grpc_player import GrpcPlayer
from sdk.players import PlayerSpecError, load_bot_class, make_player
from sdk.referee import (
    DecisionRequest,
    FaultKind,
    HandLog,
    LocalPlayer,
    MatchResult,
    Player,
    PlayerFaultError,
    RefereeConfig,
    play_match,
)
from sdk.rules import Rules


class SeatSpecError(UnprocessableError):
    """A seat whose bot version names neither a usable address nor a hosted class."""

    code = "bad_seat"


@dataclass(frozen=True, slots=True)
class SeatPlan:
    bot_id: int
    bot_version_id: int
    name: str
    address: str | None
    hosted: str | None
    #: ``address`` is where this arena serves the hosted bot itself (tonk demo), not an address
    #: a bot was registered at: it is dialled without the registered-address check.
    served_here: bool = False
    #: The bot connects out (arena/link): its calls are relayed through the gateway holding
    #: it, found in the store at ``store`` (the store's URL).
    connected: bool = False
    store: str | None = None
    #: The match may still wait for this connected bot (arena/play/offline.py): a StartMatch
    #: that finds it gone hands the match back instead of charging the seat.
    offline_waits: bool = False
    #: An uploaded bot: its build (fetched from ``store``) and how it starts
    #: (arena.sandbox.launch.Launch.to_json); played in a sandbox (arena/play/hosted.py).
    build_id: int | None = None
    launch: dict[str, Any] | None = None
    #: The matches that may share one sandbox under the deal memory scope: this deal's.
    deal: tuple[int, int] | None = None  # (tournament id, seed)
    #: Seconds a connected seat waits for its bot when its link drops mid-match (offline.py).
    relink_wait_s: float = 0.0
    #: A person's seat (arena/play/person.py): played from their page, over the match's channel.
    person: PersonSeat | None = None


@dataclass(frozen=True, slots=True)
class MatchPlan:
    match_id: int
    tournament_id: int
    public_id: str  # the match id the bots see
    seed: int
    hands: int
    rules: Rules
    config: RefereeConfig
    seats: tuple[SeatPlan, ...]
    #: False when other matches of the tournament are dealt from the same seed (a duplicate
    #: deal): the referee then withholds the full records and the seed (arena/play/deal_end.py).
    reveal: bool = True


@dataclass(frozen=True, slots=True)
class SeatStats:
    seat: int
    score: int
    hands_won: int
    decisions: int
    faults: int
    latency_us_total: int
    latency_us_max: int


def _wait(relink_wait_s: float | Mapping[int, float], bot_id: int) -> float:
    if isinstance(relink_wait_s, Mapping):
        return float(relink_wait_s.get(bot_id, 0.0))
    return float(relink_wait_s)


def load_plan(
    session: Session,
    match_id: int,
    hosted_addresses: Mapping[str, str] | None = None,
    *,
    offline_waits: bool = False,
    relink_wait_s: float | Mapping[int, float] = 0.0,
) -> MatchPlan:
    """Everything needed to play match ``match_id``, from the store. ``hosted_addresses``
    (bot name -> HOST:PORT) plays hosted bots over gRPC where they are being served (as
    ``tonk demo`` does with arena.bots.hosting.HostedBots) instead of in-process.
    ``offline_waits``: the match may still wait for its connected bots (SeatPlan);
    ``relink_wait_s``: how long a connected seat waits for a link that drops mid-match (one
    figure for all, or by bot id: arena.play.offline.relink_wait)."""
    served = hosted_addresses or {}
    bind = session.get_bind()
    store = (bind.engine if isinstance(bind, Connection) else bind).url.render_as_string(hide_password=False)
    match = session.get(Match, match_id)
    if match is None:
        raise MatchNotFoundError(f"there is no match {match_id!r}")
    tournament = session.get(Tournament, match.tournament_id)
    assert tournament is not None  # a foreign key
    config = TournamentSettings.from_column(tournament.config).referee()
    params = tournament.params or {}
    clock_ms = int(params.get("clock_ms", DEFAULT_CLOCK_MS))
    person = PersonSeat(match.id, str(params.get("channel", "store")), clock_ms, config.max_faults)
    rows = session.execute(
        select(MatchSeat.seat, MatchSeat.bot_id, MatchSeat.bot_version_id, Bot.name, BotVersion, Bot.person)
        .join(Bot, Bot.id == MatchSeat.bot_id)
        .join(BotVersion, BotVersion.id == MatchSeat.bot_version_id)
        .where(MatchSeat.match_id == match_id)
        .order_by(MatchSeat.seat)
    ).all()
    seats = tuple(
        SeatPlan(
            bot_id,
            version_id,
            name,
            served.get(name) if version.hosted and name in served else version.address,
            version.hosted,
            bool(version.hosted and name in served),
            bool(version.connected),
            store if version.connected or version.build_id is not None or is_person else None,
            bool(version.connected) and offline_waits,
            version.build_id,
            version.launch,
            (match.tournament_id, match.seed),
            _wait(relink_wait_s, bot_id) if version.connected else 0.0,
            person if is_person else None,
        )
        for _seat, bot_id, version_id, name, version, is_person in rows
    )
    dealt_from_seed = session.execute(
        select(func.count(Match.id)).where(
            Match.tournament_id == match.tournament_id, Match.seed == match.seed
        )
    ).scalar_one()
    return MatchPlan(
        match_id=match.id,
        tournament_id=match.tournament_id,
        public_id=match.public_id or public_match_id(tournament.seed, match.key),
        seed=match.seed,
        hands=match.hands,
        rules=Rules.from_json(tournament.rules or None),
        config=config,
        seats=seats,
        reveal=dealt_from_seed <= 1,
    )


def make_seat_player(seat: SeatPlan, allowed_hosts: Iterable[str] | None = None) -> Player:
    """The one factory of seat players. A connected bot plays through the gateway holding
    it (arena.link.player.LinkPlayer); a registered bot's address wins next (it plays over
    gRPC like any entrant); a bot with only a ``module:Class`` is hosted in this process.

    A registered address is checked again before it is dialled (arena.bots.addresses:
    ``allowed_hosts``, default ``TONK_ALLOWED_BOT_HOSTS`` of this process) and the resolution
    that passed is the one dialled. One that fails is never dialled: the seat faults as
    unreachable when the match starts, like a bot that is down, and the others play on.
    """
    try:
        if seat.person is not None:
            assert seat.store is not None  # load_plan gives a person's seat its store
            return person_player(seat.name, seat.person, seat.store)
        if seat.build_id is not None:
            return hosted_player(seat)
        if seat.connected:
            from arena.link.player import LinkPlayer
            from arena.link.relay_client import RelayTransport, routes_for

            routes = routes_for(seat.store or load_settings().database_url)
            transport = RelayTransport(seat.bot_id, routes)
            return LinkPlayer(
                seat.name,
                transport,
                offline_waits=seat.offline_waits,
                relinked=transport.relinked,
                relink_wait_s=seat.relink_wait_s,
            )
        if seat.address and seat.served_here:
            return make_player(seat.address)
        if seat.address:
            if allowed_hosts is None:
                allowed_hosts = load_settings().allowed_bot_hosts
            try:
                target = resolve_for_dial(seat.address, allowed_hosts)
            except ArenaError as exc:
                return RefusedPlayer(seat.name, f"the arena did not connect to {seat.address!r}: {exc}")
            return GrpcPlayer(target.target, authority=target.authority)
        if seat.hosted:
            return LocalPlayer(load_bot_class(seat.hosted))
    except PlayerSpecError as exc:
        raise SeatSpecError(f"bot {seat.name!r} (version {seat.bot_version_id}): {exc}") from None
    raise SeatSpecError(f"bot {seat.name!r} (version {seat.bot_version_id}) has no address and is not hosted")


def hosted_player(seat: SeatPlan) -> Player:
    """An uploaded bot's seat: its sandbox starts at the first call, from the bundle this
    worker fetched from the store (cached in its data folder)."""
    from arena.bots.builds import bundle_cache, fetch_bundle
    from arena.play.hosted import HostedPlayer, memory_scope
    from arena.sandbox.launch import Launch
    from arena.store.db import session_scope

    settings = load_settings()
    build_id = seat.build_id
    assert build_id is not None
    url = seat.store or settings.database_url

    def bundle() -> Path:
        with session_scope(url) as session:
            return fetch_bundle(session, build_id, bundle_cache(settings))

    scope = memory_scope()
    key: Hashable = (
        (seat.bot_version_id, *seat.deal) if scope == "deal" and seat.deal else (seat.bot_version_id,)
    )
    return HostedPlayer(seat.name, bundle, Launch.from_json(seat.launch or {}), scope=scope, scope_key=key)


class RefusedPlayer:
    """A seat whose address the arena will not dial: every call is an UNREACHABLE fault."""

    def __init__(self, name: str, reason: str):
        self.name = name
        self.reason = reason

    def describe(self) -> dict[str, str]:
        return {"name": self.name, "version": "", "author": "", "protocol_version": ""}

    def match_start(self, info: MatchInfo) -> None:
        raise PlayerFaultError(FaultKind.UNREACHABLE, self.reason)

    def act(self, request: DecisionRequest) -> Action | int:
        raise PlayerFaultError(FaultKind.UNREACHABLE, self.reason)

    def hand_end(self, result: HandResult) -> None:
        pass

    def match_end(self, summary: MatchSummary) -> None:
        pass

    def close(self) -> None:
        pass


def run_match(
    plan: MatchPlan,
    *,
    on_hand: Callable[[HandLog, list[int]], None] | None = None,
    player_factory: Callable[[SeatPlan], Player] = make_seat_player,
    outputs: dict[int, Any] | None = None,
) -> MatchResult:
    """Play ``plan`` and return the referee's result (players are closed afterwards).
    ``outputs`` receives, by seat, what each hosted bot printed (arena.play.hosted.SeatOutput)."""
    players: list[Player] = []
    slots = contextlib.ExitStack()
    try:
        for seat in plan.seats:
            players.append(player_factory(seat))
        # Hosted bots start before the referee's clock runs (their start-up is not their
        # StartMatch time), all at once: a match waits for its slowest, not their sum. They
        # take the machine's sandbox slots first (arena/sandbox/slots.py): what bounds hosted
        # matches in flight is the worker's CPU, not a capacity the bot declares.
        starting = [getattr(p, "prepare") for p in players if callable(getattr(p, "prepare", None))]  # noqa: B009
        if starting:
            from arena.sandbox.runner import sandbox_root
            from arena.sandbox.slots import sandbox_slots, slot_count

            slots.enter_context(sandbox_slots(sandbox_root(), len(starting), slot_count()))
        if len(starting) > 1:
            with ThreadPoolExecutor(len(starting), thread_name_prefix="tonk-sandbox-start") as pool:
                list(pool.map(lambda start: start(), starting))
        elif starting:
            starting[0]()
        return play_match(
            players,
            plan.seed,
            plan.hands,
            match_id=plan.public_id,
            names=[seat.name for seat in plan.seats],
            rules=plan.rules,
            config=plan.config,
            on_hand=on_hand,
            reveal=plan.reveal,
        )
    finally:
        for seat_index, player in enumerate(players):
            with contextlib.suppress(Exception):  # closing is best effort; the result stands
                player.close()
            output = getattr(player, "output", None)
            if outputs is not None and callable(output) and output() is not None:
                outputs[seat_index] = output()
        slots.close()  # once every sandbox of the match is closed


def seat_stats(result: MatchResult) -> list[SeatStats]:
    """Per-seat totals of a played match: what ``match_seats`` stores."""
    n = len(result.scores)
    won = [0] * n
    decisions = [0] * n
    total = [0] * n
    worst = [0] * n
    for log in result.hands:
        outcome = log.record.outcome or {}
        for seat in outcome.get("winners", []):
            won[seat] += 1
        for (seat, _action), latency in zip(log.record.actions, log.latencies_us, strict=True):
            decisions[seat] += 1
            total[seat] += latency
            worst[seat] = max(worst[seat], latency)
    faults = [0] * n
    for fault in result.faults:
        faults[fault.seat] += 1
    return [
        SeatStats(s, result.scores[s], won[s], decisions[s], faults[s], total[s], worst[s]) for s in range(n)
    ]
