"""The package layout holds: shared stages never reach into a component, components never reach
into each other, nothing below the command line reaches up into it, and modules import each other
in no cycle.

Every import counts, wherever it is written: at module level, inside a function (the lazy imports
that keep ``biovqa --help`` fast), as ``__import__("biovqa…")``/``importlib.import_module("biovqa…")``
with a literal name, or relative. Only ``if TYPE_CHECKING:`` blocks are left out: they never run.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import biovqa

ROOT = Path(biovqa.__file__).parent
SHARED = ("sources", "taxonomy", "bench", "engine", "scoring", "stats", "reporting", "interop", "text", "arguments",
          "records", "errors", "progress")
#: the top layer: it may import any stage and any component, and nothing below imports it
TOP = ("cli", "demo", "__main__")

#: cycles kept on purpose, each with the reason it is harmless (a ⇄ b, a < b)
ALLOWED_CYCLES = {
    "biovqa.bench.folder ⇄ biovqa.bench.hub":
        "open_bench is the one entry for every benchmark reference and hands an exported folder or "
        "hf:// id to the release reader, which builds on the folder module; the hand-off is a "
        "function-level import, so neither module needs the other to import",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
            or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _dynamic_import(node: ast.Call) -> str | None:
    """The literal module name of ``__import__("…")`` or ``importlib.import_module("…")``."""
    func = node.func
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if called in ("__import__", "import_module") and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def imports(name: str, path: Path) -> dict[str, int]:
    """Every biovqa module or module attribute ``name`` imports, anywhere in it → the first line."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, int] = {}

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for branch in child.orelse:
                    visit_node(branch)
            else:
                visit_node(child)

    def visit_node(node: ast.AST) -> None:
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            found.setdefault(base, node.lineno)
            for alias in node.names:
                found.setdefault(f"{base}.{alias.name}", node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.setdefault(alias.name, node.lineno)
        elif isinstance(node, ast.Call) and (target := _dynamic_import(node)) is not None:
            found.setdefault(target, node.lineno)
        visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {target: line for target, line in found.items() if target == "biovqa" or target.startswith("biovqa.")}


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}
IMPORTS = {name: imports(name, path) for name, path in MODULES.items()}


def stage_of(name: str) -> str:
    return name.split(".")[1] if "." in name else ""


def test_the_scan_sees_function_level_relative_and_dynamic_imports() -> None:
    """The scan itself, on modules whose imports are known: a lazy import inside a function
    (the CLI's ``score`` command), ``__import__`` of a literal name (the CLI's command
    registration) and an ``if TYPE_CHECKING:`` import (not counted)."""
    main = IMPORTS["biovqa.cli.main"]
    assert "biovqa.scoring.pipeline" in main  # inside the score command's body
    assert "biovqa.cli.analyze" in main  # __import__("biovqa.cli.analyze", …)
    registry = IMPORTS["biovqa.components.registry"]
    assert "biovqa.errors" in registry and "biovqa.bench" not in registry
    assert "biovqa.cli" in MODULES and "biovqa.demo" in MODULES  # the top layer is scanned too


def test_shared_stages_do_not_import_components() -> None:
    offenders = [f"{name}:{line} → {target}" for name, found in IMPORTS.items() if stage_of(name) in SHARED
                 for target, line in found.items()
                 if target.startswith("biovqa.components.") and not target.startswith("biovqa.components.registry")]
    assert offenders == []


def test_components_do_not_import_each_other() -> None:
    offenders = []
    for name, found in IMPORTS.items():
        parts = name.split(".")
        if len(parts) >= 3 and parts[1] == "components" and parts[2] != "registry":
            for target, line in found.items():
                other = target.split(".")
                if len(other) >= 3 and other[1] == "components" and other[2] not in (parts[2], "registry"):
                    offenders.append(f"{name}:{line} → {target}")
    assert offenders == []


def test_nothing_below_the_command_line_imports_it() -> None:
    """Stages and components are a library: the CLI and the demo use them, never the reverse."""
    offenders = [f"{name}:{line} → {target}" for name, found in IMPORTS.items()
                 if stage_of(name) not in TOP and name != "biovqa"
                 for target, line in found.items() if stage_of(target) in TOP]
    assert offenders == []


def test_modules_import_each_other_in_no_cycle() -> None:
    """No two modules reach each other through imports at any level (a package and its own
    submodules excepted: a package ``__init__`` re-exporting its parts is the package's API)."""
    graph = {name: {t for t in found if t in MODULES and t != name} for name, found in IMPORTS.items()}

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

    def related(a: str, b: str) -> bool:
        return b.startswith(a + ".") or a.startswith(b + ".")

    cycles = {f"{min(a, b)} ⇄ {max(a, b)}" for a in graph for b in graph[a] if not related(a, b) and reaches(b, a)}
    assert sorted(cycles - set(ALLOWED_CYCLES)) == []
    assert sorted(set(ALLOWED_CYCLES) - cycles) == []  # an allowance whose cycle is gone goes too


