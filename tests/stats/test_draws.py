"""The Poissonized replicate counts (biovqa.stats.draws.replicate_counts), which every cluster
bootstrap of POISSONIZED_FROM clusters or more draws (C2's 824 104 items): the same multinomial
of n draws with replacement as bounded-integer draws, from each replicate's own stream."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

import biovqa.stats.draws as draws_module
from biovqa.stats.bootstrap import partition_replicates, percentile_interval
from biovqa.stats.draws import POISSONIZED_FROM, replicate_counts, resampled_cluster_counts


def test_the_inverse_cdf_is_poisson_one_to_48_bits() -> None:
    steps = draws_module._POISSON_STEPS.astype(np.float64) / 2.0**48
    np.testing.assert_allclose(steps, stats.poisson.cdf(np.arange(len(steps)), 1.0), rtol=0, atol=2.0**-47)
    assert len(steps) >= 15  # P(X > 15) < 2**-48
    table = draws_module._POISSON_TABLE
    assert table.dtype == np.uint8 and len(table) == 2**16
    ambiguous = table == draws_module._AMBIGUOUS
    assert 0 < ambiguous.sum() <= len(steps)  # at most one straddling bucket per CDF step
    assert table[0] == 0 and (np.diff(table[~ambiguous].astype(int)) >= 0).all()  # counts grow with the uniform


@pytest.mark.parametrize("n_clusters", [1, 2, 3, 63, 64, 255, 256, 1000, 4097, 70_001])
def test_every_replicate_draws_exactly_n_and_depends_on_seed_and_number_only(n_clusters: int) -> None:
    totals = set()
    for replicate in range(40):
        counts = replicate_counts(n_clusters, 5, replicate)
        assert counts.shape == (n_clusters,) and counts.dtype == (np.uint8 if n_clusters >= 256 else np.int64)
        totals.add(int(counts.sum(dtype=np.int64)))
        np.testing.assert_array_equal(counts, replicate_counts(n_clusters, 5, replicate))
    assert totals == {n_clusters}
    if n_clusters > 3:
        assert not np.array_equal(replicate_counts(n_clusters, 5, 0), replicate_counts(n_clusters, 6, 0))
        assert not np.array_equal(replicate_counts(n_clusters, 5, 0), replicate_counts(n_clusters, 5, 1))


def test_small_draws_follow_the_multinomial_exactly() -> None:
    """Three clusters: the ten outcomes of three draws with replacement, counted over 30 000
    replicates, against their multinomial probabilities (both corrections, putting balls back and
    adding draws, happen here in most replicates)."""
    outcomes = Counter(tuple(replicate_counts(3, 7, b).tolist()) for b in range(30_000))
    cells = [k for k in itertools.product(range(4), repeat=3) if sum(k) == 3]
    assert set(outcomes) <= set(cells)
    expected = np.array([stats.multinomial.pmf(k, 3, [1 / 3] * 3) for k in cells]) * 30_000
    assert stats.chisquare([outcomes.get(k, 0) for k in cells], expected).pvalue > 0.001


def test_large_draws_follow_the_binomial_marginals_and_the_joint_spread() -> None:
    """5 000 clusters over 600 replicates: the share of clusters drawn k times matches
    Binomial(n, 1/n), and the draws falling in the first 1 000 clusters match Binomial(n, 1/5)
    in mean and variance (a joint property no marginal shows)."""
    n, replicates = 5_000, 600
    shares = np.zeros(6)
    first = np.empty(replicates)
    for b in range(replicates):
        counts = replicate_counts(n, 11, b)
        shares += np.bincount(np.minimum(counts, 5), minlength=6)
        first[b] = counts[:1000].sum(dtype=np.int64)
    pmf = stats.binom.pmf(np.arange(5), n, 1 / n)
    expected = np.append(pmf, 1 - pmf.sum()) * n * replicates
    assert stats.chisquare(shares, expected).pvalue > 0.001
    mean, variance = n / 5, n * (1 / 5) * (4 / 5)
    assert abs(first.mean() - mean) < 4 * math.sqrt(variance / replicates)
    assert abs(first.var(ddof=1) - variance) < 4 * variance * math.sqrt(2 / (replicates - 1))


def test_blocks_of_poissonized_counts_do_not_depend_on_chunks_threads_or_buffers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """From POISSONIZED_FROM clusters on (lowered here), a block's rows are the replicates' own counts
    whatever the chunking, drawing ahead on two threads, reused buffers, dtype or column order."""
    monkeypatch.setattr(draws_module, "POISSONIZED_FROM", 500)
    n, B = 900, 37
    expected = np.stack([replicate_counts(n, 3, b) for b in range(B)])
    for chunk, draw_ahead, reuse, dtype in ((7, False, False, np.float32), (16, True, True, np.float64),
                                            (64, True, False, np.float32), (5, False, True, np.float64)):
        blocks = [block.copy() for block in resampled_cluster_counts(n, B=B, seed=3, chunk=chunk, dtype=dtype,
                                                                     draw_ahead=draw_ahead, reuse=reuse)]
        assert [len(b) for b in blocks] == [min(chunk, B - s) for s in range(0, B, chunk)]
        assert all(b.dtype == dtype for b in blocks)
        np.testing.assert_array_equal(np.vstack(blocks), expected)
    order = np.random.default_rng(0).permutation(n)
    permuted = np.vstack(list(resampled_cluster_counts(n, B=B, seed=3, order=order, draw_ahead=True)))
    np.testing.assert_array_equal(permuted, expected[:, order])
    # below the threshold the integer stream is kept (every smaller bootstrap's numbers unchanged)
    rng = np.random.default_rng(3)
    stream = np.stack([np.bincount(rng.integers(0, 499, 499, dtype=np.int32), minlength=499) for _ in range(4)])
    np.testing.assert_array_equal(np.vstack(list(resampled_cluster_counts(499, B=4, seed=3))), stream)


def test_an_item_bootstrap_gives_the_same_interval_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """C2's per-family item bootstrap on 20 000 items, Poissonized and from the integer stream:
    the same resampling distribution, so the bounds of a mean agree to Monte Carlo noise."""
    rng = np.random.default_rng(2)
    n = 20_000
    values = np.column_stack([rng.random(n), (rng.random(n) < 0.3).astype(float)])
    part = np.sort(rng.integers(0, 3, n))
    bounds = {}
    for threshold in (POISSONIZED_FROM, 1):
        monkeypatch.setattr(draws_module, "POISSONIZED_FROM", threshold)
        sums, counts = partition_replicates(values, part, 3, B=2000, seed=42)
        assert (counts.sum(axis=1) == n).all()
        bounds[threshold] = np.array(percentile_interval(sums.sum(axis=1) / counts.sum(axis=1)[:, None], 0.95))
    standard_error = values.std(axis=0) / math.sqrt(n)
    assert (np.abs(bounds[1] - bounds[POISSONIZED_FROM]) < 0.25 * standard_error).all()


def test_a_count_over_255_is_kept_wider_not_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Poissonized counts wait as uint8; a replicate that drew one cluster more than 255 times
    (never seen: Poisson(1)) makes its block float32 instead of wrapping the count."""
    n = POISSONIZED_FROM
    original = draws_module.replicate_counts

    def one_heavy_cluster(n_clusters: int, seed: int, replicate: int) -> np.ndarray:
        counts = original(n_clusters, seed, replicate)
        if replicate != 1:
            return counts
        wide = counts.astype(np.int64)
        wide[0] += 300
        return wide

    monkeypatch.setattr(draws_module, "replicate_counts", one_heavy_cluster)
    blocks = list(draws_module.compact_counts(n, B=3, seed=0, chunk=2))
    assert [b.dtype for b in blocks] == [np.float32, np.uint8]
    assert blocks[0][1, 0] == int(original(n, 0, 1)[0]) + 300
    block = np.empty((1, n), dtype=np.uint8)
    with pytest.raises(OverflowError, match="more than uint8 holds"):
        draws_module._fill_poissonized(block, n, 0, 1, range(1), None)


