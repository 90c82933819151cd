"""C3 scoring: parse every reply with its task's parser (Table 14), score it per item, and
summarise (the paper's Appendix C metrics; the summary shape is documented in :mod:`.summary`).
The measures the summary also reuses (box conventions, IoU, viewpoint credit, character accuracy)
are in :mod:`.kernels`.

Per-item table: the schema's core columns (``parsed`` = the recovered answer as text, ``score`` =
the item's value of its task's headline metric: counting cas, relative counting / distance /
position correct, absolute distance hit@20, localization IoU under the model's detected box
convention (unparsed = 0), viewpoint credit v, OCR exact match), then ``subset, dataset, tier,
measure, cluster, gold, parse_status, correct, cas, pred_number, hit20, rel_err, iou,
box_convention, vas, steps, ang_err, char_acc, suffix_char_acc``.

``parse_status``: ``parsed``, ``unparsed`` (a reply the parser rejected), ``failed`` (the request
failed), ``missing`` (no reply). Every non-parsed item scores 0 on the headline.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.bench.folder import Bench
from biovqa.components.registry import ScoreResult
from biovqa.components.c3 import parser as P
from biovqa.components.c3.floors import ACC20, TOL, common_prefix
from biovqa.components.c3.kernels import (DEFAULT_VAS_WEIGHTS, box_arrays, box_conventions, char_accuracy,
                                          credit_for_steps, detect_convention, ious_under, ring_steps,
                                          vas_weights)
from biovqa.components.c3.summary import draw_ahead, summarize
from biovqa.components.c3.tasks import DIRECTIONS
from biovqa.scoring.schema import core_columns


def resolve_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    from biovqa.components.c3 import COMPONENT

    return COMPONENT.resolve_score_options(dict(options or {}))


def parsers(options: Mapping[str, Any] | None = None) -> dict[str, Callable[[str], Any]]:
    """Task → the parser of its replies (Table 14), with the extensions ``options`` switch on
    (``number_words``, ``unit_words``, ``direction_synonyms``, ``viewpoint_synonyms``; all off by
    default, see :mod:`.parser`)."""
    options = options or {}
    number_words, unit_words = bool(options.get("number_words")), bool(options.get("unit_words"))
    directions, views = bool(options.get("direction_synonyms")), bool(options.get("viewpoint_synonyms"))
    return {
        "counting": lambda r: P.parse_integer(r, number_words=number_words),
        "relative_counting": lambda r: P.parse_letter(r, "image"),
        "relative_distance": lambda r: P.parse_letter(r, "beetle"),
        "relative_position": lambda r: P.parse_direction(r, synonyms=directions),
        "absolute_distance": lambda r: P.parse_centimetres(r, unit_words=unit_words),
        "localization": P.parse_box,
        "viewpoint": lambda r: P.parse_viewpoint(r, synonyms=views),
        "ocr": P.parse_code,
    }


#: task → the parser of its replies under the default options (Table 14 as written)
PARSERS: dict[str, Callable[[str], Any]] = parsers()
_UNSEEN = object()


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def _as_float(value: int | float) -> float:
    """A parsed number as a float; an integer too large for one (a reply of 400 digits) is inf."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


class _Out:
    """The per-item output columns: floats with a validity mask (null where not valid; a NaN that
    is valid stays NaN), and Python lists for the text columns."""

    FLOATS = ("correct", "cas", "pred_number", "hit20", "rel_err", "iou", "vas", "ang_err", "char_acc",
              "suffix_char_acc", "score")

    def __init__(self, n: int) -> None:
        self.values = {name: np.zeros(n) for name in self.FLOATS}
        self.valid = {name: np.zeros(n, dtype=bool) for name in self.FLOATS}
        self.parsed: list[str | None] = [None] * n
        self.parse_status: list[str | None] = [None] * n
        self.box_convention: list[str | None] = [None] * n
        self.steps: list[int | None] = [None] * n

    def put(self, name: str, rows: np.ndarray, values: np.ndarray | float, valid: np.ndarray | bool = True) -> None:
        self.values[name][rows] = values
        self.valid[name][rows] = valid

    def parsed_at(self, rows: list[int], values: list[Any]) -> None:
        for i, value in zip(rows, values):
            self.parsed[i] = value

    def array(self, name: str) -> pa.Array:
        return pa.array(self.values[name], pa.float64(), mask=~self.valid[name])


