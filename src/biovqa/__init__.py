"""biovqa — build, run, score and report the Bio-VQA benchmark.

The public API is the handful of names below; everything else lives in private-by-convention
modules whose names say what they hold (``biovqa.build.c1``, ``biovqa.score.c1`` …)::

    import biovqa
    bench = biovqa.build("c1", catalog=..., backbone=..., images=..., out="bench-c1")
    biovqa.audit("bench-c1")
    biovqa.score("bench-c1", "run/predictions.parquet", "scores/")
    biovqa.report(["scores/"], "report/")
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Sequence

from ._version import __version__
from .components import Component, ScoreResult, components, get_component
from .errors import AuditError, BiovqaError, InputFormatError, MissingResourceError
from .manifests import Bench, open_bench
from .records import Item, Prediction

_BUILDERS = {
    "c1": "biovqa.build.c1:build_c1",
    "c2": "biovqa.build.c2:build_c2",
}


def build(component: str, **options: Any) -> Bench:
    """Build a component's benchmark folder (``build("c1", catalog=…, backbone=…, images=…,
    out=…)``); the keyword options are those of the component's builder."""
    target = _BUILDERS.get(component.lower())
    if target is None:
        raise BiovqaError(f"no builder for component {component!r}", hint=f"known: {', '.join(sorted(_BUILDERS))}")
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)(**options)


def audit(bench: str | Path) -> str:
    """Check a benchmark against the verification contract; raises :class:`AuditError`."""
    from .manifests.audit import audit_bench

    return audit_bench(bench)


def run(bench: str | Path, out: str | Path, **options: Any) -> Path:
    """Run a model (``backend=…, model=…``) on a benchmark; returns the predictions file."""
    from .run.engine import RunOptions, run_benchmark

    return run_benchmark(bench, out, RunOptions(**options)).predictions_path


def score(bench: str | Path, predictions: str | Path, out: str | Path, **options: Any) -> Path:
    """Score a predictions file (item_id, response); writes items.parquet + summary.json."""
    from .scoring import score_predictions

    return score_predictions(bench, predictions, out, options=options)


def report(score_dirs: Sequence[str | Path], out: str | Path) -> Path:
    """Write leaderboard tables, plots and a self-contained HTML page; returns index.html."""
    from .report import write_report

    return write_report(score_dirs, out)


__all__ = [
    "AuditError",
    "Bench",
    "BiovqaError",
    "Component",
    "InputFormatError",
    "Item",
    "MissingResourceError",
    "Prediction",
    "ScoreResult",
    "__version__",
    "audit",
    "build",
    "components",
    "get_component",
    "open_bench",
    "report",
    "run",
    "score",
]
