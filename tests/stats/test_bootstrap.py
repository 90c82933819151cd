from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import biovqa.stats.draws as draws_module
from biovqa.stats.bootstrap import (
    Bootstrap,
    CountsDrawnAhead,
    PartitionProduct,
    SparseProduct,
    SumColumns,
    SumsProduct,
    bootstrap_means,
    bootstrap_replicates,
    exact_columns,
    nanmean,
    ratio,
    weighted_mean,
    cluster_bootstrap_means,
    item_bootstrap_means,
    partition_replicates,
    percentile_interval,
    ratio_of_sums_replicates,
    resampled_cluster_counts,
)


def _reference_replicates(values: np.ndarray, clusters: np.ndarray, B: int, seed: int) -> np.ndarray:
    """Plain loop: draw clusters with replacement, gather their items, take column means."""
    labels = np.unique(clusters)
    rng = np.random.default_rng(seed)
    members = {label: np.flatnonzero(clusters == label) for label in labels}
    out = np.empty((B, values.shape[1]))
    for b in range(B):
        drawn = labels[rng.integers(0, len(labels), size=len(labels), dtype=np.int32)]
        rows = np.concatenate([members[label] for label in drawn])
        out[b] = np.nanmean(values[rows], axis=0)
    return out


def test_vectorised_replicates_equal_the_plain_loop() -> None:
    rng = np.random.default_rng(0)
    clusters = rng.integers(0, 40, size=300)
    values = np.column_stack([rng.random(300), (rng.random(300) < 0.3).astype(float)])
    values[rng.random(300) < 0.2, 1] = np.nan  # a statistic over a subset of items
    result = bootstrap_means(values, clusters, B=60, seed=7)
    np.testing.assert_allclose(result.replicates, _reference_replicates(values, clusters, 60, 7), rtol=1e-5)
    np.testing.assert_allclose(result.estimate, np.nanmean(values, axis=0))


def test_deterministic_for_a_seed_and_independent_of_chunking_and_row_order() -> None:
    counts_a = np.concatenate(list(resampled_cluster_counts(50, B=20, seed=3, chunk=7)))
    counts_b = np.concatenate(list(resampled_cluster_counts(50, B=20, seed=3, chunk=64)))
    np.testing.assert_array_equal(counts_a, counts_b)
    assert counts_a.sum(axis=1).tolist() == [50] * 20
    rng = np.random.default_rng(1)
    clusters = rng.integers(0, 30, size=200).astype(str)
    values = rng.random(200)
    lo1, hi1 = cluster_bootstrap_means(values, clusters, B=100, seed=42)
    order = rng.permutation(200)
    lo2, hi2 = cluster_bootstrap_means(values[order], clusters[order], B=100, seed=42)
    np.testing.assert_allclose([lo1, hi1], [lo2, hi2], rtol=1e-6)
    lo3, _ = cluster_bootstrap_means(values, clusters, B=100, seed=43)
    assert lo3[0] != lo1[0]


@pytest.mark.parametrize("n_clusters", [1, 2, 3, 50, 587, 4097])
def test_resampled_counts_are_one_int32_draw_per_replicate(n_clusters: int) -> None:
    """The block draw reads the same stream as the plain loop (one int32 draw call of
    ``n_clusters`` per replicate): identical counts, block sizes and dtype as asked, any chunking."""
    rng = np.random.default_rng(11)
    expected = np.stack([np.bincount(rng.integers(0, n_clusters, size=n_clusters, dtype=np.int32),
                                     minlength=n_clusters) for _ in range(70)])
    for chunk, dtype in ((64, np.float64), (9, np.float32)):
        blocks = list(resampled_cluster_counts(n_clusters, B=70, seed=11, chunk=chunk, dtype=dtype))
        assert [len(b) for b in blocks] == [min(chunk, 70 - start) for start in range(0, 70, chunk)]
        assert all(b.dtype == dtype for b in blocks)
        np.testing.assert_array_equal(np.concatenate(blocks), expected)
    with pytest.raises(ValueError, match="at least one cluster"):
        next(resampled_cluster_counts(0, B=1, seed=0))


