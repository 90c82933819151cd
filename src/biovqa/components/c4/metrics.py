"""C4 signal-detection statistics (paper appendix C) from confusion counts: pure functions of
count arrays, no I/O.

A cell (dataset × condition) is summarised by six counts: same pairs answered Yes / No /
unparsed and different pairs answered Yes / No / unparsed. An unparsed reply counts as "No" for
H and F and as wrong for accuracy (biovqa's choice; the paper leaves it open). Every statistic below is a vectorised function
of count arrays, so the bootstrap evaluates all its replicates at once.

* ``H = (hits + 0.5)/(n_s + 1)``, ``F = (fa + 0.5)/(n_d + 1)`` (log-linear, always applied);
  ``d′ = z(H) − z(F)``, ``c = −(z(H) + z(F))/2``;
* accuracy and balanced accuracy (TPR + TNR)/2 with unparsed replies wrong; Matthews correlation
  and Cohen's κ from the raw Yes/No confusion counts (positive = same individual; unparsed = No);
* pooled over datasets: counts summed first, then one d′ (Table 49 / Table 3); also
  ``c_mean_species`` (the mean of per-dataset c, Table 50's reading).

Their intervals (the stratified bootstrap of appendix L.3) are drawn in :mod:`.summary`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from biovqa.components.c4.pairs import auc
from biovqa.stats.inference import normal_quantile

#: Count columns: same→yes, same→no, same→unparsed, diff→yes, diff→no, diff→unparsed.
COUNT_NAMES: tuple[str, ...] = ("hits", "misses", "same_unparsed", "false_alarms",
                                "correct_rejections", "different_unparsed")
STATISTICS: tuple[str, ...] = ("dprime", "c", "acc", "balanced_acc", "mcc", "kappa")


def rates(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Log-linear corrected hit and false-alarm rates of ``counts`` (… × 6)."""
    counts = np.asarray(counts, dtype=float)
    n_same = counts[..., 0] + counts[..., 1] + counts[..., 2]
    n_diff = counts[..., 3] + counts[..., 4] + counts[..., 5]
    return (counts[..., 0] + 0.5) / (n_same + 1.0), (counts[..., 3] + 0.5) / (n_diff + 1.0)


def dprime_c(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h, f = rates(counts)
    zh, zf = normal_quantile(h), normal_quantile(f)
    return zh - zf, -0.5 * (zh + zf)


def statistics(counts: np.ndarray) -> dict[str, np.ndarray]:
    """Every statistic of :data:`STATISTICS` for ``counts`` (… × 6), NaN where undefined."""
    counts = np.asarray(counts, dtype=float)
    tp, fn_said_no, fn_unparsed, fp, tn, fp_unparsed = (counts[..., k] for k in range(6))
    fn = fn_said_no + fn_unparsed  # a same pair not answered Yes
    n_same = tp + fn
    n_diff = fp + tn + fp_unparsed
    n = n_same + n_diff
    correct = tp + tn
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = correct / n
        tpr = tp / n_same
        tnr = tn / n_diff
        balanced = (tpr + tnr) / 2
        # MCC and κ read the confusion matrix of the Yes/No decisions, where an unparsed reply
        # counts as No (as for H and F)
        tn_all = tn + fp_unparsed
        mcc = (tp * tn_all - fp * fn) / np.sqrt((tp + fp) * (tp + fn) * (tn_all + fp) * (tn_all + fn))
        agree = (tp + tn_all) / n
        p_expected = ((tp + fp) * (tp + fn) + (fn + tn_all) * (fp + tn_all)) / (n * n)
        kappa = (agree - p_expected) / (1 - p_expected)
    dprime, c = dprime_c(counts)
    return {"dprime": dprime, "c": c, "acc": acc, "balanced_acc": balanced, "mcc": mcc, "kappa": kappa}


def verdict(dprime: float | None, c: float | None) -> str | None:
    """Table 49's verdict from the random-condition d′ and c (Table 49)."""
    if dprime is None or c is None or math.isnan(dprime):
        return None
    if abs(dprime) < 0.2:
        return "degenerate" if abs(c) >= 1.0 else "at chance"
    if dprime < 1:
        return "weak"
    if dprime < 2:
        return "moderate"
    if dprime < 3:
        return "strong"
    return "near ceiling"


def auc_to_dprime(value: float) -> float:
    """Equal-variance Gaussian d′ from an AUC: √2·z(AUC) (appendix B, "MegaDescriptor for C4")."""
    return float(math.sqrt(2.0) * normal_quantile(value))


def wald_difference(p1: float, n1: int, p2: float, n2: int, z: float = 1.959964) -> dict[str, float]:
    """p1 − p2 with the Wald two-proportion interval (Table 51)."""
    diff = p1 - p2
    half = z * math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2) if n1 and n2 else float("nan")
    return {"difference": diff, "lo": diff - half, "hi": diff + half}


def construction_checks(similarity: np.ndarray, same: np.ndarray) -> dict[str, Any]:
    """AUC of the similarity for same-ID vs different-ID pairs and the margin (appendix H.7, Table 54; the
    beluga margin of H.5)."""
    same = np.asarray(same, dtype=bool)
    similarity = np.asarray(similarity, dtype=float)
    mean_same = float(similarity[same].mean()) if same.any() else None
    mean_diff = float(similarity[~same].mean()) if (~same).any() else None
    margin = None if mean_same is None or mean_diff is None else mean_same - mean_diff
    value = auc(similarity, same)
    return {"auc": None if np.isnan(value) else round(value, 6),
            "mean_similarity_same": None if mean_same is None else round(mean_same, 6),
            "mean_similarity_different": None if mean_diff is None else round(mean_diff, 6),
            "margin": None if margin is None else round(margin, 6), "n": int(len(same))}


def _weight_per_value(weights: np.ndarray, group: np.ndarray, n_values: int) -> np.ndarray:
    """``replicates × n_values``: the weights summed per distinct score (``group`` codes each item's)."""
    out = np.zeros((len(weights), n_values))
    if group.size:
        order = np.argsort(group, kind="stable")
        sorted_group = group[order]
        starts = np.flatnonzero(np.r_[True, sorted_group[1:] != sorted_group[:-1]])
        out[:, sorted_group[starts]] = np.add.reduceat(weights[:, order], starts, axis=1)
    return out


def weighted_auc(scores: np.ndarray, positive: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The AUC (Mann–Whitney, ties count one half) of ``scores`` for ``positive`` labels with each
    item counted ``weights`` times: one value per row of ``weights`` (replicates × items, e.g. the
    draw counts of a bootstrap); NaN where a class has no weight. With weights of one it is
    :func:`~biovqa.components.c4.pairs.auc`."""
    scores = np.asarray(scores, dtype=float)
    positive = np.asarray(positive, dtype=bool)
    weights = np.atleast_2d(np.asarray(weights, dtype=float))
    values, group = np.unique(scores, return_inverse=True)
    # per replicate, the weight of each class at each distinct score (ties share a score)
    pos = _weight_per_value(weights[:, positive], group[positive], len(values))
    neg = _weight_per_value(weights[:, ~positive], group[~positive], len(values))
    below = np.cumsum(neg, axis=1) - neg
    total_pos, total_neg = pos.sum(axis=1), neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (pos * (below + 0.5 * neg)).sum(axis=1) / (total_pos * total_neg)
    return np.where((total_pos > 0) & (total_neg > 0), out, np.nan)


__all__ = ["COUNT_NAMES", "STATISTICS", "auc_to_dprime", "construction_checks", "dprime_c", "rates", "statistics", "verdict",
           "wald_difference", "weighted_auc"]