def score_items(items: pa.Table, predictions: pa.Table, options: Mapping[str, Any]) -> pa.Table:
    weights = vas_weights(options.get("vas_weights", DEFAULT_VAS_WEIGHTS))
    n = items.num_rows
    tasks = items.column("task").to_pylist()
    answers = items.column("answer").to_pylist()
    gold_numbers = np.asarray(items.column("gold_number").cast(pa.float64()).to_numpy(zero_copy_only=False),
                              dtype=np.float64)
    responses = predictions.column("response").to_pylist()
    statuses = predictions.column("status").to_pylist()
    rows_of: dict[str, list[int]] = {}
    for i, task in enumerate(tasks):
        rows_of.setdefault(task, []).append(i)
    out = _Out(n)
    boxes: dict[int, tuple[float, ...]] = {}
    parse_with = parsers(options)
    for task, task_rows in rows_of.items():
        rows = np.asarray(task_rows, dtype=np.int64)
        parsed = _parse_all(parse_with.get(task), task_rows, responses, statuses, out)
        ok = np.array([v is not None for v in parsed], dtype=bool)
        golds = [answers[i] for i in task_rows]
        if task == "counting":
            g = gold_numbers[rows]
            p = np.array([_as_float(v) if v is not None else math.nan for v in parsed])
            with np.errstate(invalid="ignore", divide="ignore"):
                credit = 1.0 - np.abs(p - g) / g
            cas = np.where(ok & (credit > 0.0), credit, 0.0)  # Python's max(0.0, x): 0 unless x > 0
            out.put("cas", rows, cas)
            out.put("correct", rows, (ok & (p == g)).astype(float))
            out.put("pred_number", rows, p, ok)
            out.put("score", rows, cas)
            for i, v in zip(task_rows, parsed):
                if v is not None:
                    out.parsed[i] = str(v)
        elif task in ("relative_counting", "relative_distance", "relative_position"):
            correct = _matches(parsed, golds)
            out.put("correct", rows, correct)
            out.put("score", rows, correct)
            out.parsed_at(task_rows, parsed)
            if task == "relative_position":
                turns = {i: abs(DIRECTIONS.index(v) - DIRECTIONS.index(gold))
                         for i, v, gold in zip(task_rows, parsed, golds) if v is not None}
                out.put("ang_err", np.fromiter(turns, np.int64, len(turns)),
                        np.array([45.0 * min(k, 8 - k) for k in turns.values()]))
        elif task == "absolute_distance":
            g = gold_numbers[rows]
            p = np.array([v if v is not None else math.nan for v in parsed], dtype=np.float64)
            hits = (ok & (np.abs(p - g) <= ACC20 * g + TOL)).astype(float)
            out.put("pred_number", rows, p, ok)
            out.put("hit20", rows, hits)
            with np.errstate(invalid="ignore", divide="ignore"):
                out.put("rel_err", rows, np.abs(p - g) / g, ok)
            out.put("score", rows, hits)
            for i, v in zip(task_rows, parsed):
                if v is not None:
                    out.parsed[i] = _fmt(v)
        elif task == "localization":
            for i, v in zip(task_rows, parsed):
                if v is not None:
                    boxes[i] = v
                    out.parsed[i] = "[" + ", ".join(_fmt(x) for x in v) + "]"
        elif task == "viewpoint":
            credit = np.zeros(len(task_rows))
            on_ring = {}
            for k, (i, v, gold) in enumerate(zip(task_rows, parsed, golds)):
                if v is None:
                    continue
                out.steps[i] = steps_ = ring_steps(gold, v)
                credit[k] = credit_for_steps(gold, v, steps_, weights)
                if steps_ is not None:
                    on_ring[i] = 45.0 * steps_
            out.put("vas", rows, credit)
            out.put("correct", rows, _matches(parsed, golds))
            out.put("score", rows, credit)
            out.parsed_at(task_rows, parsed)
            out.put("ang_err", np.fromiter(on_ring, np.int64, len(on_ring)),
                    np.fromiter(on_ring.values(), np.float64, len(on_ring)))
        elif task == "ocr":
            prefix_len = len(common_prefix(golds))
            correct = _matches(parsed, golds)
            out.put("correct", rows, correct)
            out.put("score", rows, correct)
            out.put("char_acc", rows, np.array([char_accuracy(gold, v) for v, gold in zip(parsed, golds)]))
            suffix = np.array([char_accuracy(gold, v, prefix_len) for v, gold in zip(parsed, golds)])
            out.put("suffix_char_acc", rows, suffix, ~np.isnan(suffix))
            out.parsed_at(task_rows, parsed)
    localization = rows_of.get("localization", [])
    if localization:
        out.put("score", np.asarray(localization, dtype=np.int64), 0.0)  # unparsed boxes score 0
    if boxes:
        cols = items.select(["image_width", "image_height", "gold_box"]).to_pydict()
        convention = detect_convention(boxes, cols, box_conventions(bool(options.get("box_yxyx"))))
        index = np.fromiter(boxes, dtype=np.int64, count=len(boxes))
        parsed_boxes, width, height, gold = box_arrays(boxes, cols)
        values = ious_under(parsed_boxes, convention, width, height, gold)
        out.put("iou", index, values)
        out.put("score", index, values)
        for i in boxes:
            out.box_convention[i] = convention
    out.valid["score"][:] = True  # every item has a headline value (0 where nothing was parsed)
    core = core_columns(items, predictions, component="c3", parsed=pa.array(out.parsed, pa.string()),
                        score=out.array("score"))
    columns: dict[str, Any] = dict(core)
    for name in ("subset", "dataset", "tier", "measure", "cluster"):
        columns[name] = _text_column(items.column(name))
    columns["gold"] = _text_column(items.column("answer"))
    columns["parse_status"] = pa.array(out.parse_status, pa.string())
    for name in ("correct", "cas", "pred_number", "hit20", "rel_err", "iou", "vas", "ang_err", "char_acc",
                 "suffix_char_acc"):
        columns[name] = out.array(name)
    columns["box_convention"] = pa.array(out.box_convention, pa.string())
    columns["steps"] = pa.array(out.steps, pa.int8())
    return pa.table(columns)


