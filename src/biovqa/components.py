"""The component registry: one entry per benchmark component (C1–C4, text-only suites).

A component declares its tasks and names, as ``"module:attribute"`` strings, the callables that
build, floor and score it, so that registering one imports nothing heavy. Each callable follows a
contract:

* ``builder``: a Typer command function (its options are the component's build options); it
  writes a benchmark folder through :func:`biovqa.manifests.write_bench`.
* ``floor``: ``floor(items: pa.Table) -> pa.Array`` of image-blind replies, one per item, in
  order (the component's floor rules; used by the ``baseline`` backend).
* ``scorer``: ``score(bench: Bench, predictions: pa.Table, options: Mapping) -> ScoreResult``, a
  pure function of its inputs.
* ``auditor`` (optional): ``audit(bench: Bench) -> list[str]``, the component's own
  verification-contract violations (e.g. C1: a rank its question needs is empty).
* ``reporter``: ``tables(summaries: list[tuple[str, dict]]) -> dict[str, pandas.DataFrame]``,
  leaderboard tables from score summaries keyed by model label, and optional
  ``figures(summaries, out_dir) -> list[Path]``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa

from .errors import BiovqaError


@dataclass(frozen=True, slots=True)
class ScoreResult:
    """Per-item scores (one row per benchmark item) and the aggregate summary (JSON-able)."""

    items: pa.Table
    summary: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Component:
    name: str
    title: str
    tasks: tuple[str, ...]
    builder: str
    floor: str
    scorer: str
    reporter: str
    auditor: str | None = None
    #: option names the scorer accepts (besides the common bootstrap/seed/level)
    score_options: frozenset[str] = frozenset()

    def load(self, role: str) -> Callable[..., Any]:
        """Import and return the callable registered for ``role`` (builder/floor/scorer/reporter)."""
        target = getattr(self, role)
        if target is None:
            raise AttributeError(f"component {self.name!r} registers no {role}")
        module_name, _, attribute = target.partition(":")
        module = importlib.import_module(module_name)
        return getattr(module, attribute)


_REGISTRY: dict[str, Component] = {}


def register(component: Component) -> Component:
    if component.name in _REGISTRY:
        raise ValueError(f"component {component.name!r} is already registered")
    _REGISTRY[component.name] = component
    return component


def get_component(name: str) -> Component:
    key = name.lower()
    if key not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY))
        raise BiovqaError(f"unknown component {name!r}", hint=f"known components: {known}")
    return _REGISTRY[key]


def components() -> tuple[Component, ...]:
    return tuple(_REGISTRY[k] for k in sorted(_REGISTRY))


register(
    Component(
        name="c1",
        title="C1 hierarchical taxonomic reasoning",
        tasks=(
            "phylum",
            "class",
            "order",
            "family",
            "genus",
            "species",
            "scientific_name",
            "common_name",
            "common_name_mcq",
        ),
        builder="biovqa.build.c1:build_command",
        floor="biovqa.build.c1:floor_responses",
        scorer="biovqa.score.c1:score",
        reporter="biovqa.report.c1:tables",
        auditor="biovqa.build.c1:audit_items",
        score_options=frozenset({"backbone", "epithet_last_word"}),
    )
)

register(
    Component(
        name="c2",
        title="C2 fine-grained attribute grounding",
        tasks=(
            "attr_bare_value",
            "attr_group_value",
            "marker_localization",
            "visibility_partset",
            "visibility_side",
            "category_mcq",
            "open_common_name",
            "open_scientific_name",
            "open_genus",
            "open_kind_of",
        ),
        builder="biovqa.build.c2:build_command",
        floor="biovqa.build.c2:floor_responses",
        scorer="biovqa.score.c2:score",
        reporter="biovqa.report.c2:tables",
        score_options=frozenset({"prefer_text"}),
    )
)
