"""Bot projects for the hosted-bot tests: honest ones and hostile ones, written as real
folders (``code/`` with the bot module, as a build leaves it) so the sandbox runs them as
it runs any upload.

Each hostile bot tries its attack when its module is imported (before it serves) and again
at its first decision, and prints one line per attempt, ``ATTACK <what>: blocked (<why>)``
or ``ATTACK <what>: SUCCEEDED <detail>``; the tests also check every attack from outside
(a listener that must see no connection, a file that must not change, no process left).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

HEADER = """
import os, socket, sys, time
from sdk.bot import Bot

def report(what, ok, detail=""):
    print(f"ATTACK {what}: " + (f"SUCCEEDED {detail}" if ok else f"blocked ({detail})"), flush=True)
"""

FOOTER = """
class {cls}(Bot):
    name = "{name}"
    def on_match_start(self, info):
        attack("match-start")
    def act(self, obs):
        if not getattr(self, "_attacked", False):
            self._attacked = True
            attack("decision")
        return obs.legal_actions[0]

attack("import")
"""

HONEST = """
import sys
from sdk.bot import Bot

class {cls}(Bot):
    name = "{name}"
    def act(self, obs):
        print("deciding", len(obs.legal_actions), file=sys.stderr, flush=True)
        return obs.legal_actions[0]
"""


def write_bundle(root: Path, name: str, attack: str | None = None, *, cls: str = "UploadedBot") -> Path:
    """A built bundle at ``root/name`` whose module ``bot_<name>`` defines ``cls``; ``attack``
    is the body of ``def attack(when):`` (None: an honest bot). Returns the bundle folder."""
    bundle = root / name
    (bundle / "code").mkdir(parents=True)
    (bundle / "deps").mkdir()
    module = "bot_" + name.replace("-", "_")
    if attack is None:
        source = HONEST.format(cls=cls, name=name)
    else:
        body = "def attack(when):\n" + textwrap.indent(textwrap.dedent(attack).strip("\n"), "    ") + "\n"
        source = HEADER + body + FOOTER.format(cls=cls, name=name)
    (bundle / "code" / f"{module}.py").write_text(source)
    for path in [bundle, *bundle.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return bundle


def entry(name: str, cls: str = "UploadedBot") -> str:
    return f"bot_{name.replace('-', '_')}:{cls}"
