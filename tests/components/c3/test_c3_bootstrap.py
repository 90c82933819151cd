"""The C3 summary's block bootstrap: the weighted Spearman equals ρ of the replicated sample, and
the bounds the scorer writes equal a plain replicate-by-replicate loop over the same resamples."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fixtures.c3_benches import write_items_bench, write_predictions

from biovqa.scoring.pipeline import score_predictions
from biovqa.stats.bootstrap import SumsProduct as _Product
from biovqa.stats.bootstrap import percentile_interval, resampled_cluster_counts
from biovqa.stats.codes import cluster_codes
from biovqa.stats.bootstrap import exact_columns as _exact_columns
from biovqa.stats.ranks import RankLayout as _RankLayout
from biovqa.stats.ranks import spearman, weighted_spearman


@pytest.mark.parametrize("levels", [3, 1000])  # many ties / almost none
def test_weighted_spearman_is_the_spearman_of_the_replicated_sample(levels: int) -> None:
    rng = np.random.default_rng(levels)
    for _ in range(60):
        n = int(rng.integers(1, 25))
        x, y = rng.integers(0, levels, n).astype(float), rng.integers(0, 4, n).astype(float)
        W = rng.integers(0, 3, (3, n)).astype(float)
        rho, total = weighted_spearman(x, y, W)
        for b in range(3):
            take = np.repeat(np.arange(n), W[b].astype(int))
            expected = spearman(x[take], y[take])
            assert total[b] == len(take)
            assert (np.isnan(expected) and np.isnan(rho[b])) or rho[b] == pytest.approx(expected, abs=1e-9)


def test_counting_bounds_equal_a_plain_replicate_loop(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    golds = rng.integers(1, 30, 60)
    rows = [{"task": "counting", "answer": str(g), "gold_number": float(g), "subset": ("a", "b", "c")[k % 3],
             "dataset": ("a", "b", "c")[k % 3], "tier": ("easy", "medium", "hard")[k % 3], "cluster": f"photo{k // 3}"}
            for k, g in enumerate(golds)]
    bench = write_items_bench(tmp_path / "bench", rows)
    replies = {f"c3-counting-{k:04d}": str(int(g + rng.integers(-3, 4))) for k, g in enumerate(golds)}
    out = score_predictions(bench, write_predictions(tmp_path / "p.parquet", replies), tmp_path / "scores",
                            options={"bootstrap": 200, "seed": 5})
    micro = json.loads((out / "summary.json").read_text())["counting"]["micro_cas"]
    preds = np.array([float(replies[f"c3-counting-{k:04d}"]) for k in range(len(golds))])
    cas = np.maximum(0.0, 1 - np.abs(preds - golds) / golds)
    codes, k = cluster_codes(np.array([r["cluster"] for r in rows], dtype=object))
    replicates = [float((c[codes] * cas).sum() / c[codes].sum())
                  for block in resampled_cluster_counts(k, B=200, seed=5) for c in block]
    lo, hi = percentile_interval(np.array(replicates)[:, None], 0.95)
    assert micro["value"] == pytest.approx(cas.mean(), abs=1e-12)
    assert (micro["lo"], micro["hi"]) == pytest.approx((lo[0], hi[0]), abs=1e-6)


@pytest.mark.parametrize(("n", "clusters", "levels"), [(40, 9, 3), (300, 200, 150), (60, 25, 1000)])
def test_weighted_spearman_with_cluster_weights(n: int, clusters: int, levels: int) -> None:
    """Row i weighted by its cluster's count (a layout built with the cluster of each row) equals
    the row-weighted form; the run-weight product (few runs) and the sum over rows (many runs ×
    many clusters) agree, and clusters without rows here (extra columns of W) are ignored."""
    rng = np.random.default_rng(n)
    x, y = rng.integers(0, levels, n).astype(float), rng.normal(size=n)
    cluster = rng.integers(0, clusters, n)
    W = rng.integers(0, 4, (5, clusters + 3)).astype(np.float32)  # three clusters with no rows here
    layout = _RankLayout(x, y, cluster)
    rho, total = weighted_spearman(x, y, W, layout)
    expected_rho, expected_total = weighted_spearman(x, y, W[:, cluster].astype(float))
    np.testing.assert_allclose(rho, expected_rho, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(total, expected_total)
    for b in range(len(W)):
        take = np.repeat(np.arange(n), W[b, cluster].astype(int))
        assert rho[b] == pytest.approx(spearman(x[take], y[take]), abs=1e-9)


def test_products_are_exact_where_float32_is_used() -> None:
    """Count columns and credits on a grid go through float32 products (scaled to integers),
    the rest through float64; every column equals the float64 product."""
    rng = np.random.default_rng(2)
    k = 500
    S = np.column_stack([rng.integers(0, 5, k),  # counts
                         rng.choice([0.0, 0.1, 0.25, 1.0], k),  # VAS credits
                         rng.integers(0, 12, k) / 12,  # twelfths (OCR characters)
                         rng.random(k)])  # anything else
    whole, scale, fraction = _exact_columns(S, k)
    assert whole.tolist() == [0, 1, 2] and scale.tolist() == [1, 20, 12] and fraction.tolist() == [3]
    W = np.concatenate(list(resampled_cluster_counts(k, B=40, seed=1, dtype=np.float32)))
    np.testing.assert_allclose(_Product(S, k)(W), W.astype(float) @ S, rtol=1e-13, atol=0)
