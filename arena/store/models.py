"""The arena's tables (SQLAlchemy 2.0, typed). SQLite by default, PostgreSQL by URL.

Design notes:
- A match row is the unit of work and of idempotency: ``(tournament_id, key)`` is unique,
  and its result, seats, faults and replay are written in one transaction when it finishes.
- Per-seat results live in ``match_seats`` so the leaderboard and bot pages aggregate with
  plain indexed SQL, without opening replays.
- Replays are stored compressed (see arena/store/replays.py); seeds are stored but never shown
  before the match is over.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator, TypeEngine

from arena.store.statuses import BotStatus, MatchStatus, TournamentKind, TournamentStatus


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A moment in UTC, timezone-aware on every backend. PostgreSQL keeps the zone; SQLite keeps
    none and gives naive values back, so they are read as the UTC they were stored in, and an
    aware value of another zone is converted to UTC before it is stored (SQLite would drop its
    offset and keep the wrong wall time)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is not None and value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
        return value

    def process_result_value(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value


class Seed(TypeDecorator[int]):
    """A seed (0 <= seed < 2**64) in a signed 64-bit column: SQLite and PostgreSQL integers
    stop at 2**63 - 1, so the upper half is stored as its two's complement and read back
    unsigned. Comparisons with a seed in a query are converted the same way."""

    impl = BigInteger
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        return dialect.type_descriptor(Integer() if dialect.name == "sqlite" else BigInteger())

    def process_bind_param(self, value: int | None, dialect: Dialect) -> int | None:
        return value - 2**64 if value is not None and value >= 2**63 else value

    def process_result_value(self, value: int | None, dialect: Dialect) -> int | None:
        return value + 2**64 if value is not None and value < 0 else value


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Owner(Base):
    """A person or team holding an API token. Only the token's hash is stored."""

    __tablename__ = "owners"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    token_hash: Mapped[str] = mapped_column(String(128), unique=True)
    is_operator: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)

    bots: Mapped[list[Bot]] = relationship(back_populates="owner")


class Bot(Base):
    """A registered bot. ``address`` is its gRPC HOST:PORT; ``hosted`` names a house-hosted
    bot class (``module:Class``) the arena serves itself."""

    __tablename__ = "bots"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id"))
    address: Mapped[str | None] = mapped_column(String(255), nullable=True)
    hosted: Mapped[str | None] = mapped_column(String(255), nullable=True)
    status: Mapped[str] = mapped_column(String(16), default=BotStatus.ACTIVE.value)  # BotStatus
    #: The bot connects out to a gateway (protos/tonk/v1/link.proto) instead of being dialled.
    connected: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    #: Other owners may challenge it (arena/tournaments/challenges.py); its owner can say no.
    accepts_challenges: Mapped[bool] = mapped_column(Boolean, default=True, server_default="1")
    #: A person's own seat (arena/tournaments/people.py): one per owner, named ``@owner``
    #: (no bot name starts with "@"), played by a PersonPlayer (arena/play/person.py). Never
    #: listed, ranked, laddered, challenged or matched as a bot.
    person: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)

    owner: Mapped[Owner] = relationship(back_populates="bots")
    versions: Mapped[list[BotVersion]] = relationship(back_populates="bot", order_by="BotVersion.number")


