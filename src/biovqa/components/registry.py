"""The component registry: one entry per benchmark component (C1–C4, text-only suites).

A component is a package ``biovqa/components/<name>/`` whose ``__init__`` declares one
:class:`Component`. Listing components imports nothing heavy: each role (the callables that
build, floor, score and report it) is found in the package by a naming convention
(:data:`ROLE_CONVENTIONS`, e.g. the scorer is ``<package>.score:score``) and imported only when
used; a declaration names a role as ``"module:attribute"`` only where it deviates. Each callable
follows a contract:

* ``builder``: a Typer command function (its parameters are the component's build options,
  typed, with defaults and help: ``biovqa build <name> --help`` shows them); it writes a
  benchmark folder through :func:`biovqa.bench.write_bench`.
* ``build_function``: the same build as a Python function returning the opened
  :class:`~biovqa.bench.Bench` (what :func:`biovqa.build` calls).
* ``floor``: ``floor(items: pa.Table) -> pa.Array`` of image-blind replies, one per item, in
  order (the component's floor rules; used by the ``baseline`` backend).
* ``scorer``: ``score(bench: Bench, predictions: pa.Table, options: dict) -> ScoreResult``, a
  pure function of its inputs. ``predictions`` is aligned with ``bench.items`` (columns
  ``item_id, response, status``); ``options`` holds every declared score option, defaults
  filled in. The result follows the score schema (:mod:`biovqa.scoring.schema`).
* ``reporter``: ``tables(summaries: list[tuple[str, dict]]) -> dict[str, pandas.DataFrame]``,
  leaderboard tables from score summaries keyed by model label, and optional
  ``figures(summaries, out_dir) -> list[Path]`` in the same module.
* ``auditor`` (optional): ``audit(bench: Bench) -> list[str]``, the component's own
  verification-contract violations (e.g. C1: a rank its question needs is empty).
* ``sweep`` (optional): ``sweep(bench, predictions_by_model: dict[str, pa.Table], options) ->
  dict``, a sensitivity analysis over several models (C2: the kernel sweep).

Components shipped with biovqa are listed in :data:`BUILTIN`; another installed package adds
its own through the ``biovqa.components`` entry-point group (the entry point names a
:class:`Component`). A plug-in that fails to load is a :class:`PluginWarning` naming it, and
the rest of the registry stays usable; :func:`get_component` of that name raises its error.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable

from biovqa.components.options import COMMON_SCORE_OPTIONS, Option, ScoreOptions
from biovqa.errors import BiovqaError, MissingResourceError, did_you_mean

if TYPE_CHECKING:
    import pyarrow as pa

#: The components shipped with biovqa: adding one is one line here.
BUILTIN: tuple[str, ...] = (
    "biovqa.components.c1:COMPONENT",
    "biovqa.components.c2:COMPONENT",
    "biovqa.components.c3:COMPONENT",
    "biovqa.components.c4:COMPONENT",
    "biovqa.components.bagel:COMPONENT",
    "biovqa.components.hca:COMPONENT",
)
ENTRY_POINT_GROUP = "biovqa.components"

class ScoreResult:
    """Per-item scores (one row per benchmark item) and the aggregate summary (JSON-able).

    A scorer gives the summary itself, or ``aggregate``: the function that computes it from the
    per-item scores, run on the first read of :attr:`summary`. A caller that takes :attr:`items`
    first then overlaps its own work with the aggregation (``biovqa score`` writes the per-item
    table while the bootstrap runs). ``release`` frees what the aggregation holds (bootstrap
    draws on a worker thread); it runs once, after the aggregation or from :meth:`close` where
    the summary is never read (the caller closes the result when done with it)."""

    __slots__ = ("items", "_summary", "_aggregate", "_release")

    def __init__(self, items: pa.Table, summary: dict[str, Any] | None = None, *,
                 aggregate: Callable[[], dict[str, Any]] | None = None,
                 release: Callable[[], None] | None = None) -> None:
        if (summary is None) == (aggregate is None):
            raise TypeError("ScoreResult takes a summary or an aggregate function, not both or neither")
        self.items = items
        self._summary = summary
        self._aggregate = aggregate
        self._release = release

    @property
    def summary(self) -> dict[str, Any]:
        if self._summary is None:
            aggregate, self._aggregate = self._aggregate, None
            if aggregate is None:
                raise RuntimeError("this score result's aggregation failed; score again")
            try:
                self._summary = aggregate()
            finally:
                self.close()
        return self._summary

    def close(self) -> None:
        """Release what the aggregation holds, once (a no-op after it ran)."""
        release, self._release = self._release, None
        if release is not None:
            release()

    def __enter__(self) -> ScoreResult:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


#: where each role of a component is found, inside its package, unless the declaration names it
#: (``"module:attribute"``): ``{name}`` is the component's name. Every component package has the
#: same role modules: ``tasks.py`` (``TASKS``, one frozen spec record per task), ``prompts.py``,
#: ``build.py`` or a ``build/`` package, ``parse.py``, ``floor.py``, ``score.py``, ``summary.py``,
#: ``report.py``, ``rank.py``, optional ``audit.py``, ``sweep.py``, ``demo.py``.
ROLE_CONVENTIONS: dict[str, str] = {
    "builder": "build:build_command",
    "build_function": "build:build_{name}",
    "floor": "floor:floor_responses",
    "scorer": "score:score",
    "reporter": "report:tables",
}
#: optional roles: found by convention when the package has the module and the module defines
#: the attribute
OPTIONAL_ROLE_CONVENTIONS: dict[str, str] = {
    "auditor": "audit:audit_items",
    "sweep": "sweep:run_sweep",
    "rank_inputs": "rank:rank_inputs",
    "preparer": "score:prepare",
    "summarizer": "summary:summarize",
    "task_specs": "tasks:TASKS",
    "demo": "demo:run_demo",
}
#: what a benchmark manifest counts for a component that declares nothing else (``counts.by_task``)
DEFAULT_MANIFEST_COUNTS: tuple[str, ...] = ("task",)


@dataclass(frozen=True, slots=True)
class AnalysisColumn:
    """One task column of the cross-component analysis (paper App. J.1: the 27 tasks), read from
    this component's score summaries: ``label`` is the matrix column, ``path`` the keys leading
    to its estimate in ``summary.json``; ``control`` marks a negative control (C3's OCR) that
    the analysis leaves out unless asked."""

    label: str
    path: tuple[str, ...]
    control: bool = False


@dataclass(frozen=True, slots=True)
class Command:
    """A command a component adds to the command line besides ``biovqa build <name>``:
    ``target`` (``"module:attribute"``) is a Typer app (a command group) or a command function,
    imported only when that command runs or shows its help; ``group`` names the shared group it
    joins (``"specialist"``: ``biovqa specialist <name>``), None for a top-level command."""

    name: str
    target: str
    help: str
    group: str | None = None


@dataclass(frozen=True, slots=True)
class DemoContext:
    """What a component's ``run_demo(context) -> list[Path]`` (its part of ``biovqa demo``)
    gets: the demo folder, the bundled demo data, a way to say one line, the benchmarks built
    so far by component name (the hierarchical suite builds from C1's), ``folder(name)``, which
    claims an entry of the demo folder before the component writes it (a later demo replaces
    only what was claimed), and ``score_baseline(bench, name, label=…)``, which audits a built
    benchmark, runs the image-blind baseline on it and scores it (``run-baseline-<name>``,
    ``scores-baseline-<name>``), returning the score folder."""

    out: Path
    data: Path
    say: Callable[[str], Any]
    folder: Callable[[str], Path]
    score_baseline: Callable[..., Path]
    benches: dict[str, Path] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Component:
    """A benchmark component: its tasks, the callables of each stage, its score options.

    Each role (``builder``, ``scorer``, …) is found in the component's package by
    :data:`ROLE_CONVENTIONS` (when the registry adds it) / :data:`OPTIONAL_ROLE_CONVENTIONS`
    (when the registry first hands it out: only then are its modules' sources read); a
    declaration names a role as ``"module:attribute"`` only where it deviates. A component the
    registry hands out carries every role's target spelled out."""

    name: str
    title: str
    tasks: tuple[str, ...]
    builder: str = ""
    build_function: str = ""
    floor: str = ""
    scorer: str = ""
    reporter: str = ""
    auditor: str | None = None
    sweep: str | None = None
    #: options of this component's scorer, besides :data:`COMMON_SCORE_OPTIONS`
    score_options: tuple[Option, ...] = ()
    #: the leaderboard's short column names for this component (Table 3), in order
    table3: tuple[str, ...] = field(default=())
    #: ``rank_inputs(items) -> {Table 3 column: ColumnItems}`` for the leaderboard's rank
    #: bootstrap (:mod:`biovqa.reporting.replicates`), and the score-table columns it reads
    rank_inputs: str | None = None
    rank_columns: tuple[str, ...] = field(default=())
    #: ``prepare(bench, options) -> prepared``: the scorer's work that needs the benchmark but
    #: not the replies (reading and checking item columns, starting the bootstrap draws), found
    #: beside the scorer. ``biovqa score`` runs it on a worker thread while it reads and aligns
    #: the predictions, then calls ``score(bench, aligned, options, prepared=prepared)``; the
    #: scorer prepares for itself when called without it. A ``prepared`` with ``close()`` is
    #: closed by the pipeline where the scorer is never reached, else by the scorer's result
    preparer: str | None = None
    #: ``summarize(scored, items, options) -> dict``: the summary's aggregation (found by
    #: convention; the scorer calls it, shared stages do not)
    summarizer: str | None = None
    #: ``TASKS``: the component's frozen spec records, one per task / family / question type
    task_specs: str | None = None
    #: ``figures(summaries, out_dir) -> list[Path]``: found beside the reporter (its module's
    #: ``figures``) when the declaration does not name it
    figures: str | None = None
    #: ``run_demo(context) -> list[Path]``: this component's part of ``biovqa demo``
    #: (:class:`biovqa.demo.DemoContext`), the score folders it wrote
    demo: str | None = None
    # -- facts shared stages read (so that none of them names a component) ------------------
    #: the cap on generated tokens for this component's requests (None: the engine's default;
    #: an item's own ``max_new_tokens`` and ``--max-new-tokens`` override it)
    max_new_tokens: int | None = None
    #: the ``parameters`` key of the benchmark manifest that names the request mode when it is
    #: not ``prompt_mode`` (BAGEL's builds record ``mode``)
    request_mode_parameter: str | None = None
    #: whether a model preset's system message applies to this component's requests (paper
    #: App. B.2: Gemma-3/Gemma-4's taxonomy-expert system message, on C1 and C2 only)
    preset_system_message: bool = False
    #: the item columns whose values make a stratum of the per-task sample (Bio-VQA-Lite,
    #: ``biovqa run --limit``) within each task (absent columns are skipped; ``n_options`` is
    #: the number of answer options)
    lite_strata: tuple[str, ...] = ()
    #: the item columns whose per-value counts the benchmark manifest records beside the total
    #: (``counts.by_<column>``, rechecked by ``biovqa audit``; absent columns are skipped)
    manifest_counts: tuple[str, ...] = DEFAULT_MANIFEST_COUNTS
    #: the source datasets its items come from (keys of the release card's licence table)
    sources: tuple[str, ...] = ()
    #: this component's task columns in the cross-component analysis (paper App. J.1)
    analysis_columns: tuple[AnalysisColumn, ...] = ()
    #: commands this component adds to the command line (``biovqa c4 embed``, a specialist)
    commands: tuple[Command, ...] = ()
    #: the score-table columns that explain a reply, shown beside the parsed answer in a harness
    #: explanation (an inspect_ai sample's score explanation) and beside each reply in the
    #: report's item browser (absent columns are skipped)
    explain_columns: tuple[str, ...] = ()
    #: the item columns of the report browser's group facet, in order: an item's group is the
    #: first with a value for it ("" where none has one)
    group_columns: tuple[str, ...] = ()
    #: the item columns of the report browser's tier facet (tier, condition), first with a value
    tier_columns: tuple[str, ...] = ()
    #: the package whose modules the roles are found in (the registry fills it in from the
    #: declaration's module: ``biovqa.components.c1``, a plug-in's entry-point module)
    package: str | None = None

    def load(self, role: str) -> Callable[..., Any]:
        """Import and return the callable registered for ``role`` (builder/floor/scorer/…).
        The scorer comes wrapped so that its options are resolved once, here, into this
        component's :class:`ScoreOptions` record (:meth:`score_options_record`)."""
        target = getattr(self, role)
        if not target:
            raise BiovqaError(f"component {self.name!r} has no {role}")
        convention = ROLE_CONVENTIONS.get(role) or OPTIONAL_ROLE_CONVENTIONS.get(role)
        loaded = load_target(target, what=f"component {self.name!r}: its {role}", field=role,
                             hint=f"name it in the declaration ({role}='module:function') or add it "
                                  f"where the convention looks ({convention})")
        if role == "preparer":  # prepare(bench, options)
            return self._with_resolved_options(loaded, leading=1)
        return self._with_resolved_options(loaded) if role in ("scorer", "sweep") else loaded

    def _with_resolved_options(self, function: Callable[..., Any], leading: int = 2) -> Callable[..., Any]:
        """``function`` with its options argument, the one after the ``leading`` others (the bench,
        and the predictions of a scorer or a sweep), resolved once: a record of this component
        passes through, anything else (a mapping, or None) is parsed and checked. Keywords such
        as a scorer's ``prepared`` pass through."""
        import functools

        @functools.wraps(function)
        def with_options(*arguments: Any, **keywords: Any) -> Any:
            given = arguments[leading] if len(arguments) > leading else keywords.pop("options", None)
            return function(*arguments[:leading], self.resolve_score_options(given or {}), **keywords)

        return with_options

    def with_roles(self, package: str | None) -> Component:
        """This declaration with every role's ``"module:attribute"`` spelled out: a role it does
        not name is found in ``package`` by convention (an optional role only where the package
        has its module and the module defines the attribute)."""
        return self._with_required_roles(package)._with_optional_roles()

    def _with_required_roles(self, package: str | None) -> Component:
        """The required roles spelled out (no module is read): an error where one is neither
        named nor findable."""
        package = self.package or package
        filled: dict[str, Any] = {"package": package}
        for role, convention in ROLE_CONVENTIONS.items():
            if not getattr(self, role):
                if package is None:
                    raise BiovqaError(f"component {self.name!r} names no {role} and has no package to find it in",
                                      field=role, hint=f"give {role}='module:function' or package='…'")
                convention = convention.format(name=self.name.lower())
                filled[role] = f"{package}.{convention}"
        return replace(self, **filled)

    def _with_optional_roles(self) -> Component:
        """The optional roles found by convention (each module's source is read, not imported)."""
        filled: dict[str, Any] = {}
        if self.package is not None:
            for role, convention in OPTIONAL_ROLE_CONVENTIONS.items():
                if getattr(self, role) is None:
                    filled[role] = _found(self.package, convention)
        if self.figures is None:
            reporter_module = self.reporter.partition(":")[0]
            if "figures" in _top_level_names(reporter_module):
                filled["figures"] = f"{reporter_module}:figures"
        return replace(self, **filled)

    def all_score_options(self) -> tuple[Option, ...]:
        """Every score option: :data:`COMMON_SCORE_OPTIONS`, each replaced by the component's
        own declaration of the same name (C3 and C4 declare their own ``bootstrap`` default),
        then the component's other options."""
        own = {option.name: option for option in self.score_options}
        common = tuple(own.pop(option.name, option) for option in COMMON_SCORE_OPTIONS)
        return common + tuple(own.values())

    def resolve_score_options(self, given: Mapping[str, Any]) -> ScoreOptions:
        """Every score option of this component, ``given`` values parsed and checked, defaults
        for the rest, as this component's frozen :class:`ScoreOptions` record; an option this
        component does not declare is an error naming it. A record of this component is
        returned as it is (options are resolved once)."""
        record_type = self.score_options_record()
        if type(given) is record_type:
            return given
        declared = {option.name: option for option in self.all_score_options()}
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise BiovqaError(
                f"{self.name.upper()} scoring has no option {unknown[0]!r}{did_you_mean(unknown[0], declared)}",
                field=unknown[0],
                hint="its options: " + ", ".join(sorted(declared)) + " (see `biovqa score --help`)")
        return record_type(**{name: option.parse(given.get(name)) for name, option in declared.items()})

    def score_options_record(self) -> type[ScoreOptions]:
        """The frozen record type of this component's resolved score options: one attribute per
        declared option (``options.tau``), made once per declaration."""
        return _record_type(self.name, self.all_score_options())


@functools.lru_cache(maxsize=None)
def _record_type(name: str, options: tuple[Option, ...]) -> type[ScoreOptions]:
    from dataclasses import make_dataclass

    title = "".join(part.capitalize() for part in name.replace("-", "_").split("_") if part)
    record = make_dataclass(f"{title}ScoreOptions", [(option.name, Any) for option in options],
                            bases=(ScoreOptions,), frozen=True, eq=False, slots=True)
    record._component = name  # type: ignore[attr-defined]
    record._restore = _restore_options  # type: ignore[attr-defined]
    return record


def _restore_options(component: str, values: dict[str, Any]) -> ScoreOptions:
    return get_component(component).resolve_score_options(values)


def load_target(target: str, *, what: str = "", field: str | None = None, hint: str | None = None) -> Any:
    """The object a ``"module:attribute"`` target names (the one loader of declared roles and
    commands). A module or attribute that does not exist is a :class:`MissingResourceError`
    saying ``what`` could not be loaded; a missing dependency of the module (an optional extra)
    propagates as the ImportError it is."""
    module_name, _, attribute = target.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise  # a dependency of the module is missing (an optional extra): not this
        problem = f"module {module_name!r} does not exist"
    except AttributeError:
        problem = f"module {module_name!r} has no {attribute!r}"
    raise MissingResourceError(f"{what or 'the target'} {target} cannot be loaded: {problem}", field=field,
                               hint=hint or "check the declaration that names it")


def _found(package: str, location: str) -> str | None:
    """``package.location`` (``"module:attribute"``) when that module exists and defines the
    attribute at its top level, read from the module's source without importing it (listing
    components stays cheap); None when it does not."""
    module, _, attribute = location.partition(":")
    return f"{package}.{location}" if attribute in _top_level_names(f"{package}.{module}") else None


def _top_level_names(module: str) -> frozenset[str]:
    """The names module ``module`` defines or imports at its top level (empty when it does not
    exist or is not Python source)."""
    import ast
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ModuleNotFoundError, ValueError):
        return frozenset()
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return frozenset()
    try:
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return frozenset()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).partition(".")[0] for alias in node.names)
    return frozenset(names)


