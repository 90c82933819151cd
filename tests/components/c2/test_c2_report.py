"""C2 report tables (Table 3 C2 block, Tables 30–35) and the category and family figures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "score" / "c2"))
from fixtures.c2_items import c2_item, predictions_for, write_c2_bench

from biovqa.components.c2 import report
from biovqa.components.c2.score import score


@pytest.fixture
def summaries(tmp_path):
    options = ["purple", "blue", "green", "yellow"]
    rows = [c2_item("attr_bare_value", f"a{k}", "blue", options, part="wing", property="color",
                    attribute_group="has_wing_color") for k in range(6)]
    rows += [c2_item("visibility_side", f"v{k}", "Both", ["Left", "Right", "Both", "None"], part="eye") for k in range(4)]
    rows += [c2_item("open_genus", f"g{k}", g, class_name=c, genus=g)
             for k, (c, g) in enumerate([("California Gull", "Larus"), ("Fox Sparrow", "Passerella")])]
    bench = write_c2_bench(tmp_path / "bench", rows)
    ids = bench.items.column("item_id").to_pylist()
    strong = predictions_for(bench, ["(B) blue" if i[0] == "a" else "(C) Both" if i[0] == "v" else
                                     ("Larus" if i == "g0" else "Passerella") for i in ids])
    weak = predictions_for(bench, ["(A) purple" if i[0] == "a" else "(A) Left" if i[0] == "v" else "Corvus"
                                   for i in ids])
    return [("strong", score(bench, strong, {"bootstrap": 50}).summary),
            ("weak", score(bench, weak, {"bootstrap": 50}).summary)]


def test_tables_layout_and_values(summaries):
    out = report.tables(summaries)
    assert list(out["table3"].columns) == ["model", "sal", "mrp", "loc", "nam"]
    assert out["table3"]["model"].tolist() == ["strong", "weak", "Chance (cags = 0 by construction)"]
    strong = summaries[0][1]
    assert out["table3"].loc[0, "mrp"] == round(strong["categories"]["morphological"]["cags"]["value"], 3)
    lead = out["table30_leaderboard"]
    assert list(lead.columns) == ["rank", "model", "EM", "GS_raw", "cags", "ci95_lo", "ci95_hi", "severity"]
    assert lead["model"].tolist() == ["strong", "weak"] and lead["rank"].tolist() == [1, 2]
    assert lead.loc[0, "cags"] == 1.0
    assert list(out["table31_em_format"].columns) == ["model", "acc_all", "acc_mcq", "acc_open", "parse_rate",
                                                      "mismatch_rate", "choose_A_rate"]
    # one unit convention: fractions in [0, 1], 3 decimals, like every other table
    assert out["table31_em_format"].loc[0, "acc_all"] == 1.0
    assert out["table31_em_format"].loc[1, "acc_all"] == round(summaries[1][1]["pooled"]["em"]["value"], 3)
    assert list(out["table32_categories"].columns) == ["model", "anatomical", "morphological", "salience", "naming"]
    fam = out["table33_cags_by_family"]
    assert fam.columns.tolist()[1:4] == ["attr_bare", "attr_group", "cat_mcq"]
    assert fam["model"].tolist()[-1] == "mean"
    assert fam.loc[2, "vis_side"] == round((1.0 + fam.loc[1, "vis_side"]) / 2, 3)
    assert out["table34_em_by_family"].loc[0, "attr_bare"] == 1.0
    difficulty = out["table35_family_difficulty"]
    assert set(difficulty["family"]) == {"attr_bare_value", "visibility_side", "open_genus"}
    assert difficulty["mean"].is_monotonic_increasing


def test_figures_are_written_deterministically(summaries, tmp_path):
    paths = report.figures(summaries, tmp_path / "fig")
    assert [p.name for p in paths] == ["c2_cags_by_category.png", "c2_cags_by_family.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in paths)
    again = report.figures(summaries, tmp_path / "again")
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in paths]


def test_tables_tolerate_missing_families():
    out = report.tables([("empty", {"pooled": {}, "categories": {}, "families": {}, "format": {}})])
    assert out["table30_leaderboard"].shape[0] == 1
    assert out["table35_family_difficulty"].empty


def test_a_floor_run_is_listed_in_table3_only(summaries):
    """A floor run among the models: its measured cags in the Table 3 block, never ranked in
    Table 30 nor averaged in a family table's mean row."""
    with_floor = [*summaries, ("floor (image-blind)", summaries[1][1])]
    out = report.tables(with_floor)
    assert "floor (image-blind)" in out["table3"]["model"].tolist()
    assert out["table30_leaderboard"]["model"].tolist() == ["strong", "weak"]
    assert out["table30_leaderboard"]["rank"].tolist() == [1, 2]
    for name in ("table31_em_format", "table32_categories", "table33_cags_by_family", "table35_family_difficulty"):
        assert "floor (image-blind)" not in out[name].to_string(), name
    mean_row = out["table33_cags_by_family"].iloc[-1].drop("model").astype(float).fillna(-9)
    assert mean_row.tolist() == report.tables(summaries)["table33_cags_by_family"].iloc[-1].drop(
        "model").astype(float).fillna(-9).tolist()  # the mean over the two models alone
