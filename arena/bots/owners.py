"""Owners and their API tokens.

A token is ``tonk_`` followed by 32 random bytes (URL-safe base64), shown to its owner once;
the arena keeps only its SHA-256. The prefix lets people (and secret scanners) recognise a
leaked token. Besides owners' tokens, ``Settings.operator_token`` (from the environment)
authenticates as the built-in ``operator`` owner, so a fresh arena can be administered
before any owner exists.

    owner, token = create_owner(session, "alice")      # give `token` to alice, once
    owner = authenticate(session, token, settings)      # AuthenticationError -> 401
    require_operator(owner)                             # PermissionDeniedError -> 403
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.config import Settings
from arena.errors import ArenaError, AuthenticationError, ConflictError, PermissionDeniedError
from arena.store.models import Owner

TOKEN_PREFIX = "tonk_"
TOKEN_BYTES = 32  # 256 bits of entropy
#: Name of the owner the environment's operator token authenticates as.
OPERATOR_OWNER = "operator"
OWNER_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{1,63}$")
# Stored as the operator owner's token_hash: not a hex digest, so no token ever hashes to it,
# and the environment's token itself is never written to the database.
_NO_TOKEN = "!operator-token-from-environment"
# Longest token worth hashing; anything longer is refused before any work is done.
_MAX_TOKEN_LENGTH = 256


class InvalidOwnerNameError(ArenaError):
    status = 400
    code = "invalid_owner_name"


class OwnerNameTakenError(ConflictError):
    code = "owner_name_taken"


def new_token() -> str:
    """A fresh API token: the prefix plus 32 bytes from the OS's CSPRNG."""
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token: str) -> str:
    """The stored form of a token.

    A plain SHA-256 is enough here, unlike for passwords: a token carries 256 random bits, so
    nobody can guess one from its hash however fast the hash is, and salting or a slow KDF
    would only forbid what we need, looking the owner up by the hash with an index.
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def validate_owner_name(name: str) -> str:
    if not isinstance(name, str) or not OWNER_NAME_RE.fullmatch(name):
        raise InvalidOwnerNameError(
            f"owner name {name!r:.80} is not valid: use 2 to 64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return name


def create_owner(session: Session, name: str, operator: bool = False) -> tuple[Owner, str]:
    """Create an owner and return it with its plaintext token, which is not stored anywhere:
    hand it over now. Raises :class:`InvalidOwnerNameError` or :class:`OwnerNameTakenError`."""
    validate_owner_name(name)
    if name.lower() == OPERATOR_OWNER:
        raise OwnerNameTakenError(f"owner name {name!r} is reserved for the arena's operator token")
    if _owner_named(session, name) is not None:
        raise OwnerNameTakenError(f"owner name {name!r} is already taken")
    token = new_token()
    owner = Owner(name=name, token_hash=hash_token(token), is_operator=operator)
    session.add(owner)
    try:
        session.flush()
    except IntegrityError:  # lost a race for the name; the caller's transaction must roll back
        raise OwnerNameTakenError(f"owner name {name!r} is already taken") from None
    return owner, token


def rotate_token(session: Session, owner: Owner) -> str:
    """Replace ``owner``'s token; the old one stops working when the session commits."""
    if owner.name == OPERATOR_OWNER and owner.token_hash == _NO_TOKEN:
        raise PermissionDeniedError("the operator token comes from TONK_OPERATOR_TOKEN; change it there")
    token = new_token()
    owner.token_hash = hash_token(token)
    session.flush()
    return token


def parse_bearer(header: str | None) -> str:
    """The token in an ``Authorization: Bearer <token>`` header (AuthenticationError if none)."""
    if not header or not header.strip():
        raise AuthenticationError("missing API token: send 'Authorization: Bearer <token>'")
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise AuthenticationError("malformed Authorization header: expected 'Bearer <token>'")
    return value.strip()


def authenticate(session: Session, token: str | None, settings: Settings | None = None) -> Owner:
    """The owner holding ``token``, or :class:`AuthenticationError`.

    ``settings.operator_token``, when set, authenticates as the ``operator`` owner (created
    on first use). The error message never quotes the token.
    """
    if token is None or not token.strip():
        raise AuthenticationError("missing API token")
    token = token.strip()
    if len(token) > _MAX_TOKEN_LENGTH:
        raise AuthenticationError("invalid API token")
    if settings is not None and settings.operator_token and _same(token, settings.operator_token):
        return _operator_owner(session)
    if not token.startswith(TOKEN_PREFIX):
        raise AuthenticationError(f"invalid API token (arena tokens start with {TOKEN_PREFIX!r})")
    digest = hash_token(token)
    owner = session.scalars(select(Owner).where(Owner.token_hash == digest)).first()
    # The lookup by digest leaks nothing useful through timing (an attacker cannot steer the
    # digest of a guess); comparing again in constant time keeps the check itself honest.
    if owner is None or not _same(owner.token_hash, digest):
        raise AuthenticationError("invalid API token")
    return owner


def credential_digest(owner: Owner, settings: Settings | None = None) -> str | None:
    """The hash of the token that authenticates ``owner`` now: its own, or for the operator
    owner made from ``TONK_OPERATOR_TOKEN`` that one's (None when there is none). A dashboard
    session keeps a fingerprint of it, so a rotated token ends the sessions it opened."""
    if owner.name == OPERATOR_OWNER and owner.token_hash == _NO_TOKEN:
        token = settings.operator_token if settings is not None else ""
        return hash_token(token) if token else None
    return owner.token_hash


def require_operator(owner: Owner) -> Owner:
    """``owner`` if it is an operator, else :class:`PermissionDeniedError`."""
    if not owner.is_operator:
        raise PermissionDeniedError(f"owner {owner.name!r} is not an operator of this arena")
    return owner


def get_or_create_operator(session: Session, name: str) -> Owner:
    """The operator owner ``name`` (e.g. ``house``), created without a usable token if new.

    For the arena's own bots: nobody needs to log in as their owner, so the token is
    generated and dropped.
    """
    owner = _owner_named(session, name)
    if owner is None:
        owner, _token = create_owner(session, name, operator=True)
    elif not owner.is_operator:
        raise ConflictError(f"owner {name!r} exists and is not an operator")
    return owner


def operator_owner(session: Session) -> Owner:
    """The built-in ``operator`` owner (the environment's token authenticates as it), created
    if new: what an operator at the server acts as (e.g. the maker of invites)."""
    return _operator_owner(session)


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def _owner_named(session: Session, name: str) -> Owner | None:
    return session.scalars(select(Owner).where(Owner.name == name)).first()


def _operator_owner(session: Session) -> Owner:
    owner = _owner_named(session, OPERATOR_OWNER)
    if owner is None:
        owner = Owner(name=OPERATOR_OWNER, token_hash=_NO_TOKEN, is_operator=True)
        session.add(owner)
        session.flush()
    return owner


__all__ = [
    "OPERATOR_OWNER",
    "TOKEN_PREFIX",
    "AuthenticationError",
    "InvalidOwnerNameError",
    "OwnerNameTakenError",
    "PermissionDeniedError",
    "authenticate",
    "create_owner",
    "get_or_create_operator",
    "hash_token",
    "new_token",
    "operator_owner",
    "parse_bearer",
    "require_operator",
    "rotate_token",
    "validate_owner_name",
]
