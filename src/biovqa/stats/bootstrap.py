"""Seeded percentile bootstrap with cluster resampling (the paper's L.3).

Every statistic the leaderboards bootstrap is a *ratio of sums* over items: a mean of a per-item
quantity over the items of a cell (a task, a group, a tier, …), where an item may be left out of a
cell's denominator (severity only averages wrong and resolved items). Resampling clusters (images,
plates, or the items themselves) with replacement multiplies each cluster's sums by how often it was
drawn, so with per-cluster sums ``S`` (clusters × statistics) and per-cluster counts ``N`` one
replicate of every statistic is ``(w @ S) / (w @ N)`` for a vector ``w`` of draw counts. Drawing
the ``B × clusters`` count matrix ``W`` once and applying it to all statistics as matrix products
gives every cell's interval from the *same* resamples, in a few BLAS calls.

The percentile interval is the ``(1 − level)/2`` and ``(1 + level)/2`` quantiles of the ``B``
replicates (linear interpolation, NumPy's default). Draws come from
``numpy.random.default_rng(seed)``: replicate ``b`` draws ``n_clusters`` cluster indices with
replacement, so results depend on the seed and the sorted cluster labels only, never on the row
order or on how the work is chunked.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
import pandas as pd

T = TypeVar("T")

#: Replicates materialised per matrix product (bounds memory at chunk × clusters float32).
REPLICATE_CHUNK = 64


def cluster_codes(clusters: np.ndarray | list) -> tuple[np.ndarray, int]:
    """Dense codes ``0 … n_clusters−1`` for cluster labels, numbered in sorted label order (so
    the codes, and hence the resamples, do not depend on the order of the rows)."""
    codes, uniques = pd.factorize(pd.Series(np.asarray(clusters)), sort=True)
    if (codes < 0).any():
        raise ValueError("cluster labels must not be missing")
    return codes.astype(np.int64), len(uniques)


def resampled_cluster_counts(n_clusters: int, *, B: int, seed: int, chunk: int = REPLICATE_CHUNK,
                             dtype: type = np.float32) -> Iterator[np.ndarray]:
    """Yield ``(≤chunk, n_clusters)`` blocks of draw counts (``dtype``), ``B`` rows in all: row
    ``b`` counts how often each cluster was drawn in replicate ``b`` (``n_clusters`` uniform draws
    with replacement, replicate after replicate from one ``default_rng(seed)`` stream).

    NumPy draws a bounded integer whose range fits 32 bits with the same 32-bit Lemire step
    whatever the output type and however the draws are split into calls, from one buffered
    stream, so the counts equal those of one int32 draw call per replicate (the tests keep that
    loop as the reference). The draws are taken a few replicates per call
    (:func:`_replicate_draws`): one call for a whole block cost 4–6× more for 824K clusters,
    most of it page-faulting a fresh ~400 MB array in for every block; 64-bit draws feed
    ``bincount`` without an int32 → intp copy."""
    rng = _bootstrap_rng(n_clusters, seed)
    done = 0
    while done < B:
        rows = min(chunk, B - done)
        block: np.ndarray = np.empty((rows, n_clusters), dtype=dtype)
        for first, draws in _replicate_draws(rng, n_clusters, rows):
            for r in range(len(draws)):
                block[first + r] = np.bincount(draws[r], minlength=n_clusters)
        done += rows
        yield block


#: Draws taken per call (a few replicates' worth, 16 MB of int64): small enough for the
#: allocator to reuse one buffer, large enough that the call overhead does not count.
DRAWS_PER_CALL = 1 << 21


def _bootstrap_rng(n_clusters: int, seed: int) -> np.random.Generator:
    if n_clusters < 1:
        raise ValueError("the bootstrap needs at least one cluster")
    if n_clusters >= 2**31:
        raise ValueError("too many clusters for int32 draws")
    return np.random.default_rng(seed)


def _replicate_draws(rng: np.random.Generator, n_clusters: int, rows: int) -> Iterator[tuple[int, np.ndarray]]:
    """``rows`` replicates' cluster draws from ``rng`` as ``(first row, (k, n_clusters) int64)``
    pieces, in stream order (the same integers as one draw call for all rows)."""
    per_call = max(1, DRAWS_PER_CALL // n_clusters)
    for first in range(0, rows, per_call):
        k = min(per_call, rows - first)
        yield first, rng.integers(0, n_clusters, size=(k, n_clusters), dtype=np.int64)


def partition_replicates(values: np.ndarray, part: np.ndarray, n_parts: int, *, B: int, seed: int,
                         chunk: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Item-bootstrap replicates of per-part sums, for statistics whose cells are unions of the
    parts of one partition of the items (C2: pooled, categories and families are unions of
    families).

    ``values`` is ``(n, m)`` (float64; every item takes part in every column), ``part`` gives
    each item's part ``0 … n_parts−1``. Returns ``sums`` ``(B, n_parts, m)`` and ``counts``
    ``(B, n_parts)``: replicate ``b``'s sum of column ``j`` and number of draws over part ``p``.
    The resamples are those of :func:`resampled_cluster_counts` ``(n, B=B, seed=seed)`` with item
    ``i`` as cluster ``i`` (same stream), so a ratio of these sums equals
    :func:`ratio_of_sums_replicates` on the part-masked columns up to rounding: this path sums in
    float64 (exact for counts and 0/1 values), that one in float32.

    Why it is faster than masked columns: each item enters one part's product instead of every
    column of every cell (4 columns instead of 3 × 25 for C2), the count rows are written into one
    reused float64 buffer, the items are visited part by part as contiguous slices (in their
    own order when the parts already form runs, otherwise through one stable sort), and the next
    draws are taken on a worker thread while the current ones are counted."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    part = np.asarray(part, dtype=np.int64)
    n = len(part)
    if len(values) != n:
        raise ValueError(f"values has {len(values)} rows but part has {n}")
    if n and (part.min() < 0 or part.max() >= n_parts):
        raise ValueError(f"part codes must lie in 0 … {n_parts - 1}")
    rng = _bootstrap_rng(n, seed)
    starts = np.flatnonzero(np.r_[True, part[1:] != part[:-1]])
    order = None
    if len(starts) > 4 * n_parts:  # interleaved parts: visit the items sorted by part
        order = np.argsort(part, kind="stable")
        part = part[order]
        values = values[order]
        starts = np.flatnonzero(np.r_[True, part[1:] != part[:-1]])
    runs = [(int(a), int(b), int(part[a])) for a, b in zip(starts, np.r_[starts[1:], n])]
    with_ones = np.column_stack([values, np.ones(n)])  # the last column counts the draws
    m = values.shape[1]
    sums = np.zeros((B, n_parts, m))
    counts = np.zeros((B, n_parts))
    buffer = np.empty((min(chunk, max(B, 1)), n))
    done = 0
    with _DrawnAhead(_replicate_draws(rng, n, B)) as pieces:
        for first, draws in pieces:
            for r in range(len(draws)):
                drawn = np.bincount(draws[r], minlength=n)
                buffer[(first + r) % len(buffer)] = drawn if order is None else drawn[order]
                filled = first + r + 1 - done
                if filled == len(buffer) or first + r + 1 == B:
                    weights = buffer[:filled]
                    for a, b, p in runs:
                        block = weights[:, a:b] @ with_ones[a:b]
                        sums[done:done + filled, p] += block[:, :m]
                        counts[done:done + filled, p] += block[:, m]
                    done += filled
    return sums, counts


class _DrawnAhead(Generic[T]):
    """The items of an iterator of draws (or count blocks), each next one taken on a worker thread while the
    caller uses the current one (NumPy's draws, ``bincount`` and the products release the GIL,
    so drawing overlaps counting on a second core). The iterator is only ever advanced by the
    worker, one step at a time, so the stream order is kept."""

    def __init__(self, iterator: Iterator[T]) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._iterator = iterator
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="bootstrap-draws")
        self._next = self._pool.submit(self._step)

    def _step(self) -> T | None:
        return next(self._iterator, None)

    def __iter__(self) -> Iterator[T]:
        while (item := self._next.result()) is not None:
            self._next = self._pool.submit(self._step)
            yield item

    def __enter__(self) -> _DrawnAhead[T]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class CountsDrawnAhead:
    """The blocks of :func:`resampled_cluster_counts` for several bootstraps, drawn ahead on one
    worker thread (NumPy's draws release the GIL), so that the draws overlap whatever the caller
    does meanwhile (scoring the items, building the sums) on a second core.

    ``sizes`` maps a name (say, a task) to its number of clusters (names with none are left
    out); the worker draws each name's
    ``B`` rows, name after name in the order given, each from its own ``default_rng(seed)``
    stream, so :meth:`blocks` yields exactly the blocks ``resampled_cluster_counts(size, B=B,
    seed=seed, dtype=np.float32)`` would. Blocks wait as uint8 (a quarter of the memory: ~83 MB
    for 1000 × 83 317 clusters) unless some count exceeds 255, and each is released once
    yielded. The worker pauses while ``max_waiting_bytes`` are waiting, unless the caller waits
    for a name of which no block is ready yet: then it draws past the cap until that name's next
    block is ready, and pauses again (so reading the names in any order cannot deadlock, and
    reading them in the order given never holds more than the cap, or one block where a block is
    larger). Use as a context manager, or call :meth:`close`, to stop the worker early."""

    def __init__(self, sizes: Mapping[str, int], *, B: int, seed: int, chunk: int = REPLICATE_CHUNK,
                 max_waiting_bytes: int = 256 << 20) -> None:
        import threading

        self.sizes = {name: size for name, size in sizes.items() if size > 0}
        self.B, self.seed, self.chunk = B, seed, chunk
        self.max_waiting_bytes = max_waiting_bytes
        self.waiting_bytes = 0
        self.peak_waiting_bytes = 0
        #: the name the caller waits for, while it waits (None otherwise)
        self._wanted: str | None = None
        self._ready: dict[str, list[np.ndarray]] = {name: [] for name in self.sizes}
        self._finished: set[str] = set()
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._worker = threading.Thread(target=self._draw, name="bootstrap-draws", daemon=True)
        self._worker.start()

    def _draw(self) -> None:
        try:
            for name, size in self.sizes.items():
                for block in resampled_cluster_counts(size, B=self.B, seed=self.seed, chunk=self.chunk,
                                                      dtype=np.float32):
                    if self._stop.is_set():
                        return
                    compact = block.astype(np.uint8) if block.max(initial=0) <= 255 else block
                    with self._changed:
                        self._changed.wait_for(lambda: self._stop.is_set() or self._starved()
                                               or self.waiting_bytes + compact.nbytes <= self.max_waiting_bytes
                                               or self.waiting_bytes == 0)
                        if self._stop.is_set():
                            return
                        self._ready[name].append(compact)
                        self.waiting_bytes += compact.nbytes
                        self.peak_waiting_bytes = max(self.peak_waiting_bytes, self.waiting_bytes)
                        self._changed.notify_all()
                with self._changed:
                    self._finished.add(name)
                    self._changed.notify_all()
        except BaseException as error:  # handed to the consumer
            with self._changed:
                self._error = error
                self._changed.notify_all()

    def _starved(self) -> bool:
        """The caller waits for a name with no block ready (called holding the lock): only the
        worker drawing past the cap can end that wait. Once that name's block is ready it is
        False again, whether or not the caller has woken yet, so the cap holds meanwhile."""
        wanted = self._wanted
        return wanted is not None and not self._ready[wanted] and wanted not in self._finished

    def blocks(self, name: str, n_clusters: int) -> Iterator[np.ndarray]:
        """``name``'s float32 blocks in order, waiting for the worker where it is behind;
        ``n_clusters`` must be the size it was given (a mismatch is a caller's bug)."""
        if self.sizes.get(name) != n_clusters:
            raise ValueError(f"counts for {name!r} were drawn for {self.sizes.get(name)} clusters, "
                             f"not {n_clusters}")
        while True:
            with self._changed:
                self._wanted = name
                self._changed.notify_all()
                self._changed.wait_for(lambda: bool(self._ready[name]) or name in self._finished
                                       or self._error is not None)
                self._wanted = None
                if self._error is not None:
                    raise self._error
                if not self._ready[name]:
                    return
                block = self._ready[name].pop(0)
                self.waiting_bytes -= block.nbytes
                self._changed.notify_all()
            yield block if block.dtype == np.float32 else block.astype(np.float32)

    def close(self) -> None:
        """Stop the worker after its current block and drop what it drew."""
        self._stop.set()
        with self._changed:
            self._changed.notify_all()  # a worker pausing for memory sees the stop
        self._worker.join()
        with self._changed:
            for ready in self._ready.values():
                ready.clear()
            self.waiting_bytes = 0

    def __enter__(self) -> CountsDrawnAhead:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


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
                             denominator_of: np.ndarray | None = None) -> np.ndarray:
    """Bootstrap replicates (``B × K``) of ``Σ numerator / Σ denominator`` per statistic.

    ``numerators`` is ``(n_clusters, K)`` and ``denominators`` ``(n_clusters, D)``; statistic ``k``
    divides by denominator column ``denominator_of[k]`` (default: the same column, ``D = K``), so
    statistics sharing a denominator share its matrix product. A replicate with a zero
    denominator gives NaN for that statistic."""
    numerators = np.asarray(numerators, dtype=np.float32)  # views (e.g. transposed) are kept as they are
    denominators = np.asarray(denominators, dtype=np.float32)
    if denominator_of is None:
        denominator_of = np.arange(numerators.shape[1])
    n_clusters = numerators.shape[0]
    out = np.empty((B, numerators.shape[1]), dtype=np.float64)
    start = 0
    # the next block is drawn on a worker thread while BLAS multiplies this one
    with _DrawnAhead(resampled_cluster_counts(n_clusters, B=B, seed=seed)) as blocks:
        for weights in blocks:
            top = (weights @ numerators).astype(np.float64)
            bottom = (weights @ denominators).astype(np.float64)[:, denominator_of]
            with np.errstate(invalid="ignore", divide="ignore"):
                out[start:start + len(weights)] = np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1),
                                                           np.nan)
            start += len(weights)
    return out


