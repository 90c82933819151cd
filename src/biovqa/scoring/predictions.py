"""Predictions from any tool, checked and aligned with a benchmark's items.

A predictions file is Parquet or JSONL with at least ``item_id`` and ``response`` (raw model
text); optional ``status`` ("ok" | "failed") and ``model``. Unknown, duplicate or null
``item_id`` values are errors naming the rows; benchmark items without a prediction are aligned
as status "missing" (no answer).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from biovqa.bench.folder import Bench, iter_json_lines, read_parquet
from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError
from biovqa.records import PREDICTION_STATUSES


def read_predictions(path: str | Path) -> pa.Table:
    """Read a predictions file (.parquet or .jsonl; an inspect_ai log or folder of logs, an
    lmms-eval samples file) into a table with item_id, response, status, model; raise
    :class:`InputFormatError` naming the row and field of the first problem."""
    path = Path(path)
    if not path.exists():
        raise MissingResourceError("predictions file not found", file=path)
    suffix = path.suffix.lower()
    from biovqa.interop.logs import read_harness_predictions

    # an inspect_ai log (or a folder of them), an lmms-eval samples file: biovqa.interop.logs
    harness = read_harness_predictions(path)
    if harness is not None:
        table = harness
        row_offset = 0
    elif suffix == ".parquet":
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
    for line_number, row in iter_json_lines(path, what="predictions file"):
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


def _card_selection(card: dict[str, Any]) -> dict[str, Any] | None:
    """The selection a run card records (a merged card: its first input's, without the shard)."""
    if card.get("status") == "merged":
        sources = [s.get("card") for s in card.get("merged_from") or [] if isinstance(s, dict)]
        first = next((c for c in sources if isinstance(c, dict)), None)
        if first is None or not isinstance(first.get("selection"), dict):
            return None
        return {**first["selection"], "shard": None, "item_ids_sha256": None,
                "benchmark": first.get("benchmark")}
    selection = card.get("selection")
    if not isinstance(selection, dict):
        return None
    return {**selection, "benchmark": card.get("benchmark")}


def run_subset(bench: Bench, predictions_path: str | Path) -> dict[str, Any] | None:
    """The items a ``--limit`` (or filtered, or sharded) run selected, read from the run card
    (``run.json``) beside its ``predictions.parquet`` and recomputed on ``bench``.

    Returns ``{"item_ids": [...], "n_items": N, "of": M, "stratified": bool, "selection": {...}}``,
    or None when there is no card, the card is for another benchmark, or the run covered every
    item. A selection may also list its items (``item_ids``, with a ``description``), as the C4
    specialist's card does when it ran on some of the datasets. A card whose recorded selection hash disagrees with the recomputed one is an error.
    """
    import hashlib

    path = Path(predictions_path)
    card_path = path.with_name("run.json")
    if not card_path.is_file():
        return None
    try:
        card = json.loads(card_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise InputFormatError("run card is not valid UTF-8 JSON", file=card_path,
                               hint="re-run the same `biovqa run` command to rewrite it") from None
    selection = _card_selection(card) if isinstance(card, dict) else None
    if selection is None:
        return None
    benchmark = selection.get("benchmark") or {}
    if isinstance(benchmark, dict) and benchmark.get("manifest_sha256") not in (
            None, bench.manifest_sha256):
        return None
    if isinstance(selection.get("item_ids"), list):
        return _listed_subset(bench, selection, card_path)
    from biovqa.engine.runner import Selection, parse_shard, select_items

    def names(key: str) -> tuple[str, ...] | None:
        value = selection.get(key)
        return tuple(str(v) for v in value) if isinstance(value, list) and value else None

    try:
        limit = selection.get("limit_per_task")
        shard = selection.get("shard")
        chosen = Selection(components=names("components"), tasks=names("tasks"),
                           limit=None if limit is None else int(limit),
                           seed=int(selection.get("seed", 42)),
                           shard=parse_shard(shard) if isinstance(shard, str) else None)
    except (TypeError, ValueError, BiovqaError):
        raise InputFormatError("run card has a malformed selection", file=card_path,
                               field="selection") from None
    items = select_items(bench.items, chosen)
    if items.num_rows >= bench.items.num_rows:
        return None
    ids = sorted(items.column("item_id").to_pylist())
    recorded = selection.get("item_ids_sha256")
    if recorded and hashlib.sha256("\n".join(ids).encode()).hexdigest() != recorded:
        raise InputFormatError(
            "the run card's selection does not give the items the run asked", file=card_path,
            field="selection.item_ids_sha256",
            hint="score with --score-missing-as-wrong, or re-run the selection")
    return {"item_ids": ids, "n_items": len(ids), "of": bench.items.num_rows,
            "stratified": chosen.limit is not None,
            "selection": {"components": list(chosen.components or []) or None,
                          "tasks": list(chosen.tasks or []) or None,
                          "limit_per_task": chosen.limit, "seed": chosen.seed,
                          "shard": shard if isinstance(shard, str) else None}}


def _listed_subset(bench: Bench, selection: dict[str, Any], card_path: Path) -> dict[str, Any] | None:
    """A selection that lists its items (a specialist run on some of the datasets): those items,
    described by the selection's ``description``."""
    if selection.get("benchmark_manifest_sha256") not in (None, bench.manifest_sha256):
        return None
    ids = sorted({str(i) for i in selection["item_ids"]})
    known = set(bench.items.column("item_id").to_pylist())
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise InputFormatError(f"the run card lists {len(unknown)} item(s) the benchmark lacks, e.g. {unknown[0]!r}",
                               file=card_path, field="selection.item_ids",
                               hint="were these predictions made for another benchmark?")
    if len(ids) >= bench.items.num_rows:
        return None
    return {"item_ids": ids, "n_items": len(ids), "of": bench.items.num_rows, "stratified": False,
            "selection": {"listed": len(ids), "description": selection.get("description")}}


def subset_bench(bench: Bench, item_ids: Sequence[str]) -> Bench:
    """``bench`` seen through a subset of its items (same folder, manifest and resources)."""
    sub = dataclasses.replace(bench)
    keep = pc.is_in(bench.items.column("item_id"), value_set=pa.array(list(item_ids), pa.string()))
    sub.__dict__["items"] = bench.items.filter(keep)  # fills the cached property
    return sub


__all__ = ["align_predictions", "read_predictions", "run_subset", "subset_bench"]
