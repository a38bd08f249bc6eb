"""The repository stands alone: no file refers to anything beside the checkout, the tests'
data is inside ``tests/``, and the hand-record format is documented here in full."""

from __future__ import annotations

import re
from pathlib import Path

from helpers.case_files import CASES
from helpers.paths import ROOT

from sdk import record

REPO = ROOT
# Built from parts so this file does not match itself.
OUTSIDE = re.compile("|".join([r"RULES\.md", "shared/" + "spec", "shared/" + "cases", r"\.\./shared",
                               "TONK_" + "SHARED_DIR", "/work/" + "shared"]))
SKIP_DIRS = {".git", ".venv", "node_modules", "build", "dist", "__pycache__", ".mypy_cache",
             ".ruff_cache", ".pytest_cache", ".hypothesis", "var"}
TEXT_SUFFIXES = {".py", ".pyi", ".md", ".proto", ".txt", ".toml", ".cfg", ".ini", ".yml", ".yaml",
                 ".json", ".js", ".html", ".css", ".sh", ".mako", ""}


def repository_files() -> list[Path]:
    found = []
    for path in REPO.rglob("*"):
        rel = path.relative_to(REPO)
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts):
            continue
        if path.is_file() and path.suffix in TEXT_SUFFIXES:
            found.append(path)
    return found


def test_no_file_refers_outside_the_repository() -> None:
    hits = []
    for path in repository_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not hits, "references to files outside the repository:\n" + "\n".join(hits)


def test_the_example_records_are_the_projects_own_data() -> None:
    assert CASES.is_relative_to(REPO / "tests")
    names = {p.name for p in CASES.glob("*.json")}
    assert {"seed-example-1.json", "seed-example-2.json"} <= names


def test_the_hand_record_doc_names_every_field_and_ending() -> None:
    doc = (REPO / "docs" / "hand-record.md").read_text(encoding="utf-8")
    for key in (*record._KNOWN, *record._OUTCOME_KEYS, "faulted", "latency_us", "faults", "onto"):
        assert f"`{key}`" in doc, key
    for end in ("tonk", "drop", "out", "stock", "cap", "fault"):
        assert f"`{end}`" in doc, end
    assert record.FORMAT in doc


def test_the_rules_doc_is_what_the_code_cites() -> None:
    """Every document under docs/ that a file cites by path exists."""
    cited = set()
    for path in repository_files():
        if path.suffix in {".py", ".proto", ".pyi", ".md"}:
            cited |= set(re.findall(r"\bdocs/[\w-]+\.md\b", path.read_text(encoding="utf-8")))
    assert "docs/rules.md" in cited and "docs/hand-record.md" in cited
    missing = sorted(c for c in cited if not (REPO / c).is_file())
    assert not missing, missing
