"""C1 report tables through the public path: the demo benchmark, predictions files,
``score_predictions``, then ``tables``. Expectations come from the per-item score tables
(``items.parquet``) with plain pandas / SciPy, never from the report code. The paper's printed
numbers are checked in test_c1_paper_values.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.stats import spearmanr

from biovqa.bench import open_bench
from biovqa.components.c1.report import figures, model_info, tables
from biovqa.components.registry import get_component
from biovqa.scoring.pipeline import load_summary, score_predictions

SHORT = ("phy", "cls", "ord", "fam", "gen", "spc", "sci", "com", "mcq")
#: score labels (the tag convention of docs/c1-report.md) → row names in the tables
#: half a unit of the third decimal (values are printed rounded half up), plus float slack
HALF = 5.0001e-4
LABELS = {"gold [specialist]": "gold", "Prior-VL": "Prior-VL", "Mixed-7B [family=Mixed]": "Mixed-7B"}


@pytest.fixture(scope="module")
def runs(demo_bench: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Three scored runs of the demo benchmark: every gold answer (tagged specialist), the floor
    replies, and a mix (gold on two items of three, the floor reply on the third)."""
    from biovqa.components.c1.floor import floor_responses

    root = tmp_path_factory.mktemp("report-runs")
    items = open_bench(demo_bench).items
    gold = items.column("answer").to_pylist()
    floor = floor_responses(items).to_pylist()
    mixed = [g if k % 3 else f for k, (g, f) in enumerate(zip(gold, floor))]
    folders = []
    for k, (label, replies) in enumerate(zip(LABELS, (gold, floor, mixed))):
        path = root / f"predictions-{k}.parquet"
        pq.write_table(pa.table({"item_id": items.column("item_id"), "response": replies}), path)
        folders.append(score_predictions(demo_bench, path, root / f"scores-{k}", options={"bootstrap": 20},
                                         label=label))
    return folders


@pytest.fixture(scope="module")
def real_summaries(runs: list[Path]) -> list[tuple[str, dict]]:
    """As `biovqa report` reads them: summary.json, NaN as null."""
    return [(load_summary(folder)["label"], load_summary(folder)) for folder in runs]


@pytest.fixture(scope="module")
def result(real_summaries) -> dict[str, pd.DataFrame]:
    return tables(real_summaries)


@pytest.fixture(scope="module")
def items(runs: list[Path]) -> pd.DataFrame:
    """Every run's per-item scores, with the model's row name."""
    frames = [pd.read_parquet(folder / "items.parquet").assign(model=name) for folder, name in zip(runs, LABELS.values())]
    frame = pd.concat(frames, ignore_index=True)
    for column in ("task", "group", "tier"):
        frame[column] = frame[column].astype(str)
    frame["unresolved"] = (~frame["resolved"].astype(bool)).astype(float)
    return frame


def test_model_info_reads_the_tag_convention() -> None:
    info = model_info("BioCLIP-2 (tol) [specialist]")
    assert (info.name, info.group) == ("BioCLIP-2 (tol)", "specialist")
    info = model_info("Qwen3-VL-30B-A3B")
    assert (info.name, info.group, info.family, info.params) == ("Qwen3-VL-30B-A3B", "vlm", "Qwen3-VL", 30.0)
    info = model_info("Phi-3.5-Vision [generalist; family=Phi-3.5, params=4.2]")
    assert (info.name, info.group, info.family, info.params) == ("Phi-3.5-Vision", "vlm", "Phi-3.5", 4.2)
    info = model_info("Llama-3.2-Vision [group=Baseline]")
    assert info.group == "baseline" and info.family is None and math.isnan(info.params)
    assert model_info("InternVL3.5-8B").params == 8.0 and model_info("InternVL3.5-8B").family == "InternVL3.5"
    assert model_info("X [specialist] (2)").name == "X (2)"  # the report writer's suffix for a repeated label


