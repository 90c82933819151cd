"""C3 build geometry: the counting canvases, box helpers, the eight-direction sectors of relative
position and the placement of its empty boxes (paper Sec. A.3 and C.6)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from biovqa.components.c3.prompts import DIRECTIONS

#: relative position: skip pairs within ±5° of a sector boundary [DEFAULT]
RPOS_BOUNDARY_DEG = 5.0


def easy_canvas(width: int, height: int, side: int) -> tuple[int, int]:
    """The Easy counting canvas of a ``width`` × ``height`` photo: the photo's aspect at the pixel
    budget ``side``² (the paper's fixed budget, §A.3), so the one image fills the canvas."""
    aspect = width / height
    return max(1, round(side * math.sqrt(aspect))), max(1, round(side / math.sqrt(aspect)))


def pair_canvas(left: tuple[int, int], right: tuple[int, int], side: int
                ) -> tuple[tuple[int, int], tuple[tuple[int, int, int, int], tuple[int, int, int, int]]]:
    """The two-panel counting canvas (size, (left rect, right rect)) at the same pixel budget
    ``side``² as Easy: both photos side by side at one height, each panel its photo's aspect, so
    each photo gets about half the area it has on its Easy canvas (exactly half for equal aspects;
    the paper: "a target occupies about half the area in Medium and Hard that it occupies in
    Easy", §A.3 and §G.2)."""
    a_left, a_right = left[0] / left[1], right[0] / right[1]
    height = max(1, round(side / math.sqrt(a_left + a_right)))
    w_left, w_right = max(1, round(height * a_left)), max(1, round(height * a_right))
    return (w_left + w_right, height), ((0, 0, w_left, height), (w_left, 0, w_right, height))


def xyxy(box: Any) -> tuple[float, float, float, float]:
    x, y, w, h = (float(v) for v in box)
    return x, y, x + w, y + h


def centre(box: tuple[float, float, float, float]) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def direction_of(origin: tuple[float, float], target: tuple[float, float],
                 boundary: float = RPOS_BOUNDARY_DEG) -> str | None:
    """The 45° sector of the vector origin → target (image y down; 0° = top, clockwise);
    None within ``boundary`` degrees of a sector edge or for a zero vector."""
    dx, dy = target[0] - origin[0], target[1] - origin[1]
    if dx == 0 and dy == 0:
        return None
    angle = math.degrees(math.atan2(dx, -dy)) % 360.0
    sector = int(round(angle / 45.0)) % 8
    offset = abs((angle - sector * 45.0 + 180.0) % 360.0 - 180.0)
    if offset > 22.5 - boundary:
        return None
    return DIRECTIONS[sector]


def overlaps(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def placed_boxes(plate: Any, red: int, blue: int, rng: np.random.Generator, tries: int = 200
                 ) -> list[tuple[str, tuple[float, float, float, float]]] | None:
    """Six boxes: red and blue around the two specimens, an empty red and an empty blue box (no
    specimen inside or touching), green and cyan around two other specimens when the plate has them,
    else empty. None when the empty boxes do not fit."""
    specimens = {i: plate.specimen_box(i) for i in plate.individuals()}
    taken = list(specimens.values())
    out = [("red", specimens[red]), ("blue", specimens[blue])]
    others = [i for i in specimens if i not in (red, blue)]
    extra = [others[int(i)] for i in rng.permutation(len(others))[:2]]
    for colour, individual in zip(("green", "cyan"), extra):
        out.append((colour, specimens[individual]))
    empty_colours = ["red", "blue"] + ["green", "cyan"][len(extra):]
    drawn = [b for _, b in out]
    for colour in empty_colours:
        template = specimens[red] if colour == "red" else specimens[blue]
        w, h = template[2] - template[0], template[3] - template[1]
        if w >= plate.width or h >= plate.height:
            return None
        for _ in range(tries):
            x = float(rng.uniform(0, plate.width - w))
            y = float(rng.uniform(0, plate.height - h))
            box = (x, y, x + w, y + h)
            if not any(overlaps(box, t) for t in taken + drawn):
                out.append((colour, box))
                drawn.append(box)
                break
        else:
            return None
    order = {"red": 0, "blue": 1, "green": 2, "cyan": 3}
    return sorted(out, key=lambda e: order[e[0]])


__all__ = ["RPOS_BOUNDARY_DEG", "centre", "direction_of", "easy_canvas", "overlaps", "pair_canvas", "placed_boxes",
           "xyxy"]
