"""Whose memory the arena controls: the bots that cannot carry anything from one match into the
next, so that dealing a deal to them twice (duplicate) is fair by construction.

A duplicate deal is dealt once per seat rotation; a bot that remembers what its seats saw and
recognises the deal later (the same upcard, the same stock) gains in its later rotations
(docs/arena.md, "What memory is worth"). The arena controls that memory only for

- an **uploaded** bot hosted fresh per match (``TONK_SANDBOX_MEMORY=match``, the default:
  a new process in a new sandbox per match, nothing kept); under ``deal`` or ``worker`` the
  process outlives a match and may remember;
- a **house** bot (``Bot.hosted``, a class the operator installed and the arena serves
  itself): the operator's own code, which the operator answers for.

A dialled bot (an address) or a connected one (arena/link) runs on its author's machine and
can always remember. The tournament deal mode ``auto`` (arena/tournaments/layout.py) deals
duplicate only to tables of controlled bots, and the driver plays a duplicate deal seating
anyone else one rotation at a time (arena/runtime/scheduling.py), so the fair-play check
(arena/ratings/fairplay.py) can tell a first rotation from a later one.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.sandbox.limits import memory_scope
from arena.store.models import BotVersion


def controls_memory(*, uploaded: bool, house: bool, scope: str) -> bool:
    """Whether the arena controls the memory of a bot version of this kind under ``scope``
    (the hosted bots' ``TONK_SANDBOX_MEMORY``)."""
    if uploaded:
        return scope == "match"
    return house


def controlled_versions(session: Session, version_ids: Collection[int]) -> set[int]:
    """The ids among ``version_ids`` of the bot versions whose memory the arena controls."""
    if not version_ids:
        return set()
    scope = memory_scope()
    query = select(BotVersion.id, BotVersion.build_id, BotVersion.hosted)
    rows = session.execute(query.where(BotVersion.id.in_(list(version_ids)))).all()
    return {
        version
        for version, build, hosted in rows
        if controls_memory(uploaded=build is not None, house=hosted is not None, scope=scope)
    }
