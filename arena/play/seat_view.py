"""What a person's page is shown of their seat (issue #39): the JSON view of docs/people.md,
built only from what the referee tells that seat, as it tells a bot.

A bot learns its seat's :class:`~sdk.observation.Observation` at each decision and, at the end
of a hand, its own end view and the cards the rules show (:class:`~sdk.bot.HandResult`); the
view here is built from exactly those, never from the hand's complete record (which the
referee also sends a seat once a hand is over, and which holds the stock's order and every
hidden hand). So the page cannot carry a card the seat has not seen: the seat's own hand, the
discard pile, the table's melds, cards taken from the discard pile, and hands the rules show
at a hand's end.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Final

from sdk.actions import Action, Discard, Draw, Drop, Layoff, Meld
from sdk.bot import HandResult, MatchInfo, MatchSummary
from sdk.cards import Card
from sdk.observation import Observation

#: Public events the view keeps, newest last.
LOG_LINES: Final = 12
#: The order legal actions are listed in, so a key means the same thing turn to turn.
_ORDER: Final = {"draw": 0, "meld": 1, "layoff": 2, "discard": 3, "drop": 4}
_ENDS: Final = {
    "tonk": "{w} had TONK",
    "drop": "{w} went down with the lowest hand",
    "out": "{w} went out",
    "stock": "the stock ran out and {w} had the lowest hand",
    "cap": "the hand reached its turn limit and {w} had the lowest hand",
}


def action_id(action: Action) -> str:
    """An action's id on the page: its one-line text ("draw stock", "discard 10h")."""
    return str(action)


def _cards(cards: tuple[Card, ...] | list[Card]) -> list[str]:
    return [c.text for c in cards]


def _label(action: Action, obs: Observation) -> tuple[str, list[str]]:
    if isinstance(action, Draw):
        if action.source == "stock":
            return "Draw from the stock", []
        top = obs.discard[-1]
        return f"Take {top.text} from the discard pile", [top.text]
    if isinstance(action, Meld):
        return "Lay down " + " ".join(c.text for c in action.cards), _cards(action.cards)
    if isinstance(action, Layoff):
        onto = obs.table[action.onto]
        return f"Lay off {action.card.text} on {' '.join(_cards(onto.cards))}", [action.card.text]
    if isinstance(action, Discard):
        return f"Discard {action.card.text}", [action.card.text]
    assert isinstance(action, Drop)
    return "Go down (show your hand)", []


def _event_words(seat: int, action: Action, card: Card | None, names: tuple[str, ...], me: int) -> str:
    who = "You" if seat == me else names[seat]
    if isinstance(action, Draw):
        if action.source == "stock":
            # The drawer's own card is theirs to see; another seat's stays hidden (its event
            # in this seat's history has no card).
            return f"{who} drew {card.text} from the stock" if card else f"{who} drew from the stock"
        return f"{who} took {card.text if card else 'the top card'} from the discard pile"
    if isinstance(action, Meld):
        return f"{who} laid down {' '.join(_cards(action.cards))}"
    if isinstance(action, Layoff):
        return f"{who} laid off {action.card.text}"
    if isinstance(action, Discard):
        return f"{who} discarded {action.card.text}"
    return f"{who} went down"


def starting_view(seat: int, players: Sequence[str], hands: int, max_faults: int) -> dict[str, Any]:
    """The view before anything is dealt: who sits where. Every later view starts from it;
    the web serves it for a table the worker has not taken up yet (dashboard/views/tables.py)."""
    return {
        "status": "starting", "seat": seat, "hand_no": 0, "hands": hands,
        "players": [
            {"seat": s, "name": name, "you": s == seat, "cards": 0, "spreads": [], "chips": 0,
             "to_move": False}
            for s, name in enumerate(players)
        ],
        "hand": [], "discard": [], "stock": 0, "legal": [], "clock": None, "log": [],
        "faults": {"count": 0, "max": max_faults},
        "result": None, "hands_done": [], "replay_url": None,
    }  # fmt: skip


