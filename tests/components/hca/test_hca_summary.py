"""The hierarchical VQA's aggregation under the common ``summarize(scored, items, options)``: the
bench manifest's facts it needs (the dataset name, the levels asked but not scored) reach it as
columns of the score table, and ``-O score_unscored_levels=true`` still scores those levels."""

from __future__ import annotations

import inspect
from pathlib import Path

import pyarrow as pa
from fixtures.hca_data import LEVELS, TAXONOMY, write_images, write_taxonomy

from biovqa.bench.folder import Bench
from biovqa.components.hca.build import build_hca
from biovqa.components.hca.prompts import LETTERS
from biovqa.components.hca.score import score, score_items
from biovqa.components.hca.summary import summarize
from biovqa.components.registry import get_component


def _bench(tmp_path: Path) -> Bench:
    """A visual bench named ``toy`` whose manifest leaves level 1 out of the paths (as the authors'
    iNat items leave the kingdom)."""
    data = tmp_path / "data"
    built = build_hca(tmp_path / "bench", taxonomy=write_taxonomy(data), levels=LEVELS, dataset="toy",
                      images=write_images(data, [leaf for leaf in TAXONOMY for _ in range(2)]))
    return Bench(root=built.root, manifest={**built.manifest, "unscored_levels": [1]})


def _level_one_wrong(items: pa.Table) -> pa.Table:
    """Replies right at every level but level 1, where each names a wrong option."""
    replies = [answer if level != 1 else next(x for x in LETTERS[:len(options)] if x != answer)
               for answer, level, options in zip(*(items.column(c).to_pylist() for c in ("answer", "level", "options")))]
    return pa.table({"item_id": items.column("item_id"), "response": pa.array(replies, pa.string()),
                     "status": pa.array(["ok"] * items.num_rows, pa.string())})


def test_summarize_takes_the_common_signature() -> None:
    assert list(inspect.signature(summarize).parameters) == ["scored", "items", "options"]


def test_the_manifest_facts_reach_the_summary_through_the_score_table(tmp_path: Path) -> None:
    bench = _bench(tmp_path)
    predictions = _level_one_wrong(bench.items)
    options = get_component("hca").resolve_score_options({"bootstrap": 0})
    result = score(bench, predictions, options)
    levels = result.items.column("level").to_pylist()
    assert result.items.column("unscored_level").to_pylist() == [level == 1 for level in levels]
    assert set(result.items.column("dataset").to_pylist()) == {"toy"}
    summary = result.summary
    assert summary["dataset"] == "toy" and summary["unscored_levels"] == [1]
    assert summary["metrics"]["hca"]["value"] == 1.0  # the wrong level is not on any path
    assert summary["levels"]["1 " + LEVELS[0]]["value"] == 0.0  # but still reported as asked

    scored_too = score(bench, predictions, options.replace(score_unscored_levels=True)).summary
    assert scored_too["unscored_levels"] == [] and scored_too["metrics"]["hca"]["value"] == 0.0


def test_a_table_without_the_bench_columns_has_no_dataset_and_scores_every_level(tmp_path: Path) -> None:
    bench = _bench(tmp_path)
    table = score_items(bench.items, _level_one_wrong(bench.items))
    summary = summarize(table, bench.items, {"bootstrap": 0, "seed": 0, "confidence": 0.95})
    assert summary["dataset"] is None and summary["unscored_levels"] == []
    assert summary["metrics"]["hca"]["value"] == 0.0
