"""The text-only control (the LLM-as-bottleneck control of the hierarchical-VQA paper (Tan, Qing, Gong, arXiv:2505.24840)): leaf auto-correct, dedup, genus-leak guard, and the
text-vs-visual comparison (scaled HCA, Pearson r) in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.bagel_items import write_jsonl
from fixtures.hca_data import LEVELS, TAXONOMY, write_images, write_taxonomy

import biovqa
from biovqa.components.hca.build import build_hca

BINOMIALS = {"Black-footed Albatross": "Phoebastria nigripes", "Laysan Albatross": "Phoebastria immutabilis",
             "Pomarine Jaeger": "Stercorarius pomarinus", "Herring Gull": "Larus argentatus",
             "Common Swift": "Apus apus", "Horned Grebe": "Podiceps auritus"}


@pytest.fixture
def visual(tmp_path: Path):
    labels = [leaf for leaf in TAXONOMY for _ in range(4)]
    return build_hca(tmp_path / "visual", taxonomy=write_taxonomy(tmp_path / "data"),
                     images=write_images(tmp_path / "data", labels), levels=LEVELS, policy="random", seed=1)


def _score(tmp_path: Path, bench: Path, replies: dict[str, str], name: str, label: str) -> dict:
    predictions = write_jsonl(tmp_path / f"{name}.jsonl", [{"item_id": k, "response": v} for k, v in replies.items()])
    out = biovqa.score(bench, predictions, tmp_path / name, label=label, bootstrap=0)
    return json.loads((out / "summary.json").read_text())


def test_dedup_keeps_one_question_per_label_level_and_option_set(tmp_path: Path, visual) -> None:
    text = build_hca(tmp_path / "text", text_from=visual.root)
    non_leaf = [i for i in visual.items.to_pylist() if i["level"] != i["depth"]]
    unique = {(i["leaf"], i["level"], frozenset(i["options"])) for i in non_leaf}
    assert text.items.num_rows == len(unique) < len(non_leaf) == 24 * 3
    assert text.manifest["dedup"] == {"non_leaf_questions": len(non_leaf), "unique": len(unique)}
    assert sum(len(p) for p in text.items.column("paths").to_pylist()) == len(non_leaf)
    assert set(text.items.column("level").to_pylist()) == {1, 2, 3}   # the leaf is never asked
    assert text.items.column("image").null_count == text.items.num_rows
    first = text.items.to_pylist()[0]
    assert first["question"].startswith(f"Given the {first['leaf']}, what is its taxonomic classification at the ")
    assert first["instruction"] == "Answer with the option letter only."
    assert first["system"] == "You are a helpful assistant."


def test_leaf_autocorrect_makes_text_acc_leaf_100(tmp_path: Path, visual) -> None:
    text = build_hca(tmp_path / "text", text_from=visual.root)
    items = text.items.to_pylist()
    # right on orders only: HCA 0, leaf 100 %, POR = 2/4 on every path
    replies = {i["item_id"]: i["answer"] if i["level"] == 1 else next(x for x in "ABCD" if x != i["answer"])
               for i in items}
    summary = _score(tmp_path, text.root, replies, "text", "m")
    assert summary["kind"] == "text" and summary["leaf_autocorrected"] is True
    assert summary["metrics"]["acc_leaf"]["value"] == 1.0
    assert summary["metrics"]["hca"]["value"] == 0.0
    assert summary["metrics"]["por"]["value"] == 0.5
    assert summary["counts"]["images"] == 24
    assert "without_genus" not in summary   # common-name leaves give nothing away


def test_genus_leak_guard_with_binomial_leaves(tmp_path: Path) -> None:
    taxonomy = {BINOMIALS[leaf]: [*path[:-1], BINOMIALS[leaf]] for leaf, path in TAXONOMY.items()}
    data = tmp_path / "data"
    visual = build_hca(tmp_path / "visual", taxonomy=write_taxonomy(data, taxonomy),
                       images=write_images(data, list(taxonomy)), levels=LEVELS)
    text = build_hca(tmp_path / "text", text_from=visual.root)
    leaks = {(i["leaf"], i["level"]) for i in text.items.to_pylist() if i["genus_leak"]}
    assert leaks == {(leaf, 3) for leaf in taxonomy}
    # a string matcher: right on genus only
    replies = {i["item_id"]: i["answer"] if i["level"] == 3 else next(x for x in "ABCD" if x != i["answer"])
               for i in text.items.to_pylist()}
    summary = _score(tmp_path, text.root, replies, "text", "m")
    assert summary["metrics"]["por"]["value"] == 0.5                       # genus + auto-correct leaf of 4
    assert summary["without_genus"]["por"]["value"] == pytest.approx(1 / 3)  # leaf of order, family, leaf
    assert summary["without_genus"]["n_levels_removed"] == 6


def _wrong(item: dict) -> str:
    return next(x for x in "ABCD" if x != item["answer"])


def test_report_pairs_visual_and_text_runs_and_correlates(tmp_path: Path, visual) -> None:
    """Three models: visually every leaf right and whole paths right for the first v leaves;
    in text whole paths right for the first t leaves. Scaled HCA = v/6, text HCA = t/6, so
    r = corr((1, 3, 4), (1, 2, 3)) = 3 / sqrt(42/9 · 2) = 0.9820."""
    text = build_hca(tmp_path / "text", text_from=visual.root)
    leaves = list(TAXONOMY)
    folders = []
    for k, (v, t) in enumerate([(1, 1), (3, 2), (4, 3)]):
        replies = {i["item_id"]: i["answer"] if i["leaf"] in leaves[:v] or i["level"] == 4 else _wrong(i)
                   for i in visual.items.to_pylist()}
        _score(tmp_path, visual.root, replies, f"v{k}", f"m{k}")
        replies = {i["item_id"]: i["answer"] if i["leaf"] in leaves[:t] else _wrong(i) for i in text.items.to_pylist()}
        _score(tmp_path, text.root, replies, f"t{k}", f"m{k} [text]")
        folders += [tmp_path / f"v{k}", tmp_path / f"t{k}"]
    biovqa.report(folders, tmp_path / "report")
    paired = (tmp_path / "report" / "hca_text_vs_visual.csv").read_text().splitlines()
    assert paired[0].endswith("model,dataset,visual HCA,Acc_leaf,scaled HCA,text HCA")
    assert [row.split(",")[-4:] for row in paired[1:]] == [["0.167", "1.0", "0.167", "0.167"],
                                                          ["0.5", "1.0", "0.5", "0.333"],
                                                          ["0.667", "1.0", "0.667", "0.5"]]
    correlation = (tmp_path / "report" / "hca_correlation.csv").read_text().splitlines()[1]
    assert correlation.split(",")[-2:] == ["3", "0.982"]


def test_text_only_bench_runs_through_the_engine(tmp_path: Path, visual) -> None:
    text = build_hca(tmp_path / "text", text_from=visual.root)
    predictions = biovqa.run(text.root, tmp_path / "run", backend="baseline", progress=False)
    import pyarrow.parquet as pq

    table = pq.read_table(predictions)
    assert table.num_rows == text.items.num_rows and set(table.column("response").to_pylist()) == {"A"}


def test_text_control_is_deterministic_and_refuses_unknown_common_names(tmp_path: Path, visual) -> None:
    one = build_hca(tmp_path / "one", text_from=visual.root, text_template=2)
    two = build_hca(tmp_path / "two", text_from=visual.root, text_template=2)
    assert (one.root / "items.parquet").read_bytes() == (two.root / "items.parquet").read_bytes()
    assert one.items.column("question").to_pylist()[0].startswith("What could ")
    assert one.manifest["text_only"] is True
    from biovqa.errors import BiovqaError

    with pytest.raises(BiovqaError, match="no common name"):
        build_hca(tmp_path / "three", text_from=visual.root, entity="common")
