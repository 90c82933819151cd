"""The package layout holds: shared stages never reach into a component, components never reach
into each other, and module-level imports have no cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import biovqa

ROOT = Path(biovqa.__file__).parent
SHARED = ("sources", "taxonomy", "bench", "engine", "scoring", "stats", "reporting", "text",
          "records", "errors")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, *, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("biovqa")}


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}


def test_shared_stages_do_not_import_components() -> None:
    offenders = []
    for name, path in MODULES.items():
        stage = name.split(".")[1] if "." in name else ""
        if stage in SHARED:
            for target in imports(path, top_level_only=False):
                if target.startswith("biovqa.components.") and not target.startswith("biovqa.components.registry"):
                    offenders.append(f"{name} → {target}")
    assert offenders == []


def test_components_do_not_import_each_other() -> None:
    offenders = []
    for name, path in MODULES.items():
        parts = name.split(".")
        if len(parts) >= 3 and parts[1] == "components" and parts[2] != "registry":
            for target in imports(path, top_level_only=False):
                other = target.split(".")
                if len(other) >= 3 and other[1] == "components" and other[2] not in (parts[2], "registry"):
                    offenders.append(f"{name} → {target}")
    assert offenders == []


def test_module_level_imports_have_no_cycles() -> None:
    graph = {name: {t for t in imports(path, top_level_only=True) if t in MODULES and t != name}
             for name, path in MODULES.items()}

    def reaches(start: str, goal: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            for target in graph[todo.pop()]:
                if target == goal:
                    return True
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return False

    cycles = sorted(f"{a} ⇄ {b}" for a in graph for b in graph[a] if a < b and reaches(b, a)
                    and not (b.startswith(a + ".") or a.startswith(b + ".")))
    assert cycles == []
