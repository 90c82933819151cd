"""Inference over models and tasks: multiple testing, reliability, structure and correlation
intervals (the paper's §6 and Appendix J). Pure functions over arrays, no I/O:

* :func:`holm` — Holm step-down adjusted p-values and rejections at family-wise α (§6.3);
* :func:`alpha_std` — standardized Cronbach α ``k·r̄/(1+(k−1)·r̄)`` (§6.5);
* :func:`within_across_gap` / :func:`permutation_gap_p` — mean task-pair ρ within vs across
  components and the label-permutation p ``(1 + #{gap ≥ observed})/(B + 1)`` (§6.4);
* :func:`pca_share` — PC1 share and loadings of the z-scored matrix (§6.6);
* :func:`fisher_ci` — Fisher-z interval with the Bonett–Wright variance (§6.8);
* :func:`normal_quantile` — the standard normal quantile Φ⁻¹ (C4's d′ and criterion c, §5).

Spearman's ρ, its p-value and the ρ matrix are in :mod:`biovqa.stats.ranks`.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from biovqa.stats import CONFIDENCE


def holm(p_values: Sequence[float], alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Holm step-down: (adjusted p-values, rejected?) in the input order.

    Sorted ascending, the i-th smallest p (0-based) is compared with ``alpha/(m − i)``; testing
    stops at the first that fails. Adjusted p = running max of ``(m − i)·p``, capped at 1."""
    p = np.asarray(p_values, dtype=float)
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    rejected = np.zeros(m, dtype=bool)
    running = 0.0
    still = True
    for i, idx in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[idx]))
        adjusted[idx] = running
        still = still and bool(p[idx] <= alpha / (m - i))
        rejected[idx] = still
    return adjusted, rejected


def alpha_std(mean_r: float, k: int) -> float:
    """Standardized Cronbach α of ``k`` items with mean inter-item correlation ``mean_r``."""
    return k * mean_r / (1.0 + (k - 1) * mean_r)


def within_across_gap(rho: np.ndarray, blocks: Sequence[str]) -> tuple[float, float]:
    """Mean off-diagonal ρ of task pairs in the same block, and of pairs in different blocks."""
    labels = np.asarray(blocks)
    upper = np.triu_indices(len(labels), k=1)
    same = labels[upper[0]] == labels[upper[1]]
    values = rho[upper]
    within = float(np.nanmean(values[same])) if same.any() else math.nan
    across = float(np.nanmean(values[~same])) if (~same).any() else math.nan
    return within, across


def permutation_gap_p(rho: np.ndarray, blocks: Sequence[str], *, B: int = 2000, seed: int = 42) -> float:
    """Label-permutation p of the within − across gap: block labels shuffled (sizes kept)."""
    within, across = within_across_gap(rho, blocks)
    observed = within - across
    rng = np.random.default_rng(seed)
    labels = np.asarray(blocks)
    exceed = 0
    for _ in range(B):
        w, a = within_across_gap(rho, list(rng.permutation(labels)))
        exceed += int(w - a >= observed - 1e-12)
    return (1 + exceed) / (B + 1)


def pca_share(matrix: np.ndarray) -> tuple[float, np.ndarray]:
    """PC1 share of variance and PC1 loadings (sign: positive sum) of the z-scored columns."""
    x = np.asarray(matrix, dtype=float)
    sd = x.std(axis=0, ddof=1)
    keep = sd > 0
    z = (x[:, keep] - x[:, keep].mean(axis=0)) / sd[keep]
    corr = np.atleast_2d(np.corrcoef(z, rowvar=False))
    values, vectors = np.linalg.eigh(corr)
    first = vectors[:, -1]
    if first.sum() < 0:
        first = -first
    loadings = np.full(x.shape[1], math.nan)
    loadings[keep] = first
    return float(values[-1] / values.sum()), loadings


def fisher_ci(rho: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Fisher-z interval (at ``confidence``) of a Spearman ρ with the Bonett–Wright variance
    ``(1 + ρ²/2)/(n − 3)``."""
    if n <= 3 or not math.isfinite(rho) or abs(rho) >= 1.0:
        return math.nan, math.nan
    z = math.atanh(rho)
    half = float(normal_quantile(0.5 + confidence / 2)) * math.sqrt((1 + rho * rho / 2) / (n - 3))
    return math.tanh(z - half), math.tanh(z + half)


# Wichura's algorithm AS 241 (PPND16, Applied Statistics 37, 1988): rational approximations of
# Φ⁻¹ good to about 1e-16 relative, in three regions of p (numerator, denominator coefficients
# from the constant term up)
_CENTRAL = (
    (3.387132872796366608, 133.14166789178437745, 1971.5909503065514427, 13731.693765509461125,
     45921.953931549871457, 67265.770927008700853, 33430.575583588128105, 2509.0809287301226727),
    (1.0, 42.313330701600911252, 687.1870074920579083, 5394.1960214247511077,
     21213.794301586595867, 39307.89580009271061, 28729.085735721942674, 5226.495278852545925))
_INTERMEDIATE = (
    (1.42343711074968357734, 4.6303378461565452959, 5.7694972214606914055, 3.64784832476320460504,
     1.27045825245236838258, 0.24178072517745061177, 0.0227238449892691845833, 7.7454501427834140764e-4),
    (1.0, 2.05319162663775882187, 1.6763848301838038494, 0.68976733498510000455,
     0.14810397642748007459, 0.0151986665636164571966, 5.475938084995344946e-4, 1.05075007164441684324e-9))
_TAIL = (
    (6.6579046435011037772, 5.4637849111641143699, 1.7848265399172913358, 0.29656057182850489123,
     0.026532189526576123093, 0.0012426609473880784386, 2.71155556874348757815e-5, 2.01033439929228813265e-7),
    (1.0, 0.59983220655588793769, 0.13692988092273580531, 0.0148753612908506148525,
     7.868691311456132591e-4, 1.8463183175100546818e-5, 1.4215117583164458887e-7, 2.04426310338993978564e-15))


def _rational(coefficients: tuple[tuple[float, ...], tuple[float, ...]], x: np.ndarray) -> np.ndarray:
    numerator, denominator = (np.polynomial.polynomial.polyval(x, c) for c in coefficients)
    return numerator / denominator


def normal_quantile(p: float | np.ndarray) -> np.ndarray:
    """Φ⁻¹(p), the standard normal quantile, elementwise (what ``scipy.special.ndtri`` computes,
    to within a few units in the last place, without importing SciPy, whose import alone costs
    more than scoring C4's 15K pairs): −inf at 0, +inf at 1, NaN outside [0, 1] or for NaN."""
    p = np.asarray(p, dtype=np.float64)
    q = p - 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        central = q * _rational(_CENTRAL, 0.180625 - q * q)
        r = np.sqrt(-np.log(np.where(q < 0, p, 1.0 - p)))
        tail = np.where(r <= 5.0, _rational(_INTERMEDIATE, r - 1.6), _rational(_TAIL, r - 5.0))
    value = np.where(np.abs(q) <= 0.425, central, np.where(q < 0, -tail, tail))
    value = np.where(p == 0.0, -np.inf, np.where(p == 1.0, np.inf, value))
    return np.where((p >= 0.0) & (p <= 1.0), value, np.nan)


__all__ = ["alpha_std", "fisher_ci", "holm", "normal_quantile", "pca_share", "permutation_gap_p",
           "within_across_gap"]
