"""The prompt variants of the hierarchical-VQA paper (Tan, Qing, Gong, arXiv:2505.24840) (CoT suffix, taxonomy in context, binary Yes/No
statements with the exactly-one-"Yes" rule): build options recorded in the manifest, the items they
produce, and how the scorer reads each kind of reply."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from fixtures.hca_data import LEVELS, TAXONOMY, write_images, write_taxonomy

from biovqa.components.hca.build import PromptVariant, build_hca
from biovqa.components.hca.parse import binary_level_correct, parse_cot_choice, parse_yes_no
from biovqa.components.hca.prompts import (COT_MAX_NEW_TOKENS, COT_SUFFIX, LETTERS, TAXONOMY_PREFIX,
                                           VISUAL_CLOSING, VISUAL_SYSTEM_PROMPT)
from biovqa.components.hca.score import score_items
from biovqa.components.hca.summary import summarize
from biovqa.errors import BiovqaError


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    labels = [leaf for leaf in TAXONOMY for _ in range(2)]
    return write_taxonomy(tmp_path / "data"), write_images(tmp_path / "data", labels)


def _build(tmp_path: Path, inputs, name: str, **variant):
    taxonomy, images = inputs
    return build_hca(tmp_path / name, taxonomy=taxonomy, images=images, levels=LEVELS,
                     variant=PromptVariant(**variant))


def _predictions(items: pa.Table, replies: list[str | None]) -> pa.Table:
    return pa.table({"item_id": items.column("item_id"), "response": pa.array(replies, pa.string()),
                     "status": pa.array(["ok"] * len(replies), pa.string())})


def test_cot_appends_the_suffix_to_the_question_and_raises_the_cap(tmp_path: Path, inputs) -> None:
    plain = _build(tmp_path, inputs, "plain").items.to_pylist()
    bench = _build(tmp_path, inputs, "cot", cot=True)
    items = bench.items.to_pylist()
    for before, after in zip(plain, items):
        line, _, options = before["question"].partition("\n")
        assert after["question"] == f"{line} {COT_SUFFIX}\n{options}"
        assert after["instruction"] == VISUAL_CLOSING and after["system"] == VISUAL_SYSTEM_PROMPT
        assert after["max_new_tokens"] == COT_MAX_NEW_TOKENS and after["variant"] == "cot"
        assert before["max_new_tokens"] is None and before["variant"] == "plain"
    recorded = bench.manifest["parameters"]["variant"]
    assert recorded["name"] == "cot" and recorded["cot"] and recorded["cot_max_new_tokens"] == COT_MAX_NEW_TOKENS
    assert "missing" in recorded["biological_cot"]


def test_taxonomy_context_prefixes_the_whole_taxonomy(tmp_path: Path, inputs) -> None:
    plain = _build(tmp_path, inputs, "plain").items.to_pylist()
    items = _build(tmp_path, inputs, "tax", taxonomy=True).items.to_pylist()
    head, _, rest = items[0]["question"].partition("\n")
    assert head.startswith(TAXONOMY_PREFIX)
    taxonomy = json.loads(head[len(TAXONOMY_PREFIX):])
    # leaf → its ancestors, nearest first, up to the root
    assert taxonomy == {leaf: list(reversed(path[:-1])) for leaf, path in TAXONOMY.items()}
    assert rest == plain[0]["question"]
    assert {i["variant"] for i in items} == {"taxonomy"}


def test_binary_asks_one_statement_per_option_without_the_letter_system_prompt(tmp_path: Path, inputs) -> None:
    plain = _build(tmp_path, inputs, "plain").items
    bench = _build(tmp_path, inputs, "binary", binary=True)
    items = bench.items.to_pylist()
    assert len(items) == 4 * plain.num_rows
    first = items[:4]
    assert [i["statement"] for i in first] == list(LETTERS)
    assert len({i["item_id"] for i in items}) == len(items)
    level_name = first[0]["level_name"]
    for item, option in zip(first, first[0]["options"]):
        assert item["question"] == (f"The animal in the image belongs to the {level_name} of {option}. "
                                    "Is this statement correct? Please answer Yes or No.")
        assert item["system"] is None and item["instruction"] == ""
    assert bench.manifest["parameters"]["variant"]["binary"] is True


def test_variants_that_cannot_combine_are_refused(tmp_path: Path, inputs) -> None:
    with pytest.raises(BiovqaError, match="cot"):
        PromptVariant(cot=True, binary=True)
    binary = _build(tmp_path, inputs, "binary", binary=True)
    with pytest.raises(BiovqaError, match="binary"):   # the text control starts from a 4-option bench
        build_hca(tmp_path / "text", text_from=binary.root)
    with pytest.raises(BiovqaError, match="binary"):
        build_hca(tmp_path / "text2", text_from=binary.root, variant=PromptVariant(binary=True))


def test_text_control_takes_cot_and_taxonomy(tmp_path: Path, inputs) -> None:
    visual = _build(tmp_path, inputs, "plain")
    text = build_hca(tmp_path / "text", text_from=visual.root, variant=PromptVariant(cot=True, taxonomy=True))
    items = text.items.to_pylist()
    assert all(i["question"].startswith(TAXONOMY_PREFIX) and f" {COT_SUFFIX}\nA. " in i["question"] for i in items)
    assert {i["variant"] for i in items} == {"taxonomy+cot"}
    assert text.manifest["parameters"]["variant"]["name"] == "taxonomy+cot"


@pytest.mark.parametrize(("reply", "letter"), [
    ("The bird is a seabird... so the answer is B.", "B"),
    ("First I thought the answer is A. On reflection the answer is (C).", "C"),
    ("Albatrosses fly far.\nAnswer: D", "D"),
    ("Let me reason.\nAnseriformes are ducks.\nB. Procellariiformes", "B"),
    ("Anseriformes Accipitriformes", None),           # capitals inside words never count
    ("the answer is E", None),                        # not an offered letter
    ("Hooked bill and black plumage, so the answer is a raven.\nC", "C"),  # an article is no letter
    ("The correct answer is: B", "B"),
    ("The answer is **D**.\nA", "A"),                 # the final stated answer wins
    ("The answer is a raven.", None),
    (None, None),
])
def test_cot_replies_are_parsed_for_their_final_answer(reply: str | None, letter: str | None) -> None:
    assert parse_cot_choice(reply, ["w", "x", "y", "z"]) == letter


def test_yes_no_parser_and_the_exactly_one_yes_rule() -> None:
    assert [parse_yes_no(x) for x in ("Yes", "**No.**", "yes, it is", "Yesterday", "Maybe", None)] == [
        "Yes", "No", "Yes", None, None, None]
    assert binary_level_correct(["No", "Yes", "No", "No"], 1)
    assert not binary_level_correct(["No", "Yes", "No", "No"], 2)        # the "Yes" is on a distractor
    assert not binary_level_correct(["Yes", "Yes", "No", "No"], 0)       # several "Yes"
    assert not binary_level_correct(["No", "No", "No", "No"], 0)         # none
    assert not binary_level_correct([None, "Yes", None, None], 0)        # unparseable is not a "Yes"


def test_binary_scoring_puts_each_levels_outcome_on_the_path(tmp_path: Path, inputs) -> None:
    bench = _build(tmp_path, inputs, "binary", binary=True)
    items = bench.items
    rows = items.to_pylist()
    # every level answered right (Yes on the gold statement only), except: image 0 level 1 with two
    # "Yes", image 0 level 2 with none
    first_image = rows[0]["image_key"]
    replies = []
    for row in rows:
        right = "Yes" if row["statement"] == row["answer"] else "No"
        if row["image_key"] == first_image and row["level"] == 1:
            right = "Yes" if row["statement"] in (row["answer"], "A" if row["answer"] != "A" else "B") else "No"
        if row["image_key"] == first_image and row["level"] == 2:
            right = "No"
        replies.append(right)
    table = score_items(items, _predictions(items, replies))
    by_level = {(r["image_key"], r["level"]): ok for r, ok in zip(rows, table.column("correct").to_pylist())}
    assert by_level[(first_image, 1)] is False and by_level[(first_image, 2)] is False
    assert sum(by_level.values()) == len(by_level) - 2
    summary = summarize(table, items, {"bootstrap": 0, "seed": 0, "confidence": 0.95})
    n_images = summary["counts"]["images"]
    assert summary["metrics"]["hca"]["value"] == pytest.approx((n_images - 1) / n_images)
    assert summary["format"]["yes_no_histogram"]["Yes"] == pytest.approx(
        sum(r == "Yes" for r in replies) / len(replies))
    assert summary["variant"] == ["binary"]


def test_cot_items_are_scored_on_their_final_answer(tmp_path: Path, inputs) -> None:
    items = _build(tmp_path, inputs, "cot", cot=True).items
    answers = items.column("answer").to_pylist()
    replies = [f"Thinking about {a} and others... the answer is {a}." for a in answers]
    table = score_items(items, _predictions(items, replies))
    assert all(table.column("correct").to_pylist())
    plain_parse = score_items(_build(tmp_path, inputs, "plain").items, _predictions(items, replies))
    assert not any(plain_parse.column("correct").to_pylist())  # the strict one-shot parser refuses them


def test_the_command_line_records_the_variant_and_refuses_a_bad_combination(
        tmp_path: Path, inputs, capsys: pytest.CaptureFixture[str]) -> None:
    from fixtures.cli_runner import cli

    from biovqa.bench import open_bench

    taxonomy, images = inputs
    common = ["build", "hca", "--taxonomy", taxonomy, "--images", images, "--levels", ",".join(LEVELS)]
    code, _ = cli([*common, "--cot", "--cot-max-new-tokens", "64", "--taxonomy-context", "--out", tmp_path / "b"],
                  capsys)
    assert code == 0
    variant = open_bench(tmp_path / "b").manifest["parameters"]["variant"]
    assert (variant["name"], variant["cot_max_new_tokens"]) == ("taxonomy+cot", 64)
    code, err = cli([*common, "--cot", "--binary", "--out", tmp_path / "c"], capsys)
    assert code == 2 and "cannot be combined" in err and "Traceback" not in err
