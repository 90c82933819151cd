"""The binary (Yes/No statement) variant of the text-only control (a prompt variant of the hierarchical-VQA paper (Tan, Qing, Gong, arXiv:2505.24840) crossed with its text-only control): one
statement per option of every deduplicated non-leaf question, the exactly-one-"Yes" rule, the leaf
auto-correct, the genus-leak guard and the text-vs-visual pairing in the report."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from fixtures.bagel_items import write_jsonl
from fixtures.hca_data import LEVELS, TAXONOMY, write_images, write_taxonomy

import biovqa
from biovqa.components.hca.build import PromptVariant, build_hca
from biovqa.components.hca.prompts import LETTERS, TAXONOMY_PREFIX, TEXT_SYSTEM_PROMPT

BINOMIALS = {"Black-footed Albatross": "Phoebastria nigripes", "Laysan Albatross": "Phoebastria immutabilis",
             "Pomarine Jaeger": "Stercorarius pomarinus", "Herring Gull": "Larus argentatus",
             "Common Swift": "Apus apus", "Horned Grebe": "Podiceps auritus"}
BINARY = PromptVariant(binary=True)


@pytest.fixture
def visual(tmp_path: Path):
    labels = [leaf for leaf in TAXONOMY for _ in range(4)]
    return build_hca(tmp_path / "visual", taxonomy=write_taxonomy(tmp_path / "data"),
                     images=write_images(tmp_path / "data", labels), levels=LEVELS, policy="random", seed=1)


def _score(tmp_path: Path, bench: Path, replies: dict[str, str], name: str, label: str = "m") -> dict:
    predictions = write_jsonl(tmp_path / f"{name}.jsonl", [{"item_id": k, "response": v} for k, v in replies.items()])
    out = biovqa.score(bench, predictions, tmp_path / name, label=label, bootstrap=0)
    return json.loads((out / "summary.json").read_text())


def _echo(item: dict) -> str:
    """A perfect answerer: "Yes" on the statement of the gold option, "No" on the others."""
    return "Yes" if item["statement"] == item["answer"] else "No"


def _groups(items: list[dict]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for item in items:
        groups[item["item_id"].rpartition(":")[0]].append(item)
    return groups


def test_each_unique_question_becomes_one_statement_per_option(tmp_path: Path, visual) -> None:
    four_way = build_hca(tmp_path / "text4", text_from=visual.root)
    text = build_hca(tmp_path / "text2", text_from=visual.root, variant=BINARY)
    items = text.items.to_pylist()
    groups = _groups(items)
    # the statements of one 4-way question stay together and keep its options, paths and gold
    assert sorted(groups) == sorted(four_way.items.column("item_id").to_pylist())
    by_id = {q["item_id"]: q for q in four_way.items.to_pylist()}
    for question_id, statements in groups.items():
        question = by_id[question_id]
        assert [s["statement"] for s in statements] == list(LETTERS[: len(question["options"])])
        for s in statements:
            assert (s["options"], s["answer"], s["paths"], s["level"]) == (
                question["options"], question["answer"], question["paths"], question["level"])
    first = groups[next(iter(groups))]
    for statement, option in zip(first, first[0]["options"]):
        assert statement["question"] == (f"The {statement['leaf']} belongs to the {statement['level_name']} of "
                                          f"{option}. Is this statement correct? Please answer Yes or No.")
        assert statement["instruction"] == "" and statement["system"] == TEXT_SYSTEM_PROMPT
        assert statement["image"] is None and statement["task"] == "text" and statement["variant"] == "binary"
    assert {s["level"] for s in items} == {1, 2, 3}   # the leaf is never asked


def test_dedup_counts_and_manifest_record_the_variant(tmp_path: Path, visual) -> None:
    text = build_hca(tmp_path / "text", text_from=visual.root, variant=BINARY)
    non_leaf = [i for i in visual.items.to_pylist() if i["level"] != i["depth"]]
    unique = {(i["leaf"], i["level"], frozenset(i["options"])) for i in non_leaf}
    dedup = text.manifest["dedup"]
    assert (dedup["non_leaf_questions"], dedup["unique"], dedup["statements"]) == (
        len(non_leaf), len(unique), 4 * len(unique))
    assert len(unique) < len(non_leaf) == 24 * 3
    assert text.items.num_rows == dedup["statements"]
    variant = text.manifest["parameters"]["variant"]
    assert (variant["name"], variant["binary"], variant["cot"]) == ("binary", True, False)
    assert text.manifest["text_only"] is True and "leaf" in text.manifest["leaf_autocorrect"]


def test_perfect_answerer_scores_everything_and_constant_yes_scores_zero(tmp_path: Path, visual) -> None:
    text = build_hca(tmp_path / "text", text_from=visual.root, variant=BINARY)
    items = text.items.to_pylist()
    perfect = _score(tmp_path, text.root, {i["item_id"]: _echo(i) for i in items}, "perfect")
    assert perfect["kind"] == "text" and perfect["leaf_autocorrected"] is True
    assert {k: v["value"] for k, v in perfect["metrics"].items()} == {
        "hca": 1.0, "acc_leaf": 1.0, "por": 1.0, "spor": 1.0, "spor_prefix": 1.0, "tor": 1.0}
    assert perfect["counts"] == {"images": 24, "questions": len(_groups(items)), "statements": len(items)}
    assert perfect["variant"] == ["binary"]
    assert perfect["format"]["yes_no_histogram"]["Yes"] == pytest.approx(0.25)

    always_yes = _score(tmp_path, text.root, {i["item_id"]: "Yes" for i in items}, "yes")
    assert always_yes["metrics"]["hca"]["value"] == 0.0
    assert always_yes["metrics"]["acc_leaf"]["value"] == 1.0        # leaf auto-correct, as in the 4-way control
    assert always_yes["metrics"]["por"]["value"] == pytest.approx(0.25)   # only the leaf of 4 levels
    assert always_yes["format"]["yes_no_histogram"] == {"Yes": 1.0, "No": 0.0}


def test_two_yes_on_a_shared_question_fails_every_image_it_stands_for(tmp_path: Path, visual) -> None:
    text = build_hca(tmp_path / "text", text_from=visual.root, variant=BINARY)
    items = text.items.to_pylist()
    shared_id, shared = max(_groups(items).items(), key=lambda kv: len(kv[1][0]["paths"]))
    extra = next(s["statement"] for s in shared if s["statement"] != s["answer"])
    replies = {i["item_id"]: _echo(i) for i in items}
    replies[f"{shared_id}:{extra}"] = "Yes"
    summary = _score(tmp_path, text.root, replies, "two")
    n_paths = len(shared[0]["paths"])
    assert n_paths > 1
    assert summary["metrics"]["hca"]["value"] == pytest.approx((24 - n_paths) / 24)
    assert summary["metrics"]["acc_leaf"]["value"] == 1.0


def test_genus_leak_guard_with_binomial_leaves(tmp_path: Path) -> None:
    taxonomy = {BINOMIALS[leaf]: [*path[:-1], BINOMIALS[leaf]] for leaf, path in TAXONOMY.items()}
    data = tmp_path / "data"
    visual = build_hca(tmp_path / "visual", taxonomy=write_taxonomy(data, taxonomy),
                       images=write_images(data, list(taxonomy)), levels=LEVELS)
    text = build_hca(tmp_path / "text", text_from=visual.root, variant=BINARY)
    items = text.items.to_pylist()
    assert {(i["leaf"], i["level"]) for i in items if i["genus_leak"]} == {(leaf, 3) for leaf in taxonomy}
    genus = next(i for i in items if i["genus_leak"] and i["statement"] == i["answer"])
    assert genus["question"].startswith(f"The {genus['leaf']} belongs to the genus of {genus['leaf'].split()[0]}.")
    # a string matcher: "Yes" only where the statement names the entity's first word
    replies = {i["item_id"]: "Yes" if i["options"][LETTERS.index(i["statement"])] == i["leaf"].split()[0] else "No"
               for i in items}
    summary = _score(tmp_path, text.root, replies, "leak")
    assert summary["metrics"]["por"]["value"] == 0.5                        # genus + auto-correct leaf of 4
    assert summary["without_genus"]["por"]["value"] == pytest.approx(1 / 3)   # leaf of order, family, leaf
    assert summary["without_genus"]["hca"]["value"] == 0.0
    assert summary["without_genus"]["n_levels_removed"] == 6


def test_report_pairs_binary_visual_and_text_runs(tmp_path: Path, visual) -> None:
    """Visual binary run: leaf always right, whole paths right for the first 3 leaves (HCA 50 %,
    scaled 50 %); text binary run: whole paths right for the first 2 leaves (HCA 33.33 %)."""
    leaves = list(TAXONOMY)
    visual_binary = build_hca(tmp_path / "vb", taxonomy=write_taxonomy(tmp_path / "data"),
                              images=write_images(tmp_path / "data", [x for x in leaves for _ in range(4)]),
                              levels=LEVELS, policy="random", seed=1, variant=BINARY)
    text = build_hca(tmp_path / "text", text_from=visual.root, variant=BINARY)
    replies = {i["item_id"]: _echo(i) if i["leaf"] in leaves[:3] or i["level"] == 4 else "No"
               for i in visual_binary.items.to_pylist()}
    v = _score(tmp_path, visual_binary.root, replies, "v", "m")
    assert v["scaled_hca"] == pytest.approx(0.5)
    replies = {i["item_id"]: _echo(i) if i["leaf"] in leaves[:2] else "Yes" for i in text.items.to_pylist()}
    t = _score(tmp_path, text.root, replies, "t", "m [text]")
    assert t["metrics"]["hca"]["value"] == pytest.approx(1 / 3)
    biovqa.report([tmp_path / "v", tmp_path / "t"], tmp_path / "report")
    paired = (tmp_path / "report" / "hca_text_vs_visual.csv").read_text().splitlines()
    assert [row.split(",")[-4:] for row in paired[1:]] == [["0.5", "1.0", "0.5", "0.333"]]


def test_taxonomy_context_combines_and_cot_is_refused(tmp_path: Path, visual) -> None:
    from biovqa.errors import BiovqaError

    text = build_hca(tmp_path / "text", text_from=visual.root, variant=PromptVariant(binary=True, taxonomy=True))
    items = text.items.to_pylist()
    assert all(i["question"].startswith(TAXONOMY_PREFIX) and i["question"].endswith("Please answer Yes or No.")
               for i in items)
    assert {i["variant"] for i in items} == {"taxonomy+binary"}
    with pytest.raises(BiovqaError, match="cannot be combined"):
        PromptVariant(binary=True, cot=True)


def test_command_line_and_engine_run_a_text_binary_bench(tmp_path: Path, visual,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from fixtures.cli_runner import cli

    from biovqa.bench import open_bench

    code, _ = cli(["build", "hca", "--text-from", visual.root, "--binary", "--out", tmp_path / "b"], capsys)
    assert code == 0
    bench = open_bench(tmp_path / "b")
    assert bench.manifest["parameters"]["variant"]["name"] == "binary"
    predictions = biovqa.run(bench.root, tmp_path / "run", backend="baseline", progress=False)
    out = biovqa.score(bench.root, predictions, tmp_path / "score", label="floor", bootstrap=0)
    summary = json.loads((out / "summary.json").read_text())
    # the floor answers "A" to every statement: never a "Yes", so every asked level is wrong
    assert summary["format"]["n_unparsed"] == bench.items.num_rows
    assert summary["metrics"]["hca"]["value"] == 0.0 and summary["metrics"]["acc_leaf"]["value"] == 1.0
