"""The per-seat view: exactly what one seat may know at one moment, plus its legal actions.

An :class:`Observation` is built from a :class:`~sdk.engine.HandState` by :func:`observe` and
never holds a reference back into it, so a bot cannot reach another seat's cards, the stock
order or the seed through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any

from sdk.actions import Action, Discard, Draw, Event, Layoff, Meld
from sdk.cards import DECK, Card, hand_value, parse_cards
from sdk.engine import HandState, Outcome, Phase
from sdk.errors import RecordError, TonkError
from sdk.melds import TableMeld, make_meld
from sdk.rules import Rules


@dataclass(frozen=True, slots=True)
class Observation:
    """What ``seat`` knows. ``legal_actions`` is empty unless it is ``seat``'s turn."""

    seat: int
    players: tuple[str, ...]
    rules: Rules
    dealer: int
    to_act: int
    phase: str  # "start" (drop or draw), "play" (meld / lay off / discard), "over"
    hand: tuple[Card, ...]
    hand_sizes: tuple[int, ...]
    stock_size: int
    discard: tuple[Card, ...]  # bottom first; the last card is the top
    table: tuple[TableMeld, ...]
    history: tuple[Event, ...]  # public events; a stock draw never shows its card
    picked_up: Card | None  # card the seat to act took from the discard pile this turn
    turn: int  # completed turns in this hand
    locked: tuple[int, ...]  # seats that may not go down on their next turn (hit_lock)
    legal_actions: tuple[Action, ...]
    scores: tuple[int, ...] = ()  # match score of each seat before this hand
    hand_index: int = 0
    hands_in_match: int = 1
    outcome: Outcome | None = field(default=None)

    def __init__(
        self,
        seat: int,
        players: tuple[str, ...],
        rules: Rules,
        dealer: int,
        to_act: int,
        phase: str,
        hand: tuple[Card, ...],
        hand_sizes: tuple[int, ...],
        stock_size: int,
        discard: tuple[Card, ...],
        table: tuple[TableMeld, ...],
        history: tuple[Event, ...],
        picked_up: Card | None,
        turn: int,
        locked: tuple[int, ...],
        legal_actions: tuple[Action, ...],
        scores: tuple[int, ...] = (),
        hand_index: int = 0,
        hands_in_match: int = 1,
        outcome: Outcome | None = None,
    ) -> None:
        # The generated frozen __init__, written out with the slots' own setters: one is built
        # for every decision, and this is much faster. _SET holds them in field order.
        s = _SET
        s[0](self, seat)
        s[1](self, players)
        s[2](self, rules)
        s[3](self, dealer)
        s[4](self, to_act)
        s[5](self, phase)
        s[6](self, hand)
        s[7](self, hand_sizes)
        s[8](self, stock_size)
        s[9](self, discard)
        s[10](self, table)
        s[11](self, history)
        s[12](self, picked_up)
        s[13](self, turn)
        s[14](self, locked)
        s[15](self, legal_actions)
        s[16](self, scores)
        s[17](self, hand_index)
        s[18](self, hands_in_match)
        s[19](self, outcome)

    # -- helpers for bot authors ---------------------------------------------------------

    @property
    def my_turn(self) -> bool:
        return self.to_act == self.seat and self.phase != "over"

    @property
    def hand_value(self) -> int:
        return hand_value(self.hand)

    @property
    def top_discard(self) -> Card | None:
        return self.discard[-1] if self.discard else None

    def melds_available(self) -> list[Meld]:
        return [a for a in self.legal_actions if isinstance(a, Meld)]

    def layoffs_available(self) -> list[Layoff]:
        return [a for a in self.legal_actions if isinstance(a, Layoff)]

    def discards_available(self) -> list[Discard]:
        return [a for a in self.legal_actions if isinstance(a, Discard)]

    def can_drop(self) -> bool:
        return any(a.kind == "drop" for a in self.legal_actions)

    def cards_seen(self) -> set[Card]:
        """Every card this seat has seen face up: its hand, the whole discard history, the
        table, and cards opponents took from the discard pile."""
        seen = set(self.hand) | set(self.discard)
        for meld in self.table:
            seen.update(meld.cards)
        for event in self.history:
            if event.card is not None:
                seen.add(event.card)
            if isinstance(event.action, Discard):
                seen.add(event.action.card)
        return seen

    def unseen_cards(self) -> list[Card]:
        """Cards that are in the stock or in an opponent's hand, as far as this seat knows."""
        seen = self.cards_seen()
        return [c for c in DECK if c not in seen]

    def opponent_known_cards(self, seat: int) -> list[Card]:
        """Cards ``seat`` is known to hold: discard-pile pickups it has not played since, in
        deck order (a list, not a set: cards hash by identity, so a set's order would differ
        from process to process, and a bot that iterates it would not replay the same)."""
        known: set[Card] = set()
        for event in self.history:
            if event.seat != seat:
                continue
            if isinstance(event.action, Draw) and event.card is not None:
                known.add(event.card)
            elif isinstance(event.action, Discard):
                known.discard(event.action.card)
            elif isinstance(event.action, Meld):
                known.difference_update(event.action.cards)
            elif isinstance(event.action, Layoff):
                known.discard(event.action.card)
        return [c for c in DECK if c in known] if known else []

    def action_index(self, action: Action) -> int:
        """The index of ``action`` in :attr:`legal_actions` (ValueError if it is not legal)."""
        return self.legal_actions.index(action)

    # -- serialisation (decision downloads, replay-decision) -----------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "players": list(self.players),
            "rules": self.rules.to_json(),
            "dealer": self.dealer,
            "to_act": self.to_act,
            "phase": self.phase,
            "hand": [c.text for c in self.hand],
            "hand_sizes": list(self.hand_sizes),
            "stock_size": self.stock_size,
            "discard": [c.text for c in self.discard],
            "table": [m.to_json() for m in self.table],
            "history": [e.to_json() for e in self.history],
            "picked_up": self.picked_up.text if self.picked_up else None,
            "turn": self.turn,
            "locked": list(self.locked),
            "legal_actions": [a.to_json() for a in self.legal_actions],
            "scores": list(self.scores),
            "hand_index": self.hand_index,
            "hands_in_match": self.hands_in_match,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Observation:
        try:
            rules = Rules.from_json(data["rules"])
            table = tuple(make_meld(m["owner"], parse_cards(m["cards"]), rules) for m in data["table"])
            history = tuple(
                Event(
                    e["seat"],
                    Action.from_json({k: v for k, v in e.items() if k != "card"}),
                    Card.parse(e["card"]) if e.get("card") else None,
                )
                for e in data["history"]
            )
            return cls(
                seat=int(data["seat"]),
                players=tuple(data["players"]),
                rules=rules,
                dealer=int(data["dealer"]),
                to_act=int(data["to_act"]),
                phase=str(data["phase"]),
                hand=tuple(parse_cards(data["hand"])),
                hand_sizes=tuple(int(n) for n in data["hand_sizes"]),
                stock_size=int(data["stock_size"]),
                discard=tuple(parse_cards(data["discard"])),
                table=table,
                history=history,
                picked_up=Card.parse(data["picked_up"]) if data.get("picked_up") else None,
                turn=int(data["turn"]),
                locked=tuple(data.get("locked", ())),
                legal_actions=tuple(Action.from_json(a) for a in data["legal_actions"]),
                scores=tuple(data.get("scores", ())),
                hand_index=int(data.get("hand_index", 0)),
                hands_in_match=int(data.get("hands_in_match", 1)),
            )
        except TonkError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise RecordError(f"malformed observation: {exc!r}") from None


