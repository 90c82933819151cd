"""The one score schema every component writes (docs/architecture.md, "Score schema").

``SCORES/items.parquet`` starts with :data:`ITEM_CORE_COLUMNS` — ``item_id, component, task,
status, response, parsed, score`` — then the standard column ``truncated`` (the reply was longer
than :data:`biovqa.scoring.PARSE_MAX_CHARS`, so only part of it was parsed; added by the scoring pipeline for
every component), followed by the component's own columns. ``score`` is the item's value of the
component's headline metric (C1 exact match, C2 cags, …).

``SCORES/summary.json`` has ``component, label, n_items, statuses, options, table3`` at the top
(and ``n_truncated``, the number of truncated replies), then ``provenance`` and the component's
own sections. Every estimate anywhere in it has the one
form ``{"value", "lo", "hi", "n"}`` (:func:`estimate`); bounds are null when no bootstrap ran.
Reports and the leaderboard read only this schema.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.errors import BiovqaError
from biovqa.records import PREDICTION_STATUSES
from biovqa.scoring import PARSE_MAX_CHARS

#: Per-item columns every component writes first, in this order.
ITEM_CORE_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("item_id", pa.string()),
    ("component", pa.string()),
    ("task", pa.string()),
    ("status", pa.string()),
    ("response", pa.string()),
    ("parsed", pa.string()),
    ("score", pa.float64()),
)
#: Standard per-item columns that follow the core ones (written by the pipeline, not the scorer).
ITEM_STANDARD_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("truncated", pa.bool_()),
)
#: What ``status`` says: a reply was scored, the request finally failed (the statuses a predictions
#: file carries), or no reply was given (an item the predictions do not have).
SCORE_STATUSES: tuple[str, ...] = (*PREDICTION_STATUSES, "missing")
#: Top-level keys of summary.json, in order.
SUMMARY_KEYS: tuple[str, ...] = ("component", "label", "n_items", "statuses", "options", "table3")
ESTIMATE_KEYS = frozenset({"value", "lo", "hi", "n"})


@dataclass(frozen=True, slots=True)
class Estimate:
    """One estimate of a summary: the full-sample ``value``, the percentile bootstrap bounds
    ``lo``/``hi`` (None when no bootstrap ran, or none applies) and the number ``n`` of items
    (images for per-image metrics) behind it. None stands for an undefined number (JSON has no
    NaN). :meth:`as_dict` is the form summary.json stores, :meth:`read` reads it back."""

    value: float | None
    lo: float | None = None
    hi: float | None = None
    n: int = 0

    @classmethod
    def of(cls, value: float | None, lo: float | None = None, hi: float | None = None, *, n: int) -> Estimate:
        """From floats that may be NaN (NaN becomes None)."""
        return cls(_number(value), _number(lo), _number(hi), int(n))

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "lo": self.lo, "hi": self.hi, "n": self.n}

    @classmethod
    def read(cls, entry: Any) -> Estimate | None:
        """The estimate a summary entry holds: an ``{value, lo, hi, n}`` mapping, or a plain number
        (no bounds, n = 0); None for anything else."""
        if isinstance(entry, Mapping) and "value" in entry:
            return cls(_finite(entry.get("value")), _finite(entry.get("lo")), _finite(entry.get("hi")),
                       int(entry.get("n") or 0))
        number = _finite(entry)
        return None if number is None else cls(number)


def estimate(value: float, lo: float | None = None, hi: float | None = None, *, n: int) -> dict[str, Any]:
    """An estimate in the schema's one form; NaN becomes null (JSON has no NaN)."""
    return Estimate.of(value, lo, hi, n=n).as_dict()


def estimate_value(entry: Any, part: str = "value") -> float:
    """The one reader of a float out of a summary entry: ``part`` (``value``, ``lo`` or ``hi``)
    of an estimate ``{value, lo, hi, n}``, or the entry itself when it is a number; NaN where it
    is null, absent, not a number or not finite."""
    if isinstance(entry, Mapping):
        entry = entry.get(part)
    number = _finite(entry)
    return math.nan if number is None else number


def recorded_confidence(summary: Mapping[str, Any]) -> float | None:
    """The confidence level a summary's intervals were computed at (its ``bootstrap`` section),
    None where it records none (a floor or specialist summary without a bootstrap)."""
    return _finite((summary.get("bootstrap") or {}).get("confidence"))


