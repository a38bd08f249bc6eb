"""The arena a bot author talks to, remembered: ``tonk login --arena URL [--token T]`` writes it
once, and every command that talks to an arena (``tonk submit``, ``logs``, ``retire``,
``restore``, ``sprt``, ``serve --connect``, ``owner``'s ``join`` and ``rotate-token``) reads it
when neither its own flag nor the environment (``TONK_ARENA``, ``TONK_TOKEN``) names one.

The file is ``$TONK_CONFIG_DIR/arena.json``, else ``$XDG_CONFIG_HOME/tonk/arena.json``, else
``~/.config/tonk/arena.json``: ``{"arena": URL, "token": T}``, mode 0600 (it may hold the API
token), in a folder of mode 0700. A remembered token goes only to the remembered arena: a
command pointed elsewhere (``--arena``, ``TONK_ARENA``) needs its own token, so a typo in a URL
cannot send the token to another host.

Standard library only: the SDK is installed without the arena.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

FILE_NAME = "arena.json"
#: Bounds on what is accepted, remembered and sent: a URL, a token, the file itself.
MAX_URL_CHARS = 2000
MAX_TOKEN_CHARS = 512
MAX_FILE_BYTES = 16 * 1024


class ArenaURLError(ValueError):
    """Text that is not an arena's http(s) URL."""


class TokenError(ValueError):
    """Text that cannot be an API token (it goes into an HTTP header as it is)."""


class LoginFileError(ValueError):
    """The remembered login's file exists but cannot be used."""


@dataclass(frozen=True)
class Login:
    arena: str
    token: str = ""


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$TONK_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/tonk`` (an absolute one: the XDG spec says
    to ignore a relative path), else ``~/.config/tonk``."""
    env = os.environ if environ is None else environ
    explicit = env.get("TONK_CONFIG_DIR", "").strip()
    if explicit:
        return Path(explicit).expanduser().absolute()
    xdg = env.get("XDG_CONFIG_HOME", "").strip()
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "tonk"
    home = env.get("HOME", "").strip()
    return (Path(home) if home else Path.home()) / ".config" / "tonk"


def login_file(environ: Mapping[str, str] | None = None) -> Path:
    return config_dir(environ) / FILE_NAME


def check_arena_url(text: str) -> str:
    """The arena's URL in one spelling (scheme and host in lower case, no trailing slash), or
    ArenaURLError saying what is wrong. Strict: the URL is printed in hints and the token is
    sent to it, so credentials, queries, fragments, blanks and control characters are refused
    rather than silently dropped (urllib.parse drops tabs and newlines)."""
    url = text.strip()
    if not url:
        raise ArenaURLError("the arena's URL is empty")
    if len(url) > MAX_URL_CHARS:
        raise ArenaURLError(f"the arena's URL is longer than {MAX_URL_CHARS} characters")
    if not url.isascii() or not url.isprintable() or " " in url:
        raise ArenaURLError(f"{url!r} has blanks, control or non-ASCII characters (write a host in punycode)")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ArenaURLError(f"{url!r} is not an http:// or https:// URL")
    if parts.username is not None or parts.password is not None:
        raise ArenaURLError(f"{parts.scheme}://{parts.hostname}...: no user or password in the URL "
                            "(the API token goes in --token)")  # fmt: skip
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        raise ArenaURLError(f"{url!r}: no query or fragment in the arena's URL")
    try:
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError:
        raise ArenaURLError(f"{url!r}: the port is not a number from 0 to 65535") from None
    path = parts.path.rstrip("/")
    return urllib.parse.urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, "", ""))


def check_token(text: str) -> str:
    """The token, or TokenError: printable ASCII without blanks, at most MAX_TOKEN_CHARS (it
    goes into an ``Authorization`` header as it is). The message never shows the token."""
    token = text.strip()
    if not token:
        raise TokenError("the API token is empty")
    if len(token) > MAX_TOKEN_CHARS:
        raise TokenError(f"the API token is longer than {MAX_TOKEN_CHARS} characters")
    if not token.isascii() or not token.isprintable() or any(c.isspace() for c in token):
        raise TokenError("the API token has blanks, control or non-ASCII characters")
    return token


def read_login(environ: Mapping[str, str] | None = None) -> Login | None:
    """The remembered login, None when there is none, LoginFileError when its file is not one
    ``tonk login`` wrote (the message names the file and the way out)."""
    path = login_file(environ)
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LoginFileError(f"{path}: cannot be read ({exc.strerror}); tonk logout removes it") from None
    try:
        if len(raw) > MAX_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
        data = json.loads(raw)
        if not isinstance(data, dict) or not isinstance(data.get("arena"), str):
            raise ValueError('not {"arena": URL, "token": T}')
        token = data.get("token", "")
        if not isinstance(token, str):
            raise ValueError("its token is not text")
        return Login(check_arena_url(data["arena"]), check_token(token) if token else "")
    except ValueError as exc:  # json's, and the checks' (their messages never show a token)
        raise LoginFileError(f"{path}: not a login tonk login wrote ({exc}); "
                             "tonk logout removes it, tonk login writes it again") from None  # fmt: skip


def write_login(login: Login, environ: Mapping[str, str] | None = None) -> Path:
    """Remembers ``login`` (its arena and token checked first); the file's path. The file is
    written whole under another name, then renamed: never half written, and mode 0600 from its
    first byte (it is created so, not narrowed after)."""
    arena = check_arena_url(login.arena)
    token = check_token(login.token) if login.token else ""
    path = login_file(environ)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{FILE_NAME}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"arena": arena, "token": token}, handle, indent=2)
            handle.write("\n")
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


def forget_login(environ: Mapping[str, str] | None = None) -> Path | None:
    """Removes the remembered login; its path, or None when there was none."""
    path = login_file(environ)
    try:
        path.unlink()
    except FileNotFoundError:
        return None
    return path


@dataclass(frozen=True)
class Target:
    """Where a command sends its calls and with which token ("" for none), and whether each
    came from the remembered login (for the hints of a refusal)."""

    arena: str
    token: str
    remembered_arena: bool = False
    remembered_token: bool = False


def resolve(
    arena_flag: str | None, token_flag: str | None, environ: Mapping[str, str] | None = None
) -> Target:
    """The arena: ``--arena``, else ``TONK_ARENA``, else the remembered one; the token:
    ``--token``, else ``TONK_TOKEN``, else the remembered one if the arena is the remembered
    arena. Either may be "" (the caller says what is missing). The file is read only when a
    flag or the environment leaves something to find; LoginFileError if it is unusable."""
    env = os.environ if environ is None else environ
    arena = (arena_flag or env.get("TONK_ARENA", "")).strip()
    token = (token_flag or env.get("TONK_TOKEN", "")).strip()
    if arena and token:
        return Target(arena, token)
    login = read_login(env)
    if login is None:
        return Target(arena, token)
    from_file = not arena
    if from_file:
        arena = login.arena
    if not token and login.token and _same_arena(arena, login.arena):
        return Target(arena, login.token, from_file, True)
    return Target(arena, token, from_file, False)


def remembered_arena(environ: Mapping[str, str] | None = None) -> str:
    """The remembered arena's URL, "" for none or an unusable file (for hints and for choosing
    a command's form; a command that talks to the arena reports the file's fault itself)."""
    try:
        login = read_login(environ)
    except LoginFileError:
        return ""
    return "" if login is None else login.arena


def _same_arena(a: str, b: str) -> bool:
    try:
        return check_arena_url(a) == check_arena_url(b)
    except ArenaURLError:
        return False
