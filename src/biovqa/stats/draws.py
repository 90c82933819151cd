"""Resampled cluster counts: the one source of bootstrap draws (the paper's Appendix L.3).

A replicate of a cluster bootstrap draws ``n_clusters`` cluster indices with replacement; all that
any statistic needs of it is how often each cluster was drawn. :func:`replicate_counts` defines
replicate ``b``'s counts from its own seeded stream, and :func:`resampled_cluster_counts` yields
them in blocks of replicates, clusters numbered by :func:`~biovqa.stats.codes.cluster_codes` in
sorted label order, so the resamples depend on the seed and the sorted labels only, never on the
row order, on how the work is chunked or on which thread draws. :class:`CountsDrawnAhead` draws
the blocks of several bootstraps on a worker thread while the caller does other work (NumPy
releases the GIL).
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

T = TypeVar("T")

#: Replicates materialised per matrix product (bounds memory at chunk × clusters float32).
REPLICATE_CHUNK = 64


def replicate_counts(n_clusters: int, seed: int, replicate: int) -> np.ndarray:
    """Replicate ``replicate``'s draw counts: how often each of ``n_clusters`` clusters is drawn when
    ``n_clusters`` are drawn uniformly with replacement — what :func:`resampled_cluster_counts`
    yields from :data:`POISSONIZED_FROM` clusters on (uint8 for 256 clusters or more, int64 below).

    Each replicate has its own stream, ``default_rng(SeedSequence(seed, spawn_key=(replicate,)))``,
    so a replicate depends on the seed, its number and the cluster count only (never on which
    thread draws it, or how replicates are grouped into blocks). The counts are drawn Poissonized:
    each cluster is drawn Poisson(1) times (one 16-bit uniform per cluster through an inverse-CDF
    table; the few 16-bit buckets that straddle a step of the CDF take 32 more bits), ``T`` balls
    in all, and then ``T − n`` of them, chosen uniformly without replacement, are put back, or
    ``n − T`` uniform draws are added. Given ``T``, independent Poisson counts are ``T`` balls thrown
    uniformly, so either step leaves ``n`` independent uniform draws: the multinomial of ``n``
    draws with replacement, with each Poisson probability within 2⁻⁴⁸ of its exact value
    (``benchmarks/stats_draws.py`` checks the distribution). It costs about half of ``n`` bounded
    integer draws counted by ``bincount`` (3.4 against 7.2 ms for 824K clusters on one thread) and
    its counts fit in a core's cache."""
    _check_cluster_count(n_clusters)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(replicate,)))
    padded = -(-n_clusters // _BLOCK) * _BLOCK
    counts: np.ndarray = np.zeros(padded, dtype=np.uint8 if n_clusters >= 256 else np.int64)
    buckets = rng.bit_generator.random_raw((n_clusters + 3) // 4).view(np.uint16)[:n_clusters]
    if counts.dtype == np.uint8:
        np.take(_POISSON_TABLE, buckets, out=counts[:n_clusters], mode="clip")  # no index copy
    else:
        counts[:n_clusters] = _POISSON_TABLE[buckets]
    unsure = np.flatnonzero(counts[:n_clusters] == _AMBIGUOUS)
    if len(unsure):
        fine = ((buckets[unsure].astype(np.uint64) << np.uint64(32))
                | rng.integers(0, 2**32, len(unsure), dtype=np.uint64))
        counts[unsure] = np.searchsorted(_POISSON_STEPS, fine, side="right")
    return _balanced(counts, n_clusters, rng)[:n_clusters]


def _balanced(counts: np.ndarray, n_draws: int, rng: np.random.Generator,
              class_ends: np.ndarray | None = None) -> np.ndarray:
    """Poisson ``counts`` (padded to whole blocks) made to sum to ``n_draws``: of their ``T`` balls,
    ``T − n_draws`` chosen uniformly without replacement are put back, or ``n_draws − T`` uniform
    draws over the ``n_draws`` clusters are added (mapped to their classes through ``class_ends``,
    the classes' cumulative sizes, when the counts are per class). Given ``T``, independent Poisson
    counts are ``T`` balls thrown in proportion to their means, so either step leaves the
    multinomial of ``n_draws`` draws."""
    # a block's sum of uint8 counts fits 16 bits (64 × 255): summed in uint16 (a third faster)
    block_sums = counts.reshape(-1, _BLOCK).sum(axis=1, dtype=np.uint16 if counts.dtype == np.uint8 else np.int64)
    blocks = block_sums.astype(np.int64)
    total = int(blocks.sum())
    if total > n_draws:
        # the cluster of each ball put back: its block from the block totals, then its place in
        # the block from that block's running counts (a cumsum over every cluster costs 4–8 ms)
        balls = rng.choice(total, total - n_draws, replace=False)
        ends = np.cumsum(blocks)
        block = np.searchsorted(ends, balls, side="right")
        within = balls - (ends[block] - blocks[block])
        running = np.cumsum(counts.reshape(-1, _BLOCK)[block], axis=1, dtype=np.int64)
        np.subtract.at(counts, block * _BLOCK + (running <= within[:, None]).sum(axis=1), 1)
    elif total < n_draws:
        drawn = rng.integers(0, n_draws, n_draws - total)
        if class_ends is not None:
            drawn = np.searchsorted(class_ends, drawn, side="right")
        added, times = np.unique(drawn, return_counts=True)
        if counts.dtype == np.uint8 and int((counts[added].astype(np.int64) + times).max()) > 255:
            counts = counts.astype(np.int64)  # never seen: one cluster drawn over 255 times
        np.add.at(counts, added, times.astype(counts.dtype))
    return counts


#: classes of fewer clusters than this draw their Poisson count through a table, one 16-bit
#: uniform each (as a cluster does); larger ones through NumPy's Poisson sampler
_TABLED_BELOW = 16


@dataclass(frozen=True, eq=False)
class ClassSizes:
    """Clusters grouped into classes that every statistic treats alike (C2: items of one family
    with the same scores), ``sizes[a]`` clusters in class ``a``: a bootstrap then needs only how
    many of a replicate's draws land in each class (:func:`replicate_class_counts`)."""

    sizes: np.ndarray
    #: the number of clusters (a replicate's draws)
    n: int = field(init=False)
    #: each class's row of the Poisson tables (its size; 0, a row of zeros, for a large class)
    offsets: np.ndarray = field(init=False)
    #: the classes of :data:`_TABLED_BELOW` clusters or more, drawn by NumPy's Poisson sampler
    large: np.ndarray = field(init=False)
    #: cumulative sizes: a draw over the clusters lands in class ``searchsorted(ends, draw, "right")``
    ends: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        sizes = np.asarray(self.sizes, dtype=np.int64)
        if sizes.ndim != 1 or not len(sizes) or int(sizes.min()) < 1:
            raise ValueError("class sizes must be a non-empty list of positive counts")
        _check_cluster_count(int(sizes.sum()))
        tabled = sizes < _TABLED_BELOW
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "n", int(sizes.sum()))
        object.__setattr__(self, "offsets", (np.where(tabled, sizes, 0) << 16).astype(np.uint32))
        object.__setattr__(self, "large", np.flatnonzero(~tabled))
        object.__setattr__(self, "ends", np.cumsum(sizes))


def replicate_class_counts(classes: ClassSizes, seed: int, replicate: int) -> np.ndarray:
    """Replicate ``replicate``'s draws per class (int32): how many of ``classes.n`` uniform draws
    with replacement over the clusters land in each class, i.e. one multinomial of ``n`` over
    the classes' shares, with the stream of :func:`replicate_counts` (its own per replicate).

    Drawn Poissonized as :func:`replicate_counts` draws clusters: class ``a`` gets Poisson(size)
    balls (the sum of its clusters' Poisson(1) counts), from one 16-bit uniform through that
    size's inverse-CDF table below :data:`_TABLED_BELOW` clusters, else from NumPy's Poisson
    sampler, and the total is then made ``n`` (:func:`_balanced`). One draw per class instead of
    per cluster: C2's 824K items are about 141K classes (0.9 against 2.8 ms a replicate)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(replicate,)))
    k = len(classes.sizes)
    buckets = rng.bit_generator.random_raw((k + 3) // 4).view(np.uint16)[:k]
    tabled = np.take(_class_tables(), classes.offsets + buckets)
    counts = np.zeros(-(-k // _BLOCK) * _BLOCK, dtype=np.int32)
    counts[:k] = tabled
    unsure = np.flatnonzero(tabled == _AMBIGUOUS)
    if len(unsure):
        fine = ((buckets[unsure].astype(np.uint64) << np.uint64(32))
                | rng.integers(0, 2**32, len(unsure), dtype=np.uint64))
        sizes = classes.sizes[unsure]
        for size in np.unique(sizes).tolist():
            here = sizes == size
            counts[unsure[here]] = np.searchsorted(_class_steps(size), fine[here], side="right")
    if len(classes.large):
        counts[classes.large] = rng.poisson(classes.sizes[classes.large])
    return _balanced(counts, classes.n, rng, classes.ends)[:k]


@functools.cache
def _class_steps(size: int) -> np.ndarray:
    return _POISSON_STEPS if size == 1 else _poisson_steps(size)


@functools.cache
def _class_tables() -> np.ndarray:
    """The inverse-CDF tables of Poisson(0 … :data:`_TABLED_BELOW` − 1), one after another (1 MiB)."""
    return np.concatenate([_POISSON_TABLE if size == 1 else _poisson_table(_class_steps(size))
                           for size in range(_TABLED_BELOW)])


#: From this many clusters on, a replicate's counts are drawn Poissonized from its own stream
#: (:func:`replicate_counts`); below it, from bounded integers of one stream per bootstrap, where a
#: replicate's fixed costs (its stream, a few small calls: ≈ 0.1 ms) would outweigh the saving
#: (C2's 824 104 items are Poissonized; C1's 100 000 images, C3's plates and the rank
#: bootstraps keep the integer stream).
POISSONIZED_FROM = 1 << 18


def resampled_cluster_counts(n_clusters: int, *, B: int, seed: int, chunk: int = REPLICATE_CHUNK,
                             dtype: type = np.float32, order: np.ndarray | None = None,
                             draw_ahead: bool = False, reuse: bool = False) -> Generator[np.ndarray, None, None]:
    """Yield ``(≤chunk, n_clusters)`` blocks of draw counts (``dtype``), ``B`` rows in all: row
    ``b`` counts how often each cluster was drawn in replicate ``b`` of ``n_clusters`` uniform
    draws with replacement. From :data:`POISSONIZED_FROM` clusters on, row ``b`` is
    :func:`replicate_counts` ``(n_clusters, seed, b)``; below, the replicates are read one after
    another from one ``default_rng(seed)`` stream of bounded integers (:func:`_stream_counts`).
    Either way the blocks depend on the seed and the cluster count only, not on ``chunk``. With
    ``order`` (a permutation of the clusters) column ``j`` counts cluster ``order[j]`` instead.
    With ``draw_ahead`` the drawing runs on a worker thread while the caller uses the current block
    (Poissonized blocks through :class:`CountsDrawnAhead`, whose caller draws too when it waits).
    With ``reuse`` the blocks are written into one buffer, valid until the next block is asked for (a fresh 100 MB block per 16 replicates of 824K
    clusters costs more in page faults than the drawing)."""
    _check_cluster_count(n_clusters)
    if n_clusters < POISSONIZED_FROM:
        yield from _stream_counts(n_clusters, B=B, seed=seed, chunk=chunk, dtype=dtype, order=order,
                                  draw_ahead=draw_ahead, reuse=reuse)
        return
    if draw_ahead:  # independent blocks: a worker and the caller draw them (CountsDrawnAhead)
        with CountsDrawnAhead({"": n_clusters}, B=B, seed=seed, chunk=chunk, orders={"": order}) as ahead:
            yield from ahead.blocks("", n_clusters, dtype=dtype)
        return
    spare: list[np.ndarray] = []
    for start in range(0, max(B, 0), chunk):
        rows = min(chunk, B - start)
        block = spare.pop()[:rows] if spare and len(spare[0]) >= rows else np.empty((rows, n_clusters), dtype=dtype)
        _fill_poissonized(block, n_clusters, seed, start, range(rows), order)
        yield block
        if reuse:
            spare.append(block if block.base is None else block.base)


def _fill_poissonized(block: np.ndarray, n_clusters: int, seed: int, first: int, rows: range,
                      order: np.ndarray | None) -> None:
    """Rows ``rows`` of ``block`` := replicates ``first + r`` of :func:`replicate_counts` (columns in
    ``order`` when given). A count the block's integer type cannot hold raises OverflowError
    rather than wrapping (a caller drawing into uint8 then draws that block wider)."""
    limit = np.iinfo(block.dtype).max if np.issubdtype(block.dtype, np.integer) else None
    for r in rows:
        counts = replicate_counts(n_clusters, seed, first + r)
        if limit is not None and counts.dtype != block.dtype and int(counts.max()) > limit:
            raise OverflowError(f"replicate {first + r} draws a cluster {int(counts.max())} times, "
                                f"more than {block.dtype} holds")
        block[r] = counts if order is None else counts[order]


def compact_counts(n_clusters: int, *, B: int, seed: int, chunk: int = REPLICATE_CHUNK,
                   order: np.ndarray | None = None) -> Iterator[np.ndarray]:
    """The blocks of :func:`resampled_cluster_counts` as uint8 wherever every count fits (a
    quarter of float32's memory), else float32: what :class:`CountsDrawnAhead` keeps waiting.
    Both kinds of counts go into uint8 as they are drawn, with no float pass over them (for C1's
    100 000 images that took a fifth off the drawing: 0.49 → 0.39 s for B = 1000)."""
    if n_clusters < POISSONIZED_FROM:  # counted straight into uint8 (widened where one does not fit)
        yield from _stream_counts(n_clusters, B=B, seed=seed, chunk=chunk, dtype=np.uint8, order=order,
                                  draw_ahead=False, reuse=False)
        return
    for start in range(0, max(B, 0), chunk):
        yield _compact_poissonized_block(n_clusters, seed, start, min(chunk, B - start), order)


def _compact_poissonized_block(n_clusters: int, seed: int, first: int, rows: int,
                               order: np.ndarray | None) -> np.ndarray:
    """Replicates ``first … first + rows − 1`` as uint8, or float32 where a count does not fit."""
    block = np.empty((rows, n_clusters), dtype=np.uint8)
    try:
        _fill_poissonized(block, n_clusters, seed, first, range(rows), order)
    except OverflowError:  # never seen: a cluster drawn over 255 times
        block = np.empty((rows, n_clusters), dtype=np.float32)
        _fill_poissonized(block, n_clusters, seed, first, range(rows), order)
    return block


def _stream_counts(n_clusters: int, *, B: int, seed: int, chunk: int, dtype: type, order: np.ndarray | None,
                   draw_ahead: bool, reuse: bool) -> Iterator[np.ndarray]:
    """:func:`resampled_cluster_counts` below :data:`POISSONIZED_FROM` clusters: replicate after
    replicate from one ``default_rng(seed)`` stream, ``n_clusters`` bounded integers counted by
    ``bincount``. With ``draw_ahead`` the raw draws are taken on a worker thread and counted on
    the caller's, a quarter of them on the worker's (drawing and counting then share two cores).

    NumPy draws a bounded integer whose range fits 32 bits with the same 32-bit Lemire step
    whatever the output type and however the draws are split into calls, from one buffered
    stream, so the counts equal those of one int32 draw call per replicate (the tests keep that
    loop as the reference). The draws are taken a few replicates per call
    (:func:`_replicate_draws`): one call for a whole block cost 4–6× more for 824K clusters,
    most of it page-faulting a fresh ~400 MB array in for every block; 64-bit draws feed
    ``bincount`` without an int32 → intp copy."""
    rng = np.random.default_rng(seed)

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
                if block.dtype == np.uint8 and drawn.max(initial=0) > 255:  # never seen: widen the block
                    block = block.astype(np.float32)
                block[row % chunk] = drawn if order is None else drawn[order]
                if row % chunk == len(block) - 1:
                    yield block
    finally:
        if stream is not None:
            stream.close()


#: With ``draw_ahead``, every so many replicates are counted on the drawing thread too: drawing a
#: replicate is lighter than counting it plus the caller's product, so the worker takes a quarter
#: of the counting (measured on 824K clusters before they were Poissonized: 5.1–5.7 s → 4.5–4.8 s
#: for B = 1000; a third or a half measured no faster, the two threads then contend for memory).
_WORKER_COUNTS_EVERY = 4

#: Draws taken per call (a few replicates' worth, 16 MB of int64): small enough for the
#: allocator to reuse one buffer, large enough that the call overhead does not count.
DRAWS_PER_CALL = 1 << 21


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


#: a 16-bit bucket whose count the inverse-CDF table cannot tell (it straddles a step of the CDF)
_AMBIGUOUS = 255
#: clusters per block when locating the balls put back
_BLOCK = 64


def _poisson_steps(mean: int, bits: int = 48) -> np.ndarray:
    """``⌈2**bits · P(X ≤ k)⌉`` for X ~ Poisson(``mean``), k = 0, 1, …, while below ``2**bits``
    (exact decimal arithmetic: a float's 53 bits would blur the last steps). Poisson(0) has none."""
    from decimal import Decimal, localcontext

    steps: list[int] = []
    with localcontext() as context:
        context.prec = 60
        term = cdf = Decimal(-mean).exp()
        k = 0
        while True:
            step = int((cdf * 2**bits).to_integral_value(rounding="ROUND_CEILING"))
            if step >= 2**bits:
                return np.array(steps, dtype=np.uint64)
            steps.append(step)
            k += 1
            term = term * mean / k
            cdf += term


def _poisson_table(steps: np.ndarray) -> np.ndarray:
    """The count for each 16-bit bucket (the top 16 of 48 bits) of a CDF's ``steps``, or
    ``_AMBIGUOUS`` where a step falls inside the bucket."""
    low = np.arange(2**16, dtype=np.uint64) << np.uint64(32)
    high = low + np.uint64(2**32 - 1)
    first = np.searchsorted(steps, low, side="right")
    last = np.searchsorted(steps, high, side="right")
    return np.where(first == last, first, _AMBIGUOUS).astype(np.uint8)


#: the Poisson(1) CDF in 48-bit fixed point: a 48-bit uniform below ``_POISSON_STEPS[k]`` counts k
_POISSON_STEPS = _poisson_steps(1)
_POISSON_TABLE = _poisson_table(_POISSON_STEPS)


def _check_cluster_count(n_clusters: int) -> None:
    if n_clusters < 1:
        raise ValueError("the bootstrap needs at least one cluster")
    if n_clusters >= 2**31:
        raise ValueError("too many clusters for int32 draws")


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
    larger). ``orders`` gives a name's column order (``order`` of :func:`resampled_cluster_counts`).
    A name of :data:`POISSONIZED_FROM` clusters or more has independent blocks (each replicate its
    own stream): the worker claims them one at a time, and a caller whose next block is not ready
    draws the next unclaimed one itself rather than wait, so the two share the drawing once the
    caller has nothing else to do (the report's rank bootstrap over C2's 824K items). A name in
    ``classes`` draws per class instead (:func:`replicate_class_counts`, int32 blocks, one column
    per class; its blocks are independent too). Use as a context manager, or call :meth:`close`,
    to stop the worker early."""

    def __init__(self, sizes: Mapping[str, int], *, B: int, seed: int, chunk: int = REPLICATE_CHUNK,
                 max_waiting_bytes: int = 256 << 20, orders: Mapping[str, np.ndarray | None] | None = None,
                 classes: Mapping[str, ClassSizes] | None = None) -> None:
        import threading

        self.classes = dict(classes or {})
        self.sizes = {name: size for name, size in sizes.items() if size > 0}
        self.sizes.update({name: len(grouped.sizes) for name, grouped in self.classes.items()})
        self.orders = {name: (orders or {}).get(name) for name in self.sizes}
        self.B, self.seed, self.chunk = B, seed, chunk
        self.max_waiting_bytes = max_waiting_bytes
        self.waiting_bytes = 0
        self.peak_waiting_bytes = 0
        #: the name and block number the caller waits for, while it waits (None otherwise)
        self._wanted: tuple[str, int] | None = None
        self._done = False  # the worker has stopped (every block drawn, stopped or failed)
        #: blocks drawn and not yet read, by name and block number
        self._ready: dict[str, dict[int, np.ndarray]] = {name: {} for name in self.sizes}
        #: the next block number nobody draws yet, by name
        self._unclaimed: dict[str, int] = {name: 0 for name in self.sizes}
        #: blocks already handed to the caller, by name (each is handed out once)
        self._handed: dict[str, int] = {name: 0 for name in self.sizes}
        self._n_blocks = -(-max(B, 0) // chunk)
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._worker = threading.Thread(target=self._draw, name="bootstrap-draws", daemon=True)
        self._worker.start()

    def _independent(self, name: str) -> bool:
        """Whether ``name``'s blocks can be drawn in any order, by any thread (Poissonized:
        every replicate has its own stream); below that they come from one stream, in order."""
        return name in self.classes or self.sizes[name] >= POISSONIZED_FROM

    def _claim(self, name: str) -> int | None:
        """The next block of ``name`` nobody draws yet, now claimed (called holding the lock)."""
        number = self._unclaimed[name]
        if number >= self._n_blocks:
            return None
        self._unclaimed[name] = number + 1
        return number

    def _draw_block(self, name: str, number: int) -> np.ndarray:
        start = number * self.chunk
        if name in self.classes:
            rows = range(start, min(start + self.chunk, self.B))
            return np.stack([replicate_class_counts(self.classes[name], self.seed, r) for r in rows])
        return _compact_poissonized_block(self.sizes[name], self.seed, start, min(self.chunk, self.B - start),
                                          self.orders[name])

    def _drawn(self, name: str) -> Iterator[tuple[int, np.ndarray]]:
        """The worker's (block number, block) of ``name``: claimed one at a time where the
        blocks are independent (the caller may claim some too), else the one stream in order."""
        if not self._independent(name):
            with self._changed:
                self._unclaimed[name] = self._n_blocks
            yield from enumerate(compact_counts(self.sizes[name], B=self.B, seed=self.seed, chunk=self.chunk,
                                                order=self.orders[name]))
            return
        while True:
            with self._changed:
                number = self._claim(name)
            if number is None:
                return
            yield number, self._draw_block(name, number)

    def _draw(self) -> None:
        try:
            for name in self.sizes:
                for number, compact in self._drawn(name):
                    if self._stop.is_set():
                        return
                    with self._changed:
                        self._changed.wait_for(lambda: self._stop.is_set() or self._starved()
                                               or self.waiting_bytes + compact.nbytes <= self.max_waiting_bytes
                                               or self.waiting_bytes == 0)
                        if self._stop.is_set():
                            return
                        self._keep(name, number, compact)
        except BaseException as error:  # handed to the consumer
            with self._changed:
                self._error = error
        finally:
            with self._changed:
                self._done = True
                self._changed.notify_all()

    def _keep(self, name: str, number: int, block: np.ndarray) -> None:
        """A drawn block joins the waiting ones (called holding the lock)."""
        self._ready[name][number] = block
        self.waiting_bytes += block.nbytes
        self.peak_waiting_bytes = max(self.peak_waiting_bytes, self.waiting_bytes)
        self._changed.notify_all()

    def _starved(self) -> bool:
        """The caller waits for a block that is not ready (called holding the lock): only the
        worker drawing past the cap can end that wait. Once that block is ready it is False
        again, whether or not the caller has woken yet, so the cap holds meanwhile."""
        wanted = self._wanted
        return wanted is not None and wanted[1] not in self._ready[wanted[0]]

    def blocks(self, name: str, n_clusters: int, dtype: type | None = np.float32) -> Iterator[np.ndarray]:
        """``name``'s blocks in order as ``dtype`` (None: as they wait, uint8 where the counts
        fit), waiting for the worker where it is behind; ``n_clusters`` must be the size it was
        given (a mismatch is a caller's bug). Where the blocks are independent (Poissonized) and
        the next one is not ready, the caller draws the next unclaimed block itself instead of
        waiting: the worker and the caller then share the drawing."""
        if self.sizes.get(name) != n_clusters:
            raise ValueError(f"counts for {name!r} were drawn for {self.sizes.get(name)} clusters, "
                             f"not {n_clusters}")
        independent = self._independent(name)
        while (number := self._handed[name]) < self._n_blocks:
            while True:
                with self._changed:
                    self._wanted = (name, number)
                    self._changed.notify_all()
                    self._changed.wait_for(lambda: number in self._ready[name] or self._done
                                           or (independent and self._unclaimed[name] < self._n_blocks))
                    self._wanted = None
                    block = self._ready[name].pop(number, None)
                    if block is not None:
                        self.waiting_bytes -= block.nbytes
                        self._changed.notify_all()
                        break
                    if self._error is not None:
                        raise self._error
                    stolen = self._claim(name)
                    if stolen is None and self._done:
                        raise RuntimeError(f"the draws of {name!r} stopped before block {number}")
                if stolen is not None:
                    drawn = self._draw_block(name, stolen)
                    with self._changed:
                        self._keep(name, stolen, drawn)
            self._handed[name] = number + 1
            yield block if dtype is None or block.dtype == dtype else block.astype(dtype)

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

    @contextmanager
    def closed_on_error(self) -> Iterator[CountsDrawnAhead]:
        """A block (the scoring the draws overlap) after which they stay open for the aggregation
        that reads them, unless the block raises: then they are closed."""
        try:
            yield self
        except BaseException:
            self.close()
            raise

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


__all__ = ["ClassSizes", "CountsDrawnAhead", "DRAWS_PER_CALL", "compact_counts", "DrawnAhead", "POISSONIZED_FROM",
           "REPLICATE_CHUNK", "replicate_class_counts", "replicate_counts", "resampled_class_counts",
           "resampled_cluster_counts"]