def test_a_streamed_count_over_255_widens_its_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below POISSONIZED_FROM the counts are counted straight into uint8; a replicate that drew
    one cluster more than 255 times (never seen: it takes 256 of n draws on one of n clusters)
    makes its block float32, earlier rows kept, instead of wrapping the count."""
    n = 400
    original = draws_module._replicate_draws

    def heavy_second_replicate(rng: np.random.Generator, n_clusters: int, rows: int):
        for first, draws in original(rng, n_clusters, rows):
            draws = draws.copy()
            if first <= 1 < first + len(draws):
                draws[1 - first, :300] = 7
            yield first, draws

    expected = np.stack([np.bincount(d, minlength=n) for _, block in original(np.random.default_rng(0), n, 3)
                         for d in block])
    monkeypatch.setattr(draws_module, "_replicate_draws", heavy_second_replicate)
    blocks = list(draws_module.compact_counts(n, B=3, seed=0, chunk=2))
    assert [b.dtype for b in blocks] == [np.float32, np.uint8]
    assert blocks[0][1, 7] >= 300 and blocks[0][1].sum() == n
    np.testing.assert_array_equal(blocks[0][0], expected[0])
    np.testing.assert_array_equal(blocks[1][0], expected[2])


def test_the_caller_draws_independent_blocks_itself_rather_than_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """Poissonized blocks (each replicate its own stream) are drawn by the worker and, where the
    next one is not ready, by the caller too: the same blocks, in order, whoever drew them, and
    a worker paused at its memory cap neither deadlocks the caller nor is needed by it."""
    import threading

    n = POISSONIZED_FROM
    expected = np.vstack(list(resampled_cluster_counts(n, B=24, seed=9, chunk=2, dtype=np.uint8)))
    drawn_by: list[str] = []
    original = draws_module._compact_poissonized_block

    def recorded(*args: object) -> np.ndarray:
        drawn_by.append(threading.current_thread().name)
        return original(*args)

    monkeypatch.setattr(draws_module, "_compact_poissonized_block", recorded)
    with draws_module.CountsDrawnAhead({"items": n}, B=24, seed=9, chunk=2, max_waiting_bytes=1) as early:
        got = list(early.blocks("items", n, dtype=None))
    assert [len(b) for b in got] == [2] * 12 and all(b.dtype == np.uint8 for b in got)
    np.testing.assert_array_equal(np.vstack(got), expected)
    assert len(drawn_by) == 12  # each block drawn once
    assert threading.current_thread().name in drawn_by  # the caller drew some of them


# --- draws per class (replicate_class_counts): C2's items with the same family and scores ----

@pytest.mark.parametrize("size", [0, 1, 2, 7, 15])
def test_each_class_table_is_its_poisson_cdf_to_48_bits(size: int) -> None:
    """Row ``size`` of the class tables counts Poisson(size) balls from a 16-bit uniform, or says
    that the bucket straddles a step (then 32 more bits and that size's steps decide)."""
    table = draws_module._class_tables()[size << 16:(size + 1) << 16]
    steps = draws_module._class_steps(size)
    if size == 0:  # a large class's row: its count comes from NumPy's sampler, never from here
        assert len(steps) == 0 and (table == 0).all()
        return
    np.testing.assert_allclose(steps.astype(np.float64) / 2.0**48,
                               stats.poisson.cdf(np.arange(len(steps)), size), rtol=0, atol=2.0**-47)
    ambiguous = table == draws_module._AMBIGUOUS
    assert 0 < ambiguous.sum() <= len(steps)
    counts = table[~ambiguous].astype(int)
    assert (np.diff(counts) >= 0).all()
    # each unambiguous bucket's count is the step the bucket's lowest 48-bit value falls under
    buckets = np.flatnonzero(~ambiguous).astype(np.uint64) << np.uint64(32)
    np.testing.assert_array_equal(counts, np.searchsorted(steps, buckets, side="right"))


def test_class_draws_sum_to_n_and_depend_on_seed_and_number_only() -> None:
    from biovqa.stats.draws import ClassSizes, replicate_class_counts

    classes = ClassSizes(np.array([1, 3, 15, 16, 400, 1, 2]))
    for replicate in range(50):
        counts = replicate_class_counts(classes, 4, replicate)
        assert counts.dtype == np.int32 and counts.shape == (7,) and int(counts.sum()) == 438
        assert (counts >= 0).all()
        np.testing.assert_array_equal(counts, replicate_class_counts(classes, 4, replicate))
    assert not np.array_equal(replicate_class_counts(classes, 4, 0), replicate_class_counts(classes, 5, 0))
    with pytest.raises(ValueError, match="positive"):
        ClassSizes(np.array([2, 0, 1]))


def test_class_draws_follow_the_multinomial_over_the_class_shares() -> None:
    """Sizes on both sides of the table's limit (a class of 16 or more is drawn by NumPy's Poisson
    sampler): 20 000 replicates against the multinomial's means, variances and one covariance,
    and the exact distribution of two classes of one and two clusters out of three."""
    from biovqa.stats.draws import ClassSizes, replicate_class_counts

    sizes = np.array([1, 2, 5, 15, 16, 40, 300, 1, 1])
    n, p = int(sizes.sum()), sizes / sizes.sum()
    drawn = np.stack([replicate_class_counts(ClassSizes(sizes), 9, b) for b in range(20_000)]).astype(float)
    np.testing.assert_allclose(drawn.mean(axis=0), n * p, rtol=0.03)
    np.testing.assert_allclose(drawn.var(axis=0), n * p * (1 - p), rtol=0.06)
    cov = np.cov(drawn[:, 5], drawn[:, 6])[0, 1]
    assert cov == pytest.approx(-n * p[5] * p[6], rel=0.1)
    small = Counter(tuple(replicate_class_counts(ClassSizes(np.array([1, 2])), 3, b).tolist())
                    for b in range(30_000))
    cells = [(k, 3 - k) for k in range(4)]
    expected = np.array([stats.binom.pmf(k, 3, 1 / 3) for k, _ in cells]) * 30_000
    assert stats.chisquare([small.get(c, 0) for c in cells], expected).pvalue > 0.001


def test_class_draws_ahead_are_the_same_whoever_draws_them() -> None:
    """A name drawn per class in CountsDrawnAhead: its blocks (int32, one column per class) are
    replicate_class_counts in order, though the worker and the caller share the drawing."""
    from biovqa.stats.draws import ClassSizes, CountsDrawnAhead, replicate_class_counts

    classes = ClassSizes(np.arange(1, 3001) % 20 + 1)
    with CountsDrawnAhead({}, classes={"c": classes}, B=45, seed=6, chunk=4) as ahead:
        blocks = list(ahead.blocks("c", 3000, dtype=None))
    assert [len(b) for b in blocks] == [4] * 11 + [1] and {b.dtype for b in blocks} == {np.dtype(np.int32)}
    np.testing.assert_array_equal(np.vstack(blocks),
                                  np.stack([replicate_class_counts(classes, 6, b) for b in range(45)]))
