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


def write_project(root: Path, name: str, attack: str | None = None, *, cls: str = "UploadedBot") -> Path:
    """The same bot as a project folder an author uploads (``tonk.toml`` and the module)."""
    bundle = write_bundle(root / "bundles", name, attack, cls=cls)
    project = root / "projects" / name
    project.mkdir(parents=True)
    for source in (bundle / "code").iterdir():
        (project / source.name).write_bytes(source.read_bytes())
    (project / "tonk.toml").write_text(f'[bot]\nentry = "{entry(name, cls)}"\n')
    return project


#: Hostile bots for whole tournaments: name -> the body of ``attack(when)``. Each format()s
#: with ``store`` (the store's file), ``victim`` (another upload's bundle), ``port`` (a
#: loopback listener standing for the dashboard) and ``secret_a``/``secret_b`` (the planted
#: secret in two halves).
HOSTILE: dict[str, str] = {
    "network": """
        for what, host, port in [("redis", "127.0.0.1", 6379), ("postgres", "127.0.0.1", 5432),
                                 ("dashboard", "127.0.0.1", {port}), ("outside", "1.1.1.1", 53)]:
            try:
                socket.create_connection((host, port), timeout=1).close()
                report(what, True, f"{{host}}:{{port}}")
            except OSError as exc:
                report(what, False, exc)
    """,
    "snoop": """
        secret = "{secret_a}" + "{secret_b}"
        leaks = [k for k, v in os.environ.items() if secret in v]
        report("environment", bool(leaks), leaks)
        for path in ["/proc/1/environ", "/proc/self/environ"]:
            try:
                report("environ " + path, secret.encode() in open(path, "rb").read(), path)
            except OSError as exc:
                report("environ " + path, False, exc)
        for what, path in [("store", "{store}"), ("other-upload", "{victim}")]:
            try:
                open(path, "rb").read()
                report(what, True, path)
            except OSError as exc:
                report(what, False, exc)
    """,
    "writer": """
        for path in ["/bot/code/planted.py", "/opt/tonk/site/sdk/planted.py", "/planted", "{victim}.planted"]:
            try:
                with open(path, "w") as f:
                    f.write("x")
                report("write " + path, True, path)
            except OSError as exc:
                report("write " + path, False, exc)
    """,
    "forkbomb": """
        started = 0
        try:
            for _ in range(10_000):
                if os.fork() == 0:
                    time.sleep(600)
                    os._exit(0)
                started += 1
            report("fork-bomb", True, started)
        except OSError as exc:
            report("fork-bomb", False, f"{{started}} processes, then {{exc}}")
    """,
    "hog": """
        try:
            block = bytearray(4 << 30)
            for i in range(0, len(block), 4096):
                block[i] = 1
            report("4GB", True, len(block))
        except MemoryError:
            report("4GB", False, "MemoryError")
    """,
    "filler": """
        written = 0
        try:
            with open("/tmp/fill-" + when, "wb") as f:
                while written < 1 << 30:
                    f.write(b"x" * (1 << 20))
                    written += 1 << 20
            report("fill-tmp", True, written)
        except OSError as exc:
            report("fill-tmp", False, f"{{written >> 20}} MB, then {{exc}}")
    """,
    "daemon": """
        if when != "import":
            return
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)
        report("daemon", False, "started a daemon; it must end with the match")
    """,
    "spinner": """
        import threading
        def spin():
            while True:
                pass
        if when == "import":
            for _ in range(4):
                threading.Thread(target=spin, daemon=True).start()
            report("steal-cpu", False, "four threads spinning for the whole match")
    """,
}
