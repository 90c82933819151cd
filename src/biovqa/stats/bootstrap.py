"""The one bootstrap of biovqa: statistics of per-cluster sums on shared resampled counts (the
paper's Appendix L.3: seeded percentile intervals, clusters resampled with replacement).

Every statistic the summaries bootstrap is a function of *sums over the resampled rows*: a mean is
a ratio of two sums, a macro average a mean of ratios, a κ a function of a few sums, Spearman's ρ a
function of weighted ranks. Resampling clusters (images, plates or the items themselves) with
replacement multiplies each cluster's sums by how often it was drawn, so with per-cluster sums
``S`` (clusters × columns) one block of replicates ``W`` (replicates × clusters) of draw counts
gives every column's resampled totals as ``W @ S``. :func:`bootstrap_replicates` runs that loop
once for any set of statistics: a *product* turns ``W`` into totals (:class:`SumsProduct`, dense
``W @ S``, float32 where exact; :class:`Float32Product`, the float32 products of given matrices;
:class:`PartitionProduct`, per-part sums when every row belongs to one part; :class:`SparseProduct`,
sparse sums) and a
:data:`Statistics` function turns totals (and, for rank statistics, ``W`` itself) into one vector
per statistic. The counts come from :func:`biovqa.stats.draws.resampled_cluster_counts` (seeded,
clusters in sorted label order), drawn ahead on worker threads.

:func:`ratio_of_sums_replicates`, :class:`ClusterBootstrapPlan`, :func:`partition_replicates`,
:func:`bootstrap_means` and :class:`Bootstrap` are uses of that one loop. The percentile interval
is the ``(1 − confidence)/2`` and ``(1 + confidence)/2`` quantiles of the ``B`` replicates (linear
interpolation, NumPy's default).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from biovqa.stats import CONFIDENCE
from biovqa.stats.codes import cluster_codes, dense_codes
from biovqa.stats.draws import (
    REPLICATE_CHUNK,
    ClassSizes,
    CountsDrawnAhead,
    resampled_cluster_counts,
)

#: ``statistics(totals, counts) -> one vector per statistic``: ``totals`` (replicates × columns)
#: are the resampled column sums, ``counts`` (replicates × clusters) the draw counts themselves
#: (passed only to a rowwise bootstrap, e.g. for weighted ranks; else None).
Statistics = Callable[[np.ndarray, "np.ndarray | None"], Sequence[np.ndarray]]


class Product(Protocol):
    """Turns a block of draw counts (replicates × clusters, float32) into column totals
    (replicates × columns, float64)."""

    n_clusters: int

    def __call__(self, W: np.ndarray) -> np.ndarray: ...


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` where ``den > 0``, NaN elsewhere (no warning)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def nanmean(values: np.ndarray) -> np.ndarray:
    """Mean over the last axis ignoring NaN; NaN where every entry is NaN (no warning)."""
    ok = ~np.isnan(values)
    count = ok.sum(axis=-1)
    total = np.where(ok, values, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.where(count > 0, count, 1), np.nan)


def weighted_mean(x: np.ndarray, w: np.ndarray) -> float:
    """``Σ w·x / Σ w``; NaN when the weights sum to 0."""
    total = w.sum()
    return float((w * x).sum() / total) if total > 0 else math.nan


def bootstrap_replicates(product: Product | np.ndarray, statistics: Statistics, *, B: int, seed: int,
                         counts: Iterable[np.ndarray] | None = None, rowwise: bool = False) -> np.ndarray:
    """``B × K`` replicates of the ``K`` statistics ``statistics(totals, counts)``.

    ``product`` is per-cluster sums ``S`` (clusters × columns, wrapped in :class:`SumsProduct`) or
    a :class:`Product`. ``counts`` are the blocks of draw counts to use (e.g.
    :meth:`CountsDrawnAhead.blocks`); by default those of ``resampled_cluster_counts(n_clusters,
    B=B, seed=seed)``, drawn ahead on a worker thread. ``B = 0`` gives ``(0, K)``."""
    if not callable(product):
        S = np.asarray(product, dtype=np.float64)
        product = SumsProduct(S, len(S))
    k = product.n_clusters
    if B <= 0:
        width = len(statistics(product(np.ones((1, k), dtype=np.float32)),
                               np.ones((1, k), dtype=np.float32) if rowwise else None))
        return np.empty((0, width))
    own = None
    if counts is None:
        own = counts = resampled_cluster_counts(k, B=B, seed=seed, draw_ahead=True)
    reps = []
    try:
        with one_blas_thread():
            for W in counts:
                totals = product(W)
                reps.append(np.column_stack([np.asarray(v, dtype=np.float64)
                                             for v in statistics(totals, W if rowwise else None)]))
    finally:
        if own is not None:
            own.close()  # its drawing threads stop now, not when the generator is collected
    return np.vstack(reps)


def one_blas_thread() -> AbstractContextManager[object]:
    """BLAS limited to one thread while the counts are drawn on another (every count block comes
    from a drawing thread): a second BLAS thread only contends with the draws for the two cores of
    a laptop or CI runner, and OpenBLAS's idle threads spin (C2's B = 1000 item bootstrap: 5.2–5.5 s
    CPU and 3.3–3.6 s wall for 500 replicates instead of 7.2–7.5 s and 3.9–4.1 s; C3 scoring
    1.65 s instead of 2.35 s)."""
    return _threadpools().limit(limits=1, user_api="blas")


@functools.cache
def _threadpools() -> Any:
    """The process's thread pools, found once (finding them costs ≈0.5 ms, a limit from them 0.03 ms)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


