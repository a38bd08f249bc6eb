"""Replays that favour no one: what a match comes to when it stops part-way (issue #37).

Two rules, docs/robustness.md ("Replays that favour no one"):

1. **A replay is never dealt cards a seat has seen.** Whatever stopped the match part-way (a
   gateway lost, a worker gone, a bot's link dropped), when it is played again from its start
   it is dealt from :func:`replay_seed`: the seed it had, keyed with the match's key and the
   claim that was cut short (``matches.attempts``). The new seed is written over the old one, and the record
   keeps the seed its hands were dealt from, so the match re-deals exactly from its record.
   A rotation of a duplicate deal so replayed no longer shares its cards with its siblings:
   it is scored as a deal of its own (a deal is the matches of a tournament dealt from one
   seed, arena/play/deal_end.py; the ratings cluster by it too).

2. **A bot that drops its own link gains nothing by it.** The arena cannot tell a blip from
   a cut, so it judges by the standing at the drop (the hands completed): the match is
   replayed afresh, uncharged, only when the bot was ahead by more than one hand can take
   from it (:func:`free_lead`: 2 a rival, a TONK's or a fault's price), within the free-replay
   budget (arena/play/offline.py); it then gives up a lead worth more than any hand it could
   have been losing. Otherwise the match is scored as it stood at the drop and the bot
   forfeits the rest, the hand in play included, as the referee scores any forfeit
   (sdk/referee.py: -2 a rival a hand, +2 to each rival). A gateway or worker failure is
   never the bot's and is always replayed.

One drop is one notice: a link carrying several matches drops them all, and only the first
to hand back records the relink notice (the link's tag is in its reason) and counts against
the budget.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Collection, Sequence
from typing import Final

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.play.offline import RELINK_FREE_PER_BOT, RELINK_MAX_PER_MATCH, RELINK_WINDOW
from arena.store.models import RELINK_NOTICE_KIND, Bot, FaultRecord, Match, utcnow
from sdk.dealing import derive_seed
from sdk.referee import Fault, FaultKind, HandLog, MatchResult
from sdk.rules import Rules

#: FaultRecord.decision of the fault that ends a match scored as it stood at a drop.
CUT_DECISION: Final = -5


def replay_seed(seed: int, key: str, attempts: int) -> int:
    """The seed match ``key`` is dealt from when played again after claim ``attempts`` stopped
    part-way. The key makes it the match's own: two rotations of a duplicate deal replayed
    alike would otherwise share it, and the one played first, alone on it, would reveal it to
    its bots at its end. Derived from a secret seed, so it cannot be guessed either."""
    return derive_seed(seed, f"replay/{key}/{attempts}")


def free_lead(seats: int) -> int:
    """The lead a bot must hold at its drop for the match to be replayed free: more than the
    most one hand can take from a seat (2 from each rival: a TONK, a fault)."""
    return 2 * (seats - 1)


def link_tag(links: Collection[str]) -> str:
    """A short public name for the connections a drop closed (their ids stay private)."""
    digest = hashlib.sha256("\n".join(sorted(links)).encode()).hexdigest()[:12]
    return f"link {digest}"


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What a drop comes to: ``replay`` (dealt afresh, uncharged) or not (scored as it
    stood), and whether this drop is new (it gets the notice) or was seen by another match."""

    replay: bool
    new_drop: bool


def judge_drop(
    session: Session, match_id: int, bot_id: int, standing: int, seats: int, tag: str
) -> Verdict:
    """Judge a drop of ``bot_id``'s link in the caller's transaction, which holds the bot's
    row (so two matches handing back at once cannot both take the last free replay)."""
    session.execute(select(Bot.id).where(Bot.id == bot_id).with_for_update())
    notices = select(FaultRecord.id).where(
        FaultRecord.kind == RELINK_NOTICE_KIND, FaultRecord.bot_id == bot_id
    )
    seen = session.scalar(
        select(func.count()).select_from(
            notices.where(FaultRecord.reason.like(f"%[{tag}]%")).subquery()
        )
    )
    tournament = select(Match.tournament_id).where(Match.id == match_id).scalar_subquery()
    used = session.scalar(
        select(func.count(FaultRecord.id))
        .join(Match, Match.id == FaultRecord.match_id)
        .where(
            FaultRecord.kind == RELINK_NOTICE_KIND,
            FaultRecord.bot_id == bot_id,
            Match.tournament_id == tournament,
            Match.started_at >= utcnow() - RELINK_WINDOW,
        )
    )
    here = session.scalar(
        select(func.count(FaultRecord.id)).where(
            FaultRecord.kind == RELINK_NOTICE_KIND, FaultRecord.match_id == match_id
        )
    )
    new_drop = not seen
    within = (here or 0) < RELINK_MAX_PER_MATCH and ((used or 0) < RELINK_FREE_PER_BOT or not new_drop)
    return Verdict(replay=standing > free_lead(seats) and within, new_drop=new_drop)


def standing(played: Sequence[HandLog], seat: int) -> int:
    """``seat``'s score over the hands completed."""
    return sum(int((log.record.outcome or {}).get("payoffs", [])[seat]) for log in played)


def as_it_stood(
    *,
    public_id: str,
    seed: int,
    names: Sequence[str],
    rules: Rules,
    hands: int,
    played: Sequence[HandLog],
    seat: int,
    reason: str,
) -> MatchResult:
    """The match scored as it stood when ``seat``'s link dropped: the hands completed, then
    the rest (the hand in play included) forfeited by ``seat`` as the referee scores it."""
    n = len(names)
    scores = [0] * n
    faults: list[Fault] = []
    for log in played:
        for s, payoff in enumerate((log.record.outcome or {}).get("payoffs", [0] * n)):
            scores[s] += int(payoff)
        faults.extend(log.faults)
    remaining = hands - len(played)
    for s in range(n):
        scores[s] += (-2 * (n - 1) if s == seat else 2) * remaining
    faults.append(Fault(seat, len(played), CUT_DECISION, FaultKind.UNREACHABLE, reason))
    return MatchResult(
        public_id, seed, list(names), rules, hands, scores, hands=list(played), faults=faults,
        forfeited=seat, hands_forfeited=remaining,
    )  # fmt: skip
