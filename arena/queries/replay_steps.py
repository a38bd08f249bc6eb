"""A replay's steps, computed by the engine: what the viewer draws at every moment of a hand.

The browser only draws these (dashboard/static/js/replay.js): the rules live in Python
alone. Each hand log (``HandLog.to_json()``: a ``tonk-hand/1`` record plus ``latency_us`` and
``faults``) is replayed under :class:`sdk.engine.HandState`; step 0 is the start of the hand,
step ``i`` the table after action ``i - 1``, and a faulted hand gets one more step for the
fault. A step carries the state (each seat's cards sorted for reading, its total, the piles,
the melds), the event, its caption and log line in plain words, and on the last step the
engine's outcome with every seat's payment.

Captions and log lines come in two forms when they differ: ``caption`` shows everything;
``caption_hidden`` is what the other seats saw (another seat's stock draw hides its card).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sdk.actions import Discard, Draw, Drop, Event, Layoff, Meld
from sdk.cards import RANKS, Card, hand_value, sort_hand
from sdk.engine import HandState, Outcome
from sdk.errors import TonkError
from sdk.melds import TableMeld
from sdk.record import HandRecord
from sdk.referee import plain_record
from sdk.rules import HAND_SIZE, Rules

SYMBOL = {"c": "\u2663", "d": "\u2666", "h": "\u2665", "s": "\u2660"}
SUIT_NAME = {"c": "clubs", "d": "diamonds", "h": "hearts", "s": "spades"}
RANK_NAME = {1: "aces", 11: "jacks", 12: "queens", 13: "kings"}
END_WORDS = {
    "tonk": "TONK", "drop": "went down", "out": "went out", "stock": "stock ran out",
    "cap": "turn limit", "fault": "fault",
}
#: The highest total five cards can reach (K Q J 10 10): a TONK-high above it cannot happen.
MAX_HAND_TOTAL = 50
DISCARD_SHOWN = 3  # the top cards of the discard pile a step carries


def label(card: Card) -> str:
    return RANKS[card.rank - 1] + SYMBOL[card.suit]


def labels(cards: Sequence[Card]) -> str:
    return " ".join(label(c) for c in cards)


def join_names(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _meld_words(meld: TableMeld) -> str:
    if meld.kind == "book":
        rank = meld.cards[0].rank
        return "a book of " + RANK_NAME.get(rank, RANKS[rank - 1] + "s")
    return "a spread of " + SUIT_NAME[meld.cards[0].suit]


def _chips(n: int) -> str:
    return f"{n} chip" + ("" if n == 1 else "s")


def payments_text(outcome: Outcome, names: Sequence[str]) -> str:
    """Every seat's net payment, as the engine settled it (a multi-seat settlement in full)."""
    pays = [f"{names[s]} pays {-p}" for s, p in enumerate(outcome.payoffs) if p < 0]
    wins = [f"{names[s]} wins {p}" for s, p in enumerate(outcome.payoffs) if p > 0]
    if not pays:
        return "Nobody pays."
    return join_names(pays) + "; " + join_names(wins) + "."


def _tonk_rule(rules: Rules) -> str:
    low = f"a dealt hand of {rules.tonk_low} or less"
    if rules.tonk_high > MAX_HAND_TOTAL:
        return low
    return f"{low}, or {rules.tonk_high} or more"


def outcome_text(outcome: Outcome, names: Sequence[str], rules: Rules, dropper: int | None) -> str:
    """How the hand ended and who paid whom, in plain words."""
    totals, winners = outcome.totals, [names[w] for w in outcome.winners]
    have = " have " if len(winners) > 1 else " has "
    end = outcome.end
    if end == "tonk":
        if len(outcome.winners) == len(names):
            return "Everyone has TONK: nobody pays."
        why = join_names(winners) + have.rstrip() + f" TONK ({_tonk_rule(rules)})"
        return f"{why}: 2 from every player without it. {payments_text(outcome, names)}"
    if end == "drop" and dropper is not None:
        mine = totals[dropper]
        if outcome.winners == (dropper,):
            why = f"{names[dropper]} goes down with {mine}: lowest."
        else:
            low = totals[outcome.winners[0]]
            under = [names[s] for s, t in enumerate(totals) if s != dropper and t <= mine]
            others = [names[s] for s in range(len(names)) if s != dropper and s not in outcome.winners]
            why = (
                f"{names[dropper]} goes down with {mine}, but {join_names(winners)}{have}{low}: caught, "
                f"{names[dropper]} pays 2 to {join_names(under)} (at or under {mine})"
            )
            if others:
                verb = "pay" if len(others) > 1 else "pays"
                why += f", and {join_names(others)} {verb} 1 to {join_names(winners)}"
            why += "."
        return f"{why} {payments_text(outcome, names)}"
    if end == "out":
        return f"{names[outcome.winners[0]]} goes out (no cards left). {payments_text(outcome, names)}"
    if end in ("stock", "cap"):
        why = "The stock is empty"
        if end == "cap":
            why = f"The turn limit ({rules.turn_cap} turns) is reached"
        low = totals[outcome.winners[0]]
        if len(outcome.winners) == len(names):
            return f"{why}: showdown, everyone ties on {low}. Nobody pays."
        return f"{why}: showdown. Lowest total {low}: {join_names(winners)}. {payments_text(outcome, names)}"
    if end == "fault" and outcome.faulted is not None:
        return f"{names[outcome.faulted]} forfeits the hand for a fault. {payments_text(outcome, names)}"
    return f"The hand is over. {payments_text(outcome, names)}"


def _meld(meld: TableMeld) -> dict[str, Any]:
    return {"owner": meld.owner, "kind": meld.kind, "cards": [c.text for c in meld.cards]}


