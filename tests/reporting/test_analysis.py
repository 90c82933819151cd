"""The cross-component analysis recomputed from the paper's Table 3 ("Table 3 only"
variant) and the statistics' worked values (Holm, Spearman p, Cronbach's α, correlation intervals)."""

from __future__ import annotations

import numpy as np
import pytest

from biovqa.components.registry import get_component
from biovqa.reporting.analysis import analyze_matrix, task_matrix
from biovqa.stats.inference import alpha_std, permutation_gap_p

from biovqa.reporting.leaderboard import Run

COLUMNS = {c: list(get_component(c).table3) for c in ("c1", "c2", "c3", "c4")}


def test_component_correlations_recomputed_from_table3_alone(paper_runs: list[Run]) -> None:
    matrix, blocks = task_matrix(paper_runs, COLUMNS)  # OCR left out, C4 = d′ + acc
    assert matrix.shape == (18, 21)
    analysis = analyze_matrix(matrix, blocks, B=200)
    assert analysis is not None
    # Table 3 only: z-mean components, C3 with 7 tasks, C4 = d′+acc
    expected = {"C1-C2": .812, "C1-C3": .763, "C1-C4": .306, "C2-C3": .959, "C2-C4": .469, "C3-C4": .474}
    got = {pair: round(float(rho), 3) for pair, rho in analysis.pairs["rho"].items()}
    assert got == expected
    assert analysis.pairs.loc["C2-C3", "significant"] == "yes"
    assert not analysis.imputed.to_numpy().any() and analysis.dropped == ()
    assert analysis.p_gap == pytest.approx(1 / 201) or analysis.p_gap < 0.05


def test_pc1_share_over_all_22_columns(paper_runs: list[Run]) -> None:
    matrix, blocks = task_matrix(paper_runs, COLUMNS, exclude=())
    analysis = analyze_matrix(matrix, blocks, B=10)
    assert analysis is not None and round(analysis.pc1_share * 100, 1) == 59.8


def test_missing_cells_are_imputed_and_the_sensitivity_run_drops_the_model(paper_runs: list[Run]) -> None:
    matrix, blocks = task_matrix(paper_runs, COLUMNS)
    matrix.iloc[0, 0] = np.nan
    analysis = analyze_matrix(matrix, blocks, B=10)
    assert analysis is not None and analysis.imputed.iloc[0, 0]
    assert analysis.matrix.iloc[0, 0] == matrix.iloc[1:, 0].median()
    assert analysis.dropped == (matrix.index[0],) and np.isfinite(analysis.sensitivity_gap)


def test_alpha_and_permutation_worked_values() -> None:
    # standardized α: C1 k = 10, r̄ = .841 → .9814; C2 k = 5, r̄ = .645 → .9008; C4 .617 → .8896
    assert [round(alpha_std(r, k), 4) for r, k in ((.841, 10), (.645, 5), (.617, 5))] == [.9814, .9008, .8896]
    # a perfect block structure: no permutation reaches the gap → p = 1/(B + 1) (§6.4: 1/2001)
    rho = np.full((6, 6), 0.1)
    rho[:3, :3] = rho[3:, 3:] = 0.9
    np.fill_diagonal(rho, 1.0)
    assert permutation_gap_p(rho, list("AAABBB"), B=2000) >= 1 / 2001
    assert permutation_gap_p(rho, list("AAABBB"), B=2000) < 0.1