class BotVersion(Base):
    """What a bot said about itself when (re)registered; matches point at the version played."""

    __tablename__ = "bot_versions"
    __table_args__ = (UniqueConstraint("bot_id", "number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    number: Mapped[int] = mapped_column(Integer)  # 1, 2, ... per bot
    address: Mapped[str | None] = mapped_column(String(255), nullable=True)
    hosted: Mapped[str | None] = mapped_column(String(255), nullable=True)
    info: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # name/version/author/protocol
    connected: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    #: An uploaded bot (arena/bots/uploaded.py): its archive, its build, and how it starts
    #: (arena.sandbox.launch.Launch.to_json); None for dialled, connected and house bots.
    upload_sha: Mapped[str | None] = mapped_column(ForeignKey("uploads.sha256"), nullable=True)
    build_id: Mapped[int | None] = mapped_column(ForeignKey("builds.id"), nullable=True)
    launch: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)

    bot: Mapped[Bot] = relationship(back_populates="versions")


class Upload(Base):
    """A bot project's archive as its owner uploaded it (arena/bots/uploads.py), addressed by
    the SHA-256 of its bytes: the same archive uploaded twice is one row. Kept in the store so
    a worker on any machine can build or fetch it; shown to its owner and operators only."""

    __tablename__ = "uploads"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id"))
    #: Empty when its build failed: the row stays for the build's log, the bytes do not.
    archive: Mapped[bytes] = mapped_column(LargeBinary)
    size: Mapped[int] = mapped_column(Integer)
    files: Mapped[int] = mapped_column(Integer)
    unpacked_size: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"))
    manifest: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: When it was last uploaded (the same bytes again renew it): ``tonk db gc`` counts its
    #: grace from here.
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Build(Base):
    """One build of an upload into a bundle (arena/bots/builds.py): its status (building, ok,
    failed), its bounded log, and the bundle as a tar.gz with its SHA-256."""

    __tablename__ = "builds"
    __table_args__ = (Index("ix_builds_upload", "upload_sha", "status"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    upload_sha: Mapped[str] = mapped_column(ForeignKey("uploads.sha256"))
    status: Mapped[str] = mapped_column(String(16))
    log: Mapped[str] = mapped_column(Text, default="")
    artifact: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    artifact_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class MatchLog(Base):
    """What an uploaded bot wrote to stdout and stderr during one match, bounded; shown to
    its owner and operators only."""

    __tablename__ = "match_logs"
    __table_args__ = (UniqueConstraint("match_id", "seat"), Index("ix_match_logs_bot", "bot_id", "match_id"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id"))
    seat: Mapped[int] = mapped_column(Integer)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    text: Mapped[str] = mapped_column(Text)
    bytes: Mapped[int] = mapped_column(Integer)
    truncated: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Tournament(Base):
    __tablename__ = "tournaments"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    seed: Mapped[int] = mapped_column(Seed())  # secret until over
    status: Mapped[str] = mapped_column(String(16), default=TournamentStatus.CREATED.value)
    table_sizes: Mapped[list[Any]] = mapped_column(JSON)  # e.g. [2, 3]
    deals_per_table: Mapped[int] = mapped_column(Integer)  # deals per table, each played in duplicate
    hands_per_match: Mapped[int] = mapped_column(Integer)
    rules: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # Rules.to_json() as an object
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # deadline, time bank, max faults
    #: "duplicate" (every seat order of a deal dealt from one seed) or "independent" (a seed
    #: per match): arena/tournaments/lifecycle.py.
    deal_mode: Mapped[str] = mapped_column(String(16), default="duplicate", server_default="duplicate")
    #: round-robin | gauntlet (every table holds params["challenger"]) | sprt (arena/tournaments/sprt.py)
    #: | ladder (open-ended: arena/ladder adds tables as results come in)
    kind: Mapped[str] = mapped_column(
        String(16), default=TournamentKind.ROUND_ROBIN, server_default=TournamentKind.ROUND_ROBIN.value
    )
    params: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    #: The owner who started it through the API (an owner's own sequential test,
    #: arena/tournaments/owner_sprt.py); None for an operator's tournament made from the store.
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("owners.id"), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)

    entries: Mapped[list[TournamentEntry]] = relationship(back_populates="tournament")
    matches: Mapped[list[Match]] = relationship(back_populates="tournament")


class TournamentEntry(Base):
    __tablename__ = "tournament_entries"
    __table_args__ = (UniqueConstraint("tournament_id", "bot_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id"))
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    bot_version_id: Mapped[int] = mapped_column(ForeignKey("bot_versions.id"))
    #: A ladder's only: the bot's matches on it, any status, kept by the scheduler as it adds
    #: and withdraws tables (arena/ladder/scheduler.py), so a tick need not count them.
    matches: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    tournament: Mapped[Tournament] = relationship(back_populates="entries")


class Match(Base):
    """One match of a tournament. ``key`` identifies it within the tournament (table, deal
    number, seat rotation) and is what makes scheduling and retries idempotent."""

    __tablename__ = "matches"
    __table_args__ = (
        UniqueConstraint("tournament_id", "key"),
        Index("ix_matches_status", "status"),
        Index("ix_matches_tournament_status", "tournament_id", "status"),
        Index("ix_matches_finished", "finished_at"),
        # A deal is the matches of a tournament dealt from one seed (arena/play/deal_end.py).
        Index("ix_matches_deal", "tournament_id", "seed"),
        # A ladder's tables (arena/ladder/scheduler.py): its newest, and one table's matches.
        Index("ix_matches_table", "tournament_id", "table_index"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id"))
    key: Mapped[str] = mapped_column(String(128))
    table_index: Mapped[int] = mapped_column(Integer)  # which combination of bots
    deal_index: Mapped[int] = mapped_column(Integer)  # which set of deals at that table
    rotation: Mapped[int] = mapped_column(Integer)  # duplicate: seats rotated this many places
    seed: Mapped[int] = mapped_column(Seed())  # secret until done
    hands: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default=MatchStatus.PENDING.value)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    worker: Mapped[str | None] = mapped_column(String(128), nullable=True)
    #: The match id the referee gives the bots (decision ids are "{public_id}/{hand}/{decision}").
    #: Derived from the tournament seed and the key, so a replay of the tournament with the
    #: same seed plays identically; it reveals nothing about the seed.
    public_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    #: Last sign of life of the worker playing it (arena/play/lifecycle.py): a running match whose
    #: heartbeat is stale, or whose worker process is gone, is played again on resume.
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    hands_played: Mapped[int] = mapped_column(Integer, default=0)
    #: When a worker first found a connected bot of this match offline (arena/link): the
    #: match waits up to the tournament's ``offline_grace_s`` from then, then plays (and faults).
    waiting_since: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    decisions: Mapped[int] = mapped_column(Integer, default=0)
    faults: Mapped[int] = mapped_column(Integer, default=0)
    forfeited_seat: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    duration_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    started_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    #: When the deal's EndDeal notice was claimed (set on every match of the deal at once,
    #: by the one worker that found the deal complete): arena/play/deal_end.py.
    deal_revealed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    #: Why the ladder scheduled it ("placement", "uncertain pair #4 and #5": arena/ladder);
    #: None for a tournament's matches, which are all of its tables.
    reason: Mapped[str | None] = mapped_column(String(128), nullable=True)
    #: Its closest hand, kept when it is recorded (arena.store.replays.closest_hand): the
    #: hand's index and the points between the lowest total and the next. None when no hand
    #: was decided on points, and for matches recorded before revision 0015.
    close_hand: Mapped[int | None] = mapped_column(Integer, nullable=True)
    close_points: Mapped[int | None] = mapped_column(Integer, nullable=True)

    tournament: Mapped[Tournament] = relationship(back_populates="matches")
    seats: Mapped[list[MatchSeat]] = relationship(back_populates="match", order_by="MatchSeat.seat")


class MatchSeat(Base):
    """One seat of a match: who sat there and how it went (filled when the match is done)."""

    __tablename__ = "match_seats"
    __table_args__ = (
        UniqueConstraint("match_id", "seat"),
        Index("ix_match_seats_bot", "bot_id", "match_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id"))
    seat: Mapped[int] = mapped_column(Integer)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    bot_version_id: Mapped[int] = mapped_column(ForeignKey("bot_versions.id"))
    score: Mapped[int | None] = mapped_column(Integer, nullable=True)  # chips (stake units)
    #: What the house reference bot scores in this seat on the same cards, every seat played
    #: by it (arena/play/reference.py): the fair-play check's control for card luck. Set at
    #: the end of a duplicate deal seating a bot whose memory the arena does not control.
    reference_score: Mapped[int | None] = mapped_column(Integer, nullable=True)
    hands_won: Mapped[int] = mapped_column(Integer, default=0)
    decisions: Mapped[int] = mapped_column(Integer, default=0)
    faults: Mapped[int] = mapped_column(Integer, default=0)
    latency_us_total: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), default=0)
    latency_us_max: Mapped[int] = mapped_column(Integer, default=0)

    match: Mapped[Match] = relationship(back_populates="seats")


class Replay(Base):
    """A finished match's hand logs, compressed (arena/store/replays.py)."""

    __tablename__ = "replays"

    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id"), primary_key=True)
    format: Mapped[str] = mapped_column(String(32))
    data: Mapped[bytes] = mapped_column(LargeBinary)


#: FaultRecord.kind of a slow lifecycle notice (sdk.referee.SlowNotice): kept with the faults
#: so slowness shows, but never charged, so never counted as a fault (MatchSeat.faults).
SLOW_NOTICE_KIND = "slow"
#: FaultRecord.kind of a match replayed because its bot's link dropped and came back
#: (arena/play/offline.py): never charged, counted against the bot's free replays.
RELINK_NOTICE_KIND = "relink"
#: The kinds of FaultRecord that are notices, not charged faults.
NOTICE_KINDS: tuple[str, ...] = (SLOW_NOTICE_KIND, RELINK_NOTICE_KIND)


class FaultRecord(Base):
    """A charged fault, or (a kind in NOTICE_KINDS) an uncharged notice: a slow lifecycle
    call, or a match replayed after its bot's link dropped."""

    __tablename__ = "faults"
    __table_args__ = (Index("ix_faults_bot", "bot_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id"))
    seat: Mapped[int] = mapped_column(Integer)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    hand_index: Mapped[int] = mapped_column(Integer)
    decision: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text)


class RatingSnapshot(Base):
    """The official ratings after each finished tournament (the rating history): per bot, its
    current version's rating."""

    __tablename__ = "rating_snapshots"
    __table_args__ = (UniqueConstraint("tournament_id", "bot_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id"))
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    #: The version rated (the bot's current one then: each version is rated apart); None in
    #: rows from before revision 0014, which pooled every version of the bot.
    bot_version_id: Mapped[int | None] = mapped_column(ForeignKey("bot_versions.id"), nullable=True)
    elo: Mapped[float] = mapped_column(Float)  # a one-sided record: the bound
    low: Mapped[float | None] = mapped_column(Float, nullable=True)  # None: no lower bound
    high: Mapped[float | None] = mapped_column(Float, nullable=True)  # None: no upper bound
    matches: Mapped[int] = mapped_column(Integer)
    provisional: Mapped[bool] = mapped_column(Boolean, default=False)
    # pool | fitted | one-sided (arena.ratings.model.Basis)
    basis: Mapped[str] = mapped_column(String(16), default="pool", server_default="pool")
    reason: Mapped[str | None] = mapped_column(String(16), nullable=True)  # why provisional
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class CheckLease(Base):
    """A bot check running somewhere (dashboard.checks): one row per running check, so the
    bound on checks holds across every dashboard process sharing the store. ``slot`` numbers
    the running checks from 0 (two processes taking the same free slot collide on the key);
    one row per owner; a row whose process died is ignored once ``expires_at`` passes."""

    __tablename__ = "check_leases"

    slot: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id"), unique=True)
    holder: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class LinkGateway(Base):
    """A running gateway (arena/link/gateway.py): where workers relay calls to the bots it
    holds. Live while ``heartbeat_at`` is recent. ``secret`` is the relay secret it made up
    when none is configured (TONK_GATEWAY_SECRET); whoever reads the store may relay."""

    __tablename__ = "link_gateways"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    address: Mapped[str] = mapped_column(String(255))  # HOST:PORT workers dial
    secret: Mapped[str | None] = mapped_column(String(128), nullable=True)
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    heartbeat_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class LinkConnection(Base):
    """One connected bot's live connection, held by one gateway, with its declared capacity."""

    __tablename__ = "link_connections"
    __table_args__ = (Index("ix_link_connections_bot", "bot_id"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    gateway_id: Mapped[str] = mapped_column(ForeignKey("link_gateways.id", ondelete="CASCADE"))
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id"))
    capacity: Mapped[int] = mapped_column(Integer)
    peer: Mapped[str] = mapped_column(String(128), default="")
    connected_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class BotOutage(Base):
    """A dialled bot found not answering (arena/bots/reachability.py): one row while it is
    offline, none while it answers, as ``link_connections`` holds a connected bot's presence.
    A ladder gives a bot with a row no new table (arena.play.capacity, live). ``cause`` says
    what found it (``match``: it forfeited a match as unreachable; ``health``: its health
    check failed); ``failures`` counts failed probes in a row, which space the next
    (``probe_at``) further apart."""

    __tablename__ = "bot_outages"
    __table_args__ = (Index("ix_bot_outages_probe_at", "probe_at"),)

    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), primary_key=True, autoincrement=False)
    since: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    noted_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())  # the latest failure
    cause: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(String(300))
    failures: Mapped[int] = mapped_column(Integer, default=0)
    probe_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class BotLease(Base):
    """A match in flight holding one of its bot's capacity slots (arena.play.capacity): one row per
    (bot, slot), ``slot`` numbered from 0 below the bot's capacity, so two workers taking the
    same free slot collide on the key and a bot never has more matches in flight than slots.
    The match's heartbeat renews ``expires_at``; a row whose worker died frees itself when it
    passes (or at once when the recovery sweep resets the match)."""

    __tablename__ = "bot_leases"
    __table_args__ = (Index("ix_bot_leases_match", "match_id"),)

    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), primary_key=True, autoincrement=False)
    slot: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id"))
    holder: Mapped[str] = mapped_column(String(128))
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class Invite(Base):
    """An invite code an operator handed out (arena/bots/invites.py): redeeming it creates an
    owner. Only the code's SHA-256 is kept. ``uses_left`` falls by one per owner created, with
    a conditional UPDATE, so concurrent redemptions cannot overspend it."""

    __tablename__ = "invites"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    uses_total: Mapped[int] = mapped_column(Integer)
    uses_left: Mapped[int] = mapped_column(Integer)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    note: Mapped[str] = mapped_column(String(200), default="")
    created_by: Mapped[int] = mapped_column(ForeignKey("owners.id"))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class InviteRedemption(Base):
    """Which owner joined with which invite (one row per owner so created). A table of its own
    rather than a column of owners: invites already point at the owner who made them."""

    __tablename__ = "invite_redemptions"
    __table_args__ = (Index("ix_invite_redemptions_invite", "invite_id"),)

    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id"), primary_key=True, autoincrement=False)
    invite_id: Mapped[int] = mapped_column(ForeignKey("invites.id"))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class SchedulerLease(Base):
    """Who schedules a ladder now (arena/ladder/lease.py): one row per ladder, held by one
    ``tonk ladder run`` process (or RQ scheduler job) until ``expires_at``; the holder renews
    it at every tick, and another takes it over only once it has expired, so two schedulers
    on two machines never add tables at once and a killed one is replaced."""

    __tablename__ = "scheduler_leases"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(128))
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class SeatChannel(Base):
    """A person's seat in one match (arena/play/person.py): who sits there, and, when the arena
    has no Redis, the channel between the worker playing the match and the web process: the
    seat's latest view (``version`` rises with each), the decision it asks (``asked``) and the
    action the person sent for it. With Redis the view and action travel there; the row still
    says whose table it is."""

    __tablename__ = "seat_channels"
    __table_args__ = (Index("ix_seat_channels_owner", "owner_id"),)

    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id"), primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id"))
    seat: Mapped[int] = mapped_column(Integer)
    version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    view: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    asked: Mapped[str | None] = mapped_column(String(64), nullable=True)
    action: Mapped[str | None] = mapped_column(String(64), nullable=True)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ArenaSecret(Base):
    """One of the arena's own secrets (arena/store/secrets.py), hex-encoded. Never shown."""

    __tablename__ = "arena_secrets"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    value: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
