""""Is my new version better?" as a sequential test: V2 against V1 in duplicate pairs until a
sequential probability ratio test accepts "V2 is at least ``elo1`` better" (H1) or "V2 is no
more than ``elo0`` better" (H0), at error rates ``alpha`` (accepting H1 wrongly) and ``beta``
(accepting H0 wrongly): the way fishtest tests chess engines.

A *pair* is one deal played twice heads-up, V2 in each seat once (a 2-seat deal of the arena's
duplicate design), so card luck cancels inside the pair. Each match scores V2 1, ½ or 0 by
final chips; a pair scores the mean of its two, one of 0, ¼, ½, ¾, 1 (the *pentanomial*
outcomes: pairs are scored as units because the two halves of a pair are correlated).

The log-likelihood ratio is the exact multinomial GSPRT, as fishtest decides: the pair
outcomes' frequencies (a zero count raised to a pseudo-count of 0.001, as fishtest does) are
fitted by maximum likelihood under each hypothesis, "the expected pair score is s0" and "... is
s1" (``s = 1 / (1 + 10 ** (-elo / 400))``), and the LLR is the log of the two fits' likelihood
ratio on the observed pairs. The constrained fit has a closed form up to one number: the
distribution closest to the observed one with mean ``s`` is ``p_i / (1 + lam (x_i - s))``, with
``lam`` the root of ``sum p_i (x_i - s) / (1 + lam (x_i - s)) = 0`` (monotone, so bisection).
The logistic ("alt2") approximation ``N (s1 - s0)(2 mean - s0 - s1) / (2 var)`` is kept for
display only: it divides by the pairs' variance, which is nearly zero when most pairs split
at ½ (as in Tonk), and then accepted H0 after one batch (bench/sprt_checks.py sprt).

The test is looked at once per batch and stops at fixed bounds, the same for the whole test:
LLR <= ``ln(beta)`` accepts H0, LLR >= ``ln(1 / alpha)`` accepts H1. These are Ville's: the
likelihood ratio of two fixed hypotheses is a martingale of mean 1 under the one below, so it
ever reaches ``1 / alpha`` with probability at most ``alpha``, at every look and whatever the
overshoot (Wald's ``ln((1 - beta) / alpha)`` and ``ln(beta / (1 - alpha))`` only approximate
this). The GSPRT fits the hypotheses to the pairs, so the guarantee is measured rather than
proved: bench/sprt_checks.py sprt (10,000 simulated tests per row, intervals in docs/arena.md).
An earlier version moved Wald's bounds inward by the expected overshoot of a batch
(Siegmund's 0.583 standard deviations of a step, as fishtest does): it rejected H0 wrongly in
5.5-6.1% of tests at alpha 0.05 on Tonk's pair shapes (issue #38), and its bounds moved at
every look; plain Wald's still reached 4.7% [4.3, 5.1] on a skewed shape.

Beside the verdict, the state carries the effect size: V2 - V1 in Elo with its 95% interval
from the same pair scores (sdk.compare.elo_estimate, as ``tonk play A B --duplicate`` reports
it), so "accepted H0" reads with how far from better V2 is.

The arena plays it as a tournament of kind ``sprt`` between the two bots at one 2-seat table:
``batch`` deals (pairs) at a time; when a batch is done, :func:`advance` decides, or extends the
tournament by another batch (arena.tournaments.lifecycle.extend_tournament), up to ``max_pairs``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.errors import ArenaError
from arena.store.models import Match, MatchSeat, Tournament
from arena.store.statuses import MatchStatus
from arena.tournaments.layout import extend_tournament
from sdk.compare import EloEstimate, elo_estimate

__all__ = [
    "InvalidSprtError",
    "SprtState",
    "advance",
    "bounds",
    "llr",
    "llr_logistic",
    "look",
    "mle",
    "sprt_params",
    "sprt_state",
]

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
    """Ville's (lower, upper), ``(ln beta, ln(1 / alpha))``: accept H0 at or below the first,
    H1 at or above the second."""
    return math.log(beta), -math.log(alpha)


def _regularised(counts: list[int]) -> list[float]:
    """Frequencies, every outcome at least a pseudo-count, so that a fit under either
    hypothesis exists even when every pair so far came out the same."""
    reg = [max(float(c), _PSEUDO) for c in counts]
    total = sum(reg)
    return [c / total for c in reg]


def mle(freqs: list[float], outcomes: tuple[float, ...], s: float) -> list[float]:
    """The distribution of largest likelihood for ``freqs`` among those with mean ``s``
    (``freqs`` all positive, ``min(outcomes) < s < max(outcomes)``)."""
    d = [x - s for x in outcomes]
    lo, hi = -1.0 / max(d), -1.0 / min(d)  # 1 + lam d_i > 0 for every outcome
    for _ in range(200):  # f(lam) = sum p d / (1 + lam d) falls from +inf to -inf on (lo, hi)
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        if sum(p * di / (1.0 + mid * di) for p, di in zip(freqs, d, strict=True)) > 0:
            lo = mid
        else:
            hi = mid
    lam = (lo + hi) / 2.0
    fitted = [p / (1.0 + lam * di) for p, di in zip(freqs, d, strict=True)]
    total = sum(fitted)
    return [p / total for p in fitted]


def _per_pair(
    counts: list[int], outcomes: tuple[float, ...], elo0: float, elo1: float
) -> float:
    """The mean, over the observed pairs, of one pair's log-likelihood ratio."""
    freqs = _regularised(counts)
    p0 = mle(freqs, outcomes, expected_score(elo0))
    p1 = mle(freqs, outcomes, expected_score(elo1))
    return sum(p * math.log(a / b) for p, a, b in zip(freqs, p1, p0, strict=True))