def _state(state: HandState) -> dict[str, Any]:
    over = state.outcome is not None
    return {
        "hands": [[c.text for c in sort_hand(h)] for h in state.hands],
        "totals": [hand_value(h) for h in state.hands],
        "stock": state.stock_size,
        "discard": [c.text for c in state.discard[-DISCARD_SHOWN:]],
        "discard_size": len(state.discard),
        "table": [_meld(m) for m in state.table],
        "to_act": None if over else state.to_act,
    }


def _words(event: Event, before: HandState, after: HandState, names: Sequence[str]) -> dict[str, Any]:
    """The event's facts, caption and log line (and their hidden forms where they differ)."""
    seat, action = event.seat, event.action
    who = names[seat]
    facts: dict[str, Any] = {"seat": seat}
    out: dict[str, Any] = {}
    if isinstance(action, Draw):
        card = event.card
        assert card is not None
        facts.update(kind="draw", source=action.source, card=card.text)
        if action.source == "stock":
            out["log"] = f"draws from the stock ({label(card)})"
            out["log_hidden"] = "draws from the stock"
        else:
            out["log"] = f"takes {label(card)} from the discard pile"
    elif isinstance(action, Meld):
        meld = after.table[-1]
        facts.update(kind="meld", cards=[c.text for c in action.cards])
        out["log"] = f"lays down {labels(meld.cards)}, {_meld_words(meld)}"
    elif isinstance(action, Layoff):
        target = before.table[action.onto]
        owner = "their own" if target.owner == seat else names[target.owner] + "'s"
        facts.update(kind="layoff", card=action.card.text, onto=action.onto)
        out["log"] = f"lays off {label(action.card)} on {owner} {labels(target.cards)}"
    elif isinstance(action, Discard):
        facts.update(kind="discard", card=action.card.text)
        out["log"] = f"discards {label(action.card)}"
        if after.stock_size > before.stock_size:
            facts["reshuffled"] = True
    elif isinstance(action, Drop):
        total = hand_value(after.hands[seat])
        facts.update(kind="drop", total=total)
        out["log"] = f"goes down with {total}"
    out["caption"] = f"{who} {out['log']}."
    if "log_hidden" in out:
        out["caption_hidden"] = f"{who} {out['log_hidden']}."
    if facts.get("reshuffled"):
        out["caption"] += " The stock was empty: the discard pile is turned over as the new stock."
    return {"event": facts, **out}


def hand_steps(log: dict[str, Any]) -> dict[str, Any]:
    """One hand's steps from its hand log (see the module docstring)."""
    record = HandRecord.from_json(plain_record(log))
    names = [str(p) for p in record.players]
    latencies = list(log.get("latency_us") or [])
    faults = list(log.get("faults") or [])
    state = record.initial_state()
    first = state.to_act
    if record.start == "deal":
        caption = (
            f"{names[record.dealer]} deals {HAND_SIZE} cards to each player and turns up "
            f"{label(state.discard[-1])} to start the discard pile. {names[first]} plays first."
        )
    else:
        caption = f"The hand starts from a position already under way. {names[first]} is to play."
    steps = [{"event": {"kind": "deal", "dealer": record.dealer, "to_act": first}, "caption": caption,
              "log": f"{names[record.dealer]} deals", **_state(state)}]
    dropper: int | None = None
    for index, (seat, action) in enumerate(record.actions):
        before = state.copy()
        event = state.apply(action, seat)
        step = _words(event, before, state, names)
        step["event"]["index"] = index
        if index < len(latencies):
            step["event"]["latency_us"] = latencies[index]
        if isinstance(action, Drop):
            dropper = seat
        steps.append({**step, **_state(state)})
    if state.outcome is None:
        fault = faults[0] if faults else {"seat": (record.outcome or {}).get("faulted"), "kind": "fault"}
        culprit = fault.get("seat")
        if type(culprit) is int and 0 <= culprit < len(names):
            state.forfeit(culprit)
            kind, reason = str(fault.get("kind", "fault")), str(fault.get("reason", ""))
            text = f"{kind}: {reason}" if reason else kind
            facts = {"kind": "fault", "seat": culprit, "index": len(record.actions)}
            facts.update(fault=kind, reason=reason)
            steps.append({
                "event": facts, "caption": f"{names[culprit]} faulted: {text}.", "log": f"FAULT: {text}",
                **_state(state),
            })
    outcome = state.outcome
    hand: dict[str, Any] = {"players": names, "dealer": record.dealer, "start": record.start, "steps": steps}
    if outcome is not None:
        said = outcome_text(outcome, names, record.rules, dropper)
        last = steps[-1]
        last["outcome"] = outcome.to_json()
        # A drop's own words are in the settlement sentence; other events keep theirs.
        last["caption"] = said if last["event"]["kind"] == "drop" else f"{last['caption']} {said}"
        if "caption_hidden" in last:
            last["caption_hidden"] = f"{last['caption_hidden']} {said}"
        hand.update(outcome=outcome.to_json(), summary=said, end_words=END_WORDS[outcome.end])
    return hand


def match_steps(hands: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every hand's steps, with the match score before each hand; a hand the engine cannot
    replay (hand-made data) is given as an ``error`` so the rest still shows."""
    out = []
    running: list[int] = []
    for index, log in enumerate(hands):
        try:
            hand = hand_steps(log)
        except (TonkError, KeyError, TypeError, ValueError) as exc:
            out.append({"index": index, "error": f"hand {index} cannot be replayed: {exc}"})
            continue
        if not running:
            running = [0] * len(hand["players"])
        hand["index"] = index
        hand["score_before"] = list(running)
        for seat, payoff in enumerate((hand.get("outcome") or {}).get("payoffs", [])):
            if seat < len(running):
                running[seat] += payoff
        out.append(hand)
    return out