_REGISTRY: dict[str, Component] = {}
#: registered components whose optional roles are still to be found (:func:`_handed`)
_OPTIONAL_ROLES_PENDING: set[str] = set()
_BUILTIN_NAMES: set[str] = set()
#: plug-ins that failed to load, by entry-point name: asking for one raises its error
_BROKEN: dict[str, BiovqaError] = {}
_LOADED = False


class PluginWarning(UserWarning):
    """An installed plug-in (entry point) could not be loaded; everything else keeps working."""


def register(component: Component) -> Component:
    """Add a component (e.g. from a test or a notebook); its name must be new. Roles it does not
    name are found in its ``package`` by convention."""
    _load_all()
    return _handed(_add(component, component.package).name.lower())


def _add(component: Component, package: str | None) -> Component:
    if not isinstance(component, Component):
        raise BiovqaError(f"not a biovqa Component: {component!r}")
    key = component.name.lower()
    if key in _REGISTRY:
        raise BiovqaError(f"component {component.name!r} is already registered")
    # the optional roles are looked up when the component is first handed out (reading the
    # sources of every component's modules cost each command 50 ms)
    _REGISTRY[key] = component = component._with_required_roles(package)
    _OPTIONAL_ROLES_PENDING.add(key)
    return component


def _handed(key: str) -> Component:
    """The registered component ``key`` with its optional roles found."""
    if key in _OPTIONAL_ROLES_PENDING:
        _REGISTRY[key] = _REGISTRY[key]._with_optional_roles()
        _OPTIONAL_ROLES_PENDING.discard(key)
    return _REGISTRY[key]


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for target in BUILTIN:
        _BUILTIN_NAMES.add(_add(load_target(target), target.partition(":")[0]).name.lower())
    from importlib.metadata import entry_points

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            _add(_load_plugin(entry.name, entry.value, entry.load), entry.module)
        except BiovqaError as exc:
            # a broken plug-in must not take the toolkit down: the built-ins and every other
            # plug-in stay usable, asking for this one raises its error
            _BROKEN[entry.name.lower()] = exc
            warnings.warn(f"{exc.message}; {exc.hint}", PluginWarning, stacklevel=2)


