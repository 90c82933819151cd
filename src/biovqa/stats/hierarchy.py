"""Hierarchical consistency metrics (HCA paper §2.2, App. B.2): HCA, Acc_leaf, POR, S-POR, TOR.

Shared by every component that scores whole taxonomic paths (C1, the hierarchical 4-way VQA).

Input is a boolean matrix ``correct`` (images × levels, top level first) with a mask ``present``
of the levels each image is scored on. An absent level (reptiles have no order) is removed from
that image's path: its neighbours become adjacent, and ``L_i`` counts present levels only. Every
function returns one value per image; :func:`hierarchical_summary` gives their means. A wrong or
unparseable answer is ``False`` and is never dropped. With ``c_ij`` the correctness of level ``j``
of image ``i`` on its compacted path ``j = 1 … L_i``:

* HCA_i = Π_j c_ij;  Acc_leaf_i = c_{i,L_i};  POR_i = (1/L_i) Σ_j c_ij
* S-POR_i (paper) = longest run of consecutive correct levels / L_i
* S-POR_i (prefix, reference code) = longest correct prefix from the top / L_i
* TOR_i = (1/(L_i − 1)) Σ_{j<L_i} c_ij·c_{i,j+1}; for L_i = 1, TOR_i = c_i1 ([DEFAULT]; the
  reference code uses 0)

Per image: HCA ≤ S-POR(prefix) ≤ S-POR ≤ POR, HCA ≤ Acc_leaf, HCA ≤ TOR.

On the means, :func:`scaled_hca` gives HCA / Acc_leaf (HCA paper §2.2, App. B.2 item 9): the share of
leaf-correct images whose whole path is right (19.73 / 41.66 = 47.4 % in the worked example), and
:func:`pearson_r` correlates text HCA with it across models (r = 0.9116 in the paper's Table 3).
"""

from __future__ import annotations

import numpy as np

HIERARCHICAL_METRICS: tuple[str, ...] = ("hca", "acc_leaf", "por", "spor", "spor_prefix", "tor")

__all__ = ["HIERARCHICAL_METRICS", "acc_leaf", "hca", "hca_at_depth", "hierarchical_per_image",
           "hierarchical_summary", "pearson_r", "per_level_accuracy", "por", "scaled_hca", "spor", "spor_prefix",
           "tor"]


