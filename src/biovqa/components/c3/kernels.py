"""C3 per-item kernels and the measures they share with the summary (the paper's Appendix C).

* The per-item kernel of each task (``score_*``, held by its spec record in :mod:`.tasks`): from
  the parsed replies of the task's rows to the item's headline ``score`` and its own columns
  (:class:`ScoreColumns`).
* The measures behind them: the box conventions a localization reply may use (Table 43's eight,
  read under each to detect a model's), IoU one box at a time and as arrays, the viewpoint ring
  steps and credit v, the position-aligned character accuracy of OCR replies.
* The image-blind floor rules (the paper's Eq. 24 and Table 38's floor row, ``floor_*``): each is
  a function of the gold answers only, fitted on whatever rows it is given; the ``baseline``
  backend's replies (:func:`biovqa.components.c3.floor.floor_responses`) and the summary's floors
  (fitted on the rows a model parsed) use the same fits.
"""

from __future__ import annotations

import bisect
import math
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.components.c3.prompts import DIRECTIONS, LETTERS, VIEWPOINT_BEARING


#: box conventions: (scale, layout). Table 43 detects a model's convention "by scoring under all
#: eight" formats: four scales × two layouts. The first is the prompt's and wins ties.
BOX_SCALES: dict[str, float | None] = {"abs": None, "n01": 1.0, "n100": 100.0, "n1000": 1000.0}


BOX_LAYOUTS: tuple[str, ...] = ("xywh", "xyxy")


#: (y1, x1, y2, x2), searched only with the score option ``box_yxyx``: not one of Table 43's eight,
#: and a larger search can only raise a model's score above the paper's rule
YXYX = "yxyx"


def box_conventions(yxyx: bool = False) -> tuple[str, ...]:
    """The conventions searched: Table 43's eight, and the four yxyx ones after them when asked."""
    eight = ("abs xywh",) + tuple(f"{scale} {layout}" for scale in BOX_SCALES for layout in BOX_LAYOUTS
                                  if (scale, layout) != ("abs", "xywh"))
    return eight + (tuple(f"{scale} {YXYX}" for scale in BOX_SCALES) if yxyx else ())


CONVENTIONS: tuple[str, ...] = box_conventions()


DEFAULT_VAS_WEIGHTS = "1,0.25,0.1,0,0"


def vas_weights(text: str | Sequence[float]) -> tuple[float, ...]:
    from biovqa.errors import BiovqaError

    try:  # the resolved score option is already a tuple of floats; the text form is still read
        weights = tuple(float(v) for v in (text.split(",") if isinstance(text, str) else text))
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
    return 0.0 if pred is None else credit_for_steps(gold, pred, ring_steps(gold, pred), weights)


def credit_for_steps(gold: str, pred: str, steps: int | None, weights: tuple[float, ...]) -> float:
    """The viewpoint credit v of a parsed answer ``steps`` ring steps from gold (up/down, off the
    ring: exact match only)."""
    return (1.0 if gold == pred else 0.0) if steps is None else weights[steps]


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


def ious_under(boxes: np.ndarray, convention: str, width: np.ndarray, height: np.ndarray, gold: np.ndarray
               ) -> np.ndarray:
    """:func:`iou` of every parsed box (rows of ``boxes``) read under ``convention`` against its
    gold box (x1, y1, x2, y2), as arrays (what :func:`iou` does one box at a time)."""
    x1, y1, x2, y2 = corners(boxes, convention, width, height)
    gx1, gy1, gx2, gy2 = gold.T
    area_p = np.maximum(0.0, x2 - x1) * np.maximum(0.0, y2 - y1)
    area_g = np.maximum(0.0, gx2 - gx1) * np.maximum(0.0, gy2 - gy1)
    inter = (np.maximum(0.0, np.minimum(x2, gx2) - np.maximum(x1, gx1))
             * np.maximum(0.0, np.minimum(y2, gy2) - np.maximum(y1, gy1)))
    ok = (area_p > 0) & (area_g > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok, inter / np.where(ok, area_p + area_g - inter, 1.0), 0.0)


