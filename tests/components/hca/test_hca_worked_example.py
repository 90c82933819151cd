"""The worked metric examples of the hierarchical-VQA paper (Tan, Qing, Gong, arXiv:2505.24840) through build → replies → score, and the paper's Table 8 invariants."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures.bagel_items import write_jsonl
from fixtures.hca_data import LEVELS, TAXONOMY, write_images, write_taxonomy

import biovqa
from biovqa.components.hca.build import build_hca
from biovqa.stats.hierarchy import pearson_r, scaled_hca


def _wrong_letter(item: dict) -> str:
    return next(letter for letter in "ABCD"[: len(item["options"])] if letter != item["answer"])


def test_worked_example_a_b_c(tmp_path: Path) -> None:
    images = write_images(tmp_path / "data", ["Black-footed Albatross"] * 3)
    bench = build_hca(tmp_path / "bench", taxonomy=write_taxonomy(tmp_path / "data"), images=images,
                      levels=LEVELS, template_set="cub", template=0)
    wrong = {"img001.png": 2, "img002.png": 4}  # B: family wrong; C: species wrong
    replies = []
    for item in bench.items.to_pylist():
        right = wrong.get(item["image_key"]) != item["level"]
        replies.append({"item_id": item["item_id"],
                        "response": item["answer"] if right else _wrong_letter(item)})
    out = biovqa.score(bench.root, write_jsonl(tmp_path / "p.jsonl", replies), tmp_path / "score", bootstrap=0)
    metrics = json.loads((out / "summary.json").read_text())["metrics"]
    assert {k: round(v["value"], 3) for k, v in metrics.items()} == {
        "hca": 0.333, "acc_leaf": 0.667, "por": 0.833, "spor": 0.75, "spor_prefix": 0.667, "tor": 0.667}
    assert metrics["hca"]["n"] == 3


def test_one_wrong_top_level_of_six() -> None:
    from biovqa.stats.hierarchy import hierarchical_summary

    summary = hierarchical_summary([[False, True, True, True, True, True]])
    assert {k: round(v, 3) for k, v in summary.items()} == {
        "hca": 0.0, "acc_leaf": 1.0, "por": 0.833, "spor": 0.833, "spor_prefix": 0.0, "tor": 0.8}


def test_scaled_hca_worked_example_and_pearson() -> None:
    assert round(100 * scaled_hca(19.73, 41.66), 1) == 47.4
    assert pearson_r([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson_r([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_a_perfect_model_scores_one_everywhere_and_the_floor_is_chance(tmp_path: Path) -> None:
    labels = [leaf for leaf in TAXONOMY for _ in range(3)]
    bench = build_hca(tmp_path / "bench", taxonomy=write_taxonomy(tmp_path / "data"),
                      images=write_images(tmp_path / "data", labels), levels=LEVELS, template_set="cub")
    perfect = [{"item_id": i, "response": f"({a})"} for i, a in zip(bench.items.column("item_id").to_pylist(),
                                                                     bench.items.column("answer").to_pylist())]
    summary = json.loads((biovqa.score(bench.root, write_jsonl(tmp_path / "p.jsonl", perfect), tmp_path / "s",
                                       bootstrap=0) / "summary.json").read_text())
    assert {k: v["value"] for k, v in summary["metrics"].items()} == dict.fromkeys(summary["metrics"], 1.0)
    assert summary["scaled_hca"] == 1.0 and summary["counts"] == {"images": 18, "questions": 72}
    assert set(summary["levels"]) == {"1 order", "2 family", "3 genus", "4 species"}


def test_parse_status_names_every_outcome_and_an_unread_reply_stays_wrong_in_place(tmp_path: Path) -> None:
    images = write_images(tmp_path / "data", ["Black-footed Albatross"] * 2)
    bench = build_hca(tmp_path / "bench", taxonomy=write_taxonomy(tmp_path / "data"), images=images,
                      levels=LEVELS, template_set="cub", template=0)
    items = bench.items.to_pylist()
    unread = next(i["item_id"] for i in items if i["image_key"] == "img000.png" and i["level"] == 1)
    absent = next(i["item_id"] for i in items if i["image_key"] == "img001.png" and i["level"] == 4)
    replies = [{"item_id": i["item_id"], "response": "maybe" if i["item_id"] == unread else i["answer"]}
               for i in items if i["item_id"] != absent]
    out = biovqa.score(bench.root, write_jsonl(tmp_path / "p.jsonl", replies), tmp_path / "score", bootstrap=50)
    scored = {row["item_id"]: row["parse_status"] for row in pq.read_table(out / "items.parquet").to_pylist()}
    assert scored[unread] == "unparsed" and scored[absent] == "missing"
    assert set(scored.values()) == {"parsed", "unparsed", "missing"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["format"]["n_unparsed"] == 1 and summary["format"]["n_missing"] == 1
    assert summary["metrics"]["hca"]["value"] == 0.0  # each image has one wrong level: no path is whole
    assert summary["metrics"]["acc_leaf"]["value"] == 0.5  # img001's missing leaf reply is wrong
    assert summary["bootstrap"] == {"B": 50, "seed": 42, "confidence": 0.95, "cluster": "images"}