def _compact(correct: np.ndarray, present: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shift every image's present levels to the front (order kept); returns the compacted
    correctness, the validity mask and path lengths ``L_i``."""
    correct = np.asarray(correct, dtype=bool)
    if correct.ndim != 2:
        raise ValueError(f"correct must be a 2-D (images × levels) array, got shape {correct.shape}")
    present = np.ones_like(correct) if present is None else np.asarray(present, dtype=bool)
    if present.shape != correct.shape:
        raise ValueError(f"present has shape {present.shape}, correct has {correct.shape}")
    lengths = present.sum(axis=1)
    if (lengths == 0).any():
        row = int(np.argmax(lengths == 0))
        raise ValueError(f"image {row} has no scored level")
    order = np.argsort(~present, axis=1, kind="stable")
    compact = np.take_along_axis(correct & present, order, axis=1)
    valid = np.arange(correct.shape[1])[None, :] < lengths[:, None]
    return compact, valid, lengths


def hca(correct: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """Hierarchical consistent accuracy per image: every scored level right (HCA paper §2.2)."""
    compact, valid, _ = _compact(correct, present)
    return (compact | ~valid).all(axis=1).astype(np.float64)


def acc_leaf(correct: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """Leaf-level accuracy per image: the deepest scored level right (§6.2)."""
    compact, _, lengths = _compact(correct, present)
    return compact[np.arange(len(compact)), lengths - 1].astype(np.float64)


def por(correct: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """Point-overlap ratio per image: share of scored levels right (§6.3)."""
    compact, _, lengths = _compact(correct, present)
    return compact.sum(axis=1) / lengths


def spor(correct: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """Strict POR, paper definition: longest run of consecutive right levels / L_i (§6.4)."""
    compact, _, lengths = _compact(correct, present)
    run = np.zeros(len(compact), dtype=np.int64)
    best = np.zeros(len(compact), dtype=np.int64)
    for column in compact.T:
        run = np.where(column, run + 1, 0)
        best = np.maximum(best, run)
    return best / lengths


def spor_prefix(correct: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """Strict POR as the reference code computes it: longest right prefix from the top / L_i."""
    compact, _, lengths = _compact(correct, present)
    prefix = np.cumprod(compact, axis=1).sum(axis=1)
    return prefix / lengths


def tor(correct: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """Top-overlap ratio per image: share of adjacent level pairs both right (§6.5); a one-level
    path scores its single level ([DEFAULT], the reference code gives 0)."""
    compact, valid, lengths = _compact(correct, present)
    pairs = compact[:, :-1] & compact[:, 1:] & valid[:, 1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = pairs.sum(axis=1) / np.maximum(lengths - 1, 1)
    return np.where(lengths == 1, compact[:, 0].astype(np.float64), ratio)


def per_level_accuracy(correct: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """acc_j = mean over images scored at level j of c_ij (NaN where no image has level j)."""
    correct = np.asarray(correct, dtype=bool)
    present = np.ones_like(correct) if present is None else np.asarray(present, dtype=bool)
    scored = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scored > 0, (correct & present).sum(axis=0) / np.maximum(scored, 1), np.nan)


def hca_at_depth(correct: np.ndarray, present: np.ndarray | None = None, *, depth: int) -> np.ndarray:
    """HCA per image with every path truncated to its first ``depth`` columns (level ``depth`` is
    treated as the leaf; App. C.4). An image with no present level among them raises."""
    correct = np.asarray(correct, dtype=bool)
    if not 1 <= depth <= correct.shape[1]:
        raise ValueError(f"depth must lie in 1…{correct.shape[1]}, got {depth}")
    present = np.ones_like(correct) if present is None else np.asarray(present, dtype=bool)
    return hca(correct[:, :depth], present[:, :depth])


def hierarchical_per_image(correct: np.ndarray, present: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """All six per-image metrics of :data:`HIERARCHICAL_METRICS` (paths compacted once)."""
    compact, valid, lengths = _compact(correct, present)
    rows = np.arange(len(compact))
    run = np.zeros(len(compact), dtype=np.int64)
    longest = np.zeros(len(compact), dtype=np.int64)
    for column in compact.T:
        run = np.where(column, run + 1, 0)
        longest = np.maximum(longest, run)
    pairs = (compact[:, :-1] & compact[:, 1:] & valid[:, 1:]).sum(axis=1)
    return {
        "hca": (compact | ~valid).all(axis=1).astype(np.float64),
        "acc_leaf": compact[rows, lengths - 1].astype(np.float64),
        "por": compact.sum(axis=1) / lengths,
        "spor": longest / lengths,
        "spor_prefix": np.cumprod(compact, axis=1).sum(axis=1) / lengths,
        "tor": np.where(lengths == 1, compact[:, 0].astype(np.float64), pairs / np.maximum(lengths - 1, 1)),
    }


def hierarchical_summary(correct: np.ndarray, present: np.ndarray | None = None) -> dict[str, float]:
    """Means over images of the six metrics (fractions, not percent)."""
    return {name: float(values.mean()) for name, values in hierarchical_per_image(correct, present).items()}


def scaled_hca(hca_mean: float, acc_leaf_mean: float) -> float:
    """Acc_leaf-scaled HCA = mean HCA / mean Acc_leaf (HCA paper §2.2, App. B.2 item 9); NaN when no image
    is leaf-correct. Either both in percent or both as fractions; the result is a fraction."""
    if not np.isfinite(acc_leaf_mean) or acc_leaf_mean <= 0:
        return float("nan")
    return float(hca_mean / acc_leaf_mean)


def pearson_r(x: np.ndarray | list[float], y: np.ndarray | list[float]) -> float:
    """Pearson's correlation of paired values (HCA paper §2.2, App. B.2 item 9: text HCA against
    Acc_leaf-scaled visual HCA across models); NaN with fewer than two pairs or no spread."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"x has {a.shape} values, y has {b.shape}")
    if a.size < 2 or a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])
