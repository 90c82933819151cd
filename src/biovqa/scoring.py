"""``biovqa score``: read a predictions file, check it against the benchmark, run the component's
scorer, write ``items.parquet`` + ``summary.json``.

Predictions come from any tool: a Parquet or JSONL file with at least ``item_id`` and
``response`` (raw model text); optional ``status`` ("ok" | "failed") and ``model``. Unknown,
duplicate or null ``item_id`` values are errors naming the rows; benchmark items without a
prediction are scored as missing (no answer) and counted in the summary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from ._version import __version__
from .components import ScoreResult, get_component
from .errors import BiovqaError, InputFormatError, MissingResourceError
from .manifests.bench import Bench, open_bench, read_parquet, sha256_file, write_json, write_parquet
from .records import PREDICTION_STATUSES

SCORE_ITEMS_FILE = "items.parquet"
SUMMARY_FILE = "summary.json"
#: Options every scorer takes; component-specific ones are declared on the component.
COMMON_SCORE_OPTIONS = frozenset({"bootstrap", "seed", "level"})
#: What a component-specific option means when the user did not set it.
OPTION_DEFAULTS: dict[str, Any] = {"backbone": None, "epithet_last_word": True, "prefer_text": False}


def scorer_options(component: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options this component's scorer takes; an option set for another component is an
    error rather than silently ignored."""
    accepted = COMMON_SCORE_OPTIONS | component.score_options
    kept = {}
    for key, value in options.items():
        if key == "label":
            continue
        if key in accepted:
            kept[key] = value
        elif key not in OPTION_DEFAULTS or value != OPTION_DEFAULTS[key]:
            raise BiovqaError(f"option {key!r} does not apply to {component.name.upper()} scoring",
                              field=key, hint=f"{component.name.upper()} takes: {', '.join(sorted(accepted))}")
    return kept


def read_predictions(path: str | Path) -> pa.Table:
    """Read a predictions file (.parquet or .jsonl) into a table with item_id, response, status,
    model; raise :class:`InputFormatError` naming the row and field of the first problem."""
    path = Path(path)
    if not path.exists():
        raise MissingResourceError("predictions file not found", file=path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        table = read_parquet(path, what="predictions")
        row_offset = 0
    elif suffix in {".jsonl", ".ndjson", ".json"}:
        table = _read_jsonl(path)
        row_offset = 0
    else:
        raise InputFormatError(f"unsupported predictions format {suffix!r}", file=path,
                               hint="write .parquet or .jsonl with columns item_id, response")
    for column in ("item_id", "response"):
        if column not in table.column_names:
            raise InputFormatError("predictions lack a required column", file=path, field=column,
                                   hint="each row needs item_id and response (the raw model text)")
    ids = table.column("item_id").cast(pa.string())
    null_ids = pc.is_null(ids)
    if pc.any(null_ids).as_py():
        row = pc.index(null_ids, True).as_py() + 1 + row_offset
        raise InputFormatError("item_id is empty", file=path, row=row, field="item_id")
    if pc.count_distinct(ids).as_py() != table.num_rows:
        first: dict[str, int] = {}
        duplicates: list[str] = []
        for i, value in enumerate(ids.to_pylist()):
            if value in first:
                duplicates.append(f"{value!r} (rows {first[value] + 1} and {i + 1})")
            else:
                first[value] = i
        raise InputFormatError(
            f"{len(duplicates)} duplicate item_id(s): {'; '.join(duplicates[:5])}",
            file=path, field="item_id",
            hint="keep one reply per item (biovqa merge de-duplicates shards)",
        )
    responses = table.column("response")
    if not pa.types.is_string(responses.type) and not pa.types.is_null(responses.type):
        raise InputFormatError(f"response must be text, found {responses.type}", file=path,
                               field="response")
    status = (pc.fill_null(table.column("status").cast(pa.string()), "ok") if "status" in table.column_names
              else pa.array(["ok"] * table.num_rows, pa.string()))
    bad = pc.invert(pc.is_in(status, pa.array(PREDICTION_STATUSES)))
    if pc.any(bad).as_py():
        row = pc.index(bad, True).as_py()
        raise InputFormatError(f"unknown status {status[row].as_py()!r}", file=path, row=row + 1,
                               field="status", hint=f"use one of {', '.join(PREDICTION_STATUSES)}")
    model = (table.column("model").cast(pa.string()) if "model" in table.column_names
             else pa.nulls(table.num_rows, pa.string()))
    return pa.table({"item_id": ids, "response": responses.cast(pa.string()), "status": status,
                     "model": model})


def _read_jsonl(path: Path) -> pa.Table:
    rows: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputFormatError(f"not valid JSON: {exc.msg}", file=path, row=line_number) from None
            if not isinstance(row, dict):
                raise InputFormatError("each line must be a JSON object", file=path, row=line_number)
            for field in ("item_id", "response"):
                if field not in row:
                    raise InputFormatError("missing key", file=path, row=line_number, field=field)
                if field == "response" and row[field] is not None and not isinstance(row[field], str):
                    raise InputFormatError("response must be a string or null", file=path,
                                           row=line_number, field="response")
            rows.append({k: row.get(k) for k in ("item_id", "response", "status", "model")})
    if not rows:
        raise InputFormatError("predictions file holds no rows", file=path)
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("item_id", pa.string()), ("response", pa.string()), ("status", pa.string()), ("model", pa.string())]))