class SumColumns:
    """Per-row columns to be summed per cluster under bootstrap weights: :meth:`add` one column
    (a value per row, 0 where the row does not count), :meth:`cells` one column per distinct
    combination of keys. Column indices are what a :data:`Statistics` function reads."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.blocks: list[np.ndarray] = []
        self.width = 0
        self._factorized: dict[int, tuple[Any, np.ndarray, Any]] = {}  # id → (the key, kept alive; codes; distinct values)

    def add(self, values: np.ndarray | float) -> int:
        self.blocks.append(np.broadcast_to(np.asarray(values, dtype=np.float64), (self.n,))[:, None])
        self.width += 1
        return self.width - 1

    def cells(self, values: np.ndarray | float, *keys: np.ndarray) -> tuple[np.ndarray, list[tuple[Any, ...]]]:
        """One column per distinct combination of ``keys`` (values where the row has it, else 0);
        returns (column index per combination, the combinations sorted by their text)."""
        combined = np.zeros(self.n, dtype=np.int64)
        uniques = []
        for key in keys:
            if id(key) not in self._factorized:  # a section passes the same keys for several cells
                filled = ["" if v is None or v != v else v for v in np.asarray(key, dtype=object).tolist()]
                self._factorized[id(key)] = (key, *dense_codes(np.array(filled, dtype=object), sort=False))
            _, codes, distinct = self._factorized[id(key)]
            combined = combined * (len(distinct) + 1) + codes
            uniques.append((codes, distinct))
        present, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
        combos = [tuple(distinct[codes[i]] for codes, distinct in uniques) for i in first]
        rank = sorted(range(len(combos)), key=lambda j: tuple(map(str, combos[j])))
        position = np.empty(len(combos), dtype=np.int64)
        position[rank] = np.arange(len(combos))
        block = np.zeros((self.n, len(combos)))
        block[np.arange(self.n), position[inverse.ravel()]] = np.broadcast_to(
            np.asarray(values, dtype=np.float64), (self.n,))
        self.blocks.append(block)
        index = np.arange(self.width, self.width + len(combos), dtype=np.int64)
        self.width += len(combos)
        return index, [combos[j] for j in rank]

    def sums(self) -> np.ndarray:
        """Every column's sum over the rows."""
        return np.concatenate([block.sum(axis=0) for block in self.blocks]) if self.blocks else np.zeros(0)

    def cluster_sums(self, codes: np.ndarray, k: int) -> np.ndarray:
        """(k × columns) float64 sums of each column over each cluster's rows (``codes``), each
        added in row order; only the non-zero entries are visited."""
        flat, weights = [], []
        start = 0
        for block in self.blocks:
            rows, cols = np.nonzero(block)
            flat.append(codes[rows] * self.width + start + cols)
            weights.append(block[rows, cols])
            start += block.shape[1]
        if not flat:
            return np.zeros((k, 0))
        return np.bincount(np.concatenate(flat), weights=np.concatenate(weights),
                           minlength=k * self.width).reshape(k, self.width)


