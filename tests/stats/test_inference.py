"""The analysis' inference functions: Holm's step-down, standardized α, the within/across gap
and its permutation p, the PC1 share and the Fisher interval, each against its formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from biovqa.stats.inference import (
    alpha_std,
    fisher_ci,
    holm,
    normal_quantile,
    pca_share,
    permutation_gap_p,
    within_across_gap,
)


def test_holm_adjusts_step_down_and_stops_at_the_first_failure() -> None:
    adjusted, rejected = holm([0.01, 0.04, 0.03, 0.5], alpha=0.05)
    # sorted: .01·4 = .04 (≤ .05/4: reject), .03·3 = .09 (> .05/3: stop), max(.09, .04·2), .5
    np.testing.assert_allclose(adjusted, [0.04, 0.09, 0.09, 0.5])
    assert rejected.tolist() == [True, False, False, False]
    assert holm([0.9, 0.9])[0].tolist() == [1.0, 1.0]  # (m − i)·p capped at 1


def test_alpha_std_is_the_spearman_brown_form() -> None:
    assert alpha_std(0.5, 4) == pytest.approx(0.8)
    assert alpha_std(1.0, 7) == pytest.approx(1.0)


def test_within_across_gap_and_its_permutation_p() -> None:
    rho = np.array([[1.0, 0.8, 0.1, 0.2], [0.8, 1.0, 0.0, 0.1], [0.1, 0.0, 1.0, 0.9], [0.2, 0.1, 0.9, 1.0]])
    within, across = within_across_gap(rho, ["a", "a", "b", "b"])
    assert within == pytest.approx(0.85) and across == pytest.approx(0.1)
    p = permutation_gap_p(rho, ["a", "a", "b", "b"], B=300, seed=1)
    assert p == permutation_gap_p(rho, ["a", "a", "b", "b"], B=300, seed=1)  # seeded
    assert round(p * 301) == pytest.approx(p * 301) and 1 / 301 <= p < 0.5  # (1 + #exceed)/(B + 1)
    assert math.isnan(within_across_gap(rho[:2, :2], ["a", "b"])[0])  # no pair within a block


def test_pca_share_of_perfectly_correlated_columns_is_one() -> None:
    x = np.random.default_rng(0).random(20)
    share, loadings = pca_share(np.column_stack([x, 2 * x + 1, np.ones(20)]))
    assert share == pytest.approx(1.0)
    assert loadings[0] == pytest.approx(loadings[1]) and loadings[0] > 0 and math.isnan(loadings[2])


def test_fisher_ci_uses_the_bonett_wright_variance() -> None:
    half = norm.ppf(0.975) * math.sqrt((1 + 0.25 / 2) / 27)
    lo, hi = fisher_ci(0.5, 30)
    assert (lo, hi) == pytest.approx((math.tanh(math.atanh(0.5) - half), math.tanh(math.atanh(0.5) + half)))
    assert all(math.isnan(v) for v in fisher_ci(0.5, 3)) and all(math.isnan(v) for v in fisher_ci(1.0, 50))


def test_normal_quantile_is_scipys_to_the_last_bits_in_every_region() -> None:
    """Central (|p − ½| ≤ 0.425), intermediate and far-tail regions of AS 241, both sides."""
    from scipy.special import ndtri

    rng = np.random.default_rng(7)
    p = np.concatenate([rng.random(50_000), 10.0 ** -rng.uniform(1, 300, 5_000),
                        1 - 10.0 ** -rng.uniform(1, 15, 5_000), [0.5, 0.075, 0.925, 1e-320]])
    np.testing.assert_allclose(normal_quantile(p), ndtri(p), rtol=4e-15, atol=0)
    assert normal_quantile(0.975) == pytest.approx(1.959963984540054, abs=1e-15)
    edges = normal_quantile(np.array([0.0, 1.0, -0.1, 1.1, np.nan]))
    assert edges[0] == -math.inf and edges[1] == math.inf and np.isnan(edges[2:]).all()
