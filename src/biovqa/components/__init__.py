"""Benchmark components (C1–C4, text suites): one package each, behind one registry.

Each ``components/<name>/`` package holds everything about its component — tasks and prompts,
build, floor, parser, scorer, summary, report tables, audit — and nothing in one component imports
another. :mod:`biovqa.components.registry` lists them; a lab's own component arrives through the
``biovqa.components`` entry-point group.
"""

from biovqa.components.registry import (
    AnalysisColumn,
    Command,
    Component,
    Option,
    ScoreOptions,
    ScoreResult,
    get_component,
    list_components,
    register,
)

__all__ = ["AnalysisColumn", "Command", "Component", "Option", "ScoreOptions", "ScoreResult", "get_component",
           "list_components", "register"]
