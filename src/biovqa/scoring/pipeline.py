"""``biovqa score``: read a predictions file, check it against the benchmark, run the component's
scorer with its declared options, and write ``items.parquet`` + ``summary.json`` in the one score
schema (:mod:`biovqa.scoring.schema`)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa._version import __version__
from biovqa.bench.folder import (
    open_bench,
    read_json_object,
    staged_folder,
    write_json,
    write_parquet,
)
from biovqa.components.registry import Component, ScoreResult, get_component
from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError
from biovqa.interop.logs import harness_sha256
from biovqa.scoring.predictions import (
    align_predictions,
    read_predictions,
    run_subset,
    subset_bench,
)
from biovqa.scoring.schema import (
    PARSE_MAX_CHARS,
    SCORE_STATUSES,
    SUMMARY_KEYS,
    check_items,
    check_summary,
    recorded_confidence,
    with_standard_columns,
)
from biovqa.stats import CONFIDENCE

SCORE_ITEMS_FILE = "items.parquet"
SUMMARY_FILE = "summary.json"
SWEEP_FILE = "sweep.json"


def score_predictions(
    bench_path: str | Path,
    predictions_path: str | Path,
    out: str | Path,
    *,
    options: Mapping[str, Any] | None = None,
    label: str | None = None,
    console: Any | None = None,
    score_missing_as_wrong: bool = False,
) -> Path:
    """Score one predictions file and write the score folder; returns its path.

    ``options`` are the component's declared score options (text or typed values); anything
    undeclared is an error naming it. When the predictions are a ``biovqa run`` folder's whose
    card records a subset (``--limit``, filters, a shard), only that subset is scored and the
    summary's ``subset`` key says so; ``score_missing_as_wrong`` scores every benchmark item
    instead, the unasked ones as wrong (status "missing")."""
    bench = open_bench(bench_path)
    component = get_component(bench.component)
    resolved = component.resolve_score_options(dict(options or {}))
    predictions = read_predictions(predictions_path)
    subset = None if score_missing_as_wrong else run_subset(bench, predictions_path)
    if subset is not None:
        bench = subset_bench(bench, subset["item_ids"])
    scorer = component.load("scorer")
    with _preparing(component, scorer, bench, resolved) as prepared:
        aligned = align_predictions(bench, predictions, source=predictions_path)
        scorer_keywords = prepared()
    from biovqa.progress import stage as progress_stage

    boot = resolved.get("bootstrap")
    label = label or _model_label(predictions) or Path(predictions_path).parent.name
    with progress_stage(f"{component.name.upper()}: scoring {aligned.num_rows:,} items"
                        + (f", {boot:,} bootstrap resamples" if boot else "")):
        result = scorer(bench, aligned, resolved, **scorer_keywords)
        if not isinstance(result, ScoreResult):  # a plug-in's scorer: a clear error, not a traceback
            raise BiovqaError(f"the scorer of component {component.name!r} returned a {type(result).__name__}, "
                              "not a ScoreResult",
                              hint="return biovqa.components.ScoreResult(items=<per-item table>, summary=<dict>)")
        with result:
            check_items(result.items, component=component.name)
            items = with_standard_columns(result.items)  # placed by construction: no second check
            with staged_folder(out) as stage:
                # the per-item table is written while the summary (its bootstrap) is computed:
                # a scorer that defers its aggregation (ScoreResult.aggregate) runs it on this read
                with ThreadPoolExecutor(1, thread_name_prefix="write-scores") as pool:
                    writing = pool.submit(write_parquet, items, stage / SCORE_ITEMS_FILE)
                    summary = _summary_document(component, result.summary, items=items, aligned=aligned,
                                                resolved=resolved, label=label, bench=bench, out=out,
                                                predictions=predictions, predictions_path=predictions_path,
                                                subset=subset)
                writing.result()  # a failed write is raised here; a failed summary was raised once the write ended
                write_json(stage / SUMMARY_FILE, summary)
    out = Path(out)
    if console is not None:
        print_headline(component, label, summary, console)
        if subset is not None:
            console.print(f"{summary['subset']['text']} (the run's selection; "
                          "--score-missing-as-wrong scores all items)", highlight=False)
        if summary["n_truncated"]:
            console.print(f"note: {summary['n_truncated']:,} replies are longer than {PARSE_MAX_CHARS:,} characters; "
                          "only their opening was parsed (column 'truncated')", highlight=False)
        if summary["statuses"]["missing"]:
            console.print(f"[yellow]warning[/yellow]: {summary['statuses']['missing']:,} items have no prediction; "
                          "they are scored as wrong (status 'missing')")
    return out


@contextmanager
def _preparing(component: Component, scorer: Callable[..., Any], bench: Any,
               resolved: Any) -> Iterator[Callable[[], dict[str, Any]]]:
    """The component's preparer (work of its scorer that needs no replies) running on a worker
    thread while the block aligns the predictions. Yields a function that waits for it and gives
    the scorer's keyword arguments (none for a component without a preparer, or whose scorer
    takes no ``prepared``); a failure of the preparation is raised there, after the block's own
    checks, as when the scorer prepared for itself. Where the block fails first, what was
    prepared is closed once it is done."""
    import inspect

    if not component.preparer or "prepared" not in inspect.signature(scorer).parameters:
        yield dict
        return
    prepare = component.load("preparer")
    pool = ThreadPoolExecutor(1, thread_name_prefix="prepare-scoring")
    future = pool.submit(prepare, bench, resolved)
    pool.shutdown(wait=False)  # the preparation runs on; the block does not wait for it
    handed = False

    def keywords() -> dict[str, Any]:
        nonlocal handed
        handed = True
        return {"prepared": future.result()}

    try:
        yield keywords
    finally:
        if not handed:
            future.add_done_callback(_close_prepared)


def _close_prepared(future: Future[Any]) -> None:
    if not future.cancelled() and future.exception() is None:
        close = getattr(future.result(), "close", None)
        if close is not None:
            close()


def _summary_document(component: Component, scored_summary: Mapping[str, Any], *, items: pa.Table,
                      aligned: pa.Table, resolved: Any, label: str, bench: Any, out: str | Path,
                      predictions: pa.Table, predictions_path: str | Path,
                      subset: Mapping[str, Any] | None) -> dict[str, Any]:
    """``summary.json``: the run's head (component, label, counts, options, provenance, subset)
    then the scorer's sections, checked against the score schema."""
    statuses = {status: 0 for status in SCORE_STATUSES}
    for entry in pc.value_counts(aligned.column("status")).to_pylist():
        statuses[entry["values"]] = int(entry["counts"])
    head = {
        "component": component.name,
        "label": label,
        "n_items": aligned.num_rows,  # one row per benchmark item (the scorer may not read them all)
        "statuses": statuses,
        "n_truncated": int(pc.sum(items.column("truncated")).as_py() or 0),
        "options": resolved.as_json(),
        "table3": scored_summary.get("table3", {}),
        "provenance": {
            # absolute, and relative to the score folder: a report finds both from any working
            # directory, and after the score folder moves together with its inputs
            "benchmark": str(Path(bench.root).resolve()),
            "benchmark_from_scores": _relative_to(bench.root, out),
            "benchmark_manifest_sha256": bench.manifest_sha256,
            "predictions": str(Path(predictions_path).resolve()),
            "predictions_from_scores": _relative_to(predictions_path, out),
            # the models named in the predictions: a report knows a baseline run without them
            "models": sorted(str(m) for m in pc.unique(predictions.column("model")).to_pylist() if m),
            # a folder of harness logs is hashed over its logs (biovqa.interop.logs)
            "predictions_sha256": harness_sha256(predictions_path),
            "biovqa_version": __version__,
        },
    }
    if subset is not None:
        kind = ", stratified" if subset["stratified"] else ""
        head["subset"] = {
            "n_items": subset["n_items"], "of": subset["of"], "stratified": subset["stratified"],
            "selection": subset["selection"],
            "text": f"subset: {subset['n_items']:,} of {subset['of']:,} items{kind}",
        }
    summary = _jsonable({**head, **{k: v for k, v in scored_summary.items() if k not in head}})
    check_summary(summary)
    return summary


