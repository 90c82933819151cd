"""Ranks and rank correlations, one implementation each (the paper's Appendix C and §6).

* :func:`group_ranks` / :func:`average_ranks` — 1-based average ranks (ties share their mean
  rank), within groups or over one vector; :func:`descending_ranks` — rank 1 = highest;
* :func:`spearman` — Spearman's ρ (0 when a side is constant, NaN under 2 points);
  :func:`spearman_p` — its two-sided p-value (t approximation, df = n − 2);
  :func:`spearman_matrix` — ρ between the columns of a cases × columns matrix;
* :func:`grouped_spearman` — ρ within each group in one pass;
* :func:`weighted_spearman` — ρ of the sample that repeats row i ``w_i`` times, for every
  bootstrap replicate at once (:class:`RankLayout` holds what all replicates share);
* :func:`rank_distribution` — rank interval and P(best) of models from bootstrap replicates.
"""

from __future__ import annotations

import math

import numpy as np

from biovqa.stats import CONFIDENCE


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman ρ; 0 when either side is constant (a constant predictor has no rank
    correlation), NaN under 2 points."""
    if len(x) < 2:
        return math.nan
    if np.all(x == x[0]) or np.all(y == y[0]):
        return 0.0
    zeros = np.zeros(len(x), dtype=np.int64)
    rx, ry = group_ranks(np.asarray(x, dtype=np.float64), zeros), group_ranks(np.asarray(y, dtype=np.float64), zeros)
    return float(np.corrcoef(rx, ry)[0, 1])


def group_ranks(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """1-based average ranks (ties share their mean rank) of ``values`` within each group code."""
    n = len(values)
    if n == 0:
        return np.zeros(0)
    order = np.lexsort((values, groups))
    sg, sv = groups[order], values[order]
    new_group = np.r_[True, sg[1:] != sg[:-1]]
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(n), 0))
    new_tie = new_group | np.r_[True, sv[1:] != sv[:-1]]
    tie_id = np.cumsum(new_tie) - 1
    tie_start = np.flatnonzero(new_tie)
    tie_end = np.r_[tie_start[1:], n] - 1
    mean_rank = (tie_start + tie_end) / 2 - group_start[tie_start] + 1
    out = np.empty(n)
    out[order] = mean_rank[tie_id]
    return out


def grouped_spearman(x: np.ndarray, y: np.ndarray, groups: np.ndarray, min_size: int = 3) -> np.ndarray:
    """Spearman ρ of ``x`` and ``y`` within each group code (0 when a side is constant), for the
    groups of at least ``min_size`` rows."""
    if len(x) == 0:
        return np.zeros(0)
    rx, ry = group_ranks(x, groups), group_ranks(y, groups)
    k = int(groups.max()) + 1
    size = np.bincount(groups, minlength=k).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = np.bincount(groups, rx, k) / size
        my = np.bincount(groups, ry, k) / size
        dx, dy = rx - mx[groups], ry - my[groups]
        sxx, syy, sxy = (np.bincount(groups, dx * dx, k), np.bincount(groups, dy * dy, k),
                         np.bincount(groups, dx * dy, k))
        rho = np.where((sxx <= 1e-12) | (syy <= 1e-12), 0.0, sxy / np.sqrt(sxx * syy))
    return rho[size >= min_size]


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based average ranks of ``values`` (ties share their mean rank), as
    ``scipy.stats.rankdata(values)`` gives them: a NaN anywhere makes every rank NaN (an
    incomplete ranking has no ranks)."""
    values = np.asarray(values, dtype=np.float64)
    if np.isnan(values).any():
        return np.full(len(values), np.nan)
    return group_ranks(values, np.zeros(len(values), dtype=np.int64))


def descending_ranks(values: np.ndarray) -> np.ndarray:
    """Rank 1 = highest value; ties share the average of their positions."""
    return average_ranks(-np.asarray(values, dtype=np.float64))