def percentile_interval(replicates: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column of ``replicates`` (``B × K``), ignoring NaN replicates;
    all-NaN columns give NaN bounds."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    replicates = np.asarray(replicates, dtype=np.float64)
    if replicates.ndim == 1:
        replicates = replicates[:, None]
    lo = np.full(replicates.shape[1], np.nan)
    hi = np.full(replicates.shape[1], np.nan)
    finite = ~np.isnan(replicates)
    complete = finite.all(axis=0)
    quantiles = [100 * (1 - level) / 2, 100 * (1 + level) / 2]
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
                    level: float = 0.95) -> BootstrapMeans:
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
    lo, hi = percentile_interval(replicates, level)
    return BootstrapMeans(estimate=estimate, replicates=replicates, lo=lo, hi=hi)


def cluster_bootstrap_means(values: np.ndarray, clusters: np.ndarray | list, *, B: int = 1000,
                            seed: int = 42, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """95% (``level``) percentile interval ``(lo, hi)`` of the mean of each column of ``values``
    (n × k, NaN = excluded) resampling ``clusters`` with replacement; pass
    ``clusters = np.arange(n)`` for the item bootstrap."""
    result = bootstrap_means(values, clusters, B=B, seed=seed, level=level)
    return result.lo, result.hi


def item_bootstrap_means(values: np.ndarray, *, B: int = 1000, seed: int = 42,
                         level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cluster_bootstrap_means` with every item its own cluster."""
    n = len(np.asarray(values))
    return cluster_bootstrap_means(values, np.arange(n), B=B, seed=seed, level=level)


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