def sweep_predictions(
    bench_path: str | Path,
    predictions_paths: list[str | Path],
    out: str | Path,
    *,
    options: Mapping[str, Any] | None = None,
) -> Path:
    """Run the component's sensitivity sweep (C2: the eleven kernel configurations of
    paper App. I.1) over several models' predictions; writes ``sweep.json``."""
    bench = open_bench(bench_path)
    component = get_component(bench.component)
    if component.sweep is None:
        with_sweep = ", ".join(c.name for c in _components() if c.sweep) or "none"
        raise BiovqaError(f"{component.name.upper()} has no sensitivity sweep",
                          hint=f"components with a sweep: {with_sweep}")
    if len(predictions_paths) < 2:
        raise BiovqaError("a sweep compares models: give at least two --predictions files")
    resolved = component.resolve_score_options(dict(options or {}))
    by_model: dict[str, pa.Table] = {}
    for path in predictions_paths:
        predictions = read_predictions(path)
        label = _model_label(predictions) or Path(path).parent.name or Path(path).stem
        if label in by_model:
            label = f"{label} ({Path(path).stem})"
        by_model[label] = align_predictions(bench, predictions, source=path)
    result = component.load("sweep")(bench, by_model, resolved)
    with staged_folder(out) as stage:
        write_json(stage / SWEEP_FILE, _jsonable(result))
    return Path(out) / SWEEP_FILE


