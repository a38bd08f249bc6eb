"""The fair-play check's control for card luck: a deal played again by a house reference bot in
every seat, and what it scored in each seat (``match_seats.reference_score``).

The check (arena/ratings/fairplay.py) compares a bot's later rotations of a duplicate deal with
its first. Heads-up, the later rotation hands it the other seat's cards, so most of that
difference is which cards were better, not memory: at 16 hands per match its spread is about
three times the memory cheater's gain (bench/fairplay_check.py). The reference bot playing the
same cards in the same seats takes most of the card luck out: the check compares the bot's
score *minus the reference's in the same seat*. The reference's expectation is the same in
every seat (the match's hands give every seat the deal equally often), so for an honest bot
the later-minus-first difference of these keeps its zero mean; it only loses variance.

It is computed once per deal, by the worker that claims the deal's end (arena/play/deal_end.py),
and only for duplicate deals seating a bot whose memory the arena does not control
(arena/bots/memory.py): a deal of house and fresh-hosted bots cannot profit from memory. If
that worker dies first, the deal keeps no reference and the check uses its raw scores.
"""

from __future__ import annotations

import logging
from typing import Final

from sqlalchemy import select, update

from arena.bots.memory import controlled_versions
from arena.store.db import session_scope
from arena.store.models import Match, MatchSeat, Tournament
from sdk.players import load_bot_class
from sdk.referee import LocalPlayer, RefereeConfig, play_match
from sdk.rules import Rules

logger = logging.getLogger("tonk.deals")

#: The house bot that plays every seat of the reference (deterministic, and quick).
REFERENCE_BOT: Final = "greedy"


def reference_scores(seed: int, hands: int, seats: int, rules: Rules) -> list[int]:
    """Chips per seat of the deal ``seed`` played by the reference bot in every seat, dealt
    as the arena deals its matches (first dealer seat 0)."""
    bot = load_bot_class(REFERENCE_BOT)
    result = play_match(
        [LocalPlayer(bot) for _ in range(seats)], seed, hands, match_id=f"reference/{seed}",
        names=[f"reference{s}" for s in range(seats)], rules=rules,
        config=RefereeConfig(decision_deadline_ms=60_000), reveal=False,
    )  # fmt: skip
    return list(result.scores)


def record_reference(database_url: str, tournament_id: int, seed: int) -> bool:
    """Store the reference's score in every seat of the deal's matches, when the deal is
    duplicate and seats a bot whose memory the arena does not control; True if it did.
    Never raises: without it the check falls back to the raw scores."""
    try:
        with session_scope(database_url) as session:
            rows = session.execute(
                select(Match.hands, MatchSeat.bot_version_id, MatchSeat.seat)
                .join(MatchSeat, MatchSeat.match_id == Match.id)
                .where(Match.tournament_id == tournament_id, Match.seed == seed)
            ).all()
            deal = select(Match.id).where(Match.tournament_id == tournament_id, Match.seed == seed)
            if session.scalar(deal.limit(1).offset(1)) is None:  # one match (independent): no pair
                return False
            versions = {version for _, version, _ in rows}
            if versions <= controlled_versions(session, versions):
                return False
            tournament = session.get(Tournament, tournament_id)
            assert tournament is not None
            rules = Rules.from_json(tournament.rules or None)  # as arena/play/plan.py reads them
            hands = int(rows[0][0])
            seats = 1 + max(seat for _, _, seat in rows)
        scores = reference_scores(seed, hands, seats, rules)
        with session_scope(database_url) as session:
            for seat, score in enumerate(scores):
                session.execute(
                    update(MatchSeat)
                    .where(MatchSeat.match_id.in_(deal), MatchSeat.seat == seat)
                    .values(reference_score=score)
                    .execution_options(synchronize_session=False)
                )
        return True
    except Exception:
        logger.exception("could not play the fair-play reference of a deal of tournament %s", tournament_id)
        return False
