""""Is my new version better?" as a sequential test: V2 against V1 in duplicate pairs until a
sequential probability ratio test accepts "V2 is at least ``elo1`` better" (H1) or "V2 is no
more than ``elo0`` better" (H0), at error rates ``alpha`` (accepting H1 wrongly) and ``beta``
(accepting H0 wrongly): the way fishtest tests chess engines.

A *pair* is one deal played twice heads-up, V2 in each seat once (a 2-seat deal of the arena's
duplicate design), so card luck cancels inside the pair. Each match scores V2 1, ½ or 0 by
final chips; a pair scores the mean of its two, one of 0, ¼, ½, ¾, 1 (the *pentanomial*
outcomes: pairs are scored as units because the two halves of a pair are correlated).

The log-likelihood ratio is fishtest's normalised GSPRT approximation on the pair scores:

    LLR = N (s1 - s0) (2 mean - s0 - s1) / (2 var)

with ``s = 1 / (1 + 10 ** (-elo / 400))`` the pair score expected at ``elo0``/``elo1``, and
``mean``/``var`` the pair scores' mean and variance (with a tiny pseudo-count in every outcome
so that pairs that all came out the same do not make the variance zero). The test stops when
LLR <= ln(beta / (1 - alpha)) (accept H0) or LLR >= ln((1 - beta) / alpha) (accept H1).

The arena plays it as a tournament of kind ``sprt`` between the two bots at one 2-seat table:
``batch`` deals (pairs) at a time; when a batch is done, :func:`advance` decides, or extends the
tournament by another batch (arena.tournaments.lifecycle.extend_tournament), up to ``max_pairs``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.errors import ArenaError
from arena.store.models import Match, MatchSeat, Tournament
from arena.store.statuses import MatchStatus
from arena.tournaments.layout import extend_tournament

__all__ = ["InvalidSprtError", "SprtState", "advance", "bounds", "llr", "sprt_params", "sprt_state"]

#: Pair scores, the pentanomial outcomes.
OUTCOMES = (0.0, 0.25, 0.5, 0.75, 1.0)
#: Pseudo-count per outcome (fishtest regularises the same way).
_PSEUDO = 1e-3


class InvalidSprtError(ArenaError):
    """SPRT parameters out of range (quoted in the message)."""

    code = "invalid_sprt"


def expected_score(elo: float) -> float:
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


def bounds(alpha: float, beta: float) -> tuple[float, float]:
    """(lower, upper): accept H0 at or below the first, H1 at or above the second."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def llr(counts: list[int], elo0: float, elo1: float) -> float:
    """The log-likelihood ratio of H1 against H0 after ``counts[i]`` pairs scored OUTCOMES[i]."""
    n = sum(counts)
    if n == 0:
        return 0.0
    reg = [c + _PSEUDO for c in counts]
    total = sum(reg)
    mean = sum(c * x for c, x in zip(reg, OUTCOMES, strict=True)) / total
    var = sum(c * (x - mean) ** 2 for c, x in zip(reg, OUTCOMES, strict=True)) / total
    s0, s1 = expected_score(elo0), expected_score(elo1)
    return n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * var)


def sprt_params(
    elo0: float, elo1: float, alpha: float = 0.05, beta: float = 0.05, batch: int = 8, max_pairs: int = 2000
) -> dict[str, Any]:
    """Checked parameters, as stored in ``tournaments.params``."""
    for name, value in (("elo0", elo0), ("elo1", elo1)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not -1000 <= value <= 1000:
            raise InvalidSprtError(f"{name} must be a number of Elo from -1000 to 1000, got {value!r}")
    if not elo1 > elo0:
        raise InvalidSprtError(f"elo1 ({elo1!r}) must be greater than elo0 ({elo0!r})")
    for name, value in (("alpha", alpha), ("beta", beta)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 0.5:
            raise InvalidSprtError(f"{name} must be between 0 and 0.5, got {value!r}")
    if type(batch) is not int or not 1 <= batch <= 1000:
        raise InvalidSprtError(f"batch must be a whole number of pairs from 1 to 1000, got {batch!r}")
    if type(max_pairs) is not int or not batch <= max_pairs <= 100_000:
        raise InvalidSprtError(f"max_pairs must be a whole number from batch to 100000, got {max_pairs!r}")
    return {
        "elo0": float(elo0), "elo1": float(elo1), "alpha": float(alpha), "beta": float(beta),
        "batch": batch, "max_pairs": max_pairs,
    }


@dataclass(frozen=True)
class SprtState:
    """Where a test stands: its pairs so far, LLR against its bounds, and the verdict."""

    pairs: int
    counts: list[int]  # pairs per outcome, OUTCOMES order
    llr: float
    lower: float
    upper: float
    verdict: str | None  # "H1" (better by elo1), "H0" (not better than elo0), "inconclusive"
    params: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "pairs": self.pairs, "counts": self.counts, "llr": round(self.llr, 4),
            "lower": round(self.lower, 4), "upper": round(self.upper, 4), "verdict": self.verdict,
            **{k: self.params[k] for k in ("elo0", "elo1", "alpha", "beta", "batch", "max_pairs")},
        }


def sprt_state(session: Session, tournament: Tournament) -> SprtState:
    """The test's state from the store: every deal whose two matches are both done is a pair."""
    params = tournament.params or {}
    challenger = params["challenger"]
    rows = session.execute(
        select(Match.deal_index, MatchSeat.bot_id, MatchSeat.score, MatchSeat.seat, Match.id)
        .join(MatchSeat, MatchSeat.match_id == Match.id)
        .where(Match.tournament_id == tournament.id, Match.status == MatchStatus.DONE)
    ).all()
    by_match: dict[int, dict[int, int]] = defaultdict(dict)
    deal_of: dict[int, int] = {}
    for deal, bot, score, _seat, match_id in rows:
        by_match[match_id][bot] = score or 0
        deal_of[match_id] = deal
    per_deal: dict[int, list[float]] = defaultdict(list)
    for match_id, scores in by_match.items():
        mine = scores.pop(challenger)
        (theirs,) = scores.values()
        per_deal[deal_of[match_id]].append(1.0 if mine > theirs else 0.5 if mine == theirs else 0.0)
    counts = [0] * len(OUTCOMES)
    for results in per_deal.values():
        if len(results) == 2:
            counts[OUTCOMES.index(sum(results) / 2)] += 1
    lower, upper = bounds(params["alpha"], params["beta"])
    value = llr(counts, params["elo0"], params["elo1"])
    return SprtState(sum(counts), counts, value, lower, upper, params.get("verdict"), params)


def advance(session: Session, tournament: Tournament) -> bool:
    """Called (under the tournament's row lock) when every match so far is done: record a
    verdict and return True (the tournament may finish), or add the next batch of pairs and
    return False."""
    state = sprt_state(session, tournament)
    params = dict(tournament.params or {})
    verdict = "H1" if state.llr >= state.upper else "H0" if state.llr <= state.lower else None
    if verdict is None and state.pairs >= params["max_pairs"]:
        verdict = "inconclusive"
    if verdict is None:
        extend_tournament(session, tournament.id, min(params["batch"], params["max_pairs"] - state.pairs))
        return False
    params.update(verdict=verdict, llr=state.llr, pairs=state.pairs)
    tournament.params = params
    session.flush()
    return True
