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
from collections.abc import Callable, Mapping
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


def corners(boxes: np.ndarray, convention: str, width: np.ndarray | float, height: np.ndarray | float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Parsed boxes (rows of four numbers) under ``convention`` as absolute (x1, y1, x2, y2) arrays
    clipped to the image."""
    scale_name, layout = convention.split()
    a, b, c, d = np.asarray(boxes, dtype=np.float64).reshape(-1, 4).T
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
    return (np.clip(x1, 0.0, width), np.clip(y1, 0.0, height), np.clip(x2, 0.0, width),
            np.clip(y2, 0.0, height))


def to_xyxy(box: tuple[float, ...], convention: str, width: float, height: float) -> tuple[float, float, float, float]:
    """One parsed box under ``convention`` as absolute, clipped (x1, y1, x2, y2)."""
    x1, y1, x2, y2 = (float(v[0]) for v in corners(np.array([box]), convention, width, height))
    return x1, y1, x2, y2


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


#: task → the parser of its replies (Table 14)
PARSERS: dict[str, Callable[[str], Any]] = {
    "counting": P.parse_integer, "relative_counting": lambda r: P.parse_letter(r, "image"),
    "relative_distance": lambda r: P.parse_letter(r, "beetle"), "relative_position": P.parse_direction,
    "absolute_distance": P.parse_centimetres, "localization": P.parse_box, "viewpoint": P.parse_viewpoint,
    "ocr": P.parse_code,
}
_UNSEEN = object()


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
    parsed_replies: dict[tuple[str, str], Any] = {}  # the parsers are pure: parse each distinct reply once
    for i in range(n):
        task, gold = cols["task"][i], cols["answer"][i]
        reply = responses[i] if statuses[i] == "ok" else None
        status = statuses[i] if statuses[i] in ("failed", "missing") else None
        parsed: Any = None
        if reply is not None:
            key = (task, reply)
            parsed = parsed_replies.get(key, _UNSEEN)
            if parsed is _UNSEEN:
                parse = PARSERS.get(task)
                parsed = parsed_replies[key] = parse(reply) if parse is not None else None
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
    if convention is not None:
        arrays = _box_arrays(boxes, cols)
        for i, value in zip(boxes, ious_under(arrays[0], convention, *arrays[1:])):
            out["iou"][i] = float(value)
            out["box_convention"][i] = convention
    for i in range(n):
        if cols["task"][i] == "localization":
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


def ious_under(boxes: np.ndarray, convention: str, width: np.ndarray, height: np.ndarray, gold: np.ndarray
               ) -> np.ndarray:
    """:func:`iou` of every parsed box (rows of ``boxes``) read under ``convention`` against its
    gold box (x1, y1, x2, y2), as arrays (what :func:`to_xyxy` and :func:`iou` do one box at a time)."""
    x1, y1, x2, y2 = corners(boxes, convention, width, height)
    gx1, gy1, gx2, gy2 = gold.T
    area_p = np.maximum(0.0, x2 - x1) * np.maximum(0.0, y2 - y1)
    area_g = np.maximum(0.0, gx2 - gx1) * np.maximum(0.0, gy2 - gy1)
    inter = (np.maximum(0.0, np.minimum(x2, gx2) - np.maximum(x1, gx1))
             * np.maximum(0.0, np.minimum(y2, gy2) - np.maximum(y1, gy1)))
    ok = (area_p > 0) & (area_g > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok, inter / np.where(ok, area_p + area_g - inter, 1.0), 0.0)


def _box_arrays(boxes: dict[int, tuple[float, ...]], cols: Mapping[str, list[Any]]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    index = list(boxes)
    return (np.array([boxes[i] for i in index], dtype=np.float64).reshape(-1, 4),
            np.array([cols["image_width"][i] for i in index], dtype=np.float64),
            np.array([cols["image_height"][i] for i in index], dtype=np.float64),
            np.array([cols["gold_box"][i] for i in index], dtype=np.float64).reshape(-1, 4))


def convention_means(boxes: dict[int, tuple[float, ...]], cols: Mapping[str, list[Any]]) -> dict[str, float]:
    """Mean IoU over the parsed boxes under every candidate convention."""
    if not boxes:
        return dict.fromkeys(CONVENTIONS, math.nan)
    arrays = _box_arrays(boxes, cols)
    return {c: float(ious_under(arrays[0], c, *arrays[1:]).mean()) for c in CONVENTIONS}


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


__all__ = ["CONVENTIONS", "char_accuracy", "convention_means", "corners", "detect_convention", "iou", "ious_under", "ring_steps",
           "score", "score_items", "to_xyxy", "view_credit"]
