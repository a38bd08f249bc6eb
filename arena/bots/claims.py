"""Addresses are claimed: registering one proves that its registrant runs the bot there.

Anyone can read where a bot listens once it plays (its faults name it, its operator may show
it), so an address alone proves nothing: without a claim, another owner could register a
copy of it under a new name and play someone else's bot as their own. So:

- Each owner has a **claim code** per address, ``tonk-claim-`` and 24 hex digits: an HMAC of
  the owner's id and the normalised address under the arena's ``claim`` secret
  (arena/store/secrets.py), so nobody can compute another owner's code, and a code of one
  arena is worthless in another (``POST /api/v1/claims`` returns it, and so does the refusal
  of a registration that lacks it). Rotating the secret (``tonk owner rotate-claims``)
  voids every code: bots must then serve their new ones to be registered or re-checked.
- The bot returns it in ``GetInfoResponse.claim`` (``tonk serve ... --claim CODE`` or
  ``TONK_CLAIM=CODE``; any language: docs/protocol.md). The registration checks compare.
  Reading another owner's code off their bot gains nothing: it is theirs, not yours.
- One server, one owner: an address that reaches the same host and port as another owner's
  active bot (``localhost:P`` and ``127.0.0.1:P``; names compared by what they resolve to)
  is refused (409), but only after the claim check, so someone who does not run the bot
  there gets the same refusal (422) whether or not another owner registered it.

Operators are trusted and need no claim, nor do addresses the arena reaches only because its
operator's allow-list lets it in (``TONK_ALLOWED_BOT_HOSTS``: the operator's own network,
as in ``tonk demo`` or compose), unless ``TONK_CLAIM_ALLOWED_HOSTS=1`` asks for them too.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.bots.addresses import (
    DialTarget,
    InvalidAddressError,
    Resolver,
    check_address,
    same_server_keys,
)
from arena.config import Settings
from arena.errors import ConflictError, UnprocessableError
from arena.store.models import Bot, Owner
from arena.store.secrets import arena_secret
from arena.store.statuses import BotStatus

CLAIM_PREFIX: Final = "tonk-claim-"


class ClaimRequiredError(UnprocessableError):
    """The bot did not return its registrant's claim code; ``details`` carry the code."""

    code = "claim_required"


class AddressTakenError(ConflictError):
    code = "address_taken"


def claim_code(secret: bytes, owner_id: int, address: str) -> str:
    """The claim code of owner ``owner_id`` for the normalised ``address`` in the arena whose
    ``claim`` secret is ``secret``."""
    mac = hmac.new(secret, f"tonk-claim/v2\0{owner_id}\0{address}".encode(), hashlib.sha256)
    return CLAIM_PREFIX + mac.hexdigest()[:24]


def claim_for(session: Session, owner: Owner, address: str, settings: Settings) -> dict[str, str]:
    """What ``POST /api/v1/claims`` answers: the address as the arena writes it and the code
    (the address is checked as a registration would check it)."""
    normalised = check_address(address, settings.allowed_bot_hosts)
    return {"address": normalised, "code": claim_code(arena_secret(session, "claim"), owner.id, normalised)}


def required_claim(
    session: Session, owner: Owner, address: str, target: DialTarget, settings: Settings
) -> str | None:
    """The code the bot at ``address`` must return for ``owner`` to register it, or None
    when no claim is asked (an operator, or an allow-listed address)."""
    if owner.is_operator or (target.allow_listed and not settings.claim_allowed_hosts):
        return None
    return claim_code(arena_secret(session, "claim"), owner.id, address)


def check_claim(presented: str, expected: str | None, address: str, where: str) -> None:
    """Refuse (ClaimRequiredError, 422) unless ``presented`` (GetInfo's ``claim``: one code or
    several separated by spaces) holds ``expected``."""
    if expected is None or expected in presented.split():
        return
    said = "returned no claim code" if not presented.strip() else "returned another claim code"
    raise ClaimRequiredError(
        f"{where} {said}: to show that you run it, serve it with this arena's claim code for you "
        f"at {address} (`tonk serve BOT --claim {expected}`, or TONK_CLAIM={expected}; in another "
        "language return it in GetInfoResponse.claim, docs/protocol.md), then submit again",
        details={"claim": expected, "address": address},
    )


def ensure_address_free(
    session: Session,
    owner: Owner,
    address: str,
    bot_id: int | None = None,
    *,
    target: DialTarget | None = None,
    resolver: Resolver | None = None,
) -> None:
    """Refuse (AddressTakenError, 409) ``address`` when it reaches the same server (host and
    port after resolution) as an active bot of another owner than ``owner`` (``bot_id``: the
    bot being updated, which does not count). The message names neither the bot nor whose.
    ``target``: the address as its check pinned it (its name is not looked up again)."""
    hosts, port = same_server_keys(address, resolver, target.resolved if target else ())
    query = select(Bot.address).where(
        Bot.address.is_not(None),
        Bot.address.like(f"%:{port}"),  # only the same port can be the same server
        Bot.status == BotStatus.ACTIVE,
        Bot.owner_id != owner.id,
    )
    if bot_id is not None:
        query = query.where(Bot.id != bot_id)
    for other in session.scalars(query):
        if other is None:
            continue
        try:
            other_hosts, other_port = same_server_keys(other, resolver)
        except InvalidAddressError:  # stored before today's syntax: compared as text
            other_hosts, other_port = frozenset({other}), -1
        if (other_port == port and hosts & other_hosts) or other == address:
            raise AddressTakenError(
                f"bot address {address!r} reaches a server another owner's bot is registered at; "
                "a server can be entered once, by whoever runs the bot there"
            )


__all__ = [
    "CLAIM_PREFIX",
    "AddressTakenError",
    "ClaimRequiredError",
    "check_claim",
    "claim_code",
    "claim_for",
    "ensure_address_free",
    "required_claim",
]
