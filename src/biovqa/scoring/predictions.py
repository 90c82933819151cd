"""Predictions from any tool, checked and aligned with a benchmark's items.

A predictions file is Parquet or JSONL with at least ``item_id`` and ``response`` (raw model
text); optional ``status`` ("ok" | "failed") and ``model``. Unknown, duplicate or null
``item_id`` values are errors naming the rows, numbered as the file numbers them (the Parquet row,
the JSON Lines line); benchmark items without a prediction are aligned as status "missing" (no
answer).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.bench.folder import Bench, iter_json_lines, read_parquet
from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError
from biovqa.records import PREDICTION_STATUSES


#: The columns a predictions file may carry; any other column is not read.
PREDICTION_COLUMNS: tuple[str, ...] = ("item_id", "response", "status", "model")


def read_predictions(path: str | Path) -> pa.Table:
    """Read a predictions file (.parquet or .jsonl; an inspect_ai log or folder of logs, an
    lmms-eval samples file) into a table with item_id, response, status, model and ``row``, where
    each reply is in the file (1-based: the Parquet row, the JSON Lines line, the harness sample's
    position), the one numbering every error about a reply names.

    This checks the file's form (columns, text types, an item_id on every row, known statuses) and
    raises :class:`InputFormatError` naming the row and field of the first problem; whether each
    item_id is a benchmark item, and only one reply per item, is :func:`align_predictions`' check."""
    path = Path(path)
    if not path.exists():
        raise MissingResourceError("predictions file not found", file=path)
    suffix = path.suffix.lower()
    from biovqa.interop.logs import read_harness_predictions

    rows: pa.Array | None = None
    # an inspect_ai log (or a folder of them), an lmms-eval samples file: biovqa.interop.logs
    harness = read_harness_predictions(path)
    if harness is not None:
        table = harness
    elif suffix == ".parquet":
        table = read_parquet(path, what="predictions", columns=PREDICTION_COLUMNS)
    elif suffix in {".jsonl", ".ndjson", ".json"}:
        table, rows = _read_jsonl(path)
    else:
        raise InputFormatError(f"unsupported predictions format {suffix!r}", file=path,
                               hint="write .parquet or .jsonl with columns item_id, response")
    for column in ("item_id", "response"):
        if column not in table.column_names:
            raise InputFormatError("predictions lack a required column", file=path, field=column,
                                   hint="each row needs item_id and response (the raw model text)")
    if rows is None:
        rows = pa.array(np.arange(1, table.num_rows + 1, dtype=np.int64))
    ids = _text_column(table, "item_id", path)
    null_ids = pc.is_null(ids)
    if pc.any(null_ids).as_py():
        raise InputFormatError("item_id is empty", file=path, row=_row_of(rows, null_ids), field="item_id")
    responses = _text_column(table, "response", path)
    status = (pc.fill_null(_text_column(table, "status", path), "ok") if "status" in table.column_names
              else pa.repeat(pa.scalar("ok", pa.string()), table.num_rows))
    bad = pc.invert(pc.is_in(status, pa.array(PREDICTION_STATUSES)))
    if pc.any(bad).as_py():
        first = pc.index(bad, True).as_py()
        raise InputFormatError(f"unknown status {status[first].as_py()!r}", file=path, row=_row_of(rows, bad),
                               field="status", hint=f"use one of {', '.join(PREDICTION_STATUSES)}")
    model = (_text_column(table, "model", path) if "model" in table.column_names
             else pa.nulls(table.num_rows, pa.string()))
    return pa.table({"item_id": ids, "response": responses, "status": status, "model": model, "row": rows})


def _row_of(rows: pa.Array | pa.ChunkedArray, flags: pa.Array | pa.ChunkedArray) -> int:
    """The file row of the first flagged reply."""
    return int(rows[pc.index(flags, True).as_py()].as_py())


def _text_column(table: pa.Table, name: str, path: Path) -> pa.ChunkedArray:
    """Column ``name`` as plain strings: any Arrow text type (string, large_string, a dictionary
    of strings) or all-null is accepted; numbers or other types are an error naming the field."""
    column = table.column(name)
    kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind)):
        raise InputFormatError(f"{name} must be text, found {column.type}", file=path, field=name,
                               hint="write the column as strings (e.g. item ids like 'c1:<uuid>:family')")
    return column.cast(pa.string())


