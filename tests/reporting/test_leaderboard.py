"""Table 3 and the Table 4 Holm markers recomputed from the paper's printed numbers
(the paper's Tables 3 and 4; Holm's correction over the six component pairs)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from biovqa.components.registry import get_component
from biovqa.reporting.leaderboard import (FLOOR, GENERALIST, MEAN_ROW, SPECIALIST, Run, build_leaderboard,
                                          leaderboard_table, model_name, parse_label, read_label,
                                          repeated_label)
from biovqa.stats.inference import holm
from biovqa.stats.ranks import spearman_p

def test_table3_mean_row_reproduces_the_paper(paper_tables: dict[int, pd.DataFrame], paper_runs: list[Run]) -> None:
    paper = paper_tables[3]
    columns = {c: list(get_component(c).table3) for c in ("c1", "c2", "c3", "c4")}
    board = build_leaderboard(paper_runs, columns)
    printed = paper.set_index("model").loc["Mean"]
    assert len(board.generalists) == 18 and board.value.shape[1] == 22
    for col in board.value.columns:
        assert abs(board.value.loc[MEAN_ROW, col] - float(printed[col])) <= 0.0006, col
    # specialists first, the floor last, kinds from the label tags
    assert list(board.value.index[:2]) == ["BioCLIP-2 (tol)", "MegaDescriptor"]
    assert board.value.index[-1] == "floor (image-blind)" and board.kind.iloc[-1] == FLOOR
    assert board.value.loc["floor (image-blind)", "phy"] == 0.5
    # best / second / worst per column over the 18 generalists (BioCLIP's .925 is not "best")
    assert board.marks.loc["InternVL3-38B", "phy"] == "best"
    assert board.marks.loc["Qwen3-VL-8B", "phy"] == "second"
    assert board.marks.loc["LLaVA-NeXT-Mistral", "phy"] == "worst"
    assert board.marks.loc["BioCLIP-2 (tol)", "phy"] == ""
    # the paper's overall order puts the three consistently strong Qwen/InternVL models on top
    assert set(board.generalists[:3]) <= {"Qwen3-VL-32B", "Qwen3-VL-30B-A3B", "InternVL3-38B", "Qwen3-VL-8B"}
    shown = leaderboard_table(board)
    assert shown.loc["Qwen3-VL-32B", "phy"] == "0.831" and shown.loc[MEAN_ROW, "kind"] == "mean"


def test_ties_are_overlapping_intervals_and_rank_ranges_follow() -> None:
    def run(name: str, v: float, lo: float, hi: float) -> Run:
        return Run(name, "c4", {"table3": {"acc": {"value": v, "lo": lo, "hi": hi, "n": 100}}})

    board = build_leaderboard([run("a", .70, .65, .75), run("b", .68, .62, .72), run("c", .50, .45, .55)],
                              {"c4": ["acc"]})
    assert board.marks["acc"].to_dict() == {"a": "best", "b": "second tie", "c": "worst", MEAN_ROW: ""}
    assert (board.rank_lo.loc["a", "acc"], board.rank_hi.loc["a", "acc"]) == (1, 2)
    assert (board.rank_lo.loc["c", "acc"], board.rank_hi.loc["c", "acc"]) == (3, 3)
    assert leaderboard_table(board).loc["b", "acc"] == "0.680 [0.620, 0.720]"


def test_label_kinds() -> None:
    assert read_label("BioCLIP-2 (tol) [specialist]") == ("BioCLIP-2 (tol)", SPECIALIST)
    assert read_label("Floor rule [group=baseline]") == ("Floor rule", FLOOR)
    assert read_label("floor (image-blind)") == ("floor (image-blind)", FLOOR)
    assert read_label("Qwen3-VL-8B [vlm; params=8]") == ("Qwen3-VL-8B", GENERALIST)


def test_one_label_reader_for_the_leaderboard_and_the_component_tables() -> None:
    from biovqa.components.c1.report import model_info
    from biovqa.components.c4.report import _is_specialist, _plain

    label = "MegaDescriptor  [group=specialist, params=0.2B] (zebra) [seed=1]"
    parsed = parse_label(label)
    assert parsed.name == "MegaDescriptor (zebra)"
    assert parsed.tags == (("group", "specialist"), ("params", "0.2B"), ("seed", "1"))
    assert parse_label("Qwen3-VL-8B [vlm]").tags == (("vlm", None),)
    assert read_label(label)[1] == SPECIALIST and _is_specialist(label)
    assert _plain(label) == parsed.name == model_info(label).name
    assert (model_info(label).group, model_info(label).params) == ("specialist", 0.2)


def test_a_models_runs_and_its_text_control_meet_under_one_name() -> None:
    """The HCA table pairing a visual run with its text-only control reads the model through the
    leaderboard's label reader, whatever tags or repeat suffix the labels carry."""
    second = repeated_label("Qwen3-VL-8B [params=8]", 2)
    assert second == "Qwen3-VL-8B [params=8] (2)"
    assert model_name(second) == model_name("Qwen3-VL-8B [text]") == model_name(" Qwen3-VL-8B ") == "Qwen3-VL-8B"
    # a parenthesis that is part of the name stays
    assert model_name("BioCLIP-2 (tol) [specialist]") == "BioCLIP-2 (tol)"


