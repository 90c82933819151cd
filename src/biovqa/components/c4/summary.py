"""C4 signal-detection statistics (paper appendix C) from confusion counts, and their stratified
bootstrap.

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

Bootstrap (appendix L.3: B = 2000 for C4): within every dataset × condition stratum, the items are resampled with
replacement (a multinomial draw of the stratum's six cell counts), B replicates; pooled statistics
are recomputed from the resampled strata. Percentile intervals.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import norm

from biovqa.scoring.schema import estimate

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
    zh, zf = norm.ppf(h), norm.ppf(f)
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


def bootstrap_counts(counts: np.ndarray, *, resamples: int, seed: int) -> np.ndarray:
    """``B × strata × 6`` resampled counts: each stratum's items drawn with replacement (a
    multinomial over its six cells, as many draws as it has items)."""
    counts = np.asarray(counts, dtype=np.int64)
    rng = np.random.default_rng(seed)
    out = np.zeros((resamples, *counts.shape), dtype=np.int64)
    for s, row in enumerate(counts):
        n = int(row.sum())
        if n:
            out[:, s, :] = rng.multinomial(n, row / n, size=resamples)
    return out


def _interval(replicates: np.ndarray, level: float) -> tuple[float | None, float | None]:
    values = replicates[~np.isnan(replicates)]
    if not len(values):
        return None, None
    lo, hi = np.percentile(values, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return float(lo), float(hi)


def cell_summary(counts: np.ndarray, replicates: np.ndarray | None, level: float) -> dict[str, Any]:
    """Counts, H, F and the estimates of one cell (``replicates``: B × 6 or None)."""
    counts = np.asarray(counts, dtype=np.int64)
    values = statistics(counts)
    boot = statistics(replicates) if replicates is not None else None
    n = int(counts.sum())
    h, f = rates(counts)
    out: dict[str, Any] = {name: int(counts[k]) for k, name in enumerate(COUNT_NAMES)}
    out.update({"n": n, "n_same": int(counts[:3].sum()), "n_different": int(counts[3:].sum()),
                "H": float(h), "F": float(f)})
    for name in STATISTICS:
        lo, hi = _interval(boot[name], level) if boot is not None else (None, None)
        out[name] = estimate(float(values[name]), lo, hi, n=n)
    return out


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
    return float(math.sqrt(2.0) * norm.ppf(value))


def wald_difference(p1: float, n1: int, p2: float, n2: int, z: float = 1.959964) -> dict[str, float]:
    """p1 − p2 with the Wald two-proportion interval (Table 51)."""
    diff = p1 - p2
    half = z * math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2) if n1 and n2 else float("nan")
    return {"difference": diff, "lo": diff - half, "hi": diff + half}


__all__ = ["COUNT_NAMES", "STATISTICS", "auc_to_dprime", "bootstrap_counts", "cell_summary", "dprime_c",
           "rates", "statistics", "verdict", "wald_difference"]
