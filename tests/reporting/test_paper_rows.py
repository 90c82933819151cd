"""`biovqa report --with-paper`: the paper's published Table 3 rows beside the report's models,
marked published, never ranked or averaged; the figures equal the printed ones."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from biovqa.reporting.paper import PUBLISHED, published_table3

#: cells read off the paper's printed Table 3 (model, column, value)
PRINTED = (("Qwen3-VL-32B", "phy", .831), ("Qwen3-VL-32B", "acc", .636), ("InternVL3-38B", "phy", .911),
           ("Gemma-4-12B", "sal", .592), ("Molmo2-8B", "view", .483), ("Qwen2.5-VL-7B", "sci", .269),
           ("Qwen2.5-VL-3B", "ocr", .904), ("Pixtral-12B", "rpos", .266), ("LLaVA-NeXT-Vicuna", "dprime", .000),
           ("Llama-3.2-Vision", "cnt", .724), ("LLaVA-NeXT-Mistral", "com", .004), ("BioCLIP-2 (tol)", "spc", .545),
           ("MegaDescriptor", "dprime", .733), ("Mean", "loc", .370), ("Floor", "lcl", .415), ("Floor", "cnt", .501))


def test_published_rows_are_the_papers_printed_values() -> None:
    rows = {row.model: row for row in published_table3()}
    assert [r.kind for r in rows.values()].count("vlm") == 18 and len(rows) == 22
    assert [r.model for r in published_table3()][:3] == ["BioCLIP-2 (tol)", "MegaDescriptor", "Qwen3-VL-32B"]
    assert [rows[m].rank for m in ("Qwen3-VL-32B", "Qwen3-VL-30B-A3B", "LLaVA-NeXT-Mistral")] == [1, 2, 18]
    for model, column, value in PRINTED:
        assert rows[model].values[column] == value, (model, column)
    assert "phy" not in rows["MegaDescriptor"].values and "sal" not in rows["BioCLIP-2 (tol)"].values
    # the paper's Mean row is the mean of its 18 models (to the printed rounding)
    vlms = [r for r in rows.values() if r.kind == "vlm"]
    for column, mean in rows["Mean"].values.items():
        assert abs(sum(r.values[column] for r in vlms) / 18 - mean) <= 0.0006, column


def test_published_rows_match_the_transcribed_results(paper_tables: dict[int, pd.DataFrame]) -> None:
    printed = paper_tables[3].set_index("model")
    for row in published_table3():
        for column, value in row.values.items():
            assert float(printed.loc[row.model, column]) == value, (row.model, column)


@pytest.mark.slow
def test_report_with_paper_adds_marked_unranked_rows(scored_runs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "report"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    result = subprocess.run([sys.executable, "-m", "biovqa", "report", *map(str, scored_runs), "-o", str(out),
                             "--with-paper"], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    rows = {r["model"]: r for r in csv.DictReader((out / "table3.csv").open(encoding="utf-8"))}
    assert rows["Qwen3-VL-32B (published)"]["kind"] == PUBLISHED and rows["Qwen3-VL-32B (published)"]["phy"] == "0.831"
    assert rows["Floor (published)"]["cnt"] == "0.501" and rows["Qwen3-VL-32B (published)"]["phy_lo"] == ""
    assert "MegaDescriptor (published)" not in rows  # C4 only: this report has no C4 column
    vlms = [r for r in rows.values() if r["kind"] == "vlm"]
    assert abs(float(rows["Mean"]["phy"]) - sum(float(r["phy"]) for r in vlms) / len(vlms)) < 1e-9
    ranks = list(csv.DictReader((out / "table3_rank_ranges.csv").open(encoding="utf-8")))
    assert all("published" not in r["model"] for r in ranks)
    html = (out / "index.html").read_text(encoding="utf-8")
    assert html.count("published, not re-run") >= 20 and "the paper&#39;s Table 3" in html
    without = tmp_path / "plain"
    subprocess.run([sys.executable, "-m", "biovqa", "report", *map(str, scored_runs), "-o", str(without)],
                   capture_output=True, text=True, env=env, timeout=600, check=True)
    assert "(published)" not in (without / "table3.csv").read_text(encoding="utf-8")
