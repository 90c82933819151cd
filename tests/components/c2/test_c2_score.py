"""The registered C2 scorer, end to end: CUB fixture → `build_c2` → score."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from biovqa.components.c2 import build
from biovqa.components.c2.floor import floor_responses
from biovqa.components.registry import get_component
from biovqa.bench.folder import write_parquet
from biovqa.components.c2.score import score
from biovqa.synthetic import write_cub


def test_registered_scorer_is_this_one():
    """The registry hands out this scorer, wrapped so that its options are resolved once."""
    assert get_component("c2").load("scorer").__wrapped__ is score


@pytest.mark.slow
def test_build_then_score(tmp_path):
    cub = write_cub(tmp_path / "src", n_classes=6, images_per_class=2)
    bench = build.build_c2(cub, tmp_path / "bench")
    items = bench.items
    rows = items.to_pylist()
    perfect = [f"({r['answer_letter']}) {r['answer']}" if r["options"] else r["answer"] for r in rows]
    predictions = pa.table({"item_id": items.column("item_id"), "response": pa.array(perfect),
                            "status": pa.array(["ok"] * len(rows))})
    result = score(bench, predictions, {"bootstrap": 100})
    assert result.items.num_rows == items.num_rows
    assert set(result.items.column("parse_status").to_pylist()) == {"parsed"}
    assert result.summary["pooled"]["cags"]["value"] == 1.0 and result.summary["pooled"]["em"]["value"] == 1.0
    assert set(result.summary["families"]) == set(items.column("task").to_pylist())

    floor = floor_responses(items)
    floor_predictions = pa.table({"item_id": items.column("item_id"), "response": floor,
                                  "status": pa.array(["ok"] * len(rows))})
    first = score(bench, floor_predictions, {"bootstrap": 100})
    second = score(bench, floor_predictions, {"bootstrap": 100})
    write_parquet(first.items, tmp_path / "a.parquet")
    write_parquet(second.items, tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert json.dumps(first.summary, sort_keys=True) == json.dumps(second.summary, sort_keys=True)
    assert first.summary["pooled"]["cags"]["value"] < 1.0
