"""biovqa — build, run, score and report the Bio-VQA benchmark.

The public API is the handful of names below; everything else lives in modules whose names say
what they hold (shared stages ``biovqa.sources``, ``biovqa.bench``, ``biovqa.engine``,
``biovqa.scoring``, ``biovqa.stats``, ``biovqa.reporting``; one package per component under
``biovqa.components``)::

    import biovqa
    bench = biovqa.build("c1", catalog=..., backbone=..., images=..., out="bench-c1")
    biovqa.audit("bench-c1")
    predictions = biovqa.run("bench-c1", "run-c1", backend="baseline")
    biovqa.score("bench-c1", predictions, "scores-c1", bootstrap=1000)
    biovqa.report(["scores-c1"], "report")
"""

from __future__ import annotations

import typing as _typing

from biovqa._version import __version__
from biovqa.components.registry import Component, ScoreResult, get_component, list_components
from biovqa.errors import AuditError, BiovqaError, InputFormatError, MissingResourceError

if _typing.TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Sequence

    from biovqa.bench import Bench, open_bench
    from biovqa.records import Item

#: public names whose modules need pyarrow, imported on first use (``biovqa --version`` and
#: ``--help`` need none of them)
_LAZY = {"Bench": "biovqa.bench", "open_bench": "biovqa.bench", "Item": "biovqa.records"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'biovqa' has no attribute {name!r}")


def build(component: str, *args: Any, **options: Any) -> Bench:
    """Build a component's benchmark folder (``build("c1", catalog, backbone, images, out)``);
    the arguments are those of the component's build function (``Component.build_function``).
    The folder is written beside ``out`` and moved into place only when complete, so a failed
    rebuild leaves an earlier benchmark there as it was."""
    from biovqa.bench.folder import staged_build

    return staged_build(get_component(component).load("build_function"))(*args, **options)


def audit(bench: str | Path) -> str:
    """Check a benchmark against the verification contract; raises :class:`AuditError`."""
    from biovqa.bench.audit import audit_bench

    return audit_bench(bench)


def run(bench: str | Path, out: str | Path, **options: Any) -> Path:
    """Run a model (``backend=…, model=…``) on a benchmark; returns the predictions file."""
    from biovqa.engine.runner import RunOptions, run_benchmark

    return run_benchmark(bench, out, RunOptions(**options)).predictions_path


def score(bench: str | Path, predictions: str | Path, out: str | Path, *, label: str | None = None,
          **options: Any) -> Path:
    """Score a predictions file (item_id, response) with the component's score options; writes
    items.parquet + summary.json in the score schema and returns the folder."""
    from biovqa.scoring.pipeline import score_predictions

    return score_predictions(bench, predictions, out, options=options, label=label)


def report(score_dirs: Sequence[str | Path], out: str | Path) -> Path:
    """Write leaderboard tables, plots and a self-contained HTML page; returns index.html."""
    from biovqa.reporting import write_report

    return write_report(score_dirs, out)


__all__ = [
    "AuditError",
    "Bench",
    "BiovqaError",
    "Component",
    "InputFormatError",
    "Item",
    "MissingResourceError",
    "ScoreResult",
    "__version__",
    "audit",
    "build",
    "get_component",
    "list_components",
    "open_bench",
    "report",
    "run",
    "score",
]