def builtin_components() -> tuple[Component, ...]:
    """The components shipped with biovqa, in :data:`BUILTIN` order, without looking at any
    installed plug-in: what the command line's own help lists (a broken plug-in cannot touch
    ``biovqa --help``)."""
    if _LOADED:
        return tuple(c for c in list_components() if c.name.lower() in _BUILTIN_NAMES)
    return _builtin_declarations()


@functools.lru_cache(maxsize=1)
def _builtin_declarations() -> tuple[Component, ...]:
    return tuple(load_target(target).with_roles(target.partition(":")[0]) for target in BUILTIN)


def plugin_errors() -> Mapping[str, BiovqaError]:
    """The component plug-ins that failed to load, by entry-point name (lower case), each with
    the error :func:`get_component` raises for it."""
    _load_all()
    return dict(_BROKEN)


def _load_plugin(name: str, value: str, load: Callable[[], Any]) -> Component:
    """The :class:`Component` an entry point names, or an error naming the entry point, what
    went wrong (in one line) and what to do."""
    what = f"the component plug-in {name!r} ({value}, entry-point group {ENTRY_POINT_GROUP})"
    hint = "fix or uninstall the package that provides it (`pip show` names it)"
    try:
        component = load()
    except Exception as exc:  # noqa: BLE001 - whatever a third-party import raises is reported
        first_line = (str(exc).strip().splitlines() or [""])[0]
        raise BiovqaError(f"{what} failed to load: {type(exc).__name__}: {first_line}", hint=hint) from None
    if not isinstance(component, Component):
        raise BiovqaError(f"{what} is a {type(component).__name__}, not a biovqa Component", hint=hint)
    if component.name.lower() in _REGISTRY:
        raise BiovqaError(f"{what} declares the component {component.name!r}, which is already registered",
                          hint=hint)
    return component


