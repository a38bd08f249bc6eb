"""What ``tonk check`` found (sdk.conformance): each decision asked and answered, the faults,
the situations covered, latency percentiles, the admission checks, and the text and decision
files it reports them in."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from sdk.actions import DRAW_DISCARD, DRAW_STOCK, Action, Discard, Drop, Layoff, Meld
from sdk.decision_file import decision_to_json
from sdk.observation import Observation
from sdk.referee import DecisionRequest, FaultKind

# -- what the bot was asked, and what it answered ------------------------------------------------


def situations_of(obs: Observation) -> tuple[str, ...]:
    """The situations a decision puts a bot in (what the coverage report counts)."""
    tags = [f"{len(obs.players)} seats"]
    legal = obs.legal_actions
    if obs.phase == "start":
        if obs.can_drop():
            tags.append("turn start: drop available")
        elif obs.seat in obs.locked:
            tags.append("turn start: drop forbidden (hit_lock)")
        if DRAW_DISCARD not in legal:
            tags.append("turn start: discard pile empty")
        return tuple(tags)
    melds = [a for a in legal if isinstance(a, Meld)]
    if melds:
        tags.append("after draw: meld available")
    if any(isinstance(a, Meld) and a.cards[-1].rank == 1 and a.cards[0].rank > 1 for a in melds):
        tags.append("after draw: ace-high spread available (ace_high_or_low)")
    layoffs = [a for a in legal if isinstance(a, Layoff)]
    if layoffs:
        tags.append("after draw: lay-off available")
    if any(obs.table[a.onto].kind == "book" for a in layoffs):
        tags.append("after draw: lay-off on a book (book_layoff)")
    picked = obs.picked_up
    if picked is not None:
        discards = {a.card for a in legal if isinstance(a, Discard)}
        if len(obs.hand) == 1:
            tags.append("after draw: the pickup is the last card (may be discarded)")
        elif picked in discards:
            tags.append("after draw: the pickup may be discarded (discard_pickup_may_return)")
        else:
            tags.append("after draw: the pickup may not be discarded")
    if len(obs.hand) <= 2:
        tags.append("after draw: one or two cards left")
    return tuple(tags)


#: Every situation the checker makes sure the bot meets.
SITUATIONS: Final = (
    *(f"{n} seats" for n in range(2, 7)),
    "turn start: drop available",
    "turn start: drop forbidden (hit_lock)",
    "turn start: discard pile empty",
    "after draw: meld available",
    "after draw: ace-high spread available (ace_high_or_low)",
    "after draw: lay-off available",
    "after draw: lay-off on a book (book_layoff)",
    "after draw: the pickup may not be discarded",
    "after draw: the pickup may be discarded (discard_pickup_may_return)",
    "after draw: the pickup is the last card (may be discarded)",
    "after draw: one or two cards left",
)


@dataclass
class Decision:
    scenario: str
    request: DecisionRequest
    situations: tuple[str, ...]
    latency_us: int
    reply: object = None  # what the bot answered (an Action or an index), when it answered
    action: Action | None = None  # the legal action it resolved to
    fault: FaultKind | None = None
    reason: str = ""


# -- the report -------------------------------------------------------------------------------------


@dataclass
class CheckReport:
    target: str
    info: dict[str, str] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)
    scenario_rows: list[tuple[str, int, int]] = field(default_factory=list)  # name, decisions, faults
    position_rows: list[tuple[str, str]] = field(default_factory=list)  # name, outcome
    nondeterminism: list[str] = field(default_factory=list)
    determinism_compared: int = 0
    determinism_fresh_process: bool = False  # also replayed by a new process of the bot
    problems: list[str] = field(default_factory=list)  # other failures (lifecycle)
    #: The arena's admission checks (sdk.admission): step -> None (passed) or (code, message).
    admission: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    deadline_ms: int = 0
    elapsed_s: float = 0.0
    stopped_early: bool = False
    time_limit_hit: bool = False  # stopped by CheckConfig.time_limit_s; the rest is moot

    @property
    def faults(self) -> list[Decision]:
        return [d for d in self.decisions if d.fault is not None]

    @property
    def refusals(self) -> list[tuple[str, str]]:
        """(code, message) of each admission check failed: what ``tonk submit`` would get."""
        return [r for r in self.admission.values() if r is not None]

    @property
    def passed(self) -> bool:
        return not self.faults and not self.nondeterminism and not self.problems and not self.refusals

    def latency_percentiles_ms(self) -> dict[str, float]:
        answered = sorted(d.latency_us for d in self.decisions if d.fault is not FaultKind.TIMEOUT)
        if not answered:
            return {}
        return {
            "p50": _percentile(answered, 50) / 1000,
            "p95": _percentile(answered, 95) / 1000,
            "p99": _percentile(answered, 99) / 1000,
            "max": answered[-1] / 1000,
        }

    def coverage(self) -> Counter[str]:
        return Counter(tag for d in self.decisions for tag in d.situations)

    def choices(self) -> Counter[str]:
        return Counter(_choice_name(d.action) for d in self.decisions if d.action is not None)

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "passed": self.passed,
            "bot": self.info,
            "decisions": len(self.decisions),
            "faults": [
                {
                    "scenario": d.scenario,
                    "decision": d.request.decision_id,
                    "kind": d.fault.value,
                    "reason": d.reason,
                }
                for d in self.faults
                if d.fault is not None
            ],
            "nondeterminism": self.nondeterminism,
            "determinism_fresh_process": self.determinism_fresh_process,
            "problems": self.problems,
            "admission": {
                step: None if r is None else {"code": r[0], "message": r[1]}
                for step, r in self.admission.items()
            },
            "warnings": self.warnings,
            "latency_ms": self.latency_percentiles_ms(),
            "coverage": dict(self.coverage()),
            "missing": [s for s in SITUATIONS if s not in self.coverage()],
            "choices": dict(self.choices()),
        }

    def render(self) -> str:
        lines = [f"tonk check {self.target}"]
        info = self.info
        lines.append(
            f"bot: {info.get('name') or '?'} {info.get('version', '')} by {info.get('author') or '?'} "
            f"(protocol {info.get('protocol_version') or '?'})"
        )
        if self.admission:
            lines.append("admission (what an arena checks before it accepts the bot):")
            for step, refusal in self.admission.items():
                lines.append(f"  {step:<56} " + ("ok" if refusal is None else f"REFUSED ({refusal[0]})"))
            lines.extend(f"  REFUSED ({code}): {message}" for code, message in self.refusals)
        if not self.decisions and not self.scenario_rows:  # nothing was played: no empty tables
            return "\n".join([*lines, *self._verdict()])
        lines.append("")
        lines.append(f"{'matches under the referee':<58} {'decisions':>9} {'faults':>6}")
        for name, n, fault_count in self.scenario_rows:
            lines.append(f"  {name:<56} {n:>9} {fault_count:>6}")
        lines.append("positions (one decision each)")
        for name, outcome in self.position_rows:
            lines.append(f"  {name:<56} {outcome}")
        coverage = self.coverage()
        missing = [s for s in SITUATIONS if s not in coverage]
        lines.append(f"situations reached: {len(SITUATIONS) - len(missing)}/{len(SITUATIONS)}")
        if not self.stopped_early:  # else the list only says the check did not get there
            lines.extend(f"  not reached: {situation}" for situation in missing)
        choices = self.choices()
        if choices:
            lines.append("the bot chose: " + ", ".join(f"{k} {v}" for k, v in sorted(choices.items())))
        pct = self.latency_percentiles_ms()
        if pct:
            lines.append(
                f"latency (ms, {len(self.decisions)} decisions, deadline {self.deadline_ms}): "
                + "  ".join(f"{k} {v:.2f}" for k, v in pct.items())
            )
        if self.determinism_compared:
            verdict = "identical" if not self.nondeterminism else "DIFFERENT"
            compared = self.determinism_compared
            where = ", and in a new process" if self.determinism_fresh_process else ""
            lines.append(
                f"determinism (same seed, same match twice{where}): {verdict} ({compared} decisions)"
            )
        lines.extend(f"NONDETERMINISTIC: {line}" for line in self.nondeterminism)
        faults = self.faults
        if faults:
            lines.append(f"faults: {len(faults)}")
            for d in faults[:20]:
                assert d.fault is not None
                where = f"{d.scenario} [{d.request.decision_id}]"
                lines.append(f"  {d.fault.value.upper():<11} {where}: {d.reason}")
            if len(faults) > 20:
                lines.append(f"  ... and {len(faults) - 20} more")
        elif self.passed:  # never "none" above a failure
            lines.append("faults: none")
        else:
            lines.append(f"faults in the {len(self.decisions)} decisions played: none")
        return "\n".join([*lines, *self._verdict()])

    def _verdict(self) -> list[str]:
        lines = [f"PROBLEM: {p}" for p in self.problems]
        lines.extend(f"warning: {w}" for w in self.warnings)
        if self.stopped_early:
            lines.append("stopped early: too many faults, or the bot cannot be reached")
        lines.append(f"RESULT: {'PASS' if self.passed else 'FAIL'} ({self.elapsed_s:.1f} s)")
        return lines

    def dump_faults(self, directory: Path) -> list[Path]:
        """Write each faulted decision as a file for ``tonk replay-decision``."""
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for k, d in enumerate(self.faults):
            path = directory / f"fault-{k:03d}-{d.fault.value if d.fault else 'x'}.json"
            data = decision_to_json(d.request)
            data["fault"] = {"kind": d.fault.value if d.fault else None, "reason": d.reason}
            path.write_text(json.dumps(data, indent=1))
            written.append(path)
        return written


def _percentile(ordered: list[int], pct: float) -> float:
    # Nearest-rank: the smallest value with at least pct% of the values at or below it.
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return float(ordered[rank - 1])


def _choice_name(action: Action) -> str:
    if isinstance(action, Drop):
        return "drop"
    if action == DRAW_STOCK:
        return "draw stock"
    if action == DRAW_DISCARD:
        return "draw discard"
    return action.kind