class SeatView:
    """The views of one seat through one match, each a plain dict ready for JSON (the channel
    adds its ``version``)."""

    def __init__(self, info: MatchInfo, clock_ms: int, max_faults: int):
        self.info = info
        self.clock_ms = clock_ms
        self.max_faults = max_faults
        self.faults = 0
        self.hand_no = 0
        self.scores: tuple[int, ...] = (0,) * len(info.players)
        self.legal: dict[str, Action] = {}
        self.hand_result: dict[str, Any] | None = None
        #: Every hand's result so far, in every view: a page that skips a version (a newer one
        #: came before it looked) still learns each hand's result.
        self.done: list[dict[str, Any]] = []
        self.last: dict[str, Any] = self.starting()

    def _base(self, status: str) -> dict[str, Any]:
        view = starting_view(self.info.seat, self.info.players, self.info.hands, self.max_faults)
        for player in view["players"]:
            player["chips"] = self.scores[player["seat"]]
        view.update(status=status, hand_no=self.hand_no, hands_done=list(self.done),
                    faults={"count": self.faults, "max": self.max_faults})  # fmt: skip
        return view

    def starting(self) -> dict[str, Any]:
        return self._base("starting")

    def _table(self, status: str, obs: Observation) -> dict[str, Any]:
        view = self._base(status)
        self.hand_no = obs.hand_index + 1
        view["hand_no"] = self.hand_no
        over = obs.phase == "over"
        for s, player in enumerate(view["players"]):
            player["cards"] = obs.hand_sizes[s]
            player["spreads"] = [_cards(m.cards) for m in obs.table if m.owner == s]
            player["chips"] = obs.scores[s] if obs.scores else self.scores[s]
            player["to_move"] = not over and obs.to_act == s
        view["hand"] = _cards(obs.hand)
        view["discard"] = _cards(obs.discard)
        view["stock"] = obs.stock_size
        names, me = obs.players, obs.seat
        view["log"] = [_event_words(e.seat, e.action, e.card, names, me) for e in obs.history[-LOG_LINES:]]
        return view

    def asking(self, obs: Observation) -> dict[str, Any]:
        """The view when the seat must act: its legal actions, and the clock from now."""
        view = self._table("your_turn", obs)
        ordered = sorted(obs.legal_actions, key=lambda a: _ORDER[a.kind])
        self.legal = {action_id(a): a for a in ordered}
        legal = []
        for ident, action in self.legal.items():
            label, cards = _label(action, obs)
            legal.append({"id": ident, "label": label, "kind": action.kind, "cards": cards})
        view["legal"] = legal
        ends_at = int(time.time() * 1000) + self.clock_ms
        view["clock"] = {"remaining_ms": self.clock_ms, "total_ms": self.clock_ms, "ends_at": ends_at}
        self.hand_result = None
        self.last = view
        return view

    def action_of(self, ident: str) -> Action | None:
        return self.legal.get(ident)

    def fault(self) -> None:
        self.faults += 1

    def hand_over(self, result: HandResult) -> dict[str, Any]:
        obs = result.view
        view = self._table("hand_over", obs) if obs is not None else self._base("hand_over")
        names = self.info.players
        outcome = obs.outcome if obs is not None else None
        shown = result.shown
        for s, player in enumerate(view["players"]):
            player["chips"] = result.scores[s]
            if s < len(shown) and shown[s] and s != self.info.seat:
                player["shown"] = _cards(shown[s])
        words = "The hand is over"
        winners: list[int] = []
        totals: list[int | None] | None = None
        if outcome is not None:
            winners = list(outcome.winners)
            if outcome.end == "fault" and outcome.faulted is not None:
                who = "You" if outcome.faulted == self.info.seat else names[outcome.faulted]
                words = f"{who} faulted and paid every other seat double"
                if outcome.faulted == self.info.seat:
                    words += f" (fault {self.faults} of {self.max_faults})"
            else:
                won = " and ".join("you" if w == self.info.seat else names[w] for w in winners) or "nobody"
                words = _ENDS.get(outcome.end, "{w} won").format(w=won)
                words = words[0].upper() + words[1:]
            # A hand's total is shown only for a seat whose cards the rules show (and your own).
            totals = [
                outcome.totals[s] if s == self.info.seat or (s < len(shown) and shown[s]) else None
                for s in range(len(names))
            ]
        self.scores = tuple(result.scores)
        self.hand_result = {
            "hand_no": result.hand_index + 1, "words": words, "winners": winners,
            "payoffs": list(result.payoffs), "totals": totals,
        }  # fmt: skip
        self.done.append(self.hand_result)
        view["hands_done"] = list(self.done)
        view["result"] = {"hand": self.hand_result, "match": None}
        self.last = view
        return view

    def match_over(self, summary: MatchSummary) -> dict[str, Any]:
        view = {**self.last, "status": "match_over", "legal": [], "clock": None}
        scores = summary.scores
        view["players"] = [{**p, "chips": scores[p["seat"]], "to_move": False} for p in self.last["players"]]
        view["faults"] = {"count": self.faults, "max": self.max_faults}
        best = max(summary.scores)
        winners = [s for s, score in enumerate(summary.scores) if score == best]
        mine = summary.scores[self.info.seat]
        if self.info.seat in summary.forfeited:
            words = f"You forfeited the rest of the match after {self.faults} faults ({mine:+d} chips)"
        elif self.info.seat in winners:
            words = f"You won the match with {mine:+d} chips"
        else:
            words = f"The match is over: you finished with {mine:+d} chips"
        match = {"words": words, "scores": list(summary.scores), "winners": winners}
        view["result"] = {"hand": self.hand_result, "match": match}
        view["hands_done"] = list(self.done)
        self.last = view
        return view