def test_table3_block_and_floor_row(result, real_summaries) -> None:
    frame = result["table3"]
    assert list(frame.columns) == ["phy", "cls", "ord", "fam", "gen", "spc", "sci", "com"]
    assert list(frame.index) == ["gold", "Prior-VL", "Mixed-7B", "Floor"]
    assert (frame.loc["gold"] == 1.0).all()
    assert frame.loc["Prior-VL"].tolist() == frame.loc["Floor"].tolist()
    assert frame.loc["Floor", "phy"] == round(real_summaries[0][1]["tasks"]["phylum"]["floor"], 3)


def test_a_floor_run_is_never_a_model_row(real_summaries) -> None:
    """A run labelled as the image-blind floor is the floor, not a model: no row in any table
    (Table 3 prints the floor rule's own row), not ranked, not among the configurations."""
    from biovqa.components.c1.report import tables

    labelled = [("floor (image-blind)" if label == "Prior-VL" else label, s) for label, s in real_summaries]
    result = tables(labelled)
    for name, frame in result.items():
        assert "floor (image-blind)" not in frame.index and "floor (image-blind)" not in frame.columns, name
    assert list(result["table3"].index) == ["gold", "Mixed-7B", "Floor"]
    assert result["table18_pooled"]["rank"].dropna().tolist() == [1]
    assert list(result["table19_per_rank"].columns[:1]) == ["EM_2cfg"]


def test_table18_ranks_generalists_and_counts_images(result, items) -> None:
    frame = result["table18_pooled"]
    assert list(frame.columns) == ["rank", "Img", "Ques", "EM", "EM_soft", "wup", "lin"]
    assert list(frame.index) == ["gold", "Mixed-7B", "Prior-VL"]  # specialist first, then by EM_soft
    assert frame["rank"].tolist() == [None, 1, 2]
    assert frame.loc["gold", "EM"] == 1.0
    one = items[items["model"] == "Prior-VL"]
    assert frame.loc["Prior-VL", "Img"] == one["source_id"].nunique()
    assert frame.loc["Prior-VL", "Ques"] == len(one)
    assert frame.loc["Prior-VL", "EM"] == pytest.approx(one["em"].mean(), abs=HALF)
    intervals = result["table18_intervals"]
    assert list(intervals.index) == list(frame.index)
    assert (intervals["EM_lo"] <= intervals["EM"]).all() and (intervals["EM"] <= intervals["EM_hi"]).all()


def test_table19_blocks_and_gap(result, items) -> None:
    frame = result["table19_per_rank"]
    assert list(frame.columns) == ["EM_3cfg", "step_3cfg", "EM_2vlm", "step_2vlm", "gap"]
    assert list(frame.index) == ["phylum", "class", "order", "family", "genus", "scientific name",
                                 "species epithet", "common name MCQ", "common name"]
    vlms = items[items["model"] != "gold"]
    for task, row in (("class", "class"), ("species", "species epithet")):
        assert frame.loc[row, "EM_3cfg"] == pytest.approx(items.loc[items["task"] == task, "em"].mean(), abs=HALF)
        assert frame.loc[row, "EM_2vlm"] == pytest.approx(vlms.loc[vlms["task"] == task, "em"].mean(), abs=HALF)
    # as printed in the paper: steps and the gap are differences of the printed means
    assert (frame["gap"] == (frame["EM_3cfg"] - frame["EM_2vlm"]).round(3)).all()
    assert frame.loc["class", "step_3cfg"] == round(frame.loc["class", "EM_3cfg"] - frame.loc["phylum", "EM_3cfg"], 3)
    assert math.isnan(frame.loc["common name MCQ", "step_2vlm"])
    fall = result["table19_fall"]
    assert list(fall.index) == ["3 configurations", "2 VLMs"]
    assert fall.loc["2 VLMs", "fall"] == round(frame.loc["phylum", "EM_2vlm"] / frame.loc["species epithet", "EM_2vlm"], 1)