def find_component(name: str) -> Component | None:
    """The registered component ``name`` (any case), or None where no component has that name; a
    plug-in of that name that failed to load raises its load error."""
    _load_all()
    key = name.lower()
    if key not in _REGISTRY and key in _BROKEN:
        raise _BROKEN[key].with_traceback(None)
    return _handed(key) if key in _REGISTRY else None


def get_component(name: str) -> Component:
    """:func:`find_component`, where an unknown name is an error naming the known ones."""
    component = find_component(name)
    if component is None:
        known = ", ".join(sorted(_REGISTRY))
        raise BiovqaError(f"unknown component {name!r}{did_you_mean(name, _REGISTRY)}",
                          hint=f"known components: {known}")
    return component


def list_components() -> tuple[Component, ...]:
    """Every component in leaderboard order: the built-ins as :data:`BUILTIN` lists them (C1–C4,
    then the text suites), then plug-ins by name."""
    _load_all()
    builtin = [k for k in _REGISTRY if _REGISTRY[k].name.lower() in _BUILTIN_NAMES]
    return tuple(_handed(k) for k in builtin + sorted(k for k in _REGISTRY if k not in builtin))


def component_rank(name: str) -> tuple[int, str]:
    """A sort key putting component names in :func:`list_components` order."""
    order = [component.name for component in list_components()]
    return (order.index(name.lower()), name) if name.lower() in order else (len(order), name)
