"""Dependencies run one way: sdk imports neither arena nor the dashboard, and arena (with its
read side, arena/queries, which the dashboard and the ``tonk`` commands share) never imports
the dashboard. Checked on the source, imports inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"sdk": ("arena", "dashboard"), "arena": ("dashboard",)}


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute imports; the project uses no relative ones)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def violations(package: str) -> list[str]:
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in sorted(imported(path)):
            if name.split(".")[0] in FORBIDDEN[package]:
                out.append(f"{path.relative_to(ROOT)} imports {name}")
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_dependencies_run_one_way(package: str) -> None:
    assert violations(package) == []


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from dashboard.queries import cache\n    import dashboard.db\n")
    assert imported(module) == {"dashboard.queries", "dashboard.db"}
