"""How a built upload is started: a Python ``MODULE:CLASS`` the SDK serves, or a command.

The manifest (``tonk.toml``'s ``[bot]`` table, docs/bot-author-guide.md) names one of them::

    Launch.from_manifest({"entry": "night_owl:NightOwlBot"})
    Launch.from_manifest({"command": ["node", "bot.js", "--socket", "{socket}"]})

A command bot serves ``tonk.v1`` and the gRPC health service on the Unix socket whose path
is in ``$TONK_SOCKET`` (and replaces ``{socket}`` in its arguments).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from arena.errors import ArenaError

_ENTRY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")
MAX_ARGS = 32
MAX_ARG_LENGTH = 256
#: Replaced in a command's arguments by the socket's path inside the sandbox.
SOCKET_PLACEHOLDER = "{socket}"


class InvalidLaunchError(ArenaError):
    """A manifest whose ``[bot]`` table names no usable entry point or command."""

    status = 400
    code = "invalid_manifest"


@dataclass(frozen=True, slots=True)
class Launch:
    kind: Literal["python", "command"]
    entry: str | None = None
    command: tuple[str, ...] | None = None

    @classmethod
    def from_manifest(cls, bot: Mapping[str, Any]) -> Launch:
        """The launch a manifest's ``[bot]`` table asks for; InvalidLaunchError quoting it if none."""
        entry, command = bot.get("entry"), bot.get("command")
        if (entry is None) == (command is None):
            raise InvalidLaunchError("the manifest's [bot] table names exactly one of 'entry' or 'command'")
        if entry is not None:
            if not isinstance(entry, str) or not _ENTRY_RE.match(entry):
                raise InvalidLaunchError(
                    f"[bot] entry {str(entry)[:80]!r} is not MODULE:CLASS (e.g. 'my_bot:MyBot')"
                )
            return cls("python", entry=entry)
        if (
            not isinstance(command, list)
            or not 1 <= len(command) <= MAX_ARGS
            or not all(isinstance(a, str) and 0 < len(a) <= MAX_ARG_LENGTH and "\0" not in a for a in command)
        ):
            raise InvalidLaunchError(
                f"[bot] command {str(command)[:80]!r} is not a list of 1 to {MAX_ARGS} non-empty strings"
            )
        return cls("command", command=tuple(command))

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry} if self.kind == "python" else {"command": list(self.command or ())}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Launch:
        return cls.from_manifest(data)

    def describe(self) -> str:
        return f"Python {self.entry}" if self.kind == "python" else " ".join(self.command or ())
