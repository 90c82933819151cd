"""C3 scoring: parse every reply with its task's parser, score it per item, and summarise
(metrics.md §4; the summary shape is documented in :mod:`.summary`).

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
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.bench.folder import Bench
from biovqa.components.registry import ScoreResult
from biovqa.components.c3 import parser as P
from biovqa.components.c3.floors import common_prefix, hit20
from biovqa.components.c3.tasks import DIRECTIONS, VIEWPOINT_BEARING
from biovqa.scoring.schema import core_columns

#: box conventions: (scale, layout); the first is the prompt's and wins ties (metrics.md §4.6)
BOX_SCALES: dict[str, float | None] = {"abs": None, "n01": 1.0, "n100": 100.0, "n1000": 1000.0}
BOX_LAYOUTS: tuple[str, ...] = ("xywh", "xyxy", "yxyx")
CONVENTIONS: tuple[str, ...] = ("abs xywh",) + tuple(
    f"{scale} {layout}" for scale in BOX_SCALES for layout in BOX_LAYOUTS if (scale, layout) != ("abs", "xywh"))
DEFAULT_VAS_WEIGHTS = "1,0.25,0.1,0,0"


def resolve_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    from biovqa.components.c3 import COMPONENT

    return COMPONENT.resolve_score_options(dict(options or {}))


def vas_weights(text: str) -> tuple[float, ...]:
    from biovqa.errors import BiovqaError

    try:
        weights = tuple(float(v) for v in str(text).split(","))
    except ValueError:
        weights = ()
    if len(weights) != 5 or weights[0] != 1.0 or any(not 0 <= w <= 1 for w in weights):
        raise BiovqaError("vas_weights takes five comma-separated credits for 0..4 ring steps, the first 1",
                          field="vas_weights", hint=f"default {DEFAULT_VAS_WEIGHTS}")
    return weights


def ring_steps(gold: str, pred: str) -> int | None:
    """Ring steps between two viewpoints (0–4); None when either is up/down (off the ring)."""
    a, b = VIEWPOINT_BEARING.get(gold), VIEWPOINT_BEARING.get(pred)
    if a is None or b is None:
        return None
    diff = abs(a - b) % 360
    return min(diff, 360 - diff) // 45


def view_credit(gold: str, pred: str | None, weights: tuple[float, ...]) -> float:
    if pred is None:
        return 0.0
    steps = ring_steps(gold, pred)
    if steps is None:
        return 1.0 if gold == pred else 0.0
    return weights[steps]


def to_xyxy(box: tuple[float, ...], convention: str, width: float, height: float) -> tuple[float, float, float, float]:
    """A parsed box under ``convention`` as absolute, clipped (x1, y1, x2, y2)."""
    scale_name, layout = convention.split()
    a, b, c, d = box
    if layout == "xywh":
        x1, y1, x2, y2 = a, b, a + c, b + d
    elif layout == "xyxy":
        x1, y1, x2, y2 = a, b, c, d
    else:
        x1, y1, x2, y2 = b, a, d, c
    scale = BOX_SCALES[scale_name]
    if scale is not None:
        x1, x2 = x1 * width / scale, x2 * width / scale
        y1, y2 = y1 * height / scale, y2 * height / scale
    clip = lambda v, hi: min(max(v, 0.0), hi)  # noqa: E731
    return clip(x1, width), clip(y1, height), clip(x2, width), clip(y2, height)


def iou(p: tuple[float, ...], g: tuple[float, ...]) -> float:
    pa_ = max(0.0, p[2] - p[0]) * max(0.0, p[3] - p[1])
    ga = max(0.0, g[2] - g[0]) * max(0.0, g[3] - g[1])
    if pa_ <= 0 or ga <= 0:
        return 0.0
    inter = max(0.0, min(p[2], g[2]) - max(p[0], g[0])) * max(0.0, min(p[3], g[3]) - max(p[1], g[1]))
    return inter / (pa_ + ga - inter)


def char_accuracy(gold: str, pred: str | None, start: int = 0) -> float:
    """Position-aligned accuracy over gold positions ``start…`` (missing positions wrong)."""
    positions = range(start, len(gold))
    if not positions:
        return math.nan
    if pred is None:
        return 0.0
    return sum(1 for k in positions if k < len(pred) and pred[k] == gold[k]) / len(positions)


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def score_items(items: pa.Table, predictions: pa.Table, options: Mapping[str, Any]) -> pa.Table:
    weights = vas_weights(options.get("vas_weights", DEFAULT_VAS_WEIGHTS))
    cols = items.select(["task", "answer", "options", "subset", "dataset", "tier", "measure", "cluster",
                         "gold_number", "image_width", "image_height", "gold_box"]).to_pydict()
    responses = predictions.column("response").to_pylist()
    statuses = predictions.column("status").to_pylist()
    n = items.num_rows
    out: dict[str, list[Any]] = {k: [None] * n for k in (
        "parsed", "parse_status", "correct", "cas", "pred_number", "hit20", "rel_err", "iou", "box_convention",
        "vas", "steps", "ang_err", "char_acc", "suffix_char_acc", "score")}
    codes = [a for t, a in zip(cols["task"], cols["answer"]) if t == "ocr"]
    prefix_len = len(common_prefix(codes)) if codes else 0
    boxes: dict[int, tuple[float, ...]] = {}
    for i in range(n):
        task, gold = cols["task"][i], cols["answer"][i]
        reply = responses[i] if statuses[i] == "ok" else None
        status = statuses[i] if statuses[i] in ("failed", "missing") else None
        parsed: Any = None
        if reply is not None:
            if task == "counting":
                parsed = P.parse_integer(reply)
            elif task == "relative_counting":
                parsed = P.parse_letter(reply, "image")
            elif task == "relative_distance":
                parsed = P.parse_letter(reply, "beetle")
            elif task == "relative_position":
                parsed = P.parse_direction(reply)
            elif task == "absolute_distance":
                parsed = P.parse_centimetres(reply)
            elif task == "localization":
                parsed = P.parse_box(reply)
            elif task == "viewpoint":
                parsed = P.parse_viewpoint(reply)
            elif task == "ocr":
                parsed = P.parse_code(reply)
        ok = parsed is not None
        out["parse_status"][i] = "parsed" if ok else status or "unparsed"
        if task == "counting":
            g = float(cols["gold_number"][i])
            cas = max(0.0, 1.0 - abs(parsed - g) / g) if ok else 0.0
            out["cas"][i] = cas
            out["correct"][i] = float(ok and parsed == g)
            out["pred_number"][i] = float(parsed) if ok else None
            out["score"][i] = cas
            out["parsed"][i] = str(parsed) if ok else None
        elif task in ("relative_counting", "relative_distance", "relative_position"):
            out["correct"][i] = float(ok and parsed == gold)
            out["score"][i] = out["correct"][i]
            out["parsed"][i] = parsed
            if task == "relative_position" and ok:
                steps = abs(DIRECTIONS.index(parsed) - DIRECTIONS.index(gold))
                out["ang_err"][i] = 45.0 * min(steps, 8 - steps)
        elif task == "absolute_distance":
            g = float(cols["gold_number"][i])
            out["pred_number"][i] = parsed
            out["hit20"][i] = float(ok and hit20(parsed, g))
            out["rel_err"][i] = abs(parsed - g) / g if ok else None
            out["score"][i] = out["hit20"][i]
            out["parsed"][i] = _fmt(parsed) if ok else None
        elif task == "localization":
            if ok:
                boxes[i] = parsed
                out["parsed"][i] = "[" + ", ".join(_fmt(v) for v in parsed) + "]"
        elif task == "viewpoint":
            credit = view_credit(gold, parsed, weights)
            out["vas"][i] = credit
            out["correct"][i] = float(ok and parsed == gold)
            if ok:
                steps_ = ring_steps(gold, parsed)
                out["steps"][i] = steps_
                out["ang_err"][i] = None if steps_ is None else 45.0 * steps_
            out["score"][i] = credit
            out["parsed"][i] = parsed
        elif task == "ocr":
            out["correct"][i] = float(ok and parsed == gold)
            out["char_acc"][i] = char_accuracy(gold, parsed)
            suffix = char_accuracy(gold, parsed, prefix_len)
            out["suffix_char_acc"][i] = None if math.isnan(suffix) else suffix
            out["score"][i] = out["correct"][i]
            out["parsed"][i] = parsed
    convention = detect_convention(boxes, cols) if boxes else None
    for i in range(n):
        if cols["task"][i] == "localization":
            if i in boxes and convention is not None:
                value = iou(to_xyxy(boxes[i], convention, cols["image_width"][i], cols["image_height"][i]),
                            tuple(cols["gold_box"][i]))
                out["iou"][i] = value
                out["box_convention"][i] = convention
            out["score"][i] = out["iou"][i] if out["iou"][i] is not None else 0.0
    for i in range(n):
        if out["score"][i] is None:
            out["score"][i] = 0.0
    core = core_columns(items, predictions, component="c3", parsed=pa.array(out["parsed"], pa.string()),
                        score=pa.array(out["score"], pa.float64()))
    columns: dict[str, Any] = dict(core)
    for name in ("subset", "dataset", "tier", "measure", "cluster"):
        columns[name] = pa.array(cols[name], pa.string())
    columns["gold"] = pa.array(cols["answer"], pa.string())
    columns["parse_status"] = pa.array(out["parse_status"], pa.string())
    for name in ("correct", "cas", "pred_number", "hit20", "rel_err", "iou", "vas", "ang_err", "char_acc",
                 "suffix_char_acc"):
        columns[name] = pa.array(out[name], pa.float64())
    columns["box_convention"] = pa.array(out["box_convention"], pa.string())
    columns["steps"] = pa.array(out["steps"], pa.int8())
    return pa.table(columns)


def convention_means(boxes: dict[int, tuple[float, ...]], cols: Mapping[str, list[Any]]) -> dict[str, float]:
    """Mean IoU over the parsed boxes under every candidate convention."""
    out = {}
    for convention in CONVENTIONS:
        values = [iou(to_xyxy(b, convention, cols["image_width"][i], cols["image_height"][i]),
                      tuple(cols["gold_box"][i])) for i, b in boxes.items()]
        out[convention] = float(np.mean(values)) if values else math.nan
    return out


def detect_convention(boxes: dict[int, tuple[float, ...]], cols: Mapping[str, list[Any]]) -> str:
    """The convention with the highest mean IoU (ties: the earlier in :data:`CONVENTIONS`)."""
    means = convention_means(boxes, cols)
    best = CONVENTIONS[0]
    for convention in CONVENTIONS:
        if means[convention] > means[best] + 1e-12:
            best = convention
    return best


def score(bench: Bench, predictions: pa.Table, options: Mapping[str, Any] | None = None) -> ScoreResult:
    """Score C3 predictions (aligned with ``bench.items``): per-item table + summary."""
    from biovqa.components.c3.summary import summarize

    options = resolve_options(options)
    table = score_items(bench.items, predictions, options)
    summary = summarize(table, bench.items, options)
    return ScoreResult(items=table, summary=summary)


__all__ = ["CONVENTIONS", "char_accuracy", "detect_convention", "iou", "ring_steps", "score", "score_items",
           "to_xyxy", "view_credit"]
