"""``tonk new NAME``: start a bot project: a working bot, its tests, a README and packaging.

    tonk new "Night Owl"      # -> night-owl/ with night_owl.py (class NightOwlBot), tests, ...
    cd night-owl && pip install -r requirements.txt && pytest

The project's requirements name the SDK the way this one was installed: ``tonk-arena @
file:///...`` for a checkout or a wheel (so the project installs without any package index
knowing ``tonk-arena``), plain ``tonk-arena`` only when it came from an index.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
from importlib import metadata, resources
from pathlib import Path
from typing import Any, Final

# template file -> file written ({module} is replaced by the bot's module name)
TEMPLATES: Final = {
    "bot.py.tmpl": "{module}.py",
    "test_bot.py.tmpl": "test_{module}.py",
    "pyproject.toml.tmpl": "pyproject.toml",
    "tonk.toml.tmpl": "tonk.toml",
    "requirements.txt.tmpl": "requirements.txt",
    "README.md.tmpl": "README.md",
    "gitignore.tmpl": ".gitignore",
}


class ProjectNameError(ValueError):
    """A NAME that gives no usable Python module or class name."""


def names_for(name: str) -> dict[str, str]:
    """The names a project called ``name`` uses: module, class, folder, distribution."""
    words = re.findall(r"[A-Za-z0-9]+", name)
    if not words or not words[0][0].isalpha():
        raise ProjectNameError(f"{name!r}: a bot name starts with a letter (e.g. 'night-owl')")
    module = "_".join(w.lower() for w in words)
    if keyword.iskeyword(module) or module in {"sdk", "bots", "arena", "test", "random"}:
        module += "_bot"
    camel = "".join(w[:1].upper() + w[1:] for w in words)
    class_name = camel if camel.lower().endswith("bot") else camel + "Bot"
    return {
        "name": name.strip(),
        "module": module,
        "class_name": class_name,
        "folder": module.replace("_", "-"),
        "dist_name": module.replace("_", "-"),
    }


DISTRIBUTION: Final = "tonk-arena"
_CHECKOUT: Final = Path(__file__).resolve().parents[2]  # when the SDK runs from a source tree


def sdk_requirement() -> str:
    """The PEP 508 requirement that installs this very SDK: its recorded origin (PEP 610
    ``direct_url.json``: a checkout or a wheel file), else the source tree it runs from, else
    the plain name (an index that has it)."""
    try:
        origin = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        origin = None
    if origin:
        try:
            url = json.loads(origin).get("url", "")
        except ValueError:
            url = ""
        if isinstance(url, str) and url.startswith("file://"):
            return f"{DISTRIBUTION} @ {url}"
        return DISTRIBUTION  # a VCS or remote URL: an index is the better guess
    pyproject = _CHECKOUT / "pyproject.toml"
    if pyproject.is_file() and f'name = "{DISTRIBUTION}"' in pyproject.read_text(encoding="utf-8"):
        return f"{DISTRIBUTION} @ {_CHECKOUT.as_uri()}"
    return DISTRIBUTION


def render(template: str, values: dict[str, str]) -> str:
    text = (resources.files("sdk") / "templates" / "new_bot" / template).read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def create_project(name: str, parent: Path, *, force: bool = False) -> tuple[Path, dict[str, str]]:
    """Write the project for ``name`` under ``parent``; return its folder and names."""
    values = {**names_for(name), "sdk_requirement": sdk_requirement()}
    folder = parent / values["folder"]
    if folder.exists() and any(folder.iterdir()) and not force:
        raise FileExistsError(f"{folder} already exists and is not empty (use --force to overwrite)")
    folder.mkdir(parents=True, exist_ok=True)
    for template, target in TEMPLATES.items():
        path = folder / target.format(module=values["module"])
        path.write_text(render(template, values), encoding="utf-8")
    return folder, values


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "new",
        help="create a new bot project (bot, tests, README)",
        description="Create a folder with a working bot, a pytest test that plays it against the "
        "random bot, packaging files and a README.",
    )
    parser.add_argument("name", metavar="NAME", help="the bot's name, e.g. night-owl")
    parser.add_argument("--dir", type=Path, default=Path("."), help="where to create the folder (default .)")
    parser.add_argument("--force", action="store_true", help="write into an existing folder")
    parser.set_defaults(func=run_new)


def run_new(args: argparse.Namespace) -> int:
    try:
        folder, values = create_project(args.name, args.dir, force=args.force)
    except (ProjectNameError, FileExistsError) as exc:
        print(f"tonk new: {exc}", file=sys.stderr)
        return 2
    spec = f"{values['module']}:{values['class_name']}"
    print(f"created {folder}/ with {values['module']}.py ({values['class_name']}), tests and a README")
    print(f"its requirements: {values['sdk_requirement']}, pytest")
    # Every line runs in the project's folder (the --upload below sends "."): say so first.
    print(f"next, in its folder ({values['module']}:{values['class_name']} is imported from there):")
    print(f"  cd {folder}")
    print("  python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && .venv/bin/pytest")
    print(f"  tonk play {spec} random --hands 200")
    print(f"  tonk check {spec}")
    print(f"  tonk serve {spec} --port 50051")
    print("  tonk login --arena URL --token TOKEN   # once: the arena and your token, remembered")
    print(f"  tonk submit --name {values['folder']} --upload .   # this folder: the arena builds and runs it")
    return 0
