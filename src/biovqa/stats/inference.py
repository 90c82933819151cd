"""Inference over models and tasks: multiple testing, reliability, structure and correlation
intervals (the paper's §6 and Appendix J). Pure functions over arrays, no I/O:

* :func:`holm` — Holm step-down adjusted p-values and rejections at family-wise α (§6.3);
* :func:`alpha_std` — standardized Cronbach α ``k·r̄/(1+(k−1)·r̄)`` (§6.5);
* :func:`within_across_gap` / :func:`permutation_gap_p` — mean task-pair ρ within vs across
  components and the label-permutation p ``(1 + #{gap ≥ observed})/(B + 1)`` (§6.4);
* :func:`pca_share` — PC1 share and loadings of the z-scored matrix (§6.6);
* :func:`fisher_ci` — Fisher-z interval with the Bonett–Wright variance (§6.8).

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
    from scipy.stats import norm

    if n <= 3 or not math.isfinite(rho) or abs(rho) >= 1.0:
        return math.nan, math.nan
    z = math.atanh(rho)
    half = float(norm.ppf(0.5 + confidence / 2)) * math.sqrt((1 + rho * rho / 2) / (n - 3))
    return math.tanh(z - half), math.tanh(z + half)


__all__ = ["alpha_std", "fisher_ci", "holm", "pca_share", "permutation_gap_p", "within_across_gap"]