class SumsProduct:
    """``W ↦ W @ S`` (float64 totals) for blocks ``W`` of float32 cluster counts: a dense product
    (a sparse one, or one per group of clusters sharing their columns, measured no faster here),
    in float32 where that is exact (:func:`exact_columns`, twice as fast) and float64 elsewhere."""

    def __init__(self, S: np.ndarray, draws: int | None = None) -> None:
        draws = len(S) if draws is None else draws
        self.n_clusters, self.width = S.shape
        self.whole, self.scale, self.fraction = exact_columns(S, draws)
        self.S32 = (S[:, self.whole] * self.scale).astype(np.float32)
        self.S64 = S[:, self.fraction]

    def __call__(self, W: np.ndarray) -> np.ndarray:
        totals = np.empty((len(W), self.width))
        totals[:, self.whole] = (W @ self.S32) / self.scale
        if len(self.fraction):
            totals[:, self.fraction] = W.astype(np.float64) @ self.S64
        return totals


#: multipliers that make a column of per-cluster sums integral (credits 0.25 / 0.1, twelfths, …)
_SCALES = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 40, 100)


def exact_columns(S: np.ndarray, draws: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns of ``S`` whose sums under any resample are exact in float32: those that some
    multiplier in :data:`_SCALES` makes integral with every partial sum of ``draws`` draws below
    2**23 (counts, hits, credits on a fixed grid). Returns (those columns, their multipliers, the
    other columns), so the products take float32 BLAS (about twice as fast) where that is exact
    and float64 elsewhere."""
    peak = np.abs(S).max(axis=0, initial=0.0)
    scale = np.zeros(S.shape[1])
    head = S[:256]  # a cheap first test on a few clusters, then the full one on the survivors
    for m in _SCALES:
        todo = np.flatnonzero((scale == 0) & (peak * m * draws < 2.0 ** 23))
        todo = todo[(head[:, todo] * m == np.round(head[:, todo] * m)).all(axis=0)]
        if not len(todo):
            continue
        scaled = S[:, todo] * m
        ok = (scaled == np.round(scaled)).all(axis=0)
        scale[todo[ok]] = m
    whole = np.flatnonzero(scale > 0)
    return whole, scale[whole], np.flatnonzero(scale == 0)


class Float32Product:
    """``W ↦ [W @ M₁ | W @ M₂ | …]`` in float32, as float64 totals: the matrices are multiplied as
    given (transposed views included), so results keep float32 rounding (≤ 1e-6 relative) where
    a column is not integral. The path of :func:`ratio_of_sums_replicates` (C1, BAGEL, HCA)."""

    def __init__(self, *matrices: np.ndarray) -> None:
        self.matrices = [np.asarray(m, dtype=np.float32) for m in matrices]
        self.n_clusters = self.matrices[0].shape[0]

    def __call__(self, W: np.ndarray) -> np.ndarray:
        return np.hstack([(W @ m).astype(np.float64) for m in self.matrices])


class SparseProduct:
    """``W ↦ [(M₁ @ Wᵀ)ᵀ | (M₂ @ Wᵀ)ᵀ | …]`` in float64 for sparse ``columns × clusters``
    matrices (SciPy CSR): for many columns that each hold few clusters' sums (the leaderboard's
    rank bootstrap: every model's items in every Table 3 column)."""

    def __init__(self, *matrices: Any) -> None:
        self.n_clusters = int(matrices[0].shape[1])
        # a matrix of integers whose every resampled total stays below 2**24 (counts, 0/1 scores)
        # is multiplied in float32: exact, so the same numbers, at half the memory traffic
        self.matrices = [m.astype(np.float32) if _exact_in_float32(m, self.n_clusters) else m for m in matrices]

    def __call__(self, W: np.ndarray) -> np.ndarray:
        w32 = np.ascontiguousarray(W.T, dtype=np.float32)
        w64 = w32.astype(np.float64) if any(m.dtype != np.float32 for m in self.matrices) else None
        return np.hstack([np.asarray(m @ (w32 if m.dtype == np.float32 else w64)).T.astype(np.float64)
                          for m in self.matrices])


def _exact_in_float32(matrix: Any, n_clusters: int) -> bool:
    """Integral non-negative entries, and no resampled row total (at most ``n_clusters`` draws of
    the row's largest entry) reaching 2**24."""
    data = np.asarray(matrix.data)
    if not len(data):
        return True
    return bool((data >= 0).all() and (data == np.round(data)).all()
                and float(data.max()) * n_clusters < 2.0 ** 24)


class PartitionProduct:
    """Per-part sums for rows that each belong to one part (``(B, parts × (m + 1))``: the ``m``
    value sums then the number of draws, part after part), for count blocks whose columns are
    the rows in part order (``resampled_cluster_counts(..., order=order)``). Each row enters one
    part's product, so ``m + 1`` columns per row instead of one per cell of every union of parts."""

    def __init__(self, values: np.ndarray, part: np.ndarray, n_parts: int) -> None:
        values = np.asarray(values, dtype=np.float64)
        part = np.asarray(part, dtype=np.int64)
        n = len(part)
        #: None when the parts already form few runs in row order; else a stable sort by part
        self.order = partition_order(part, n_parts)
        if self.order is not None:
            part, values = part[self.order], values[self.order]
        starts = np.flatnonzero(np.r_[True, part[1:] != part[:-1]]) if n else np.zeros(0, np.int64)
        self.runs = [(int(a), int(b), int(part[a])) for a, b in zip(starts, np.r_[starts[1:], n])]
        self.with_ones = np.column_stack([values, np.ones(n)])  # the last column counts the draws
        self.m, self.n_parts, self.n_clusters = values.shape[1], n_parts, n

    def __call__(self, W: np.ndarray) -> np.ndarray:
        out = np.zeros((len(W), self.n_parts, self.m + 1))
        for a, b, p in self.runs:
            if W.dtype == np.float64:
                out[:, p] += W[:, a:b] @ self.with_ones[a:b]
                continue
            # narrower counts (uint8 waiting blocks) widened a cache-sized piece at a time: the
            # float64 copy of a whole block is 8× its bytes and would be read back from memory
            for lo in range(a, b, _PIECE):
                hi = min(b, lo + _PIECE)
                out[:, p] += W[:, lo:hi].astype(np.float64) @ self.with_ones[lo:hi]
        return out.reshape(len(W), -1)


#: columns of a narrow count block widened to float64 at a time (16 replicates: 1 MiB)
_PIECE = 1 << 13


def partition_order(part: np.ndarray, n_parts: int) -> np.ndarray | None:
    """The column order :class:`PartitionProduct` visits rows in: None where the parts already
    form few runs in row order, else a stable sort by part (so each part is one run). Count blocks
    for it are drawn with ``order=`` this."""
    part = np.asarray(part, dtype=np.int64)
    runs = int(np.count_nonzero(part[1:] != part[:-1])) + 1 if len(part) else 0
    return np.argsort(part, kind="stable") if runs > 4 * n_parts else None


def cluster_sums(values: np.ndarray, codes: np.ndarray, n_clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster sums and counts of the non-NaN entries of ``values`` (n × k) → two
    ``(n_clusters, k)`` float64 arrays. NaN marks an item that is not part of a statistic."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    present = ~np.isnan(values)
    sums = np.zeros((n_clusters, values.shape[1]))
    counts = np.zeros((n_clusters, values.shape[1]))
    for column in range(values.shape[1]):
        keep = present[:, column]
        sums[:, column] = np.bincount(codes[keep], weights=values[keep, column], minlength=n_clusters)
        counts[:, column] = np.bincount(codes[keep], minlength=n_clusters)
    return sums, counts


def ratio_of_sums_replicates(numerators: np.ndarray, denominators: np.ndarray, *, B: int, seed: int,
                             denominator_of: np.ndarray | None = None,
                             counts: Iterable[np.ndarray] | None = None) -> np.ndarray:
    """Bootstrap replicates (``B × K``) of ``Σ numerator / Σ denominator`` per statistic.

    ``numerators`` is ``(n_clusters, K)`` and ``denominators`` ``(n_clusters, D)``; statistic ``k``
    divides by denominator column ``denominator_of[k]`` (default: the same column, ``D = K``), so
    statistics sharing a denominator share its matrix product. A replicate with a zero
    denominator gives NaN for that statistic. Products in float32 (:class:`Float32Product`).
    ``counts`` are the draw counts to use (:func:`bootstrap_replicates`)."""
    product = Float32Product(numerators, denominators)
    K = product.matrices[0].shape[1]
    index = np.arange(K) if denominator_of is None else np.asarray(denominator_of, dtype=np.int64)

    def statistics(totals: np.ndarray, _: np.ndarray | None) -> list[np.ndarray]:
        top, bottom = totals[:, :K], totals[:, K:][:, index]
        return list(ratio(top, bottom).T)

    if B <= 0:
        return np.empty((0, K))
    return bootstrap_replicates(product, statistics, B=B, seed=seed, counts=counts)


#: the name a partition bootstrap's counts are drawn under (:class:`CountsDrawnAhead`)
_PARTITION = "partition"
#: replicates per count block of an item bootstrap over a partition (16 × 824K uint8: 13 MB)
_PARTITION_CHUNK = 16


def partition_replicates(values: np.ndarray, part: np.ndarray, n_parts: int, *, B: int, seed: int,
                         chunk: int = _PARTITION_CHUNK, classes: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Item-bootstrap replicates of per-part sums, for statistics whose cells are unions of the
    parts of one partition of the items (C2: pooled, categories and families are unions of
    families).

    ``values`` is ``(n, m)`` (float64; every item takes part in every column), ``part`` gives
    each item's part ``0 … n_parts−1``. Returns ``sums`` ``(B, n_parts, m)`` and ``counts``
    ``(B, n_parts)``: replicate ``b``'s sum of column ``j`` and number of draws over part ``p``.
    The resamples are those of :func:`resampled_cluster_counts` ``(n, B=B, seed=seed)`` with item
    ``i`` as cluster ``i`` (the same draws), summed in float64 by :class:`PartitionProduct`
    (:func:`bootstrap_replicates`), so a ratio of these sums equals
    :func:`ratio_of_sums_replicates` on the part-masked columns up to that path's float32
    rounding.

    With ``classes`` the items that agree in part and every value are one class, and replicate
    ``b`` draws how many of its ``n`` items fall in each class (one multinomial over the classes'
    shares): the same resampling distribution of every sum, from a different stream, so the
    bounds differ from the default path's by Monte Carlo noise only. It pays wherever classes
    are fewer than items: a draw and a product per class instead of per item (0/1 scores and a
    few credit values most; C2's 824K items are about 141K classes;
    ``benchmarks/stats_item_bootstrap.py``).

    The classes are numbered in part-then-value order. From :data:`CLASSES_POISSONIZED_FROM`
    classes on, each replicate's class counts come from its own stream
    (:func:`~biovqa.stats.draws.replicate_class_counts`); below, from one ``default_rng(seed)``
    stream of multinomials. Items, and classes from that threshold on, are drawn by a worker
    thread and the caller together (:class:`CountsDrawnAhead`; the caller also runs the
    products), except below :data:`~biovqa.stats.draws.POISSONIZED_FROM` items, where one stream
    is read in order."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    part = np.asarray(part, dtype=np.int64)
    n = len(part)
    if len(values) != n:
        raise ValueError(f"values has {len(values)} rows but part has {n}")
    if n < 1:
        raise ValueError("the bootstrap needs at least one cluster")
    if part.min() < 0 or part.max() >= n_parts:
        raise ValueError(f"part codes must lie in 0 … {n_parts - 1}")
    m = values.shape[1]
    if B <= 0:
        return np.zeros((0, n_parts, m)), np.zeros((0, n_parts))
    if classes:
        code = _class_codes(values, part)
        size = np.bincount(code)
        first = np.empty(len(size), dtype=np.int64)
        first[code[::-1]] = np.arange(len(code) - 1, -1, -1)  # each class's first row
        product = PartitionProduct(values[first], part[first], n_parts)
        if len(size) < CLASSES_POISSONIZED_FROM:
            flat = _multinomial_class_replicates(product, size, B=B, seed=seed, chunk=max(chunk, 64))
            return _split_sums(flat, B, n_parts, m)
        drawn = CountsDrawnAhead({}, classes={_PARTITION: ClassSizes(size)}, B=B, seed=seed, chunk=chunk)
    else:
        product = PartitionProduct(values, part, n_parts)
        drawn = CountsDrawnAhead({_PARTITION: n}, B=B, seed=seed, chunk=chunk, orders={_PARTITION: product.order})
    with drawn:  # a worker thread and this one draw; the light per-part products run here
        flat = bootstrap_replicates(product, lambda totals, _: list(totals.T), B=B, seed=seed,
                                    counts=drawn.blocks(_PARTITION, product.n_clusters, dtype=None))
    return _split_sums(flat, B, n_parts, m)


def _split_sums(flat: np.ndarray, B: int, n_parts: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    shaped = flat.reshape(B, n_parts, m + 1)
    return shaped[:, :, :m], shaped[:, :, m]


def _multinomial_class_replicates(product: PartitionProduct, size: np.ndarray, *, B: int, seed: int,
                                  chunk: int) -> np.ndarray:
    """Below :data:`CLASSES_POISSONIZED_FROM` classes: replicate ``b``'s class counts are one
    multinomial of ``n`` over the classes' shares, ``chunk`` replicates per call from one
    ``default_rng(seed)`` stream (the same numbers as one call for all ``B``)."""
    n = int(size.sum())
    shares = size / n
    rng = np.random.default_rng(seed)
    flat = np.empty((B, product.n_parts * (product.m + 1)))
    for start in range(0, B, chunk):
        rows = min(chunk, B - start)
        flat[start:start + rows] = product(rng.multinomial(n, shares, size=rows).astype(np.float64))
    return flat


#: from this many classes on, :func:`partition_replicates` draws class counts Poissonized, each
#: replicate from its own stream; below, a multinomial over the classes is cheaper (its cost grows
#: with the classes, the Poissonized draw's fixed cost per replicate does not)
CLASSES_POISSONIZED_FROM = 1 << 11


def _class_codes(values: np.ndarray, part: np.ndarray) -> np.ndarray:
    """One code per distinct (part, values) row, numbered in part-then-value order: each column's
    sorted value codes appended to a mixed-radix key (renumbered first where the key would pass
    62 bits), the key's sorted codes last."""
    key, radix = part.astype(np.int64), int(part.max()) + 1 if len(part) else 1
    for column in values.T:
        value_codes, distinct = dense_codes(column)  # NaN: a value
        if radix * len(distinct) >= 1 << 62:
            key, uniques = dense_codes(key)
            radix = len(uniques)
        key = key * len(distinct) + value_codes
        radix *= len(distinct)
    return dense_codes(key)[0]


def percentile_interval(replicates: np.ndarray, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column of ``replicates`` (``B × K``) at ``confidence``, ignoring NaN
    replicates; all-NaN columns give NaN bounds."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    replicates = np.asarray(replicates, dtype=np.float64)
    if replicates.ndim == 1:
        replicates = replicates[:, None]
    lo = np.full(replicates.shape[1], np.nan)
    hi = np.full(replicates.shape[1], np.nan)
    finite = ~np.isnan(replicates)
    complete = finite.all(axis=0)
    quantiles = [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2]
    if complete.any():
        lo[complete], hi[complete] = np.percentile(replicates[:, complete], quantiles, axis=0)
    partial = ~complete & finite.any(axis=0)
    if partial.any():
        lo[partial], hi[partial] = np.nanpercentile(replicates[:, partial], quantiles, axis=0)
    return lo, hi


@dataclass(frozen=True, slots=True)
class BootstrapMeans:
    """Point estimates, replicates and percentile bounds of ``K`` means."""

    estimate: np.ndarray  # (K,)
    replicates: np.ndarray  # (B, K)
    lo: np.ndarray  # (K,)
    hi: np.ndarray  # (K,)


def bootstrap_means(values: np.ndarray, clusters: np.ndarray | list, *, B: int = 1000, seed: int = 42,
                    confidence: float = CONFIDENCE) -> BootstrapMeans:
    """Means of the columns of ``values`` (n × k; NaN = item not in that statistic) with cluster
    bootstrap replicates and percentile bounds."""
    codes, n_clusters = cluster_codes(clusters)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    if len(codes) != len(values):
        raise ValueError(f"values has {len(values)} rows but clusters has {len(codes)}")
    sums, counts = cluster_sums(values, codes, n_clusters)
    total = counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = np.where(total > 0, sums.sum(axis=0) / np.where(total > 0, total, 1), np.nan)
    replicates = ratio_of_sums_replicates(sums, counts, B=B, seed=seed)
    lo, hi = percentile_interval(replicates, confidence)
    return BootstrapMeans(estimate=estimate, replicates=replicates, lo=lo, hi=hi)


def cluster_bootstrap_means(values: np.ndarray, clusters: np.ndarray | list, *, B: int = 1000,
                            seed: int = 42, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval (at ``confidence``) ``(lo, hi)`` of the mean of each column of ``values``
    (n × k, NaN = excluded) resampling ``clusters`` with replacement; pass
    ``clusters = np.arange(n)`` for the item bootstrap."""
    result = bootstrap_means(values, clusters, B=B, seed=seed, confidence=confidence)
    return result.lo, result.hi


def item_bootstrap_means(values: np.ndarray, *, B: int = 1000, seed: int = 42,
                         confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cluster_bootstrap_means` with every item its own cluster."""
    n = len(np.asarray(values))
    return cluster_bootstrap_means(values, np.arange(n), B=B, seed=seed, confidence=confidence)


class ClusterBootstrapPlan:
    """Many bootstrapped means at once, each as per-cluster numerator and denominator sums, so
    that one set of resampled cluster weights serves all of them (written by hand: one matrix
    product per denominator instead of one resample per statistic); full-sample values are kept
    in float64. ``codes`` gives each row's cluster (e.g. image) index."""

    def __init__(self, codes: np.ndarray, n_clusters: int) -> None:
        self.codes = codes
        self.n_clusters = n_clusters
        self.numerators: list[np.ndarray] = []
        self.denominators: list[np.ndarray] = []
        self.denominator_of: list[int] = []
        self.full_numerators: list[np.ndarray] = []
        self.full_denominators: list[np.ndarray] = []
        self._width = 0
        self._denominator_width = 0
        self._layouts: dict[tuple[int, int, int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._pinned: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def _layout(self, mask: np.ndarray, cells: np.ndarray, n_cells: int,
                codes: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Rows kept and their flat (cluster, cell) bin, computed once per layout."""
        codes = self.codes if codes is None else codes
        key = (id(mask), id(cells), id(codes), n_cells)
        if key not in self._layouts:
            keep = np.flatnonzero(mask & (cells >= 0))
            self._layouts[key] = (keep, cells[keep] * self.n_clusters + codes[keep])  # cell-major
            self._pinned.append((mask, cells, codes))  # keep the ids valid while cached
        return self._layouts[key]

    def add_denominator(self, mask: np.ndarray, cells: np.ndarray, n_cells: int,
                        codes: np.ndarray | None = None) -> int:
        """Counts of ``mask`` rows per cell; returns its first column. ``codes`` overrides the rows'
        cluster codes (image-level rows)."""
        keep, flat = self._layout(mask, cells, n_cells, codes)
        block = np.bincount(flat, minlength=self.n_clusters * n_cells).reshape(n_cells, self.n_clusters)
        first = self._denominator_width
        self.denominators.append(block.astype(np.float32))
        self.full_denominators.append(np.bincount(cells[keep], minlength=n_cells).astype(np.float64))
        self._denominator_width += n_cells
        return first

    def add_mean(self, values: np.ndarray, mask: np.ndarray, cells: np.ndarray, n_cells: int,
                 denominator_first: int, codes: np.ndarray | None = None) -> int:
        """Means of ``values`` over ``mask`` per cell; returns the index of its first column."""
        keep, flat = self._layout(mask, cells, n_cells, codes)
        weights = np.asarray(values, dtype=np.float64)[keep]
        sums = np.bincount(flat, weights=weights, minlength=self.n_clusters * n_cells)
        self.numerators.append(sums.reshape(n_cells, self.n_clusters).astype(np.float32))
        self.full_numerators.append(np.bincount(cells[keep], weights=weights, minlength=n_cells))
        self.denominator_of.extend(range(denominator_first, denominator_first + n_cells))
        first = self._width
        self._width += n_cells
        return first

    def run(self, B: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """(full-sample estimate per statistic, ``B × K`` replicates); ``B = 0`` gives no
        replicates (intervals are then undefined)."""
        index = np.asarray(self.denominator_of, dtype=np.int64)
        top = np.concatenate(self.full_numerators)
        bottom = np.concatenate(self.full_denominators)[index]
        with np.errstate(invalid="ignore", divide="ignore"):
            estimate = np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), np.nan)
        # blocks are (cells × clusters), so stacking them is a plain copy; the products take the
        # transposed views
        if B == 0:
            return estimate, np.empty((0, len(index)))
        replicates = ratio_of_sums_replicates(np.concatenate(self.numerators, axis=0).T,
                                              np.concatenate(self.denominators, axis=0).T,
                                              B=B, seed=seed, denominator_of=index)
        return estimate, replicates


class Bootstrap:
    """Estimates ``{value, lo, hi, n}`` of statistics of a :class:`SumColumns` table, for one
    bootstrap setting (``B`` replicates, seed, confidence). With ``draws`` (a :class:`CountsDrawnAhead`
    holding this bootstrap's counts under ``name``) the counts are read from it, else drawn here
    (the same stream either way)."""

    def __init__(self, B: int, seed: int, confidence: float, draws: CountsDrawnAhead | None = None,
                 name: str = "") -> None:
        self.B, self.seed, self.confidence = B, seed, confidence
        self.draws, self.name = draws, name

    def named(self, name: str) -> Bootstrap:
        """This bootstrap for ``name`` (whose counts ``draws`` holds under that name)."""
        return Bootstrap(self.B, self.seed, self.confidence, self.draws, name)

    def __call__(self, columns: SumColumns, fn: Statistics, clusters: Sequence[Any], n: int, *,
                 rowwise: bool = False) -> list[dict[str, Any]]:
        """Estimates of the statistics ``fn(totals, cluster_weights)``: ``totals`` (replicates ×
        columns) are the weighted column sums, ``cluster_weights`` (replicates × clusters, codes of
        :func:`~biovqa.stats.codes.cluster_codes`) is given when ``rowwise``; each statistic is
        a vector over the replicates; ``n`` is every estimate's ``n``."""
        from biovqa.scoring.schema import estimate

        codes, k = cluster_codes(np.asarray(clusters, dtype=object)) if len(clusters) else (np.zeros(0, np.int64), 0)
        full = np.array([float(v[0]) for v in fn(columns.sums()[None, :],
                                                 np.ones((1, k), dtype=np.float32) if rowwise else None)])
        lo = hi = np.full(len(full), np.nan)
        if self.B > 0 and len(clusters):
            counts = None if self.draws is None else self.draws.blocks(self.name, k)
            replicates = bootstrap_replicates(SumsProduct(columns.cluster_sums(codes, k), k), fn, B=self.B,
                                              seed=self.seed, counts=counts, rowwise=rowwise)
            lo, hi = percentile_interval(replicates, self.confidence)
            # a statistic that every replicate repeats (up to rounding in the products) keeps its
            # value as both bounds
            near = 1e-12 * np.maximum(1.0, np.abs(full))
            lo = np.where(np.abs(lo - full) <= near, full, lo)
            hi = np.where(np.abs(hi - full) <= near, full, hi)
        return [estimate(v, None if math.isnan(a) else a, None if math.isnan(b) else b, n=n)
                for v, a, b in zip(full, lo, hi)]


__all__ = ["Bootstrap", "BootstrapMeans", "CLASSES_POISSONIZED_FROM", "ClusterBootstrapPlan", "CountsDrawnAhead",
           "Float32Product", "PartitionProduct", "Product", "REPLICATE_CHUNK", "Statistics",
           "SparseProduct", "SumColumns", "SumsProduct", "bootstrap_means", "bootstrap_replicates", "cluster_bootstrap_means",
           "cluster_codes", "cluster_sums", "exact_columns", "item_bootstrap_means", "nanmean",
           "partition_order", "partition_replicates",
           "percentile_interval", "ratio", "ratio_of_sums_replicates", "resampled_cluster_counts",
           "weighted_mean"]
