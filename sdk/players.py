"""Turning a player spec from the command line into a :class:`~sdk.referee.Player`.

A spec is a house bot's short name (``random``), ``MODULE:CLASS`` naming a :class:`Bot`
subclass, or (with the gRPC transport) ``HOST:PORT`` of a running bot.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable
from importlib import import_module
from types import ModuleType

from sdk.bot import Bot
from sdk.referee import LocalPlayer, Player

# Short names for the house bots (imported only when asked for).
HOUSE_BOTS = {
    "random": "bots.random_bot:RandomBot",
    "greedy": "bots.greedy:GreedyBot",
    "heuristic": "bots.heuristic:HeuristicBot",
    "search": "bots.search:SearchBot",
}


class PlayerSpecError(ValueError):
    """A player spec that names no bot."""


def did_you_mean(name: str, known: Iterable[str] = HOUSE_BOTS) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``known`` (default: the house bots), or ``""``."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.5)
    return f"; did you mean {close[0]!r}?" if close else ""


def load_bot_class(spec: str) -> type[Bot]:
    """``random`` or ``package.module:ClassName`` -> the Bot subclass."""
    target = HOUSE_BOTS.get(spec, spec)
    module_name, sep, class_name = target.partition(":")
    if not sep or not module_name or not class_name:
        raise PlayerSpecError(
            f"{spec!r} is not a house bot ({', '.join(HOUSE_BOTS)}), MODULE:CLASS or HOST:PORT"
            f"{did_you_mean(spec)}"
        )
    try:
        module = _import_from_here(module_name)
    except ImportError as exc:
        raise PlayerSpecError(f"cannot import {module_name!r} for {spec!r}: {exc}") from None
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Bot)):
        raise PlayerSpecError(f"{target!r} is not a subclass of sdk.Bot")
    return cls


def _import_from_here(module_name: str) -> ModuleType:
    # `tonk` runs as a console script, whose sys.path lacks the working directory: a bot
    # author's module there is found as `python -m` would find it (last, shadowing nothing).
    try:
        return import_module(module_name)
    except ModuleNotFoundError as exc:
        here = os.getcwd()
        if exc.name != module_name.split(".")[0] or here in sys.path:
            raise
        sys.path.append(here)
        return import_module(module_name)


def is_address(spec: str) -> bool:
    """``HOST:PORT``, or ``unix:PATH`` (a bot serving on a Unix socket, as the arena's
    sandbox runs uploaded bots)."""
    if spec.startswith("unix:/"):
        return True
    host, sep, port = spec.rpartition(":")
    return bool(sep and host and port.isdigit())


def make_player(spec: str) -> Player:
    if spec not in HOUSE_BOTS and is_address(spec):
        from sdk.grpc_player import GrpcPlayer  # needs grpcio: imported only when used

        player: Player = GrpcPlayer(spec)
        return player
    return LocalPlayer(load_bot_class(spec))
