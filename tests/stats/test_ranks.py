"""The one ranks / Spearman module: equal to SciPy's definitions (average ranks for ties), the
edge cases each function states (constant sides, fewer than two points, NaN), and the bootstrap
rank distribution's tie and NaN rules."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata, spearmanr

from biovqa.stats.ranks import (
    RankLayout,
    average_ranks,
    descending_ranks,
    group_ranks,
    grouped_spearman,
    rank_distribution,
    spearman,
    spearman_matrix,
    spearman_p,
    weighted_spearman,
)


def test_average_ranks_equal_rankdata_with_ties_and_propagate_nan() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.integers(0, 5, int(rng.integers(1, 30))).astype(float)
        np.testing.assert_array_equal(average_ranks(x), rankdata(x))
        np.testing.assert_array_equal(descending_ranks(x), rankdata(-x))
    assert np.isnan(average_ranks(np.array([1.0, np.nan, 2.0]))).all()
    assert average_ranks(np.zeros(0)).shape == (0,)
    assert descending_ranks(np.array([0.9, 0.1, 0.9])).tolist() == [1.5, 3.0, 1.5]


def test_group_ranks_rank_within_each_group() -> None:
    values = np.array([3.0, 1.0, 3.0, 2.0, 5.0, 5.0])
    groups = np.array([0, 0, 0, 1, 1, 1])
    assert group_ranks(values, groups).tolist() == [2.5, 1.0, 2.5, 1.0, 2.5, 2.5]


def test_spearman_equals_scipy_and_its_edge_cases() -> None:
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 6, 40).astype(float), rng.random(40)
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert spearman(np.ones(5), y[:5]) == 0.0  # a constant predictor has no rank correlation
    assert math.isnan(spearman(x[:1], y[:1]))


def test_spearman_p_is_the_t_approximation_scipy_uses() -> None:
    rng = np.random.default_rng(2)
    x, y = rng.random(25), rng.random(25)
    result = spearmanr(x, y)
    assert spearman_p(float(result.statistic), 25) == pytest.approx(result.pvalue, rel=1e-9)
    assert spearman_p(1.0, 10) == 0.0
    assert math.isnan(spearman_p(0.5, 2)) and math.isnan(spearman_p(math.nan, 10))


def test_spearman_matrix_equals_pandas_spearman() -> None:
    rng = np.random.default_rng(3)
    matrix = np.column_stack([rng.integers(0, 4, 30), rng.random(30), rng.random(30)]).astype(float)
    expected = pd.DataFrame(matrix).corr(method="spearman").to_numpy()
    np.testing.assert_allclose(spearman_matrix(matrix), expected, atol=1e-12)


def test_grouped_spearman_is_each_group_s_spearman_for_groups_of_three_or_more() -> None:
    rng = np.random.default_rng(4)
    groups = np.repeat(np.arange(6), [5, 2, 7, 3, 1, 6])
    x, y = rng.integers(0, 4, len(groups)).astype(float), rng.random(len(groups))
    y[groups == 3] = 1.0  # a constant side: 0
    expected = [spearman(x[groups == g], y[groups == g]) for g in range(6) if (groups == g).sum() >= 3]
    np.testing.assert_allclose(grouped_spearman(x, y, groups), expected, atol=1e-12)
    assert grouped_spearman(np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)).shape == (0,)


def test_weighted_spearman_is_the_spearman_of_the_repeated_sample() -> None:
    rng = np.random.default_rng(5)
    x, y = rng.integers(0, 3, 12).astype(float), rng.random(12)
    clusters = rng.integers(0, 5, 12)
    W = rng.integers(0, 3, (4, 5)).astype(np.float32)
    rho, total = weighted_spearman(x, y, W, RankLayout(x, y, clusters))
    for b in range(4):
        take = np.repeat(np.arange(12), W[b, clusters].astype(int))
        assert total[b] == len(take)
        expected = spearman(x[take], y[take])
        assert (math.isnan(expected) and math.isnan(rho[b])) or rho[b] == pytest.approx(expected, abs=1e-9)
    empty_rho, empty_total = weighted_spearman(np.zeros(0), np.zeros(0), np.ones((3, 0)))
    assert np.isnan(empty_rho).all() and empty_total.tolist() == [0, 0, 0]


def test_rank_distribution_ties_share_the_better_rank_and_nan_ranks_last() -> None:
    replicates = np.array([[0.9, 0.9, 0.1], [0.5, np.nan, 0.7], [0.8, 0.2, 0.3], [0.8, 0.1, 0.3]])
    lo, hi, best = rank_distribution(replicates, confidence=0.5)
    # replicate ranks: [1, 1, 3], [2, 3, 1], [1, 3, 2], [1, 3, 2]
    assert best.tolist() == [0.75, 0.25, 0.25]
    assert lo.tolist() == [1.0, 1.0, 1.0] and hi.tolist() == [2.0, 3.0, 3.0]