def test_table4_holm_markers_from_the_printed_rhos(paper_tables: dict[int, pd.DataFrame]) -> None:
    table4 = paper_tables[4]
    rhos = [float(r) for r in table4["rho"]]
    p = [spearman_p(r, 18) for r in rhos]
    adjusted, rejected = holm(p)
    assert [("yes" if r else "no") for r in rejected] == table4["significant_after_holm"].tolist()
    # Holm's correction of Table 4's pairs: p of C2–C4 = .0291, C1–C4 = .0727; Holm-adjusted C3–C4 .0216, C2–C4 .0582
    by_pair = dict(zip(table4["pair"], zip(p, adjusted)))
    assert round(by_pair["C2-C4"][0], 4) == 0.0291 and round(by_pair["C1-C4"][0], 4) == 0.0727
    assert round(by_pair["C3-C4"][1], 4) == 0.0216 and round(by_pair["C2-C4"][1], 4) == 0.0582
    assert math.isclose(float(np.max(adjusted)), 0.0727, abs_tol=5e-5)


def scored_run(root: Path, name: str, ids: list[str], scores: list[float]) -> Run:
    """A C1 run whose score folder ``root/name`` holds only what paired differences read: each
    item's id and score."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = root / name
    folder.mkdir()
    pq.write_table(pa.table({"item_id": ids, "score": scores}), folder / "items.parquet")
    return Run(name, "c1", {"table3": {}}, folder)


def test_paired_differences_on_shared_items(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from biovqa.reporting.paired import paired_differences

    ids = [f"i{k}" for k in range(40)]
    a = scored_run(tmp_path, "a", ids, [1.0] * 40)
    b = scored_run(tmp_path, "b", ids[:30], [1.0] * 15 + [0.0] * 15)  # shares 30 items with a
    c = scored_run(tmp_path, "c", ids[:30], [1.0] * 14 + [0.0] * 16)
    frame = paired_differences([a, b, c], ["a", "b", "c"], B=500)
    assert frame[["model_a", "model_b", "items"]].values.tolist() == [["a", "b", 30], ["b", "c", 30]]
    first, second = frame.iloc[0], frame.iloc[1]
    assert first["difference"] == 0.5 and first["lo"] > 0 and first["verdict"] == "a better"
    assert math.isclose(second["difference"], 1 / 30) and second["lo"] <= 0 <= second["hi"]
    assert second["verdict"] == "tie"


def test_paired_pairs_drawn_together_get_their_own_intervals(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Adjacent pairs over the same number of shared items share one bootstrap call; each gets the
    interval it gets alone. A repeated item id counts once (its first row); a NaN score drops the item."""
    from biovqa.reporting.paired import paired_differences

    rng = np.random.default_rng(3)

    ids = [f"i{k}" for k in range(300)]
    a = scored_run(tmp_path, "a", ids + ["i0"], [*(rng.random(300) < 0.7).astype(float), 0.0])  # i0 again: ignored
    b = scored_run(tmp_path, "b", ids, list((rng.random(300) < 0.6).astype(float)))
    c = scored_run(tmp_path, "c", ids, list((rng.random(300) < 0.5).astype(float)))
    d = scored_run(tmp_path, "d", ids, [np.nan, *(rng.random(299) < 0.4).astype(float)])  # i0 unscored for d
    together = paired_differences([a, b, c, d], ["a", "b", "c", "d"], B=300)
    alone = pd.concat([paired_differences([x, y], [x.name, y.name], B=300) for x, y in ((a, b), (b, c), (c, d))],
                      ignore_index=True)
    pd.testing.assert_frame_equal(together, alone)
    assert together["items"].tolist() == [300, 300, 299]