@pytest.mark.parametrize("draws_per_call", [1, 100, 1 << 21])
def test_resampled_counts_do_not_depend_on_how_the_draws_are_split_into_calls(
        monkeypatch: pytest.MonkeyPatch, draws_per_call: int) -> None:
    """Draws taken a few replicates per call (one per call when a replicate exceeds
    ``DRAWS_PER_CALL``) read the same stream as one int32 call per replicate."""
    rng = np.random.default_rng(5)
    expected = np.stack([np.bincount(rng.integers(0, 37, size=37, dtype=np.int32), minlength=37)
                         for _ in range(23)])
    monkeypatch.setattr(draws_module, "DRAWS_PER_CALL", draws_per_call)
    blocks = list(resampled_cluster_counts(37, B=23, seed=5, chunk=10))
    np.testing.assert_array_equal(np.concatenate(blocks), expected)


def _masked_ratio_replicates(values: np.ndarray, part: np.ndarray, groups: list[list[int]], B: int,
                             seed: int) -> np.ndarray:
    """The general path: every group's masked columns through ratio_of_sums_replicates."""
    masks = [np.isin(part, g) for g in groups]
    numerators = np.column_stack([np.where(mask, values[:, j], 0.0) for mask in masks
                                  for j in range(values.shape[1])])
    denominators = np.column_stack([mask.astype(float) for mask in masks])
    return ratio_of_sums_replicates(numerators, denominators, B=B, seed=seed,
                                    denominator_of=np.repeat(np.arange(len(masks)), values.shape[1]))


@pytest.mark.parametrize("layout", ["runs", "interleaved"])
def test_partition_replicates_equal_the_masked_columns_path(monkeypatch: pytest.MonkeyPatch,
                                                              layout: str) -> None:
    """Per-part sums of the same resamples give every union-of-parts ratio the general path
    gives (to its float32 rounding), whether the parts come in runs or interleaved, with blocks
    and draw calls that do not divide B; a part drawn zero times in a replicate gives NaN there."""
    rng = np.random.default_rng(0)
    n, n_parts = 300, 5
    part = np.repeat(np.arange(n_parts), [120, 90, 60, 28, 2])
    if layout == "interleaved":
        part = rng.permutation(part)
    values = np.column_stack([rng.random(n), rng.integers(0, 2, n), rng.random(n)])
    monkeypatch.setattr(draws_module, "DRAWS_PER_CALL", 700)  # 2 replicates per call
    sums, counts = partition_replicates(values, part, n_parts, B=57, seed=9, chunk=8)
    assert sums.shape == (57, n_parts, 3) and counts.shape == (57, n_parts)
    np.testing.assert_array_equal(counts.sum(axis=1), np.full(57, n))  # n draws per replicate
    groups = [list(range(n_parts)), [0, 2], [1], [4]]
    with np.errstate(invalid="ignore", divide="ignore"):
        fast = np.column_stack([sums[:, g].sum(axis=1) / counts[:, g].sum(axis=1)[:, None] for g in groups])
    reference = _masked_ratio_replicates(values, part, groups, B=57, seed=9)
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(reference))
    assert np.isnan(fast[:, -3:]).any()  # the 2-item part is missed by some replicate
    np.testing.assert_allclose(fast, reference, rtol=1e-6, equal_nan=True)
    with pytest.raises(ValueError, match="part codes"):
        partition_replicates(values, part + 1, n_parts, B=2, seed=0)