def _read_jsonl(path: Path) -> tuple[pa.Table, pa.Array]:
    """The rows of a JSON Lines predictions file and the line number of each (blank lines are
    skipped, so a row's line is not its position)."""
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    for line_number, row in iter_json_lines(path, what="predictions file"):
        for field in ("item_id", "response"):
            if field not in row:
                raise InputFormatError("missing key", file=path, row=line_number, field=field)
        for field in PREDICTION_COLUMNS:
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
        rows.append({k: row.get(k) for k in PREDICTION_COLUMNS})
        lines.append(line_number)
    if not rows:
        raise InputFormatError("predictions file holds no rows", file=path)
    table = pa.Table.from_pylist(rows, schema=pa.schema([(name, pa.string()) for name in PREDICTION_COLUMNS]))
    return table, pa.array(lines, pa.int64())


def align_predictions(bench: Bench, predictions: pa.Table, *, source: str | Path | None = None) -> pa.Table:
    """Predictions reordered to the benchmark's items: one row per item, in item order, with
    status "missing" where the file has no reply. A reply to an item the benchmark lacks, or a
    second reply to an item, is an :class:`InputFormatError` naming the rows (the predictions'
    ``row`` column, as :func:`read_predictions` numbers them; by position when absent).

    One hash lookup of the replies' ids in the benchmark's gives both checks and the order."""
    bench_ids = bench.item_columns(["item_id"]).column("item_id")  # not every column of a wide bench
    reply_ids = predictions.column("item_id")
    rows = (predictions.column("row") if "row" in predictions.column_names
            else pa.array(np.arange(1, predictions.num_rows + 1, dtype=np.int64)))
    position = pc.index_in(reply_ids.cast(pa.string()), value_set=bench_ids.cast(pa.string()))
    unknown = pc.is_null(position)
    if pc.any(unknown).as_py():
        at = pc.indices_nonzero(unknown).to_pylist()
        examples = ", ".join(f"{reply_ids[i].as_py()!r} (row {rows[i].as_py()})" for i in at[:5])
        raise InputFormatError(
            f"{len(at)} prediction(s) for items not in the benchmark: {examples}",
            file=source, field="item_id",
            hint=f"were these replies made for another benchmark? this one is {bench.root}",
        )
    item_of_reply = np.asarray(position.to_numpy(), dtype=np.int64)
    n_items = len(bench_ids)
    replies_per_item = np.bincount(item_of_reply, minlength=n_items)
    if replies_per_item.max(initial=0) > 1:
        raise InputFormatError(_duplicates_message(reply_ids, rows, item_of_reply, replies_per_item),
                               file=source, field="item_id",
                               hint="keep one reply per item (biovqa merge de-duplicates shards)")
    reply_of_item = np.zeros(n_items, dtype=np.int64)
    reply_of_item[item_of_reply] = np.arange(predictions.num_rows, dtype=np.int64)
    no_reply = np.ones(n_items, dtype=bool)
    no_reply[item_of_reply] = False
    failed = np.zeros(n_items, dtype=bool)
    failed[item_of_reply] = pc.equal(predictions.column("status"), "failed").to_numpy(zero_copy_only=False)
    # a null index takes a null: no reply is status "missing", and a failed request has no answer
    status = pc.fill_null(predictions.column("status").take(pa.array(reply_of_item, mask=no_reply)), "missing")
    answer = pa.array(reply_of_item, mask=no_reply | failed)
    return pa.table({"item_id": bench_ids, "response": predictions.column("response").take(answer),
                     "status": status})


def _duplicates_message(reply_ids: pa.ChunkedArray, rows: pa.Array | pa.ChunkedArray,
                        item_of_reply: np.ndarray, replies_per_item: np.ndarray) -> str:
    """'N duplicate item_id(s): 'x' (rows 3 and 6); …' for the first five, in file order."""
    again = np.flatnonzero(replies_per_item[item_of_reply] > 1)
    first: dict[int, int] = {}
    pairs: list[str] = []
    for reply in again.tolist():
        item = int(item_of_reply[reply])
        if item in first:
            pairs.append(f"{reply_ids[reply].as_py()!r} (rows {rows[first[item]].as_py()} and "
                         f"{rows[reply].as_py()})")
        else:
            first[item] = reply
    return f"{len(pairs)} duplicate item_id(s): {'; '.join(pairs[:5])}"


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
    from biovqa.engine.selection import Selection, parse_shard, select_items

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


__all__ = ["PREDICTION_COLUMNS", "align_predictions", "read_predictions", "run_subset", "subset_bench"]
