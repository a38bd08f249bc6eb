"""Signing in on the dashboard's pages: a person signs in with their owner token, or straight
from an invite code, and the pages then know who is looking, as the API knows it from a
bearer token (issue #39, "a page of your own").

The session is Flask's signed cookie (itsdangerous, keyed by ``SECRET_KEY``): HttpOnly,
``SameSite=Lax``, ``Secure`` where the dashboard is served over https
(``TONK_SESSION_SECURE``), and over after ``TONK_SESSION_HOURS``. It carries the owner's id
and a fingerprint of the token that signed in, never the token itself, so a rotated token
(or a changed ``TONK_OPERATOR_TOKEN``) ends every session it opened. Only pages read it: the
JSON API takes bearer tokens alone, so no cookie can authorise an API write that another
site's page forged.

Every form carries the session's CSRF token; a POST without it, or with another session's,
is refused and changes nothing. Signing in gives the session a new CSRF token (a token
planted before sign-in is worth nothing after it).

::

    signed out --POST /signin (token), POST /join (invite)--> signed in
    signed in  --POST /signout, token rotated, session expired or forged--> signed out
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from typing import Final

from flask import Flask, current_app, request, session
from sqlalchemy.orm import Session

from arena.bots.owners import credential_digest
from arena.config import Settings
from arena.errors import ArenaError
from arena.store.models import Owner

#: Form fields are short: a token or an invite code is under 100 characters.
FIELD_LIMIT: Final = 200
_OWNER: Final = "owner"
_NAME: Final = "name"
_PRINT: Final = "fp"
_CSRF: Final = "csrf"


class CsrfError(ArenaError):
    """A form sent without this session's CSRF token: stale, or not from our own page."""

    status = 400
    code = "csrf_refused"


def init_app(app: Flask) -> None:
    settings: Settings = app.config["SETTINGS"]
    app.config.update(
        SESSION_COOKIE_NAME="tonk_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",  # sent on a link followed from elsewhere, never on their POST
        SESSION_COOKIE_SECURE=settings.session_secure,
    )
    app.config["PERMANENT_SESSION_LIFETIME"] = dt.timedelta(hours=settings.session_hours)
    app.jinja_env.globals["csrf_token"] = csrf_token
    app.jinja_env.globals["signed_in_name"] = signed_in_name


def _fingerprint(digest: str) -> str:
    # Not the digest itself: a cookie is readable by its holder, and the digest is the
    # store's key to the owner.
    return hashlib.sha256(b"tonk-session\0" + digest.encode()).hexdigest()[:32]


def csrf_token() -> str:
    """This session's CSRF token (made on first use: the page that shows a form)."""
    token = session.get(_CSRF)
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        session[_CSRF] = token
    return token


def csrf_ok(sent: str) -> bool:
    """Whether ``sent`` is this session's CSRF token (a form's field, or a page's header)."""
    held = session.get(_CSRF)
    return isinstance(held, str) and bool(sent) and secrets.compare_digest(sent[:FIELD_LIMIT], held)


def check_csrf() -> None:
    """Refuse (:class:`CsrfError`) a POST whose form lacks this session's CSRF token."""
    if not csrf_ok(request.form.get(_CSRF, "")):
        raise CsrfError(
            "this form is stale or was not sent from this arena's own page; reload the page and try again"
        )


def sign_in(owner: Owner, settings: Settings) -> None:
    """Start a session for ``owner`` (authenticated by the caller), replacing any other."""
    digest = credential_digest(owner, settings)
    if digest is None:  # the caller authenticated it, so there is a credential
        raise ValueError(f"owner {owner.name!r} has no token to sign in with")
    session.clear()
    session.permanent = True
    session[_OWNER] = owner.id
    session[_NAME] = owner.name
    session[_PRINT] = _fingerprint(digest)
    session[_CSRF] = secrets.token_urlsafe(32)


def sign_out() -> None:
    session.clear()


def signed_in(db: Session, settings: Settings) -> Owner | None:
    """The owner this request's session signed in, or None (and the session ended) when
    there is none or its token has changed since."""
    owner_id, held = session.get(_OWNER), session.get(_PRINT)
    if not isinstance(owner_id, int) or not isinstance(held, str):
        return None
    owner = db.get(Owner, owner_id)
    digest = None if owner is None else credential_digest(owner, settings)
    if owner is None or digest is None or not secrets.compare_digest(_fingerprint(digest), held):
        sign_out()
        return None
    return owner


def signed_in_name() -> str | None:
    """The name to greet in the page header (display only: authority is :func:`signed_in`)."""
    if not current_app.config.get("SECRET_KEY") or _OWNER not in session:
        return None
    name = session.get(_NAME)
    return name if isinstance(name, str) else None