def test_a_text_only_control_is_its_own_row_never_the_visual_one() -> None:
    """The HCA text-only control (image replaced by the leaf label) reaches Acc_leaf 1.0 by design:
    it must not fill the model's visual row, nor be ranked or averaged."""
    from biovqa.reporting.leaderboard import CONTROL

    def run(label: str, kind: str, leaf: float, hca: float) -> Run:
        table3 = {"hca": {"value": hca, "lo": hca - .02, "hi": hca + .02, "n": 50},
                  "leaf": {"value": leaf, "lo": leaf - .02, "hi": leaf + .02, "n": 50}}
        return Run(label, "hca", {"table3": table3, "kind": kind})

    runs = [run("Qwen3-VL-8B", "visual", .41, .26), run("Qwen3-VL-8B", "text", 1.0, .64),
            run("Gemma-3-12B", "visual", .35, .20), run("Gemma-3-12B", "text", 1.0, .58)]
    # the text run listed first must not win either
    board = build_leaderboard([runs[1], runs[0], runs[3], runs[2]], {"hca": ["hca", "leaf"]})
    assert board.value.loc["Qwen3-VL-8B", "leaf"] == .41 and board.value.loc["Qwen3-VL-8B", "hca"] == .26
    control = "Qwen3-VL-8B (text-only control)"
    assert board.value.loc[control, "leaf"] == 1.0 and board.kind[control] == CONTROL
    assert board.generalists == ["Qwen3-VL-8B", "Gemma-3-12B"]
    assert board.value.loc[MEAN_ROW, "leaf"] == (.41 + .35) / 2
    assert board.marks.loc[control, "leaf"] == "" and (board.lo.loc[control, "leaf"], board.hi.loc[control, "leaf"]) == (.98, 1.02)
    assert list(board.value.index).index(control) > list(board.value.index).index(MEAN_ROW)


def test_floor_rows_keep_their_intervals() -> None:
    runs = [Run(name, "c4", {"table3": {"acc": {"value": v, "lo": v - .05, "hi": v + .05, "n": 100}}})
            for name, v in (("a", .7), ("b", .6), ("c", .55), ("floor (image-blind)", .5))]
    board = build_leaderboard(runs, {"c4": ["acc"]})
    assert leaderboard_table(board).loc["floor (image-blind)", "acc"] == "0.500 [0.450, 0.550]"
    assert board.value.loc[MEAN_ROW, "acc"] == (.7 + .6 + .55) / 3 and "floor (image-blind)" not in board.generalists


def test_paired_differences_of_few_values_use_class_counts_with_the_same_distribution(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """0/1 item scores give differences in {−1, 0, 1}: resampled as one multinomial over those
    values per replicate, an interval that agrees with item-by-item draws up to Monte Carlo noise;
    graded scores (as many values as items) keep the item draws."""
    import biovqa.stats.bootstrap as bootstrap
    from biovqa.reporting.paired import paired_differences

    rng = np.random.default_rng(11)
    n = 4000
    ids = [f"i{k}" for k in range(n)]
    a = scored_run(tmp_path, "a", ids, list((rng.random(n) < 0.62).astype(float)))
    b = scored_run(tmp_path, "b", ids, list((rng.random(n) < 0.58).astype(float)))
    graded = scored_run(tmp_path, "g", ids, list(rng.random(n)))
    used: list[bool] = []
    real = bootstrap.partition_replicates

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        used.append(bool(kwargs.get("classes")))
        return real(*args, **kwargs)

    monkeypatch.setattr(bootstrap, "partition_replicates", spy)
    few = paired_differences([a, b], ["a", "b"], B=2000).iloc[0]
    assert used == [True]
    monkeypatch.setattr(bootstrap, "partition_replicates", lambda *args, **kwargs: real(*args, **{**kwargs, "classes": False}))
    items = paired_differences([a, b], ["a", "b"], B=2000).iloc[0]
    assert few["difference"] == items["difference"]
    # the interval's half-width is about 1.96 × 0.0106 here; two runs of 2000 replicates agree to
    # well within a tenth of it
    assert abs(few["lo"] - items["lo"]) < 0.003 and abs(few["hi"] - items["hi"]) < 0.003
    monkeypatch.setattr(bootstrap, "partition_replicates", spy)
    used.clear()
    paired_differences([a, graded], ["a", "g"], B=50)
    assert used == [False]


def test_table3_names_the_confidence_its_intervals_were_scored_at() -> None:
    """Scored with --confidence 0.9, Table 3's intervals are 90% ones and the titles say so; runs
    scored at different levels are each named, never called 95%."""
    from biovqa.reporting.leaderboard import interval_label, leaderboard_table, leaderboard_values

    def run(label: str, confidence: float | None) -> Run:
        summary: dict = {"table3": {"acc": {"value": .7, "lo": .65, "hi": .75, "n": 100}}}
        if confidence is not None:
            summary["bootstrap"] = {"B": 1000, "seed": 42, "confidence": confidence}
        return Run(label, "c4", summary)

    board = build_leaderboard([run("A", .9), run("B", .9)], {"c4": ["acc"]})
    assert interval_label(board) == "90% CI"
    assert "value [90% CI]" in leaderboard_table(board).attrs["title"]
    assert "(90% CI)" in leaderboard_values(board).attrs["title"]
    mixed = build_leaderboard([run("A", .9), run("B", .95), run("C", None)], {"c4": ["acc"]})
    assert interval_label(mixed) == "CI at 90% or 95%, as each run was scored"
    assert interval_label(build_leaderboard([run("A", None)], {"c4": ["acc"]})) == "95% CI"
