"""Sensitivity sweep (the paper's App. I.1; Table 56 ρ/τ examples)."""

from __future__ import annotations

import numpy as np
import pytest
from fixtures.c2_items import c2_item, predictions_for

from biovqa.components.c2 import sweep


def swapped(n: int, swaps: list[int]) -> list[float]:
    scores = list(np.linspace(0.9, 0.3, n))
    for i in swaps:
        scores[i], scores[i + 1] = scores[i + 1], scores[i]
    return scores


@pytest.mark.parametrize(
    ("swaps", "rho", "tau", "displacement"),
    [([], 1.0, 1.0, 0), ([4], 0.9979, 0.9869, 1), ([4, 10], 0.9959, 0.9739, 1)],
)
def test_table_56_rank_vectors(swaps, rho, tau, displacement):
    base = swapped(18, [])
    result = sweep.rank_agreement(base, swapped(18, swaps))
    assert result["spearman_rho"] == pytest.approx(rho, abs=5e-5)
    assert result["kendall_tau"] == pytest.approx(tau, abs=5e-5)
    assert result["displacement"] == displacement
    assert result["top3_stable"] is True


def test_top3_and_mean_delta():
    base = [0.9, 0.8, 0.7, 0.6]
    other = [0.9, 0.8, 0.55, 0.6]
    result = sweep.rank_agreement(base, other)
    assert result["top3_stable"] is False
    assert result["mean_abs_delta"] == pytest.approx(0.15 / 4)
    assert sweep.rank_agreement([0.5], [0.4])["spearman_rho"] is None


def test_eleven_configurations():
    names = [name for name, _ in sweep.SWEEP_CONFIGS]
    assert names == ["default", "tau=20", "tau=40", "tau=50", "alpha=0.3", "alpha=0.4", "alpha=0.6",
                     "alpha=0.7", "linear kernel", "prefer text", "anat in vis"]


def test_stratified_subsample_is_proportional_and_fixed():
    codes = np.repeat(np.arange(3), [600, 300, 100])
    rows = sweep.stratified_subsample(codes, 100, seed=42)
    assert len(rows) == 100 and len(set(rows.tolist())) == 100
    assert np.bincount(codes[rows]).tolist() == [60, 30, 10]
    assert rows.tolist() == sweep.stratified_subsample(codes, 100, seed=42).tolist()
    assert sweep.stratified_subsample(codes, 5000).tolist() == list(range(1000))


def test_stratified_subsample_breaks_equal_remainders_by_family_order():
    """Quotas 2⅔, ⅔, 4⅔, 2 of 10: the two units left go to the first two families (exact
    remainders: a float split ranked the third family's 0.666…7 above the others' 0.666…5)."""
    codes = np.repeat(np.arange(4), [8, 2, 14, 6])
    assert np.bincount(codes[sweep.stratified_subsample(codes, 10)]).tolist() == [3, 1, 4, 2]


def test_run_sweep_end_to_end(make_bench):
    rows = []
    options = ["purple", "blue", "green", "yellow"]
    for k in range(12):
        rows.append(c2_item("attr_bare_value", f"a{k}", "blue", options, part="wing", property="color",
                            attribute_group="has_wing_color"))
        rows.append(c2_item("visibility_side", f"v{k}", "Both", ["Left", "Right", "Both", "None"], part="wing"))
    bench = make_bench(rows)
    ids = bench.items.column("item_id").to_pylist()
    good = predictions_for(bench, ["(B) blue" if i.startswith("a") else "(C) Both" for i in ids])
    near = predictions_for(bench, ["(A) purple" if i.startswith("a") else "(A) Left" for i in ids])
    far = predictions_for(bench, ["(D) yellow" if i.startswith("a") else "(B) Red" for i in ids])
    result = sweep.run_sweep(bench, {"good": good, "near": near, "far": far}, {"sweep_size": 16})
    assert result["subsample"]["rows"] == 16
    assert result["subsample"]["by_family"] == {"attr_bare_value": 8, "visibility_side": 8}
    assert [c["config"] for c in result["configs"]] == [n for n, _ in sweep.SWEEP_CONFIGS]
    default = result["configs"][0]
    assert default["spearman_rho"] == 1.0 and default["mean_abs_delta"] == 0.0
    assert default["ranks"] == {"good": 1.0, "near": 2.0, "far": 3.0}
    # "(B) Red" on a side item: letter B (Right) wins by default; no text match either way
    assert result["scores"]["tau=20"]["near"] != result["scores"]["default"]["near"]