def _finite(value: Any) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float, str)) and not hasattr(
            value, "__float__"):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _number(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def is_estimate(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == ESTIMATE_KEYS


def core_columns(items: pa.Table, aligned: pa.Table, *, component: str,
                 parsed: pa.Array | pa.ChunkedArray, score: Any) -> dict[str, Any]:
    """The core columns for ``items`` and ``aligned`` predictions (one row each, same order):
    a scorer starts its per-item table with these and appends its own columns."""
    return {
        "item_id": _strings(items.column("item_id")),  # a bench written from pandas may hold large_string
        "component": pa.DictionaryArray.from_arrays(pa.array(np.zeros(items.num_rows, dtype=np.int32)),
                                                    pa.array([component], pa.string())),
        "task": _strings(items.column("task")).dictionary_encode(),
        "status": _strings(aligned.column("status")).dictionary_encode(),
        "response": _strings(aligned.column("response")),
        "parsed": _strings(parsed),
        "score": pa.array(score, pa.float64()) if not isinstance(score, (pa.Array, pa.ChunkedArray))
        else score.cast(pa.float64()),
    }


def truncated_flags(status: pa.Array | pa.ChunkedArray,
                    response: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Per item: a reply (status "ok") longer than :data:`PARSE_MAX_CHARS` characters, so parsed
    from its opening only. Null replies and failed or missing requests are ``False``."""
    long = pc.greater(pc.utf8_length(_strings(response)), PARSE_MAX_CHARS)
    return pc.fill_null(pc.and_(pc.equal(_strings(status), "ok"), long), False)


def with_standard_columns(items: pa.Table) -> pa.Table:
    """A scorer's per-item table with the standard columns (:data:`ITEM_STANDARD_COLUMNS`) right
    after the core ones, computed from the core columns (any the scorer wrote are replaced)."""
    for name, _ in ITEM_STANDARD_COLUMNS:
        if name in items.column_names:
            items = items.drop_columns([name])
    flags = truncated_flags(items.column("status"), items.column("response"))
    return items.add_column(len(ITEM_CORE_COLUMNS), pa.field("truncated", pa.bool_()), flags)


def _strings(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return column.cast(pa.string())


def check_items(table: pa.Table, *, component: str) -> None:
    """Raise if a scorer's per-item table breaks the schema (a bug in that component)."""
    names = [name for name, _ in ITEM_CORE_COLUMNS]
    if table.column_names[: len(names)] != names:
        raise BiovqaError(f"the {component} scorer wrote items columns {table.column_names[:len(names)]}, "
                          f"the score schema needs {names} first")
    for name, kind in ITEM_CORE_COLUMNS:
        actual = table.schema.field(name).type
        if pa.types.is_dictionary(actual):
            actual = actual.value_type
        if actual != kind:
            raise BiovqaError(f"the {component} scorer wrote column {name!r} as {actual}, the schema says {kind}")
    for offset, (name, kind) in enumerate(ITEM_STANDARD_COLUMNS, start=len(names)):
        if name in table.column_names and (table.column_names.index(name) != offset
                                           or table.schema.field(name).type != kind):
            raise BiovqaError(f"column {name!r} must follow the core columns as {kind}")
    statuses = set(pc.unique(_strings(table.column("status"))).to_pylist())
    if not statuses <= set(SCORE_STATUSES):
        raise BiovqaError(f"the {component} scorer wrote statuses {sorted(statuses - set(SCORE_STATUSES))}")


def check_summary(summary: Mapping[str, Any]) -> None:
    """Raise if a summary breaks the schema: top-level keys, Table 3 as estimates, and every
    mapping that looks like an estimate having exactly the estimate keys."""
    missing = [key for key in SUMMARY_KEYS if key not in summary]
    if missing:
        raise BiovqaError(f"summary lacks {missing}")
    table3 = summary["table3"]
    if not isinstance(table3, dict) or not all(is_estimate(v) for v in table3.values()):
        raise BiovqaError("summary table3 must map each column to an estimate {value, lo, hi, n}")

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            if "value" in value and ("lo" in value or "hi" in value) and not is_estimate(value):
                raise BiovqaError(f"summary {path} is an estimate without the form {{value, lo, hi, n}}: "
                                  f"{sorted(value)}")
            for key, inner in value.items():
                walk(inner, f"{path}.{key}")
        elif isinstance(value, list):
            for i, inner in enumerate(value):
                walk(inner, f"{path}[{i}]")

    walk(dict(summary), "summary")