def _matches(parsed: list[Any], golds: list[str]) -> np.ndarray:
    """1.0 where the parsed answer equals the gold one, else 0.0 (unparsed included)."""
    return np.array([v is not None and v == gold for v, gold in zip(parsed, golds)], dtype=float)


def _parse_all(parse: Callable[[str], Any] | None, rows: list[int], responses: list[str | None],
               statuses: list[str | None], out: _Out) -> list[Any]:
    """Each row's parsed reply (None when not parsed); writes every row's ``parse_status``. The
    parsers are pure, so each distinct reply is parsed once."""
    seen: dict[str, Any] = {}
    parsed: list[Any] = []
    for i in rows:
        status = statuses[i]
        reply = responses[i] if status == "ok" else None
        value = None
        if reply is not None and parse is not None:
            value = seen.get(reply, _UNSEEN)
            if value is _UNSEEN:
                value = seen[reply] = parse(reply)
        parsed.append(value)
        out.parse_status[i] = "parsed" if value is not None else status if status in ("failed", "missing") \
            else "unparsed"
    return parsed


def _text_column(column: pa.ChunkedArray) -> pa.Array:
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return column.cast(pa.string()).combine_chunks()


def score(bench: Bench, predictions: pa.Table, options: Mapping[str, Any] | None = None) -> ScoreResult:
    """Score C3 predictions (aligned with ``bench.items``): per-item table + summary."""
    table, summary = score_tables(bench.items, predictions, options)
    return ScoreResult(items=table, summary=summary)


def score_tables(items: pa.Table, predictions: pa.Table, options: Mapping[str, Any] | None = None
                 ) -> tuple[pa.Table, dict[str, Any]]:
    """(per-item scores, summary) of C3 ``predictions`` aligned with ``items``. The bootstrap's
    resampled counts depend on the items alone, so they are drawn on a second thread while the
    items are scored; BLAS gets one thread meanwhile (a second one would only contend with the
    draws for the two cores of a laptop or CI runner: 2.35 s instead of 1.65 s on the benchmark)."""
    from threadpoolctl import threadpool_limits

    options = resolve_options(options)
    with threadpool_limits(limits=1, user_api="blas"):
        draws = draw_ahead(items, options)
        try:
            table = score_items(items, predictions, options)
            return table, summarize(table, items, options, draws)
        finally:
            if draws is not None:
                draws.close()


__all__ = ["parsers", "resolve_options", "score", "score_items", "score_tables"]