def spearman_p(rho: float, n: int) -> float:
    """Two-sided p-value of Spearman ``rho`` over ``n`` cases (t approximation
    ``t = ρ·sqrt(n−2)/sqrt(1−ρ²)``, df = n − 2); NaN under 3 cases or for a non-finite ρ."""
    from scipy import stats

    if n < 3 or not math.isfinite(rho):
        return math.nan
    if abs(rho) >= 1.0:
        return 0.0
    t = rho * math.sqrt(n - 2) / math.sqrt(1.0 - rho * rho)
    return float(2.0 * stats.t.sf(abs(t), df=n - 2))


def spearman_matrix(matrix: np.ndarray) -> np.ndarray:
    """Spearman ρ (average ranks) between the columns of a complete ``cases × columns`` matrix
    (a constant column gives NaN, as its correlation is undefined)."""
    x = np.asarray(matrix, dtype=float)
    ranks = np.column_stack([average_ranks(x[:, j]) for j in range(x.shape[1])]) if x.size else x
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.atleast_2d(np.corrcoef(ranks, rowvar=False))


def rank_distribution(replicates: np.ndarray, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rank lo, rank hi, P(best)) per model from ``B × models`` replicates: ranks 1 = highest
    value, ties share the better rank, a NaN replicate ranks last; the bounds are the
    ``(1 ∓ confidence)/2`` quantiles of each model's ranks (lower and higher order statistics)."""
    values = np.where(np.isnan(replicates), -np.inf, replicates)
    ranks = 1 + (values[:, None, :] > values[:, :, None]).sum(axis=2)  # B × models
    lo = np.quantile(ranks, (1 - confidence) / 2, axis=0, method="lower")
    hi = np.quantile(ranks, (1 + confidence) / 2, axis=0, method="higher")
    return lo.astype(float), hi.astype(float), (ranks == 1).mean(axis=0)


