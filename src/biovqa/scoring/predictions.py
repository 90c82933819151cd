"""Predictions from any tool, checked and aligned with a benchmark's items.

A predictions file is Parquet or JSONL with at least ``item_id`` and ``response`` (raw model
text); optional ``status`` ("ok" | "failed") and ``model``. Unknown, duplicate or null
``item_id`` values are errors naming the rows; benchmark items without a prediction are aligned
as status "missing" (no answer).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from biovqa.bench.folder import Bench, read_parquet
from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.records import PREDICTION_STATUSES


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
    ids = _text_column(table, "item_id", path)
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
    responses = _text_column(table, "response", path)
    status = (pc.fill_null(_text_column(table, "status", path), "ok") if "status" in table.column_names
              else pa.array(["ok"] * table.num_rows, pa.string()))
    bad = pc.invert(pc.is_in(status, pa.array(PREDICTION_STATUSES)))
    if pc.any(bad).as_py():
        row = pc.index(bad, True).as_py()
        raise InputFormatError(f"unknown status {status[row].as_py()!r}", file=path, row=row + 1,
                               field="status", hint=f"use one of {', '.join(PREDICTION_STATUSES)}")
    model = (_text_column(table, "model", path) if "model" in table.column_names
             else pa.nulls(table.num_rows, pa.string()))
    return pa.table({"item_id": ids, "response": responses, "status": status, "model": model})


def _text_column(table: pa.Table, name: str, path: Path) -> pa.ChunkedArray:
    """Column ``name`` as plain strings: any Arrow text type (string, large_string, a dictionary
    of strings) or all-null is accepted; numbers or other types are an error naming the field."""
    column = table.column(name)
    kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind)):
        raise InputFormatError(f"{name} must be text, found {column.type}", file=path, field=name,
                               hint="write the column as strings (e.g. item ids like 'c1:<uuid>:family')")
    return column.cast(pa.string())


def _read_jsonl(path: Path) -> pa.Table:
    rows: list[dict[str, Any]] = []
    with open(path, "rb") as handle:
        for line_number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputFormatError(f"not UTF-8 text (byte {exc.start + 1} of the line)", file=path,
                                       row=line_number, hint="write the predictions file as UTF-8") from None
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
            for field in ("item_id", "response", "status", "model"):
                value = row.get(field)
                if value is None:
                    continue
                if not isinstance(value, str):
                    raise InputFormatError(f"{field} must be a string or null, found {type(value).__name__}",
                                           file=path, row=line_number, field=field)
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    raise InputFormatError("text holds a lone surrogate (e.g. \\ud800), which is not valid "
                                           "Unicode", file=path, row=line_number, field=field) from None
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


__all__ = ["align_predictions", "read_predictions"]
