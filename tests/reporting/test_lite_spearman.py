"""Full vs Lite in the report (does the Lite subset rank models as the full benchmark?): the same models scored on the demo benchmarks and on
their Bio-VQA-Lite subsets (``biovqa.bench.lite.make_lite``); the report ranks the full runs and
shows the Spearman ρ between full and Lite per Table 3 column and for the Mean."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import spearmanr


@pytest.fixture(scope="module")
def lite_runs(tmp_path_factory: pytest.TempPathFactory, scored_runs: list[Path], score_models: Callable) -> list[Path]:
    from biovqa.bench.lite import make_lite

    root = tmp_path_factory.mktemp("lite-runs")
    benches = {}
    for run in scored_runs:
        summary = json.loads((run / "summary.json").read_text())
        benches.setdefault(summary["component"], Path(summary["provenance"]["benchmark"]))
    lite = tuple((comp, make_lite(bench, root / f"lite-{comp}", per_task=4).root) for comp, bench in benches.items())
    return score_models(root, lite, {})  # a Lite C1 bench keeps its parent's taxonomy index


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory, scored_runs: list[Path], lite_runs: list[Path]) -> dict[str, Path]:
    from biovqa.reporting import write_report

    root = tmp_path_factory.mktemp("lite-reports")
    write_report([*scored_runs, *lite_runs], root / "both")
    write_report(scored_runs, root / "full")
    write_report(lite_runs, root / "lite")
    return {"both": root / "both", "full": root / "full", "lite": root / "lite"}


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")  # a column without spread: ρ undefined
def test_report_of_full_and_lite_shows_the_spearman_per_column(reports: dict[str, Path]) -> None:
    table = pd.read_csv(reports["both"] / "lite_spearman.csv", index_col=0)
    assert list(table.columns) == ["component", "models", "spearman_rho"]
    assert {"phy", "cnt", "Mean"} <= set(table.index) and table.index[-1] == "Mean"
    assert (table["models"] == 4).all()  # the four generalists; the floor and the specialist are not ranked
    full = pd.read_csv(reports["full"] / "table3.csv", index_col=0)
    lite = pd.read_csv(reports["lite"] / "table3.csv", index_col=0)
    models = full.index[full["kind"] == "vlm"]
    for column in ("phy", "sci", "cnt", "view"):
        expected = spearmanr(full.loc[models, column], lite.loc[models, column]).statistic
        assert table.loc[column, "spearman_rho"] == pytest.approx(expected, nan_ok=True), column
    columns = [c for c in table.index if c != "Mean" and table.loc[c, "models"] == 4]
    expected = spearmanr(full.loc[models, columns].mean(axis=1), lite.loc[models, columns].mean(axis=1)).statistic
    assert table.loc["Mean", "spearman_rho"] == pytest.approx(expected)


def test_the_leaderboard_of_a_mixed_report_is_the_full_one(reports: dict[str, Path]) -> None:
    both = pd.read_csv(reports["both"] / "table3.csv", index_col=0)
    full = pd.read_csv(reports["full"] / "table3.csv", index_col=0)
    pd.testing.assert_frame_equal(both, full)  # Lite runs neither join the rows nor get renamed "(2)"
    assert len(pd.read_csv(reports["both"] / "runs.csv")) == len(pd.read_csv(reports["full"] / "runs.csv"))
    page = (reports["both"] / "index.html").read_text()
    assert '<section id="lite">' in page and 'href="#lite"' in page
    assert "## Full vs Lite" in (reports["both"] / "index.md").read_text()
    assert not (reports["full"] / "lite_spearman.csv").exists() and 'id="lite"' not in (reports["full"] / "index.html").read_text()
