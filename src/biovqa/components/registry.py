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

import importlib
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

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

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


@dataclass(frozen=True, slots=True)
class Option:
    """One typed option of a component's scorer, with its default and help text."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    #: the value must lie in [low, high] (numbers only)
    low: float | None = None
    high: float | None = None

    def parse(self, value: Any) -> Any:
        """``value`` (text from the command line or a Python value) as this option's type; a bad
        value is a :class:`BiovqaError` naming the option and what it accepts."""
        if value is None:
            return self.default
        try:
            parsed = self._convert(value)
        except (TypeError, ValueError):
            raise BiovqaError(f"option {self.name!r} takes {self._expects()}, got {value!r}",
                              field=self.name) from None
        if self.choices is not None and parsed not in self.choices:
            raise BiovqaError(f"option {self.name!r} takes one of {', '.join(self.choices)}, got {value!r}",
                              field=self.name)
        if self.low is not None and parsed < self.low or self.high is not None and parsed > self.high:
            raise BiovqaError(f"option {self.name!r} must lie in [{self.low}, {self.high}], got {value!r}",
                              field=self.name)
        return parsed

    def _convert(self, value: Any) -> Any:
        if self.type is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE | _FALSE:
                return text in _TRUE
            raise ValueError(value)
        if self.type is int:
            if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if self.type is float:
            if isinstance(value, bool):
                raise ValueError(value)
            return float(value)
        if self.type is Path:
            return Path(value)
        return str(value)

    def _expects(self) -> str:
        names = {bool: "true or false", int: "a whole number", float: "a number", Path: "a path"}
        return names.get(self.type, "text")

    def describe(self) -> str:
        """One line for help texts: ``name=TYPE (default …): help``."""
        kind = "|".join(self.choices) if self.choices else self._expects()
        default = "none" if self.default is None else str(self.default).lower() if isinstance(self.default, bool) else self.default
        return f"{self.name}=<{kind}> (default {default}): {self.help}"


#: Options every scorer takes.
COMMON_SCORE_OPTIONS: tuple[Option, ...] = (
    Option("bootstrap", int, 1000, "bootstrap resamples for the confidence intervals (0: none)", low=0),
    Option("seed", int, 42, "bootstrap seed"),
    Option("level", float, 0.95, "confidence level of the intervals", low=0.5, high=0.999),
)


@dataclass(frozen=True, slots=True)
class ScoreResult:
    """Per-item scores (one row per benchmark item) and the aggregate summary (JSON-able)."""

    items: pa.Table
    summary: dict[str, Any]


#: where each role of a component is found, inside its package, unless the declaration names it
#: (``"module:attribute"``): ``{name}`` is the component's name
ROLE_CONVENTIONS: dict[str, str] = {
    "builder": "build:build_command",
    "build_function": "build:build_{name}",
    "floor": "build:floor_responses",
    "scorer": "score:score",
    "reporter": "report:tables",
}
#: optional roles: found by convention when the package has the module
OPTIONAL_ROLE_CONVENTIONS: dict[str, str] = {
    "auditor": "audit:audit_items",
    "sweep": "sweep:run_sweep",
    "rank_inputs": "replicates:rank_inputs",
}


@dataclass(frozen=True, slots=True)
class Component:
    """A benchmark component: its tasks, the callables of each stage, its score options.

    Each role (``builder``, ``scorer``, …) is found in the component's package by
    :data:`ROLE_CONVENTIONS` / :data:`OPTIONAL_ROLE_CONVENTIONS` when the registry adds it; a
    declaration names a role as ``"module:attribute"`` only where it deviates. Registered
    components carry every role's target spelled out."""

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
    #: the package whose modules the roles are found in (the registry fills it in from the
    #: declaration's module: ``biovqa.components.c1``, a plug-in's entry-point module)
    package: str | None = None

    def load(self, role: str) -> Callable[..., Any]:
        """Import and return the callable registered for ``role`` (builder/floor/scorer/…)."""
        target = getattr(self, role)
        if not target:
            raise BiovqaError(f"component {self.name!r} has no {role}")
        module_name, _, attribute = target.partition(":")
        try:
            return _load_target(target)
        except ModuleNotFoundError as exc:
            if exc.name is None or not (module_name == exc.name or module_name.startswith(exc.name + ".")):
                raise  # a dependency of the module is missing (an optional extra): not this
            problem = f"module {module_name!r} does not exist"
        except AttributeError:
            problem = f"module {module_name!r} has no {attribute!r}"
        raise MissingResourceError(f"component {self.name!r}: its {role} {target} cannot be loaded: {problem}",
                          field=role, hint=f"name it in the declaration ({role}='module:function') or add it "
                                           f"where the convention looks ({ROLE_CONVENTIONS.get(role) or OPTIONAL_ROLE_CONVENTIONS.get(role)})")

    def with_roles(self, package: str | None) -> Component:
        """This declaration with every role's ``"module:attribute"`` spelled out: a role it does
        not name is found in ``package`` by convention (an optional role only where the package
        has its module)."""
        package = self.package or package
        filled: dict[str, Any] = {"package": package}
        for role, convention in ROLE_CONVENTIONS.items():
            if not getattr(self, role):
                if package is None:
                    raise BiovqaError(f"component {self.name!r} names no {role} and has no package to find it in",
                                      field=role, hint=f"give {role}='module:function' or package='…'")
                filled[role] = f"{package}.{convention.format(name=self.name.lower())}"
        for role, convention in OPTIONAL_ROLE_CONVENTIONS.items():
            module = convention.partition(":")[0]
            if getattr(self, role) is None and package is not None and _has_module(f"{package}.{module}"):
                filled[role] = f"{package}.{convention}"
        return replace(self, **filled)

    def all_score_options(self) -> tuple[Option, ...]:
        return COMMON_SCORE_OPTIONS + self.score_options

    def resolve_score_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Every score option of this component, ``given`` values parsed and checked, defaults
        for the rest; an option this component does not declare is an error naming it."""
        declared = {option.name: option for option in self.all_score_options()}
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise BiovqaError(
                f"{self.name.upper()} scoring has no option {unknown[0]!r}{did_you_mean(unknown[0], declared)}",
                field=unknown[0],
                hint="its options: " + ", ".join(sorted(declared)) + " (see `biovqa score --help`)")
        return {name: option.parse(given.get(name)) for name, option in declared.items()}


def _load_target(target: str) -> Any:
    """The object a ``"module:attribute"`` target names (the one loader of declared roles)."""
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def _has_module(name: str) -> bool:
    """Whether module ``name`` exists, without importing it (a plain-module plug-in has no
    submodules)."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