def test_counts_drawn_ahead_equal_each_stream_whatever_order_they_are_read() -> None:
    sizes = {"a": 37, "b": 5, "empty": 0, "c": 300}
    with CountsDrawnAhead(sizes, B=70, seed=4, chunk=16) as draws:
        assert "empty" not in draws.sizes  # nothing to resample there
        for name in ("c", "a", "b"):  # not the order they are drawn in
            blocks = list(draws.blocks(name, sizes[name]))
            assert all(b.dtype == np.float32 for b in blocks)
            expected = list(resampled_cluster_counts(sizes[name], B=70, seed=4, chunk=16, dtype=np.float32))
            assert [len(b) for b in blocks] == [len(b) for b in expected]
            np.testing.assert_array_equal(np.concatenate(blocks), np.concatenate(expected))
        assert list(draws.blocks("a", 37)) == []  # each block is handed out once


def test_counts_drawn_ahead_pause_at_their_memory_cap_without_deadlock() -> None:
    import time

    sizes = {"a": 1000, "b": 800, "c": 600}
    expected = {name: np.concatenate(list(resampled_cluster_counts(k, B=40, seed=2, chunk=4, dtype=np.float32)))
                for name, k in sizes.items()}
    block = 4 * 1000  # one uint8 block of "a"
    with CountsDrawnAhead(sizes, B=40, seed=2, chunk=4, max_waiting_bytes=2 * block) as draws:
        time.sleep(0.3)  # a slow consumer: the worker pauses at the cap
        assert draws.waiting_bytes <= 2 * block
        got = {name: np.concatenate(list(draws.blocks(name, k))) for name, k in sizes.items()}
        assert draws.peak_waiting_bytes <= 2 * block
    for name in sizes:
        np.testing.assert_array_equal(got[name], expected[name])
    # names read against the drawing order: the worker goes past the cap rather than deadlock
    with CountsDrawnAhead(sizes, B=40, seed=2, chunk=4, max_waiting_bytes=1) as draws:
        for name in ("c", "b", "a"):
            np.testing.assert_array_equal(np.concatenate(list(draws.blocks(name, sizes[name]))), expected[name])
    # closing while the worker pauses at the cap stops it
    paused = CountsDrawnAhead(sizes, B=40, seed=2, chunk=4, max_waiting_bytes=1)
    time.sleep(0.1)
    paused.close()
    assert not paused._worker.is_alive() and paused.waiting_bytes == 0


def test_counts_drawn_ahead_pass_on_errors_and_stop_when_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    draws = CountsDrawnAhead({"a": 10}, B=5, seed=0)
    with pytest.raises(ValueError, match="drawn for 10 clusters, not 11"):
        next(draws.blocks("a", 11))
    draws.close()
    assert not draws._worker.is_alive()
    with CountsDrawnAhead({"big": 2**31}, B=1, seed=0) as failing:
        with pytest.raises(ValueError, match="too many clusters"):
            next(failing.blocks("big", 2**31))
    # a count above 255 is kept exactly (the block waits as float32, not uint8)
    def all_on_cluster_0(rng: np.random.Generator, n_clusters: int, rows: int):
        yield 0, np.zeros((rows, n_clusters), dtype=np.int64)

    monkeypatch.setattr(draws_module, "_replicate_draws", all_on_cluster_0)
    with CountsDrawnAhead({"x": 300}, B=2, seed=0) as draws:
        heavy = next(draws.blocks("x", 300, dtype=None))
    assert heavy.dtype == np.float32 and heavy[:, 0].tolist() == [300, 300] and heavy[:, 1:].sum() == 0
    # a consumer that stops early releases the worker
    with CountsDrawnAhead({"a": 1000}, B=500, seed=0, chunk=8) as draws:
        next(draws.blocks("a", 1000))
    assert not draws._worker.is_alive()


def test_item_interval_matches_normal_theory() -> None:
    values = (np.random.default_rng(5).random(4000) < 0.5).astype(float)
    lo, hi = item_bootstrap_means(values, B=1000, seed=42)
    expected = 2 * 1.96 * np.sqrt(values.mean() * (1 - values.mean()) / len(values))
    assert hi[0] - lo[0] == pytest.approx(expected, rel=0.12)