def test_table20_mean_rows_by_group(result) -> None:
    frame = result["table20_recognition_recall"]
    assert list(frame.index[-2:]) == ["2-VLM mean", "3-configuration mean"]
    assert frame.loc["2-VLM mean", "mcq4"] == pytest.approx(frame.loc[["Prior-VL", "Mixed-7B"], "mcq4"].mean(), abs=HALF)


def test_table21_severity_with_unresolved_share(result, items) -> None:
    frame = result["table21_severity"]
    assert list(frame.columns) == [*SHORT, "pooled", "unres"]
    assert math.isnan(frame.loc["gold", "phy"])  # no wrong answer: undefined
    floor = items[items["model"] == "Prior-VL"]
    assert frame.loc["Prior-VL", "unres"] == pytest.approx(floor["unresolved"].mean(), abs=HALF)
    assert frame.loc["Prior-VL", "pooled"] == pytest.approx(floor["severity"].mean(), abs=HALF)
    fam = floor.loc[floor["task"] == "family", "severity"].mean()
    assert frame.loc["Prior-VL", "fam"] == pytest.approx(fam, abs=5e-3)
    assert frame.attrs["decimals"]["fam"] == 2 and frame.attrs["decimals"]["pooled"] == 3
    per_type = result["unresolved_by_type"]
    assert per_type.loc["Prior-VL", "spc"] == pytest.approx(
        floor.loc[floor["task"] == "species", "unresolved"].mean(), abs=HALF)


def test_table22_by_group_pooled_over_models(result, items) -> None:
    frame = result["table22_by_group"]
    assert list(frame.columns) == ["EM", "severity", "unresolved"]
    assert frame["EM"].is_monotonic_increasing  # sorted by EM, as printed
    by_group = items.groupby("group")
    for group in frame.index:
        assert frame.loc[group, "EM"] == pytest.approx(by_group.get_group(group)["em"].mean(), abs=HALF)
        assert frame.loc[group, "severity"] == pytest.approx(by_group.get_group(group)["severity"].mean(), abs=HALF)
        assert frame.loc[group, "unresolved"] == pytest.approx(by_group.get_group(group)["unresolved"].mean(),
                                                               abs=HALF)


def test_table23_revision_lag(result, items) -> None:
    by_rank = result["table23_revision_lag_by_rank"]
    assert list(by_rank.columns) == ["EM", "EM_soft", "gap"]
    assert by_rank.index[-1] == "all ranks"
    assert by_rank["gap"].iloc[:-1].is_monotonic_decreasing
    assert by_rank.loc["all ranks", "EM"] == pytest.approx(items["em"].mean(), abs=HALF)
    assert by_rank.loc["all ranks", "EM_soft"] == pytest.approx(items["em_soft"].mean(), abs=HALF)
    by_group = result["table23_revision_lag_by_group"]
    assert by_group["gap"].is_monotonic_decreasing and (by_group["gap"] >= 0).all()
    assert len(by_group) == items["group"].nunique()


def test_table24_spearman_between_groups(result, items) -> None:
    frame = result["table24_group_spearman"]
    groups = sorted(items["group"].unique())
    assert list(frame.index) == groups
    assert list(frame.columns)[-1] == "mean" and len(frame.columns) == len(groups) + 1
    em = items.groupby(["model", "group"])["em"].mean().unstack()
    rho = spearmanr(em[groups[0]], em[groups[1]]).statistic
    assert frame.iloc[0, 1] == pytest.approx(rho, abs=5e-3)
    assert (np.diag(frame.iloc[:, :-1].to_numpy()) == 1.0).all()
    off = frame.iloc[0, 1:-1].to_numpy(dtype=float)
    assert frame.iloc[0]["mean"] == pytest.approx(np.nanmean(off), abs=6e-3)  # cells printed at 2 decimals
    assert frame.attrs["decimals"]["Amph"] == 2 and frame.attrs["decimals"]["mean"] == 3