def llr(counts: list[int], elo0: float, elo1: float, outcomes: tuple[float, ...] = OUTCOMES) -> float:
    """The exact GSPRT log-likelihood ratio of H1 against H0 after ``counts[i]`` pairs scored
    ``outcomes[i]`` (pentanomial by default; ``(0, 0.5, 1)`` for single matches)."""
    n = sum(counts)
    return 0.0 if n == 0 else n * _per_pair(counts, outcomes, elo0, elo1)


def llr_logistic(counts: list[int], elo0: float, elo1: float) -> float:
    """The logistic (alt2) approximation of :func:`llr`, shown beside it, never decided on."""
    n = sum(counts)
    if n == 0:
        return 0.0
    freqs = _regularised(counts)
    mean = sum(p * x for p, x in zip(freqs, OUTCOMES, strict=True))
    var = sum(p * (x - mean) ** 2 for p, x in zip(freqs, OUTCOMES, strict=True))
    s0, s1 = expected_score(elo0), expected_score(elo1)
    return n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * var)


def look(
    counts: list[int], elo0: float, elo1: float, alpha: float, beta: float,
    outcomes: tuple[float, ...] = OUTCOMES,
) -> tuple[float, float, float]:
    """(LLR, lower, upper) after ``counts``: the exact LLR and the test's bounds, the same at
    every look (they do not depend on the pairs)."""
    return llr(counts, elo0, elo1, outcomes), *bounds(alpha, beta)


#: Pairs after which a test stops undecided, unless told otherwise.
DEFAULT_MAX_PAIRS: Final = 2000


def sprt_params(
    elo0: float,
    elo1: float,
    alpha: float = 0.05,
    beta: float = 0.05,
    batch: int = 8,
    max_pairs: int = DEFAULT_MAX_PAIRS,
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
    lower: float  # the bounds (:func:`bounds`), fixed for the test
    upper: float
    llr_logistic: float  # the alt2 approximation, for display beside fishtest's figures
    verdict: str | None  # "H1" (better by elo1), "H0" (not better than elo0), "inconclusive"
    params: dict[str, Any]
    #: V2 - V1 in Elo with its 95% interval, from the pairs so far (None before the first):
    #: the verdict only says which bound was crossed, this says by how much.
    estimate: EloEstimate | None = None
    #: The pairs at which the test next decides (the end of the batch being played; None once
    #: decided): between two looks the LLR may stray past a bound and come back (issue #40).
    next_look: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "pairs": self.pairs, "counts": self.counts, "llr": round(self.llr, 4),
            "estimate": None if self.estimate is None else self.estimate.to_json(),
            "lower": round(self.lower, 4), "upper": round(self.upper, 4), "verdict": self.verdict,
            "llr_logistic": round(self.llr_logistic, 4), "next_look": self.next_look,
            "stopped": bool(self.params.get("stopped")),  # by its owner (arena/tournaments/owner_sprt.py)
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
    elo0, elo1 = params["elo0"], params["elo1"]
    value, lower, upper = look(counts, elo0, elo1, params["alpha"], params["beta"])
    verdict = params.get("verdict")
    return SprtState(
        sum(counts), counts, value, lower, upper, llr_logistic(counts, elo0, elo1),
        verdict, params, elo_estimate(counts, OUTCOMES),
        None if verdict else tournament.deals_per_table,  # every deal scheduled so far is one pair
    )


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
