"""The statuses stored in the ``status`` columns, as ``StrEnum``s.

Each member is its stored string (``MatchStatus.DONE == "done"``), so the database, the API
and the pages see the same values as before; code names them instead of spelling them, and a
misspelt status is an AttributeError instead of a query that silently matches nothing.
"""

from __future__ import annotations

from enum import StrEnum


class TournamentStatus(StrEnum):
    CREATED = "created"
    RUNNING = "running"
    PAUSED = "paused"
    FINISHED = "finished"


class MatchStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class BotStatus(StrEnum):
    ACTIVE = "active"
    RETIRED = "retired"


#: The plain strings, in the order the API and the CLI list them.
TOURNAMENT_STATUSES: tuple[str, ...] = tuple(s.value for s in TournamentStatus)
MATCH_STATUSES: tuple[str, ...] = tuple(s.value for s in MatchStatus)
BOT_STATUSES: tuple[str, ...] = tuple(s.value for s in BotStatus)


class TournamentKind(StrEnum):
    """What a tournament is (``tournaments.kind``): every table of the entrants, every table
    holding one challenger, a sequential test of two bots (arena/tournaments/sprt.py), a
    ladder: open-ended, its tables chosen as results come in (arena/ladder), or a challenge."""

    ROUND_ROBIN = "round-robin"
    GAUNTLET = "gauntlet"
    SPRT = "sprt"
    LADDER = "ladder"
    #: An owner's bot against any bot that accepts challenges, now and unrated
    #: (arena/tournaments/challenges.py).
    CHALLENGE = "challenge"
    #: A person at the table against one or two bots (arena/tournaments/people.py): rated, if
    #: at all, on the people's board, never on the bots'.
    PEOPLE = "people"


#: Kinds whose matches no bot rating counts: a challenge is a scrimmage, chosen by one side;
#: a person's match has a person in it.
UNRATED_KINDS: tuple[str, ...] = (TournamentKind.CHALLENGE.value, TournamentKind.PEOPLE.value)

TOURNAMENT_KINDS: tuple[str, ...] = tuple(k.value for k in TournamentKind)