def test_table77_rank_by_tier(result, items) -> None:
    frame = result["table77_em_by_rank_and_tier"]
    assert set(frame.columns) <= {"Easy", "Medium", "Hard"} and "phylum" not in frame.index
    assert list(frame.index) == [r for r in ("class", "order", "family", "genus", "species epithet",
                                             "scientific name", "common name", "common name MCQ")
                                 if r in frame.index]
    cell = items[(items["task"] == "class") & (items["tier"] == frame.columns[0])]
    assert frame.loc["class", frame.columns[0]] == pytest.approx(cell["em"].mean(), abs=HALF)


def test_tables_79_to_82(result, items) -> None:
    assert result["table79_unresolved"]["unresolved"].is_monotonic_decreasing
    ranks = result["table80_em_vs_severity_rank"]
    assert list(ranks.columns) == ["EM", "severity", "EM_rank", "sev_rank", "shift"]
    assert list(ranks.index) == ["gold", "Mixed-7B", "Prior-VL"] and ranks["EM_rank"].tolist() == [1, 2, 3]
    assert ranks.loc["gold", "sev_rank"] is None  # gold is never wrong: no severity, no rank
    for model in ("Mixed-7B", "Prior-VL"):
        assert ranks.loc[model, "shift"] == ranks.loc[model, "EM_rank"] - ranks.loc[model, "sev_rank"]
    by_size = result["table81_by_size"]
    assert list(by_size.columns) == ["family", "params_B", "EM", "severity"]
    assert list(by_size.index) == ["Mixed-7B", "Prior-VL"]  # generalists only; unknown size last
    assert by_size.loc["Mixed-7B", ["family", "params_B"]].tolist() == ["Mixed", 7.0]
    spearman = result["table82_spearman_with_em"]
    assert list(spearman.index) == ["wup", "lin", "severity", "unresolved"]
    assert list(spearman.columns) == ["rho_with_EM"]
    pooled = items.groupby("model")[["em", "wup"]].mean()
    assert spearman.loc["wup", "rho_with_EM"] == pytest.approx(spearmanr(pooled["em"], pooled["wup"]).statistic,
                                                               abs=HALF)


def test_per_type_group_tier_and_hierarchy_tables(result) -> None:
    assert list(result["em_by_type"].columns)[-1] == "pooled"
    assert result["em_by_group"].shape == (3, 10)
    assert set(result["em_by_tier"].columns) <= {"Easy", "Medium", "Hard", "Degenerate"}
    hierarchy = result["hierarchy"]
    assert hierarchy.loc["gold", "hca"] == 1.0 and hierarchy.loc["gold", "hca_scaled"] == 1.0
    assert (hierarchy["hca"] <= hierarchy["acc_leaf"]).all()


def test_every_table_has_a_title_and_its_printed_precision(result) -> None:
    for name, frame in result.items():
        assert frame.attrs.get("title"), name
        for column, places in frame.attrs["decimals"].items():
            values = frame[column].dropna().astype(float)
            assert (values.round(places) == values).all(), (name, column)


def test_html_report_renders_every_table(runs: list[Path], result, tmp_path: Path) -> None:
    from biovqa.reporting import write_report

    page = write_report(runs, tmp_path / "report").read_text(encoding="utf-8")
    import html

    for frame in result.values():  # every table under its own heading
        assert f"{html.escape(frame.attrs['title'])}</h3>" in page, frame.attrs["title"]
    for name in result:
        assert (tmp_path / "report" / f"c1_{name}.md").exists(), name
    assert "<NA>" not in page and ">nan<" not in page.lower()


def test_figure_is_written(real_summaries, tmp_path: Path) -> None:
    paths = figures(real_summaries, tmp_path)
    assert [p.name for p in paths] == ["c1_em_by_rank.png"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_registered_reporter(real_summaries) -> None:
    reporter = get_component("c1").load("reporter")
    assert "table3" in reporter(real_summaries)
