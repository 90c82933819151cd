"""The registered C2 scorer, end to end: CUB fixture → `build_c2` → score."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from fixtures.c2_items import c2_item, predictions_for

from biovqa.bench.folder import open_bench
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


def test_options_read_as_parquets_dictionary_score_as_plain_text(make_bench):
    """`biovqa score` opens the bench afresh and reads the options dictionary-encoded, as Parquet
    stores them; a bench whose items were already read holds them as plain strings. Both give
    the same per-item table and summary."""
    options = ["purple", "blue", "green", "yellow"]
    rows = [c2_item("attr_bare_value", f"i{k}", options[k % 4], options, part="wing", property="color",
                    attribute_group="has_wing_color") for k in range(8)]
    rows.append(c2_item("visibility_side", "s1", "Left", ["Left", "Right", "Both", "None"], part="eye"))
    rows.append(c2_item("open_genus", "g1", "Larus", class_name="Western Gull", genus="Larus"))
    bench = make_bench(rows)
    replies = ["(B) blue", "(A) purple", "green", "nothing", "(D) yellow", "(C) green", "(A)", None, "(A) Left",
               "Larus"]
    predictions = predictions_for(bench, replies)  # reads bench.items: plain strings
    fresh = open_bench(bench.root)
    read_fresh = fresh.item_columns(["options"], dictionaries=["options.list.element"])
    assert pa.types.is_dictionary(read_fresh.schema.field("options").type.value_type)
    plain = score(bench, predictions, {"bootstrap": 50})
    dictionary = score(fresh, predictions, {"bootstrap": 50})
    assert dictionary.items.equals(plain.items)
    assert dictionary.items.column("gold").to_pylist()[:3] == ["purple", "blue", "green"]
    assert json.dumps(dictionary.summary, sort_keys=True) == json.dumps(plain.summary, sort_keys=True)