def test_cluster_resampling_widens_the_interval_for_correlated_items() -> None:
    rng = np.random.default_rng(9)
    per_cluster = (rng.random(400) < 0.5).astype(float)
    values = np.repeat(per_cluster, 10)  # ten identical items per cluster
    clusters = np.repeat(np.arange(400), 10)
    lo_item, hi_item = item_bootstrap_means(values, B=500, seed=1)
    lo_cluster, hi_cluster = cluster_bootstrap_means(values, clusters, B=500, seed=1)
    ratio = (hi_cluster - lo_cluster)[0] / (hi_item - lo_item)[0]
    assert ratio == pytest.approx(np.sqrt(10), rel=0.15)


def test_shared_denominators_and_empty_replicates() -> None:
    numerators = np.array([[1.0, 2.0], [0.0, 1.0]])
    denominators = np.array([[1.0], [0.0]])  # the second cluster has no item in the cell
    reps = ratio_of_sums_replicates(numerators, denominators, B=200, seed=0, denominator_of=np.array([0, 0]))
    drawn_only_second = np.isnan(reps[:, 0])
    assert drawn_only_second.any() and not drawn_only_second.all()
    assert np.allclose(reps[~drawn_only_second, 0], 1.0)


def test_percentile_interval_edges() -> None:
    reps = np.column_stack([np.arange(101, dtype=float), np.full(101, np.nan)])
    lo, hi = percentile_interval(reps, 0.95)
    assert lo[0] == pytest.approx(2.5) and hi[0] == pytest.approx(97.5)
    assert np.isnan(lo[1]) and np.isnan(hi[1])
    with pytest.raises(ValueError):
        percentile_interval(reps, 1.5)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1), min_size=2, max_size=60), st.integers(0, 2**31 - 1))
def test_bounds_are_ordered_and_within_the_data(values: list[float], seed: int) -> None:
    data = np.asarray(values)
    lo, hi = item_bootstrap_means(data, B=50, seed=seed)
    assert data.min() - 1e-6 <= lo[0] <= hi[0] <= data.max() + 1e-6


# --------------------------------------------------------------------------- the shared engine


