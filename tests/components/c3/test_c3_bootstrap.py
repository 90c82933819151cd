"""The C3 summary's block bootstrap: the weighted Spearman equals ρ of the replicated sample, and
the bounds the scorer writes equal a plain replicate-by-replicate loop over the same resamples."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fixtures.c3_benches import write_items_bench, write_predictions

from biovqa.components.c3.summary import spearman, weighted_spearman
from biovqa.scoring.pipeline import score_predictions
from biovqa.stats.bootstrap import cluster_codes, percentile_interval, resampled_cluster_counts


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