def box_arrays(boxes: dict[int, tuple[float, ...]], cols: Mapping[str, list[Any]]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    index = list(boxes)
    return (np.array([boxes[i] for i in index], dtype=np.float64).reshape(-1, 4),
            np.array([cols["image_width"][i] for i in index], dtype=np.float64),
            np.array([cols["image_height"][i] for i in index], dtype=np.float64),
            np.array([cols["gold_box"][i] for i in index], dtype=np.float64).reshape(-1, 4))


def convention_means(boxes: dict[int, tuple[float, ...]], cols: Mapping[str, list[Any]],
                     conventions: tuple[str, ...] = CONVENTIONS) -> dict[str, float]:
    """Mean IoU over the parsed boxes under every candidate convention."""
    if not boxes:
        return dict.fromkeys(conventions, math.nan)
    arrays = box_arrays(boxes, cols)
    return {c: float(ious_under(arrays[0], c, *arrays[1:]).mean()) for c in conventions}


def detect_convention(boxes: dict[int, tuple[float, ...]], cols: Mapping[str, list[Any]],
                      conventions: tuple[str, ...] = CONVENTIONS) -> str:
    """The convention with the highest mean IoU (ties: the earlier in ``conventions``, whose first
    is the prompt's abs xywh)."""
    means = convention_means(boxes, cols, conventions)
    best = conventions[0]
    for convention in conventions:
        if means[convention] > means[best] + 1e-12:
            best = convention
    return best



# ----------------------------------------------------------------------------- floor fits

#: acc@20 tolerance: |ŷ − y| ≤ 0.2·y (+ 1e-9: a reply at exactly 20 % counts, Appendix C.6)
ACC20 = 0.2
TOL = 1e-9


def modal_counts(pairs: Iterable[tuple[str, int]]) -> dict[str, int]:
    """Per subset, the most frequent gold count (ties: the smaller count)."""
    counts: dict[str, Counter[int]] = {}
    for (subset, gold), n in Counter(pairs).items():
        counts.setdefault(subset, Counter())[gold] += n
    return {s: min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for s, c in counts.items()}


def best_constant(golds: Sequence[float]) -> tuple[float, int]:
    """The constant c maximising acc@20 over ``golds`` and how many it covers: a constant covers
    golds in [L, 1.5 L] with L = c / 1.2; slide L over the sorted golds (ties: the smallest L)."""
    values = sorted(float(g) for g in golds if g is not None and g > 0)
    if not values:
        return float("nan"), 0
    best_l, best_n = values[0], 0
    for i, low in enumerate(values):
        n = bisect.bisect_right(values, 1.5 * low * (1 + 1e-12) + TOL) - i
        if n > best_n:
            best_l, best_n = low, n
    return 1.2 * best_l, best_n


def mean_normalised_box(rows: Iterable[tuple[Sequence[float], int, int]]) -> tuple[float, float, float, float]:
    """Mean of (x1/W, y1/H, x2/W, y2/H) over gold boxes."""
    sums = [0.0, 0.0, 0.0, 0.0]
    n = 0
    for box, width, height in rows:
        sums[0] += box[0] / width
        sums[1] += box[1] / height
        sums[2] += box[2] / width
        sums[3] += box[3] / height
        n += 1
    if n == 0:
        return (0.0, 0.0, 0.0, 0.0)
    return (sums[0] / n, sums[1] / n, sums[2] / n, sums[3] / n)


def majority(labels: Iterable[str]) -> str:
    counts = Counter(labels)
    if not counts:
        return ""
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def common_prefix(codes: Sequence[str]) -> str:
    if not codes:
        return ""
    first, last = min(codes), max(codes)
    k = 0
    while k < min(len(first), len(last)) and first[k] == last[k]:
        k += 1
    return first[:k]


def constant_code(codes: Sequence[str]) -> str:
    """The best constant string: the golds' common prefix + the per-position modal character
    (ties: the smaller character) at every later position."""
    if not codes:
        return ""
    prefix = common_prefix(codes)
    length = max(len(c) for c in codes)
    out = list(prefix)
    for position in range(len(prefix), length):
        out.append(majority([c[position] for c in codes if len(c) > position]))
    return "".join(out)



# ----------------------------------------------------------------------------- per-item kernels


@dataclass(frozen=True, slots=True)
class TaskRows:
    """What a task's kernel reads: its rows of the items table (``index``), each row's parsed reply
    (``parsed``: None where nothing was parsed), gold answer and gold number (NaN where none), the
    whole items table (for the columns only one task reads) and the resolved score options."""

    index: np.ndarray
    parsed: list[Any]
    golds: list[str]
    gold_numbers: np.ndarray
    items: pa.Table
    options: Mapping[str, Any]

    @property
    def ok(self) -> np.ndarray:
        """True where a reply was parsed."""
        return np.array([v is not None for v in self.parsed], dtype=bool)


class ScoreColumns:
    """The per-item output columns the kernels fill: floats with a validity mask (null where not
    valid; a NaN that is valid stays NaN), and Python lists for the text columns."""

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

    def parsed_at(self, rows: np.ndarray, values: list[Any], text: Any = None) -> None:
        """Each parsed reply of ``rows`` as the ``parsed`` text (``text(value)``; the value itself
        when it is already text)."""
        for i, value in zip(rows.tolist(), values):
            if value is not None:
                self.parsed[i] = value if text is None else text(value)

    def array(self, name: str) -> pa.Array:
        return pa.array(self.values[name], pa.float64(), mask=~self.valid[name])


def number_text(value: float) -> str:
    """A parsed number as the ``parsed`` column writes it."""
    return f"{value:.6g}"


def _as_float(value: int | float) -> float:
    """A parsed number as a float; an integer too large for one (a reply of 400 digits) is inf."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _matches(parsed: list[Any], golds: list[str]) -> np.ndarray:
    """1.0 where the parsed answer equals the gold one, else 0.0 (unparsed included)."""
    return np.array([v is not None and v == gold for v, gold in zip(parsed, golds)], dtype=float)


def score_count(rows: TaskRows, out: ScoreColumns) -> None:
    """Counting: cas = max(0, 1 − |ŷ − y|/y) (Eq. 18), exact match, the parsed count."""
    g = rows.gold_numbers
    ok = rows.ok
    p = np.array([_as_float(v) if v is not None else math.nan for v in rows.parsed])
    with np.errstate(invalid="ignore", divide="ignore"):
        credit = 1.0 - np.abs(p - g) / g
    cas = np.where(ok & (credit > 0.0), credit, 0.0)  # Python's max(0.0, x): 0 unless x > 0
    out.put("cas", rows.index, cas)
    out.put("correct", rows.index, (ok & (p == g)).astype(float))
    out.put("pred_number", rows.index, p, ok)
    out.put("score", rows.index, cas)
    out.parsed_at(rows.index, rows.parsed, str)


def score_choice(rows: TaskRows, out: ScoreColumns) -> None:
    """A choice among named options (relative counting, relative distance): correct or not."""
    correct = _matches(rows.parsed, rows.golds)
    out.put("correct", rows.index, correct)
    out.put("score", rows.index, correct)
    out.parsed_at(rows.index, rows.parsed)


def score_direction(rows: TaskRows, out: ScoreColumns) -> None:
    """Relative position: correct or not, and the angular error of a parsed direction (45° per
    step round the eight-direction ring)."""
    score_choice(rows, out)
    turns = {i: abs(DIRECTIONS.index(v) - DIRECTIONS.index(gold))
             for i, v, gold in zip(rows.index.tolist(), rows.parsed, rows.golds) if v is not None}
    out.put("ang_err", np.fromiter(turns, np.int64, len(turns)),
            np.array([45.0 * min(k, 8 - k) for k in turns.values()]))


def score_distance(rows: TaskRows, out: ScoreColumns) -> None:
    """Absolute distance: hit@20 (|ŷ − y| ≤ 0.2·y) and the relative error of a parsed length."""
    g = rows.gold_numbers
    ok = rows.ok
    p = np.array([v if v is not None else math.nan for v in rows.parsed], dtype=np.float64)
    hits = (ok & (np.abs(p - g) <= ACC20 * g + TOL)).astype(float)
    out.put("pred_number", rows.index, p, ok)
    out.put("hit20", rows.index, hits)
    with np.errstate(invalid="ignore", divide="ignore"):
        out.put("rel_err", rows.index, np.abs(p - g) / g, ok)
    out.put("score", rows.index, hits)
    out.parsed_at(rows.index, rows.parsed, number_text)


def score_box(rows: TaskRows, out: ScoreColumns) -> None:
    """Localization: IoU under the one box convention detected for the model over all its parsed
    boxes (Table 43); an unparsed reply scores 0."""
    out.put("score", rows.index, 0.0)
    boxes = {i: v for i, v in zip(rows.index.tolist(), rows.parsed) if v is not None}
    if not boxes:
        return
    cols = rows.items.select(["image_width", "image_height", "gold_box"]).to_pydict()
    convention = detect_convention(boxes, cols, box_conventions(bool(rows.options["box_yxyx"])))
    index = np.fromiter(boxes, dtype=np.int64, count=len(boxes))
    parsed_boxes, width, height, gold = box_arrays(boxes, cols)
    values = ious_under(parsed_boxes, convention, width, height, gold)
    out.put("iou", index, values)
    out.put("score", index, values)
    for i, box in boxes.items():
        out.box_convention[i] = convention
        out.parsed[i] = "[" + ", ".join(number_text(x) for x in box) + "]"


def score_view(rows: TaskRows, out: ScoreColumns) -> None:
    """Viewpoint: the ring credit v for 0–4 steps (``vas_weights``; up/down exact only), exact
    match, the ring steps and the angular error of an answer on the ring."""
    weights = vas_weights(rows.options["vas_weights"])
    credit = np.zeros(len(rows.index))
    on_ring = {}
    for k, (i, v, gold) in enumerate(zip(rows.index.tolist(), rows.parsed, rows.golds)):
        if v is None:
            continue
        out.steps[i] = steps = ring_steps(gold, v)
        credit[k] = credit_for_steps(gold, v, steps, weights)
        if steps is not None:
            on_ring[i] = 45.0 * steps
    out.put("vas", rows.index, credit)
    out.put("correct", rows.index, _matches(rows.parsed, rows.golds))
    out.put("score", rows.index, credit)
    out.parsed_at(rows.index, rows.parsed)
    out.put("ang_err", np.fromiter(on_ring, np.int64, len(on_ring)),
            np.fromiter(on_ring.values(), np.float64, len(on_ring)))


def score_code(rows: TaskRows, out: ScoreColumns) -> None:
    """OCR: exact match, character accuracy, and character accuracy after the prefix every gold
    code shares (what a constant reply gets for free)."""
    prefix_len = len(common_prefix(rows.golds))
    correct = _matches(rows.parsed, rows.golds)
    out.put("correct", rows.index, correct)
    out.put("score", rows.index, correct)
    out.put("char_acc", rows.index, np.array([char_accuracy(gold, v) for v, gold in zip(rows.parsed, rows.golds)]))
    suffix = np.array([char_accuracy(gold, v, prefix_len) for v, gold in zip(rows.parsed, rows.golds)])
    out.put("suffix_char_acc", rows.index, suffix, ~np.isnan(suffix))
    out.parsed_at(rows.index, rows.parsed)


# ----------------------------------------------------------------------------- floor replies
#
# Each rule takes one task's items (rows of item_id, subset, measure, answer, gold_number, options,
# image_width, image_height, gold_box) and returns the image-blind reply to each.


def floor_modal_count(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Counting: the subset's modal gold count."""
    modes = modal_counts([(r["subset"], int(r["gold_number"])) for r in rows])
    return [str(modes[r["subset"]]) for r in rows]


def floor_letter(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Relative counting / distance: a letter by item hash (uniform chance)."""
    return [LETTERS[zlib.crc32(r["item_id"].encode()) % 4] for r in rows]


def floor_option(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Relative position: one of the offered options by item hash."""
    return [r["options"][zlib.crc32(r["item_id"].encode()) % len(r["options"])] for r in rows]


def floor_constant_length(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Absolute distance: the per-measure constant of the sliding window (:func:`best_constant`)."""
    constants = {m: best_constant([r["gold_number"] for r in rows if r["measure"] == m])[0]
                 for m in {r["measure"] for r in rows}}
    return [f"{constants[r['measure']]:.6g} cm" for r in rows]


def floor_mean_box(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Localization: the mean normalised gold box, as [x, y, w, h] in each photo's pixels."""
    mean = mean_normalised_box([(r["gold_box"], r["image_width"], r["image_height"]) for r in rows])
    out = []
    for r in rows:
        W, H = r["image_width"], r["image_height"]
        x1, y1, x2, y2 = mean[0] * W, mean[1] * H, mean[2] * W, mean[3] * H
        out.append(f"[{round(x1)}, {round(y1)}, {round(x2 - x1)}, {round(y2 - y1)}]")
    return out


def floor_majority(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Viewpoint: the majority gold label."""
    return [majority([r["answer"] for r in rows])] * len(rows)


def floor_constant_code(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """OCR: the gold codes' common prefix plus the per-position modal suffix."""
    return [constant_code([r["answer"] for r in rows])] * len(rows)


__all__ = ["ACC20", "BOX_LAYOUTS", "BOX_SCALES", "CONVENTIONS", "DEFAULT_VAS_WEIGHTS", "TOL", "YXYX", "ScoreColumns",
           "TaskRows", "best_constant", "box_arrays", "box_conventions", "char_accuracy", "common_prefix",
           "constant_code", "convention_means", "corners", "credit_for_steps", "detect_convention",
           "floor_constant_code", "floor_constant_length", "floor_letter", "floor_majority", "floor_mean_box",
           "floor_modal_count", "floor_option", "iou", "ious_under", "majority", "mean_normalised_box",
           "modal_counts", "number_text", "ring_steps", "score_box", "score_choice", "score_code", "score_count",
           "score_direction", "score_distance", "score_view", "vas_weights", "view_credit"]