def _plain_replicates(S: np.ndarray, statistic, B: int, seed: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Replicate by replicate: resampled counts from one int32 draw call each, totals ``w @ S``."""
    rng = np.random.default_rng(seed)
    k = len(S)
    rows = []
    for _ in range(B):
        w = np.bincount(rng.integers(0, k, size=k, dtype=np.int32), minlength=k).astype(float)
        rows.append([float(v[0]) for v in statistic((w @ S)[None, :], w[None, :])])
    return np.array(rows)


def test_bootstrap_replicates_of_a_custom_statistic_equal_a_plain_loop() -> None:
    rng = np.random.default_rng(11)
    S = np.column_stack([rng.random(30), rng.integers(1, 4, 30), rng.integers(0, 3, 30) * 0.25])

    def statistic(T: np.ndarray, W: np.ndarray | None) -> list[np.ndarray]:
        assert W is not None and W.shape[1] == 30  # rowwise: the counts themselves
        return [T[:, 0] / T[:, 1], np.sqrt(T[:, 2]), W.max(axis=1)]

    got = bootstrap_replicates(S, statistic, B=90, seed=4, rowwise=True)
    np.testing.assert_allclose(got, _plain_replicates(S, statistic, 90, 4), rtol=1e-12)
    assert bootstrap_replicates(S, statistic, B=0, seed=4, rowwise=True).shape == (0, 3)
    again = bootstrap_replicates(S, statistic, B=90, seed=4, rowwise=True)
    np.testing.assert_array_equal(got, again)  # same seed, same numbers
    other = bootstrap_replicates(S, statistic, B=90, seed=5, rowwise=True)
    assert not np.array_equal(got, other)


def test_counts_drawn_ahead_give_the_same_replicates_as_own_draws() -> None:
    S = np.random.default_rng(0).random((25, 2))
    stat = lambda T, _: [T[:, 0] / T[:, 1]]  # noqa: E731
    with CountsDrawnAhead({"a": 7, "b": 25}, B=70, seed=9) as draws:
        shared = bootstrap_replicates(S, stat, B=70, seed=9, counts=draws.blocks("b", 25))
    np.testing.assert_array_equal(shared, bootstrap_replicates(S, stat, B=70, seed=9))


def test_sums_product_is_exact_where_float32_is_and_float64_elsewhere() -> None:
    rng = np.random.default_rng(2)
    S = np.column_stack([rng.integers(0, 5, 50), rng.integers(0, 9, 50) / 4, rng.random(50) / 3])
    W = rng.integers(0, 4, (6, 50)).astype(np.float32)
    product = SumsProduct(S)
    assert product.whole.tolist() == [0, 1] and product.fraction.tolist() == [2]
    np.testing.assert_array_equal(product(W)[:, :2], W.astype(float) @ S[:, :2])
    np.testing.assert_allclose(product(W), W.astype(float) @ S, rtol=1e-13)
    whole, scale, fraction = exact_columns(S, 50)
    assert scale.tolist() == [1.0, 4.0] and fraction.tolist() == [2]


def test_ratio_of_sums_keeps_the_float32_products_of_the_old_path() -> None:
    """Scheme and arithmetic unchanged: each replicate is (w @ num) / (w @ den) in float32
    products on the shared counts (the loop the engine replaced, written out)."""
    rng = np.random.default_rng(8)
    num, den = rng.random((40, 5)), rng.integers(0, 2, (40, 2)).astype(float)
    index = np.array([0, 1, 1, 0, 1])
    expected = []
    for block in resampled_cluster_counts(40, B=130, seed=6):
        top = (block @ num.astype(np.float32)).astype(np.float64)
        bottom = (block @ den.astype(np.float32)).astype(np.float64)[:, index]
        with np.errstate(invalid="ignore", divide="ignore"):
            expected.append(np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), np.nan))
    got = ratio_of_sums_replicates(num, den, B=130, seed=6, denominator_of=index)
    np.testing.assert_array_equal(got, np.vstack(expected))
    assert ratio_of_sums_replicates(num, den, B=0, seed=6, denominator_of=index).shape == (0, 5)


def test_partition_and_sparse_products_equal_the_dense_product() -> None:
    from scipy import sparse

    rng = np.random.default_rng(3)
    values = rng.random((60, 2))
    part = rng.integers(0, 4, 60)
    part[part == 2] = 3  # part 2 holds no rows: its sums and counts stay 0
    product = PartitionProduct(values, part, 4)
    order = np.arange(60) if product.order is None else product.order
    W = rng.integers(0, 3, (5, 60)).astype(np.float64)
    dense = np.zeros((60, 4, 3))
    dense[np.arange(60), part, :2] = values
    dense[np.arange(60), part, 2] = 1
    np.testing.assert_allclose(product(W[:, order]), W @ dense.reshape(60, -1), rtol=1e-12)
    sums, counts = partition_replicates(values, part, 4, B=20, seed=1)
    assert (counts[:, 2] == 0).all() and (sums[:, 2] == 0).all() and (counts.sum(axis=1) == 60).all()
    assert [a.shape for a in partition_replicates(values, part, 4, B=0, seed=1)] == [(0, 4, 2), (0, 4)]
    M = sparse.random(7, 60, density=0.1, random_state=1, format="csr")
    np.testing.assert_allclose(SparseProduct(M, M)(W), np.hstack([W @ M.T.toarray()] * 2), rtol=1e-12)


def test_the_bootstrap_gives_schema_estimates_and_null_bounds_at_b_zero() -> None:
    rng = np.random.default_rng(4)
    n = 80
    hit, parsed = (rng.random(n) < 0.4).astype(float), rng.random(n) < 0.8
    clusters = rng.integers(0, 20, n).astype(str)
    columns = SumColumns(n)
    i_hit, i_one, i_parsed = columns.add(hit * parsed), columns.add(1.0), columns.add(parsed.astype(float))

    def stats(T: np.ndarray, _: np.ndarray | None) -> list[np.ndarray]:
        return [ratio(T[:, i_hit], T[:, i_parsed]), ratio(T[:, i_one], T[:, i_one]),
                nanmean(np.column_stack([ratio(T[:, i_hit], T[:, i_one]), np.full(len(T), np.nan)]))]

    rate, one, mean = Bootstrap(200, 3, 0.9)(columns, stats, clusters, n)
    assert rate["value"] == pytest.approx((hit * parsed).sum() / parsed.sum())
    assert rate["lo"] < rate["value"] < rate["hi"] and rate["n"] == n
    assert one == {"value": 1.0, "lo": 1.0, "hi": 1.0, "n": n}  # constant: its value as both bounds
    assert mean["value"] == pytest.approx(hit[parsed].sum() / n)
    with CountsDrawnAhead({"task": 20}, B=200, seed=3) as draws:
        assert Bootstrap(200, 3, 0.9, draws).named("task")(columns, stats, clusters, n)[0] == rate
    none = Bootstrap(0, 3, 0.9)(columns, stats, clusters, n)
    assert [(e["lo"], e["hi"]) for e in none] == [(None, None)] * 3
    assert weighted_mean(np.array([1.0, 3.0]), np.array([1.0, 3.0])) == 2.5
    assert math.isnan(weighted_mean(np.array([1.0]), np.array([0.0])))


def test_resampled_counts_in_a_given_column_order_are_the_permuted_counts() -> None:
    order = np.random.default_rng(0).permutation(30)
    plain = np.vstack(list(resampled_cluster_counts(30, B=10, seed=2)))
    permuted = np.vstack(list(resampled_cluster_counts(30, B=10, seed=2, order=order, dtype=np.float64)))
    np.testing.assert_array_equal(permuted, plain[:, order])


def test_counts_drawn_ahead_into_a_reused_buffer_are_the_same_stream() -> None:
    plain = [block.copy() for block in resampled_cluster_counts(40, B=37, seed=8, chunk=16)]
    reused = [block.copy() for block in resampled_cluster_counts(40, B=37, seed=8, chunk=16, draw_ahead=True,
                                                                 reuse=True)]
    assert [len(b) for b in reused] == [16, 16, 5]
    np.testing.assert_array_equal(np.vstack(reused), np.vstack(plain))


def test_class_draws_are_one_multinomial_over_identical_rows_per_replicate() -> None:
    """The ``classes`` path: the same resampling distribution as drawing items (every replicate
    draws n items), drawn as one multinomial over the distinct (part, values) rows in sorted
    order, so it does not depend on the row order; written out here as the reference."""
    rng = np.random.default_rng(12)
    n = 900
    values = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 3, n) / 2]).astype(float)
    part = rng.integers(0, 3, n)
    sums, counts = partition_replicates(values, part, 4, B=150, seed=2, classes=True)
    keys, size = np.unique(np.column_stack([part, values]), axis=0, return_counts=True)
    draws = np.random.default_rng(2).multinomial(n, size / n, size=150).astype(float)
    for p in range(3):
        mine = keys[:, 0] == p
        np.testing.assert_allclose(sums[:, p], draws[:, mine] @ keys[mine, 1:], rtol=1e-12)
        np.testing.assert_array_equal(counts[:, p], draws[:, mine].sum(axis=1))
    assert (counts[:, 3] == 0).all()  # an empty part
    order = rng.permutation(n)
    shuffled = partition_replicates(values[order], part[order], 4, B=150, seed=2, classes=True)
    np.testing.assert_array_equal(shuffled[0], sums)
    items = partition_replicates(values, part, 4, B=150, seed=2)
    assert not np.array_equal(items[0], sums)  # another stream …
    pooled = [s[:, :, 0].sum(axis=1) / c.sum(axis=1) for s, c in (items, (sums, counts))]
    assert abs(pooled[0].std() - pooled[1].std()) < 0.3 * pooled[0].std()  # … the same distribution


def test_sparse_products_of_integers_run_in_float32_with_the_same_numbers() -> None:
    from scipy import sparse

    rng = np.random.default_rng(6)
    counts = sparse.csr_matrix(rng.integers(0, 3, (9, 200)).astype(np.float64))
    fractions = sparse.csr_matrix(rng.random((4, 200)))
    product = SparseProduct(counts, fractions)
    assert [m.dtype for m in product.matrices] == [np.float32, np.float64]
    W = np.vstack(list(resampled_cluster_counts(200, B=30, seed=1)))
    got = product(W)
    np.testing.assert_array_equal(got[:, :9], W.astype(np.float64) @ counts.T.toarray())  # exact
    np.testing.assert_allclose(got[:, 9:], W.astype(np.float64) @ fractions.T.toarray(), rtol=1e-12)
    huge = sparse.csr_matrix(np.full((1, 200), 2.0 ** 20))  # totals could pass 2**24: float64
    assert SparseProduct(huge).matrices[0].dtype == np.float64


def test_many_classes_are_drawn_poissonized_with_the_item_bootstraps_spread() -> None:
    """From CLASSES_POISSONIZED_FROM classes on, the ``classes`` path draws each replicate's class
    counts from its own stream (replicate_class_counts over the classes in part-then-value
    order); its sums match the item path's in mean and spread."""
    from biovqa.stats.bootstrap import CLASSES_POISSONIZED_FROM
    from biovqa.stats.draws import ClassSizes, replicate_class_counts

    rng = np.random.default_rng(4)
    n = 12_000
    # classes of one item, of a few (drawn through the tables) and of hundreds (NumPy's sampler)
    score = np.where(rng.random(n) < 0.3, 0.0, rng.integers(0, 600, n) / 4)
    values = np.column_stack([score, rng.integers(0, 2, n)]).astype(float)
    values[:300, 0] = rng.random(300)
    part = rng.integers(0, 3, n)
    keys, size = np.unique(np.column_stack([part, values]), axis=0, return_counts=True)
    assert len(size) >= CLASSES_POISSONIZED_FROM and (size == 1).sum() >= 300 and (size >= 16).sum() == 6
    sums, counts = partition_replicates(values, part, 3, B=400, seed=5, classes=True)
    draws = np.stack([replicate_class_counts(ClassSizes(size), 5, b) for b in range(400)]).astype(float)
    for p in range(3):
        mine = keys[:, 0] == p
        np.testing.assert_allclose(sums[:, p], draws[:, mine] @ keys[mine, 1:], rtol=1e-12)
        np.testing.assert_array_equal(counts[:, p], draws[:, mine].sum(axis=1))
    items = partition_replicates(values, part, 3, B=400, seed=5)
    for s, c in (items, (sums, counts)):
        assert (c.sum(axis=1) == n).all()
    mean = [s[:, 0, 0] / c[:, 0] for s, c in (items, (sums, counts))]
    assert abs(mean[0].mean() - mean[1].mean()) < 0.2 * mean[0].std()
    assert abs(mean[0].std() - mean[1].std()) < 0.15 * mean[0].std()


def test_a_missing_value_is_a_class_of_its_own() -> None:
    """NaN rows form their own class (sorted last in their part), never merged into a neighbour's
    class: the sums of a replicate that draws them are NaN, as on the item path."""
    from biovqa.stats.bootstrap import _class_codes

    values = np.array([[1.0, 0.0], [np.nan, 0.0], [0.5, 0.0], [np.nan, 0.0], [1.0, 1.0], [0.5, 0.0]])
    part = np.array([0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(_class_codes(values, part), [1, 3, 0, 3, 2, 4])
    sums, counts = partition_replicates(values, part, 2, B=50, seed=3, classes=True)
    assert np.isnan(sums[:, 0, 0]).all() and np.isfinite(sums[:, 1, 0]).all()
    assert (counts.sum(axis=1) == 6).all()