_SET: tuple[Any, ...] = tuple(Observation.__dict__[f.name].__set__ for f in fields(Observation))
_by_index = attrgetter("index")


def observe(
    state: HandState,
    seat: int,
    players: tuple[str, ...] | None = None,
    scores: tuple[int, ...] = (),
    hand_index: int = 0,
    hands_in_match: int = 1,
) -> Observation:
    """Build ``seat``'s view of ``state``."""
    if not 0 <= seat < state.players:
        raise ValueError(f"seat {seat!r} is not a seat of this hand")
    mine = state.to_act == seat and state.phase is not Phase.OVER
    return Observation(
        seat=seat,
        players=players if players is not None else tuple(f"seat{i}" for i in range(state.players)),
        rules=state.rules,
        dealer=state.dealer,
        to_act=state.to_act,
        phase=state.phase.value,
        hand=tuple(sorted(state.hands[seat], key=_by_index)),
        hand_sizes=tuple(len(h) for h in state.hands),
        stock_size=state.stock_size,
        discard=tuple(state.discard),
        table=tuple(state.table),
        history=tuple(state.seat_history(seat)),
        picked_up=state.picked,
        turn=state.turns,
        locked=tuple(sorted(state.locked)),
        legal_actions=tuple(state.legal_actions()) if mine else (),
        scores=scores,
        hand_index=hand_index,
        hands_in_match=hands_in_match,
        outcome=state.outcome,
    )