class TieLayout:
    """Sort order and tie runs of one vector, computed once for every replicate's ranks; row i
    takes its weight from column ``columns[i]`` of the weight matrix (its cluster)."""

    def __init__(self, values: np.ndarray, columns: np.ndarray, n_columns: int) -> None:
        self.order = np.argsort(values, kind="stable")
        self.take = columns[self.order]
        sv = values[self.order]
        new = np.r_[True, sv[1:] != sv[:-1]]
        self.ties = not bool(new.all())
        self.run = np.cumsum(new) - 1
        self.starts = np.flatnonzero(new)
        self.ends = np.r_[self.starts[1:], len(sv)] - 1
        self.rows_per_column = np.bincount(columns, minlength=n_columns)

    def sorted_ranks(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(weights in sort order, average ranks in sort order of the rows repeated that many
        times, Σ (t³ − t)/12 over each replicate's tie groups of size t); ``W`` holds integer
        counts and the caller picks a dtype that keeps every rank exact (half-integers)."""
        sw = W[:, self.take]
        cw = np.cumsum(sw, axis=1)
        if not self.ties:  # every value distinct: a row's copies are its only ties (summed per column)
            w = W.astype(np.float64)
            return sw, cw - (sw - 1) / 2, ((w ** 3 - w) / 12) @ self.rows_per_column
        before = cw[:, self.starts] - sw[:, self.starts]
        within = cw[:, self.ends] - before
        t = within.astype(np.float64)
        return sw, (before + (within + 1) / 2)[:, self.run], ((t ** 3 - t) / 12).sum(axis=1)


class RankLayout:
    """What every replicate's weighted Spearman reuses. The side with fewer distinct values
    (``a``) is ranked per tie run: each run's weight is a product of the weights with a
    (columns × runs) count matrix when that is small, else a sum over its rows; the other side
    (``b``) is ranked row by row from its presorted order."""

    def __init__(self, x: np.ndarray, y: np.ndarray, columns: np.ndarray | None = None) -> None:
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        n = len(x)
        columns = np.arange(n) if columns is None else np.asarray(columns, dtype=np.int64)
        n_columns = int(columns.max()) + 1 if n else 0
        self.n_columns = n_columns  # W's later columns (clusters without rows here) are not read
        a, b = (x, y) if len(np.unique(x)) <= len(np.unique(y)) else (y, x)
        self.b = TieLayout(b, columns, n_columns)
        a_order = np.argsort(a, kind="stable")
        sa = a[a_order]
        new = np.r_[True, sa[1:] != sa[:-1]] if n else np.zeros(0, dtype=bool)
        run_of_sorted = np.cumsum(new) - 1
        run_a = np.empty(n, dtype=np.int64)
        run_a[a_order] = run_of_sorted
        self.n_runs = int(new.sum())
        self.run_a_in_b = run_a[self.b.order]
        self.run_matrix: np.ndarray | None = None
        self.take_a, self.starts_a = columns[a_order], np.flatnonzero(new)
        if self.n_runs * n_columns <= 32 * n:
            self.run_matrix = np.zeros((n_columns, self.n_runs), dtype=np.float32)
            np.add.at(self.run_matrix, (columns, run_a), 1.0)


def weighted_spearman(x: np.ndarray, y: np.ndarray, W: np.ndarray,
                      layout: RankLayout | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Spearman ρ of ``x`` and ``y`` for each row of row weights ``W`` (replicates × rows, or
    replicates × clusters with ``layout`` built with each row's cluster column): the ρ of the
    sample that repeats row i w_i times (average ranks for ties; 0 when either side is constant;
    NaN under 2 points). Returns (ρ per replicate, Σ weights per replicate).

    With N = Σ w the mean rank is (N + 1)/2 and Σ w (r − mean)² = (N³ − N)/12 − Σ (t³ − t)/12
    over tie groups, so one product Σ w r_x r_y per replicate gives ρ. Ranks are cumulative sums
    of the weights in presorted order (no sort per replicate), in float32 while that is exact
    (written by hand for speed: the bootstrap needs 1000 replicates of 14 108 rows)."""
    layout = layout or RankLayout(x, y)
    W = np.asarray(W)
    if len(x) == 0:
        return np.full(len(W), np.nan), np.zeros(len(W))
    peak = float(W.max()) if W.size else 0.0
    # every partial sum, rank and w·r is an integer or half-integer below 2**23 → exact in float32
    exact32 = peak * len(x) * max(peak, 1.0) < 2.0 ** 22
    W = W[:, :layout.n_columns].astype(np.float32 if exact32 else np.float64, copy=False)
    # side a, per tie run: run weights → average ranks
    if layout.run_matrix is not None:
        run_w = W @ layout.run_matrix.astype(W.dtype, copy=False)
    else:
        run_w = np.add.reduceat(W[:, layout.take_a], layout.starts_a, axis=1)
    ra = np.cumsum(run_w, axis=1) - (run_w - 1) / 2
    t = run_w.astype(np.float64)
    ta = ((t ** 3 - t) / 12).sum(axis=1)
    # side b, row by row in its sort order
    wb, rb, tb = layout.b.sorted_ranks(W)
    total = wb.sum(axis=1, dtype=np.float64)
    mean = (total + 1) / 2
    # products of (half-)integers summed in float64: exact
    sxy = np.einsum("bi,bi->b", wb * rb, ra[:, layout.run_a_in_b], dtype=np.float64) - total * mean * mean
    base = (total ** 3 - total) / 12
    sxx, syy = base - ta, base - tb
    scale = np.maximum(total, 1.0) ** 2 * 1e-9
    constant = (sxx <= scale) | (syy <= scale)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(constant, 0.0, sxy / np.sqrt(np.where(constant, 1.0, sxx * syy)))
    return np.where(total >= 2, rho, np.nan), total


__all__ = ["RankLayout", "TieLayout", "average_ranks", "descending_ranks", "group_ranks", "grouped_spearman",
           "rank_distribution", "spearman", "spearman_matrix", "spearman_p", "weighted_spearman"]