def align_predictions(bench: Bench, predictions: pa.Table, *, source: str | Path | None = None) -> pa.Table:
    """Predictions reordered to the benchmark's items: one row per item, in item order, with
    status "missing" where the file has no reply; replies to unknown items are an error."""
    bench_ids = bench.items.column("item_id")
    known = pc.is_in(predictions.column("item_id"), bench_ids)
    if not pc.all(known).as_py():
        unknown_rows = pc.indices_nonzero(pc.invert(known)).to_pylist()
        examples = ", ".join(
            f"{predictions.column('item_id')[i].as_py()!r} (row {i + 1})" for i in unknown_rows[:5])
        raise InputFormatError(
            f"{len(unknown_rows)} prediction(s) for items not in the benchmark: {examples}",
            file=source, field="item_id",
            hint=f"were these replies made for another benchmark? this one is {bench.root}",
        )
    position = pc.index_in(bench_ids, predictions.column("item_id"))
    has = pc.is_valid(position)
    taken = predictions.take(pc.fill_null(position, 0))
    response = pc.if_else(has, taken.column("response"), pa.scalar(None, pa.string()))
    status = pc.if_else(has, taken.column("status"), pa.scalar("missing"))
    failed = pc.equal(status, "failed")
    response = pc.if_else(failed, pa.scalar(None, pa.string()), response)
    return pa.table({"item_id": bench_ids, "response": response, "status": status})


def score_predictions(
    bench_path: str | Path,
    predictions_path: str | Path,
    out: str | Path,
    *,
    options: Mapping[str, Any] | None = None,
    console: Any | None = None,
) -> Path:
    """Score one predictions file and write the score folder; returns its path."""
    options = dict(options or {})
    bench = open_bench(bench_path)
    predictions = read_predictions(predictions_path)
    aligned = align_predictions(bench, predictions, source=predictions_path)
    component = get_component(bench.component)
    scorer = component.load("scorer")
    result: ScoreResult = scorer(bench, aligned, scorer_options(component, options))
    label = options.get("label") or _model_label(predictions) or Path(predictions_path).parent.name
    summary = dict(result.summary)
    statuses = pc.value_counts(aligned.column("status")).to_pylist()
    summary["meta"] = {
        "label": label,
        "component": bench.component,
        "benchmark": str(bench.root),
        "benchmark_manifest_sha256": bench.manifest_sha256,
        "predictions": str(predictions_path),
        "predictions_sha256": sha256_file(predictions_path),
        "biovqa_version": __version__,
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in sorted(options.items())
                    if k != "label"},
        "statuses": {s["values"]: int(s["counts"]) for s in sorted(statuses, key=lambda s: s["values"])},
    }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_parquet(result.items, out / SCORE_ITEMS_FILE)
    write_json(out / SUMMARY_FILE, _jsonable(summary))
    if console is not None:
        print_headline(component, label, summary, console)
    if console is not None and summary["meta"]["statuses"].get("missing"):
        console.print(f"[yellow]warning[/yellow]: {summary['meta']['statuses']['missing']:,} "
                      "items have no prediction; they are scored as wrong (status 'missing')")
    return out


def sweep_predictions(
    bench_path: str | Path,
    predictions_paths: list[str | Path],
    out: str | Path,
    *,
    kind: str,
    options: Mapping[str, Any] | None = None,
) -> Path:
    """Run a component's sensitivity sweep (C2: the eleven kernel configurations of
    metrics.md §3.13) over several models' predictions; writes ``sweep.json``."""
    options = dict(options or {})
    bench = open_bench(bench_path)
    if kind.lower() != bench.component or kind.lower() != "c2":
        raise BiovqaError(f"no sweep {kind!r} for a {bench.component} benchmark",
                          hint="the kernel sweep is defined for C2: --sweep c2 on a C2 benchmark")
    if len(predictions_paths) < 2:
        raise BiovqaError("a sweep compares models: give at least two --predictions files")
    by_model: dict[str, pa.Table] = {}
    for path in predictions_paths:
        predictions = read_predictions(path)
        label = _model_label(predictions) or Path(path).parent.name or Path(path).stem
        if label in by_model:
            label = f"{label} ({Path(path).stem})"
        by_model[label] = align_predictions(bench, predictions, source=path)
    from .score.c2.sweep import run_sweep

    result = run_sweep(bench, by_model, scorer_options(get_component(bench.component), options))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "sweep.json", _jsonable(result))
    return out / "sweep.json"


def print_headline(component: Any, label: str, summary: dict[str, Any], console: Any) -> None:
    """Show the component's first leaderboard table (e.g. the Table 3 block) for this one model."""
    from rich.table import Table

    tables = component.load("reporter")([(label, summary)])
    if not tables:
        return
    name, frame = next(iter(tables.items()))
    if frame.index.name is None and "model" in frame.columns:
        frame = frame.set_index("model")
    table = Table(title=f"{component.title} — {name.replace('_', ' ')}", title_justify="left")
    table.add_column(frame.index.name or "")
    for column in frame.columns:
        table.add_column(str(column), justify="right")
    for index, row in frame.iterrows():
        table.add_row(str(index), *(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row.tolist()))
    console.print(table)


def _model_label(predictions: pa.Table) -> str | None:
    models = [m for m in pc.unique(predictions.column("model")).to_pylist() if m]
    if len(models) == 1:
        return str(models[0])
    return None


def _jsonable(value: Any) -> Any:
    import math

    import numpy as np

    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        f = float(value)
        return None if math.isnan(f) else f
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, Path):
        return str(value)
    return value


def load_summary(score_dir: str | Path) -> dict[str, Any]:
    path = Path(score_dir) / SUMMARY_FILE
    if not path.exists():
        raise MissingResourceError("not a score folder: summary.json is missing", file=path,
                                   hint="create it with `biovqa score BENCH --predictions P --out DIR`")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputFormatError(f"summary is not valid JSON: {exc.msg}", file=path, row=exc.lineno) from None


__all__ = ["align_predictions", "load_summary", "read_predictions", "score_predictions", "sweep_predictions"]
