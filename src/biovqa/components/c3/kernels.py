"""C3 per-item measures shared by the scorer and the summary's sensitivity sections: the box
conventions a localization reply may use (Table 43's eight, read under each to detect a model's),
IoU one box at a time and as arrays, the viewpoint ring steps and credit v (Appendix C), and the
position-aligned character accuracy of OCR replies."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from biovqa.components.c3.tasks import VIEWPOINT_BEARING


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


__all__ = ["BOX_LAYOUTS", "BOX_SCALES", "CONVENTIONS", "DEFAULT_VAS_WEIGHTS", "YXYX", "box_arrays", "box_conventions", "char_accuracy", "convention_means", "corners", "credit_for_steps", "detect_convention", "iou", "ious_under", "ring_steps", "to_xyxy", "vas_weights", "view_credit"]