def test_status_and_file_name_constants_are_defined_once() -> None:
    """A module-level ``*_STATUSES`` or ``*_FILE`` constant has one home; others import it (two
    copies drift: a predictions ``PREDICTION_STATUSES`` once lacked the ``missing`` that C1's had).

    The one exception is a role's own vocabulary: each component's ``parse`` module names the
    values of its ``parse_status`` column ``PARSE_STATUSES`` (C1's resolution tiers are not C4's
    yes/no tiers), as each ``tasks`` module names its records ``TASKS``."""
    homes: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            for target in targets:
                if isinstance(target, ast.Name) and target.id.endswith(("_STATUSES",)):
                    homes.setdefault(target.id, []).append(name)
    parse_roles = homes.pop("PARSE_STATUSES", [])
    assert parse_roles and all(re.fullmatch(r"biovqa\.components\.\w+\.parse", name) for name in parse_roles)
    assert {constant: modules for constant, modules in homes.items() if len(modules) > 1} == {}
    assert homes["PREDICTION_STATUSES"] == ["biovqa.records"]


#: shared modules allowed to spell a built-in component's name, each with the reason it is not a
#: component fact living in the wrong place
NAMES_ALLOWED = {
    "biovqa.interop.inspect_tasks":
        "inspect_ai finds a task by its function's name: one @task function per built-in component, "
        "the harness's entry points (as cli/c4.py is the command line's)",
    "biovqa.reporting.glossary": "its keys are Table 3 column names, and 'bagel' and 'hca' name columns too",
    "biovqa.stats.hierarchy": "'hca' is the hierarchical consistent accuracy metric, not the component",
}
#: the command line's per-component command modules (named in the declarations' ``commands``)
COMMAND_MODULES = ("biovqa.cli.c4", "biovqa.cli.specialist")


def _builtin_names() -> set[str]:
    from biovqa.components.registry import builtin_components

    return {component.name for component in builtin_components()}


def _declared_columns() -> list[set[str]]:
    """Each built-in declaration's column lists (Lite strata, the browser's explaining, group and
    tier columns), and per browser list the built-ins' union of it (the browser once held every
    component's group columns in one tuple)."""
    from biovqa.components.registry import builtin_components

    components = builtin_components()
    lists = [component.lite_strata for component in components]
    for field in ("explain_columns", "group_columns", "tier_columns"):
        declared = [getattr(component, field) for component in components]
        lists += [*declared, sum(declared, ())]
    return [set(columns) for columns in lists if columns]


def test_no_shared_stage_names_a_builtin_component() -> None:
    """A component's facts (token caps, request mode, Lite strata, sources, analysis columns,
    commands, demo, the browser's columns) live in its declaration: no module outside
    ``components/`` (the per-component command modules and the allowances above excepted) holds a
    string literal that is exactly a built-in component's name (``"c1"``, ``"bagel"``…), nor a
    tuple or list of two or more column names all from one declaration's ``lite_strata``,
    ``explain_columns``, ``group_columns`` or ``tier_columns``, or from all declarations' browser
    columns of one kind (the engine's ``--limit`` once had C1's ``("group", "tier")``, the report
    browser every component's tier columns). Prose and examples inside longer strings do not
    count."""
    names = _builtin_names()
    declared_columns = _declared_columns()
    offenders = []
    for name, path in MODULES.items():
        if stage_of(name) == "components" or name in COMMAND_MODULES or name in NAMES_ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in names:
                offenders.append(f"{name}:{node.lineno} {node.value!r}")
            if isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) >= 2 and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                values = {e.value for e in node.elts if isinstance(e, ast.Constant)}
                if any(values <= declared for declared in declared_columns):
                    offenders.append(f"{name}:{node.lineno} {sorted(values)} (a component's declared columns)")
    assert offenders == []
    assert sorted(set(NAMES_ALLOWED) - set(MODULES)) == []  # an allowance for a module that is gone goes too


def test_declared_targets_stay_in_their_component() -> None:
    """The ``"module:attribute"`` targets a declaration names are imports the registry makes for
    it, so they follow the layering too: every role of a built-in lives in its own package, and a
    declared command in its package or in one of the command line's per-component modules."""
    from biovqa.components.registry import OPTIONAL_ROLE_CONVENTIONS, ROLE_CONVENTIONS, builtin_components

    offenders = []
    for component in builtin_components():
        package = component.package or ""
        for role in (*ROLE_CONVENTIONS, *OPTIONAL_ROLE_CONVENTIONS, "figures"):
            target = getattr(component, role)
            if target and not target.startswith(package + "."):
                offenders.append(f"{component.name}.{role} = {target}")
        for command in component.commands:
            module = command.target.partition(":")[0]
            if not (module.startswith(package + ".") or module in COMMAND_MODULES):
                offenders.append(f"{component.name} command {command.name} = {command.target}")
    assert offenders == []