_REGISTRY: dict[str, Component] = {}
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
    return _add(component, component.package)


def _add(component: Component, package: str | None) -> Component:
    if not isinstance(component, Component):
        raise BiovqaError(f"not a biovqa Component: {component!r}")
    key = component.name.lower()
    if key in _REGISTRY:
        raise BiovqaError(f"component {component.name!r} is already registered")
    _REGISTRY[key] = component = component.with_roles(package)
    return component


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for target in BUILTIN:
        _BUILTIN_NAMES.add(_add(_load_target(target), target.partition(":")[0]).name.lower())
    from importlib.metadata import entry_points

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            _add(_load_plugin(entry.name, entry.value, entry.load), entry.module)
        except BiovqaError as exc:
            # a broken plug-in must not take the toolkit down: the built-ins and every other
            # plug-in stay usable, asking for this one raises its error
            _BROKEN[entry.name.lower()] = exc
            warnings.warn(f"{exc.message}; {exc.hint}", PluginWarning, stacklevel=2)


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


def get_component(name: str) -> Component:
    _load_all()
    key = name.lower()
    if key not in _REGISTRY and key in _BROKEN:
        raise _BROKEN[key].with_traceback(None)
    if key not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY))
        raise BiovqaError(f"unknown component {name!r}{did_you_mean(name, _REGISTRY)}",
                          hint=f"known components: {known}")
    return _REGISTRY[key]


def list_components() -> tuple[Component, ...]:
    """Every component in leaderboard order: the built-ins as :data:`BUILTIN` lists them (C1–C4,
    then the text suites), then plug-ins by name."""
    _load_all()
    builtin = [k for k in _REGISTRY if _REGISTRY[k].name.lower() in _BUILTIN_NAMES]
    return tuple(_REGISTRY[k] for k in builtin + sorted(k for k in _REGISTRY if k not in builtin))


def component_rank(name: str) -> tuple[int, str]:
    """A sort key putting component names in :func:`list_components` order."""
    order = [component.name for component in list_components()]
    return (order.index(name.lower()), name) if name.lower() in order else (len(order), name)
