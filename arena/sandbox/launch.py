"""How the arena starts a bot built from an upload: the ``[bot]`` table of its manifest.

The manifest is ``tonk.toml`` at the project's root (or ``[tool.tonk]`` in its
``pyproject.toml``)::

    [bot]
    entry = "night_owl:NightOwlBot"     # Python: MODULE:CLASS of an sdk.Bot subclass
    # or any runtime the operator installed:
    # command = ["node", "bot.js", "--socket", "{socket}"]
    dependencies = []                    # Python requirements, name==version

A ``python`` launch is served by the arena's SDK; a ``command`` launch must serve tonk.v1
and the gRPC health service on the Unix socket named by ``TONK_SOCKET`` (``{socket}`` in
an argument is replaced by that path). Both halves of hosting read this one value: the
upload and build side (arena/bots) stores it on the bot version, the sandbox runs it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from arena.errors import UnprocessableError

#: Bounds of a manifest's values.
MAX_COMMAND_ARGS: Final = 32
MAX_ARG_CHARS: Final = 512
MAX_DEPENDENCIES: Final = 64

_ENTRY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*")
# A pinned requirement only: no URLs, no markers, no pip options smuggled in as a name.
_REQUIREMENT = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?==[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}")
_KEYS: Final = frozenset({"entry", "command", "dependencies"})


class InvalidManifestError(UnprocessableError):
    """The manifest is missing, malformed, or names no way to start the bot."""

    code = "invalid_manifest"


@dataclass(frozen=True)
class Launch:
    """``kind`` "python": ``entry`` is MODULE:CLASS; "command": ``command`` is the argv."""

    kind: Literal["python", "command"]
    entry: str | None = None
    command: tuple[str, ...] | None = None
    #: Pinned Python requirements the build installs (python bots only).
    dependencies: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "entry": self.entry,
            "command": None if self.command is None else list(self.command),
            "dependencies": list(self.dependencies),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Launch:
        """The value :meth:`to_json` gave (as stored on a bot version), checked again."""
        table: dict[str, Any] = {"dependencies": list(data.get("dependencies") or [])}
        if data.get("kind") == "command":
            table["command"] = list(data.get("command") or [])
        else:
            table["entry"] = data.get("entry")
        return parse_launch(table)

    def argv(self, socket_path: str) -> tuple[str, ...]:
        """A command launch's argv with ``{socket}`` replaced by the socket's path."""
        if self.command is None:
            raise ValueError("a python launch has no command")
        return tuple(arg.replace("{socket}", socket_path) for arg in self.command)


def parse_launch(table: Mapping[str, Any]) -> Launch:
    """The launch a manifest's ``[bot]`` table describes, or InvalidManifestError quoting the
    offending value."""
    if not isinstance(table, Mapping):
        raise InvalidManifestError("the manifest's [bot] must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise InvalidManifestError(f"unknown key in the manifest's [bot]: {unknown[0][:80]!r} (known: "
                                   "entry, command, dependencies)")  # fmt: skip
    entry, command = table.get("entry"), table.get("command")
    dependencies = _dependencies(table.get("dependencies", []))
    if (entry is None) == (command is None):
        raise InvalidManifestError(
            "the manifest's [bot] needs exactly one of entry = \"MODULE:CLASS\" (a Python bot) or "
            'command = ["program", "arg", ...] (any other runtime)'
        )
    if entry is not None:
        if not isinstance(entry, str) or not _ENTRY.fullmatch(entry) or len(entry) > MAX_ARG_CHARS:
            raise InvalidManifestError(f"entry {str(entry)[:120]!r} is not MODULE:CLASS (e.g. \"night_owl:NightOwlBot\")")
        return Launch("python", entry=entry, dependencies=dependencies)
    if not isinstance(command, list) or not 1 <= len(command) <= MAX_COMMAND_ARGS:
        raise InvalidManifestError(f"command must be a list of 1 to {MAX_COMMAND_ARGS} strings")
    for arg in command:
        if not isinstance(arg, str) or not arg or len(arg) > MAX_ARG_CHARS or "\x00" in arg:
            raise InvalidManifestError(f"command argument {str(arg)[:120]!r} must be a non-empty string "
                                       f"of at most {MAX_ARG_CHARS} characters")  # fmt: skip
    if dependencies:
        raise InvalidManifestError(
            "a command bot brings its dependencies in its upload (e.g. node_modules); "
            "dependencies = [...] is for Python bots"
        )
    return Launch("command", command=tuple(command))


def _dependencies(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > MAX_DEPENDENCIES:
        raise InvalidManifestError(f"dependencies must be a list of at most {MAX_DEPENDENCIES} requirements")
    for item in value:
        if not isinstance(item, str) or not _REQUIREMENT.fullmatch(item):
            raise InvalidManifestError(
                f"dependency {str(item)[:120]!r} is not a pinned requirement NAME==VERSION (e.g. \"numpy==2.1.3\")"
            )
    return tuple(value)


__all__ = ["InvalidManifestError", "Launch", "parse_launch"]