def _components() -> tuple[Component, ...]:
    from biovqa.components.registry import list_components

    return list_components()


def print_headline(component: Component, label: str, summary: dict[str, Any], console: Any) -> None:
    """Show the component's Table 3 columns for this one model, with intervals."""
    from rich.table import Table

    table3 = summary.get("table3") or {}
    if not table3:
        return
    table = Table(title=f"{component.title} — Table 3 columns ({label})", title_justify="left")
    table.add_column("column")
    table.add_column("value", justify="right")
    confidence = recorded_confidence(summary) or CONFIDENCE
    table.add_column(f"{100 * confidence:g} % interval", justify="right")
    table.add_column("n", justify="right")
    order = [c for c in component.table3 if c in table3] + [c for c in table3 if c not in component.table3]
    for column in order:
        estimate = table3[column]
        value = "—" if estimate["value"] is None else f"{estimate['value']:.3f}"
        interval = ("" if estimate["lo"] is None or estimate["hi"] is None
                    else f"[{estimate['lo']:.3f}, {estimate['hi']:.3f}]")
        table.add_row(column, value, interval, f"{estimate['n']:,}")
    console.print(table)


def _model_label(predictions: pa.Table) -> str | None:
    models = [m for m in pc.unique(predictions.column("model")).to_pylist() if m]
    if len(models) == 1:
        return str(models[0])
    return None


def _jsonable(value: Any) -> Any:
    """Plain JSON values: NumPy scalars and arrays unwrapped, NaN as null, paths as text."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (np.floating, float)):
        f = float(value)
        return None if math.isnan(f) else f
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, Path):
        return str(value)
    return value


def _relative_to(path: str | Path, score_dir: str | Path) -> str | None:
    """``path`` relative to the score folder ``score_dir`` (None where no relative path exists,
    e.g. another drive)."""
    try:
        return Path(os.path.relpath(Path(path).resolve(), Path(score_dir).resolve())).as_posix()
    except ValueError:
        return None


def load_summary(score_dir: str | Path) -> dict[str, Any]:
    """Read a score folder's summary.json, checking it has the score schema."""
    path = Path(score_dir) / SUMMARY_FILE
    if not path.exists():
        raise MissingResourceError("not a score folder: summary.json is missing", file=path,
                                   hint="create it with `biovqa score BENCH --predictions P --out DIR`")
    summary = read_json_object(path, what="summary")
    missing = [key for key in SUMMARY_KEYS if key not in summary]
    if missing:
        raise InputFormatError(f"summary lacks {', '.join(missing)}: it was written by another "
                               "biovqa version or another tool", file=path, field=missing[0],
                               hint="score the predictions again with this biovqa")
    for key, kinds in _SUMMARY_TYPES.items():
        if not isinstance(summary[key], kinds):
            raise InputFormatError(f"summary {key} has the wrong type ({type(summary[key]).__name__})",
                                   file=path, field=key, hint="score the predictions again with this biovqa")
    try:
        check_summary(summary)
    except BiovqaError as exc:
        raise InputFormatError(exc.message, file=path, hint="score the predictions again with this biovqa") from None
    return summary


_SUMMARY_TYPES: dict[str, type | tuple[type, ...]] = {
    "component": str, "label": (str, type(None)), "n_items": int, "statuses": dict, "options": dict,
    "table3": dict,
}


__all__ = ["align_predictions", "load_summary", "read_predictions", "score_predictions",
           "sweep_predictions"]
