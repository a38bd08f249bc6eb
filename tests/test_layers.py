"""The floors of the house, checked on the source (imports inside functions included).

Dependencies run one way: sdk imports neither arena nor the dashboard, and arena never imports
the dashboard. Inside arena/ and sdk/ each package is a floor (docs/architecture.md): a module
imports only from lower floors and from its own package, never upward nor sideways into
another package of its floor, and no modules import each other in a circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"sdk": ("arena", "dashboard"), "arena": ("dashboard",)}

#: arena's floors, lowest first; the modules at its top level are named one by one.
ARENA_FLOORS: tuple[tuple[str, ...], ...] = (
    ("arena", "arena.config", "arena.errors", "arena.processes", "arena.text"),
    ("arena.store", "arena.sandbox"),
    ("arena.bots", "arena.ratings"),
    ("arena.link", "arena.tournaments"),
    ("arena.ladder", "arena.play", "arena.queries"),
    ("arena.runtime",),
    ("arena.commands", "arena.jobs"),
)
#: sdk's: the generated protocol, the library, then the `tonk` command and its subcommands.
SDK_FLOORS: tuple[tuple[str, ...], ...] = (
    ("sdk.protocol",),
    ("sdk",),
    ("sdk.commands", "sdk.cli"),
)


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute imports; the project uses no relative ones),
    with ``from m import n`` also giving ``m.n`` in case ``n`` is a submodule."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def modules(package: str) -> dict[str, Path]:
    """Dotted name -> file of every module of ``package`` (migrations excluded: Alembic
    revisions are frozen copies, not part of the import graph)."""
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        if "migrations" in path.parts:
            continue
        out[".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")] = path
    return out


def graph(package: str) -> dict[str, set[str]]:
    mods = modules(package)
    return {m: {n for n in imported(p) if n in mods and n != m} for m, p in mods.items()}


def room(module: str, floors: Iterable[Iterable[str]]) -> tuple[int, str]:
    """(floor, room) of ``module``: the longest named prefix decides."""
    best: tuple[int, str] | None = None
    for level, rooms in enumerate(floors):
        for name in rooms:
            inside = module == name or module.startswith(name + ".")
            if inside and (best is None or len(name) > len(best[1])):
                best = (level, name)
    if best is None:
        raise AssertionError(f"{module} is on no floor: name its package in the floors")
    return best


def wrong_way(edges: Mapping[str, set[str]], floors: tuple[tuple[str, ...], ...]) -> list[str]:
    """Every import that goes up a floor, or sideways into another room of the same floor."""
    out = []
    for source, targets in sorted(edges.items()):
        level, home = room(source, floors)
        for target in sorted(targets):
            t_level, t_home = room(target, floors)
            if t_level > level or (t_level == level and t_home != home):
                out.append(f"{source} (floor {level}) imports {target} (floor {t_level}, {t_home})")
    return out


def circles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


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


@pytest.mark.parametrize(("package", "floors"), [("arena", ARENA_FLOORS), ("sdk", SDK_FLOORS)])
def test_nothing_imports_upward_or_sideways(package: str, floors: tuple[tuple[str, ...], ...]) -> None:
    assert wrong_way(graph(package), floors) == []


@pytest.mark.parametrize("package", ["arena", "sdk"])
def test_no_import_circles(package: str) -> None:
    assert circles(graph(package)) == []


def test_arena_top_level_holds_few_modules() -> None:
    """The floors are folders: the top level keeps only the ground floor and the old job path."""
    top = sorted(p.name for p in (ROOT / "arena").glob("*.py"))
    assert len(top) <= 6, top


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from dashboard.queries import cache\n    import dashboard.db\n")
    assert {"dashboard.queries", "dashboard.db"} <= imported(module)


def test_the_checks_catch_an_upward_import_a_sideways_one_and_a_circle() -> None:
    floors = (("p.low",), ("p.a", "p.b"), ("p.top",))
    edges = {"p.low.x": {"p.a.y"}, "p.a.y": {"p.b.z"}, "p.b.z": set(), "p.top.t": {"p.low.x"}}
    assert wrong_way(edges, floors) == [
        "p.a.y (floor 1) imports p.b.z (floor 1, p.b)",
        "p.low.x (floor 0) imports p.a.y (floor 1, p.a)",
    ]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    with pytest.raises(AssertionError, match="on no floor"):
        room("q.x", floors)
