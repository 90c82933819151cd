"""Rank intervals of Table 3 from a bootstrap whose draws all models share, on real score folders
of C1–C4 (biovqa.reporting.replicates and each component's rank_inputs)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from biovqa.reporting.leaderboard import OVERLAP_METHOD, build_leaderboard, with_bootstrap_ranks
from biovqa.reporting.replicates import (ColumnItems, _inputs, column_replicates, mean_statistic, rank_distribution,
                                         rank_source)
from biovqa.reporting.writer import load_runs, table3_columns


def test_every_column_is_recomputed_exactly_from_the_items(all_component_runs: list[Path]) -> None:
    """The full-sample value of each recomputed column equals the one the scorer wrote."""
    checked = set()
    for run in load_runs(all_component_runs):
        source = rank_source(run.component)
        assert source is not None, run.component
        inputs = _inputs(run.path, source)
        assert inputs is not None
        table3 = run.summary["table3"]
        got = column_replicates({run.name: inputs}, list(inputs), B=5, seed=1)
        for column, (models, replicates, full) in got.items():
            assert models == [run.name] and replicates.shape == (5, 1)
            expected = table3[column]["value"]
            if expected is None:
                assert np.isnan(full[0])
            else:
                assert full[0] == pytest.approx(expected, abs=1e-9), (run.component, column)
                checked.add(column)
    assert {"phy", "sci", "sal", "mrp", "loc", "nam", "cnt", "rcnt", "view", "lcl", "dprime", "acc"} <= checked


def test_shared_draws_keep_a_model_that_wins_every_item_ahead_in_every_replicate() -> None:
    rng = np.random.default_rng(0)
    ids = np.array([f"i{k:03d}" for k in range(200)], dtype=object)
    weak = rng.uniform(0, 0.6, size=200)
    strong = weak + rng.uniform(0.0, 0.05, size=200)  # never worse on an item, barely better on average
    def column(values: np.ndarray) -> dict[str, ColumnItems]:
        return {"x": ColumnItems(ids, ids, np.zeros(200, dtype=object), values, mean_statistic, "test")}
    (models, replicates, _), = column_replicates({"weak": column(weak), "strong": column(strong)}, ["x"],
                                                B=300, seed=42).values()
    assert models == ["weak", "strong"]
    assert (replicates[:, 1] >= replicates[:, 0]).all()  # paired: one draw matrix for both models
    lo, hi, best = rank_distribution(replicates)
    assert lo.tolist() == [2.0, 1.0] and hi.tolist() == [2.0, 1.0] and best.tolist() == [0.0, 1.0]


def test_rank_distribution_quantiles_and_ties() -> None:
    replicates = np.array([[0.9, 0.5, 0.5], [0.4, 0.6, 0.6], [0.9, 0.1, np.nan]] * 10)
    lo, hi, best = rank_distribution(replicates)
    assert lo.tolist() == [1.0, 1.0, 1.0] and hi.tolist() == [3.0, 2.0, 3.0]
    assert best.tolist() == pytest.approx([2 / 3, 1 / 3, 1 / 3])


def test_leaderboard_ranks_come_from_the_shared_bootstrap(all_component_runs: list[Path]) -> None:
    runs = load_runs(all_component_runs)
    columns = table3_columns(runs)
    board = with_bootstrap_ranks(build_leaderboard(runs, columns), runs, B=200)
    again = with_bootstrap_ranks(build_leaderboard(runs, columns), runs, B=200)
    n = len(board.generalists)
    assert n == 4
    for column in board.value.columns:
        method = board.rank_methods[column]
        if not board.value.loc[board.generalists, column].notna().all():
            continue
        assert method.startswith("bootstrap, shared draws") and "B = 200" in method, (column, method)
        lo, hi = board.rank_lo[column].to_numpy(), board.rank_hi[column].to_numpy()
        assert ((1 <= lo) & (lo <= hi) & (hi <= n)).all()
        assert board.p_best is not None and board.p_best[column].sum() >= 1 - 1e-12
    assert board.rank_lo.equals(again.rank_lo) and board.p_best.equals(again.p_best)  # deterministic
    # the model answering 80% right is never ranked below the one answering 15% right on C1 phylum
    assert board.rank_hi.loc["Good-VL-8B", "phy"] <= board.rank_lo.loc["Weak-VL-1B", "phy"]


def test_a_folder_without_items_keeps_the_interval_overlap_rule(scored_runs: list[Path], tmp_path: Path) -> None:
    runs = load_runs(scored_runs)
    c1 = next(r for r in runs if r.component == "c1" and r.name == "Mid-VL-4B")
    bare = tmp_path / "bare"
    shutil.copytree(c1.path, bare)
    (bare / "items.parquet").unlink()
    paths = [bare if p == c1.path else p for p in scored_runs]
    runs = load_runs(paths)
    board = with_bootstrap_ranks(build_leaderboard(runs, table3_columns(runs)), runs, B=50)
    assert board.rank_methods["phy"] == OVERLAP_METHOD
    assert board.rank_methods["cnt"].startswith("bootstrap")
