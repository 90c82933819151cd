"""Image-blind floor rules of C3 (the paper's Eq. 24 and Table 38's floor row): each is a function of the gold answers only,
fitted on whatever rows it is given (the scorer passes the rows a model parsed)."""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Sequence

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


def hit20(prediction: float, gold: float) -> bool:
    return abs(prediction - gold) <= ACC20 * gold + TOL


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


__all__ = ["best_constant", "common_prefix", "constant_code", "hit20", "majority", "mean_normalised_box",
           "modal_counts"]
