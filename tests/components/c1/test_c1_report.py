from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pytest

from biovqa.components.registry import get_component
from biovqa.bench import open_bench
from biovqa.components.c1.report import figures, tables
from biovqa.components.c1.score import score
from biovqa.scoring.pipeline import _jsonable

# Table 72 per-type EM of two models, as summary blocks
PAPER_EM = {
    "Qwen3-VL-30B-A3B": (.864, .731, .757, .612, .417, .072, .221, .107, .772),
    "Qwen3-VL-32B": (.831, .615, .712, .612, .444, .066, .244, .078, .809),
}
TASKS = ("phylum", "class", "order", "family", "genus", "species", "scientific_name", "common_name",
         "common_name_mcq")


def paper_summary(values: tuple[float, ...]) -> dict:
    tasks = {t: {"em": {"value": v, "lo": v - .01, "hi": v + .01}, "floor": .5} for t, v in zip(TASKS, values)}
    mcq, open_ = values[-1], values[-2]
    return {"tasks": tasks, "recognition_recall": {"mcq": {"value": mcq}, "open": {"value": open_},
                                                   "gap": {"value": mcq - open_}, "ratio": {"value": mcq / open_}}}


@pytest.fixture(scope="module")
def real_summaries(demo_bench: Path) -> list[tuple[str, dict]]:
    """Two scored runs of the demo benchmark: every gold answer, and the floor replies; passed
    through JSON like `biovqa report` reads them (NaN → null)."""
    from biovqa.components.c1.build import floor_responses

    bench = open_bench(demo_bench)
    items = bench.items
    out = []
    for label, replies in (("gold", items.column("answer")), ("floor", floor_responses(items))):
        predictions = pa.table({"item_id": items.column("item_id"), "response": replies,
                                "status": ["ok"] * items.num_rows})
        summary = score(bench, predictions, {"bootstrap": 20}).summary
        out.append((label, json.loads(json.dumps(_jsonable(summary)))))
    return out


def test_table3_block_and_floor_row(real_summaries) -> None:
    frame = tables(real_summaries)["table3"]
    assert list(frame.columns) == ["phy", "cls", "ord", "fam", "gen", "spc", "sci", "com"]
    assert list(frame.index) == ["gold", "floor", "Floor"]
    assert (frame.loc["gold"] == 1.0).all()
    assert frame.loc["floor"].tolist() == frame.loc["Floor"].tolist()
    floors = real_summaries[0][1]["tasks"]
    assert frame.loc["Floor", "phy"] == round(floors["phylum"]["floor"], 3)


def test_pooled_and_per_type_tables(real_summaries) -> None:
    result = tables(real_summaries)
    pooled = result["table18_pooled"]
    assert list(pooled.index) == ["gold", "floor"]  # sorted by EM_soft
    assert pooled.loc["gold", "EM"] == 1.0 and pooled.loc["gold", "rank"] == 1
    assert pooled.loc["floor", "EM"] == round(real_summaries[1][1]["pooled"]["em"]["value"], 3)
    assert list(result["em_by_type"].columns)[-1] == "pooled"
    assert math.isnan(result["severity_by_type"].loc["gold", "phy"])  # no wrong answer: undefined
    assert result["em_by_group"].shape == (2, 10)
    assert result["hierarchy"].loc["gold", "hca"] == 1.0
    assert set(result["em_by_tier"].columns) <= {"Easy", "Medium", "Hard", "Degenerate"}
    for frame in result.values():
        assert frame.select_dtypes("number").apply(lambda c: (c.dropna().round(3) == c.dropna()).all()).all()


def test_paper_layouts_from_table_72_values() -> None:
    summaries = [(label, paper_summary(values)) for label, values in PAPER_EM.items()]
    result = tables(summaries)
    assert result["table3"].loc["Qwen3-VL-32B", "sci"] == .244
    per_rank = result["table19_per_rank"]
    assert per_rank.loc["phylum", "EM"] == pytest.approx((.864 + .831) / 2, abs=5e-4)
    assert per_rank.loc["class", "step"] == pytest.approx((.731 + .615 - .864 - .831) / 2, abs=5e-4)
    assert per_rank.loc["common name", "step"] == pytest.approx((.107 + .078 - .772 - .809) / 2, abs=5e-4)
    gap = result["table20_recognition_recall"]
    assert list(gap.index) == ["Qwen3-VL-32B", "Qwen3-VL-30B-A3B", "mean"]  # Table 20: sorted by gap
    assert gap.loc["Qwen3-VL-32B", "gap"] == .731
    assert gap.loc["Qwen3-VL-30B-A3B", "gap"] == .665


def test_figure_is_written(real_summaries, tmp_path: Path) -> None:
    paths = figures(real_summaries, tmp_path)
    assert [p.name for p in paths] == ["c1_em_by_rank.png"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_registered_reporter(real_summaries) -> None:
    reporter = get_component("c1").load("reporter")
    assert "table3" in reporter(real_summaries)
