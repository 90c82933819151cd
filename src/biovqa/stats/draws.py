"""Resampled cluster counts: the one source of bootstrap draws (the paper's Appendix L.3).

A replicate of a cluster bootstrap draws ``n_clusters`` cluster indices with replacement; all that
any statistic needs of it is how often each cluster was drawn. :func:`resampled_cluster_counts`
yields those counts in blocks of replicates from one ``numpy.random.default_rng(seed)`` stream,
clusters numbered by :func:`cluster_codes` in sorted label order, so the resamples depend on the
seed and the sorted labels only, never on the row order or on how the work is chunked.
:class:`DrawnAhead` and :class:`CountsDrawnAhead` take the next blocks on a worker thread while
the caller multiplies the current ones (NumPy's draws and ``bincount`` release the GIL).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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
                             dtype: type = np.float32, order: np.ndarray | None = None,
                             draw_ahead: bool = False, reuse: bool = False) -> Iterator[np.ndarray]:
    """Yield ``(≤chunk, n_clusters)`` blocks of draw counts (``dtype``), ``B`` rows in all: row
    ``b`` counts how often each cluster was drawn in replicate ``b`` (``n_clusters`` uniform draws
    with replacement, replicate after replicate from one ``default_rng(seed)`` stream). With
    ``order`` (a permutation of the clusters) column ``j`` counts cluster ``order[j]`` instead.
    With ``draw_ahead`` the raw draws are taken on a worker thread and counted on the caller's,
    a quarter of them on the worker's (for callers whose own work per block is light: drawing and
    counting then share two cores; wrap the iterator in :class:`DrawnAhead` instead to move all
    the counting to the worker).
    With ``reuse`` every block is written into one buffer, valid until the next block is asked
    for (a fresh 100 MB block per 16 replicates of 824K clusters costs more in page faults than
    the counting).

    NumPy draws a bounded integer whose range fits 32 bits with the same 32-bit Lemire step
    whatever the output type and however the draws are split into calls, from one buffered
    stream, so the counts equal those of one int32 draw call per replicate (the tests keep that
    loop as the reference). The draws are taken a few replicates per call
    (:func:`_replicate_draws`): one call for a whole block cost 4–6× more for 824K clusters,
    most of it page-faulting a fresh ~400 MB array in for every block; 64-bit draws feed
    ``bincount`` without an int32 → intp copy."""
    rng = _bootstrap_rng(n_clusters, seed)

    def pieces() -> Iterator[tuple[int, np.ndarray, dict[int, np.ndarray]]]:
        """(first replicate, its draws, the counts of those rows counted where drawn) in stream
        order, a block's draws split as ever."""
        done = 0
        while done < B:
            rows = min(chunk, B - done)
            for first, draws in _replicate_draws(rng, n_clusters, rows):
                counted = ({r: np.bincount(draws[r], minlength=n_clusters) for r in range(len(draws))
                            if (done + first + r) % _WORKER_COUNTS_EVERY == 0} if draw_ahead else {})
                yield done + first, draws, counted
            done += rows

    stream = DrawnAhead(pieces()) if draw_ahead else None
    try:
        block: np.ndarray = np.empty((0, n_clusters), dtype=dtype)
        for start, draws, counted in (pieces() if stream is None else stream):
            for r in range(len(draws)):
                row = start + r
                if row % chunk == 0:
                    rows = min(chunk, B - row)
                    block = (block[:rows] if reuse and len(block) >= rows
                             else np.empty((rows, n_clusters), dtype=dtype))
                drawn = counted[r] if r in counted else np.bincount(draws[r], minlength=n_clusters)
                block[row % chunk] = drawn if order is None else drawn[order]
                if row % chunk == len(block) - 1:
                    yield block
    finally:
        if stream is not None:
            stream.close()


#: With ``draw_ahead``, every so many replicates are counted on the drawing thread too: drawing
#: (≈2.0 ms per 824K-cluster replicate) is lighter than counting plus the caller's product
#: (≈2.7 + 1.5 ms), so the worker takes a quarter of the counting (C2's B = 1000 bootstrap: 5.1–5.7 s
#: → 4.5–4.8 s; a third or a half measured no faster, the two threads then contend for memory).
_WORKER_COUNTS_EVERY = 4

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


class DrawnAhead(Generic[T]):
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

    def close(self) -> None:
        """Stop the worker after its current step."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> DrawnAhead[T]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


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


def resampled_class_counts(counts: np.ndarray, *, B: int, seed: int) -> np.ndarray:
    """``B × strata × classes`` counts of a stratified item bootstrap whose statistics see an item
    only through its class (C4: same/different pair × answered yes/no/unparsed): within every
    stratum (a row of ``counts``: items per class) its ``n`` items are drawn with replacement,
    which is one multinomial draw of ``n`` over the stratum's class shares per replicate. The
    strata are drawn in row order, each its ``B`` replicates at once, from one
    ``numpy.random.default_rng(seed)`` stream, so the result depends on the seed and the counts
    only; an empty stratum stays zero."""
    counts = np.asarray(counts, dtype=np.int64)
    rng = np.random.default_rng(seed)
    out = np.zeros((B, *counts.shape), dtype=np.int64)
    for s, row in enumerate(counts):
        n = int(row.sum())
        if n:
            out[:, s, :] = rng.multinomial(n, row / n, size=B)
    return out


__all__ = ["CountsDrawnAhead", "DRAWS_PER_CALL", "DrawnAhead", "REPLICATE_CHUNK", "cluster_codes",
           "resampled_class_counts", "resampled_cluster_counts"]
