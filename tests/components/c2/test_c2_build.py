"""C2 builder: schema, family rules, prompts verbatim, side files, determinism, name map, floor."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image

from biovqa.components.c2 import questions as fam
from biovqa.components.c2 import tasks
from biovqa.components.c2.floor import floor_responses
from biovqa.components.c2.parse import question_stem
from biovqa.components.c2.build import (
    ITEM_SCHEMA,
    build_c2,
    facing_left,
    default_names_path,
    read_name_map,
)
from biovqa.components.c2.render import MARKER_COLORS
from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.bench.folder import open_bench, sha256_file
from biovqa.sources.cub import read_cub
from fixtures.cub import write_cub

CLASS_IDS = (59, 60, 1, 17, 103, 110)  # two gulls, an albatross, Cardinal, Sayornis, Geococcyx


@pytest.fixture(scope="module")
def cub_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_cub(tmp_path_factory.mktemp("cub"), images_per_class=3, seed=11, class_ids=CLASS_IDS)


@pytest.fixture(scope="module")
def built(cub_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    bench = build_c2(cub_dir, tmp_path_factory.mktemp("bench") / "c2")
    return bench, bench.items.to_pylist(), read_cub(cub_dir)


def _by_family(rows: list[dict], family: str) -> list[dict]:
    return [r for r in rows if r["task"] == family]


def test_schema_and_categories(built) -> None:
    bench, rows, _ = built
    assert bench.items.schema.equals(ITEM_SCHEMA)
    assert {r["task"] for r in rows} == set(tasks.FAMILIES)
    for r in rows:
        assert r["component"] == "c2" and r["family"] == r["task"]
        assert r["category"] == tasks.CATEGORY_OF[r["task"]]
        if r["task"] in tasks.OPEN_FAMILIES:
            assert r["options"] is None and r["answer_letter"] is None
        else:
            options = r["options"]
            assert len(set(options)) == len(options) >= 2
            assert options.count(r["answer"]) == 1
            assert options[fam.LETTERS.index(r["answer_letter"])] == r["answer"]
    assert len({r["item_id"] for r in rows}) == len(rows)
    assert tasks.CATEGORY_OF == {
        "attr_bare_value": "morphological", "attr_group_value": "relative_salience",
        "marker_localization": "anatomical", "visibility_partset": "anatomical",
        "visibility_side": "anatomical", "category_mcq": "naming", "open_common_name": "naming",
        "open_scientific_name": "naming", "open_genus": "naming", "open_kind_of": "naming",
    }


def test_manifest_records_counts_rule_and_images(built, cub_dir: Path) -> None:
    bench, rows, cub = built
    manifest = bench.manifest
    produced = Counter(r["task"] for r in rows)
    for family in tasks.FAMILIES:
        entry = manifest["family_counts"][family]
        assert entry["expected_paper_count"] == tasks.PAPER_COUNTS[family]
        assert entry["produced"] == produced[family]
        assert entry["difference"] == produced[family] - tasks.PAPER_COUNTS[family]
    assert sum(tasks.PAPER_COUNTS.values()) == 824_104
    assert manifest["parameters"]["certainty_rule"]["true_min_certainty"] == 3
    # relative to the benchmark folder (no builder path), resolving to the CUB images folder
    assert not Path(manifest["images_root"]).is_absolute()
    assert bench.images_root().resolve() == (cub_dir / "images").resolve()
    assert manifest["images"] == {"source": 18, "rendered": 18, "total": 36}
    assert manifest["exclusions"] == {}
    assert {"image_attribute_labels", "part_locs", "attributes", "cub_names"} <= set(manifest["sources"])
    for r in rows[:: max(1, len(rows) // 50)] + _by_family(rows, "marker_localization"):
        path = bench.resolve_image(r["image"])
        assert path.is_file()
        assert sha256_file(path) == r["image_sha256"]
        if r["task"] == "marker_localization":
            assert r["image"].startswith("rendered/")
        else:
            assert r["image"] == cub.image_paths[int(r["source_id"]) - 1]


def test_attr_bare_value_rules(built) -> None:
    _, rows, cub = built
    truth = fam.AttributeTruth.from_cub(cub)
    items = _by_family(rows, "attr_bare_value")
    assert items
    seen = set()
    for r in items:
        row = int(r["source_id"]) - 1
        group = r["attribute_group"]
        seen.add((row, group))
        attrs = {truth.values[a]: a for a in range(len(truth.values))
                 if truth.groups[truth.group_index[a]] == group}
        gold = attrs[r["answer"]]
        assert truth.true[row, gold]
        true_certainties = cub.certainty[row, [a for a in attrs.values() if truth.true[row, a]]]
        assert cub.certainty[row, gold] == true_certainties.max()  # most certain true value
        eligible = [a for a in attrs.values() if truth.false[row, a] and truth.attested[a]]
        assert len(r["options"]) == min(5, 1 + len(eligible))
        for option in r["options"]:
            if option != r["answer"]:
                a = attrs[option]
                assert not cub.is_present[row, a]  # never a value true (at any certainty)
                assert truth.attested[a]
        part, prop = fam.split_group(group)
        assert (r["part"], r["property"]) == (part, prop)
        assert prop in fam.PROPERTIES
        assert r["question"].startswith(f"What is the {fam.group_label(group)} of this bird? Options: (A) ")
    # one item per (image, group) with a true value and an eligible distractor
    for row in range(cub.n_images):
        for g, group in enumerate(truth.groups):
            members = np.flatnonzero(truth.group_index == g)
            has_true = truth.true[row, members].any()
            has_distractor = (truth.false[row, members] & truth.attested[members]).any()
            assert ((row, group) in seen) == bool(has_true and has_distractor)


def test_attr_group_value_rules(built) -> None:
    _, rows, cub = built
    truth = fam.AttributeTruth.from_cub(cub)
    lookup = {f"{fam.group_label(truth.groups[truth.group_index[a]])}: {truth.values[a]}": a
              for a in range(len(truth.values))}
    items = _by_family(rows, "attr_group_value")
    per_image = Counter(int(r["source_id"]) - 1 for r in items)
    for row in range(cub.n_images):
        assert per_image[row] == int(truth.true[row].sum())  # one item per true trait
    for r in items:
        row = int(r["source_id"]) - 1
        assert len(r["options"]) == 5
        attrs = [lookup[o] for o in r["options"]]
        assert len({truth.group_index[a] for a in attrs}) == 5  # no two share a region-property
        for option, a in zip(r["options"], attrs):
            if option == r["answer"]:
                assert truth.true[row, a]
            else:
                assert not cub.is_present[row, a] and truth.attested[a]
        assert r["attribute_group"] == truth.groups[truth.group_index[lookup[r["answer"]]]]


def test_marker_localization_rules(built) -> None:
    bench, rows, cub = built
    items = _by_family(rows, "marker_localization")
    assert len(items) == cub.n_images
    names = [fam.part_text(p) for p in cub.part_names]
    for r in items:
        row = int(r["source_id"]) - 1
        assert r["marker_color"] in MARKER_COLORS
        assert r["question"].startswith(
            f"What is the body part of this bird marked with the {r['marker_color']} {r['marker_shape']}? Options: (A) ")
        target = names.index(r["answer"])
        assert cub.part_visible[row, target]
        assert len(r["options"]) == 5 and r["part"] == r["answer"]
        visible_options = [o for o in r["options"] if cub.part_visible[row, names.index(o)]]
        assert len(visible_options) == min(5, int(cub.part_visible[row].sum()))
        x, y = cub.part_xy[row, target]
        with Image.open(bench.resolve_image(r["image"])) as picture:
            assert picture.format == "PNG" and picture.mode == "RGB"
            assert picture.getpixel((round(x), round(y))) == MARKER_COLORS[r["marker_color"]]


def test_visibility_partset_rules(built) -> None:
    _, rows, cub = built
    items = _by_family(rows, "visibility_partset")
    names = [fam.part_text(p) for p in cub.part_names]
    per_image: dict[int, list[frozenset[str]]] = {}
    for r in items:
        row = int(r["source_id"]) - 1
        offered = r["options"][:3]
        assert r["options"][3:] == ["None", "All three"]
        visible = [o for o in offered if cub.part_visible[row, names.index(o)]]
        assert len(visible) in (0, 1, 3)  # exactly one option is correct
        assert r["gold_set"] == visible
        expected = {0: "None", 1: visible[0] if visible else None, 3: "All three"}[len(visible)]
        assert r["answer"] == expected
        assert r["question"] == (
            "Which of the following parts of the bird are visible in this image? Options: "
            f"(A) {offered[0]}, (B) {offered[1]}, (C) {offered[2]}, (D) None, (E) All three")
        per_image.setdefault(row, []).append(frozenset(offered))
    assert set(per_image) == set(range(cub.n_images))
    for triples in per_image.values():
        assert len(triples) == 10 and len(set(triples)) == 10


@pytest.mark.parametrize(("left", "right", "gold"),
                         [(True, True, "Both"), (True, False, "Left"), (False, True, "Right"),
                          (False, False, "None")])
def test_side_labels(left: bool, right: bool, gold: str, tmp_path: Path) -> None:
    cub_path = write_cub(tmp_path, n_classes=1, images_per_class=1)
    path = cub_path / "parts" / "part_locs.txt"
    lines = path.read_text().splitlines()
    for part_id, flag in ((7, left), (11, right)):  # left_eye, right_eye
        lines[part_id - 1] = f"1 {part_id} 20.0 20.0 1" if flag else f"1 {part_id} 0.0 0.0 0"
    path.write_text("\n".join(lines) + "\n")
    [eye] = [r for r in fam.visibility_side(read_cub(cub_path))[0] if r["part"] == "eye"]
    assert eye["answer"] == gold
    assert eye["gold_set"] == [s for s, v in (("Left", left), ("Right", right)) if v]
    assert eye["question"] == ("Which of the eyes of the bird are visible in this image? "
                               "Options: (A) Left, (B) Right, (C) Both, (D) None")
    assert eye["answer_letter"] == "ABCD"[["Left", "Right", "Both", "None"].index(gold)]


def test_visibility_side_per_image(built) -> None:
    _, rows, cub = built
    items = _by_family(rows, "visibility_side")
    assert len(items) == 3 * cub.n_images
    assert Counter(r["part"] for r in items) == {"eye": 18, "leg": 18, "wing": 18}


def test_naming_families(built) -> None:
    _, rows, _ = built
    by_class: dict[int, dict[str, dict]] = {}
    for r in rows:
        if tasks.CATEGORY_OF[r["task"]] == "naming":
            by_class.setdefault(r["class_id"], {})[r["task"]] = r
    gull = by_class[59]
    assert gull["category_mcq"]["answer"] == "Gull"
    assert len(gull["category_mcq"]["options"]) == 5
    assert gull["open_common_name"]["answer"] == "California Gull"
    assert gull["open_scientific_name"]["answer"] == "Larus californicus"
    assert gull["open_genus"]["answer"] == "Larus"
    assert gull["open_kind_of"]["answer"] == "California"
    assert gull["open_kind_of"]["question"] == "What kind of gull is the bird in this image?"
    assert by_class[1]["open_kind_of"]["answer"] == "Black footed"
    # one-word names have no category and no kind
    assert set(by_class[17]) == {"open_common_name", "open_scientific_name", "open_genus"}
    # Sayornis and Geococcyx are mapped to their genus only; Geococcyx (110) is the class the
    # default build asks no genus of (the paper's 11 728 open_genus items)
    assert set(by_class[103]) == {"open_common_name", "open_genus"}
    assert by_class[103]["open_genus"]["answer"] == by_class[103]["open_common_name"]["answer"]
    assert set(by_class[110]) == {"open_common_name"}
    assert {r["genus"] for r in rows if r["class_id"] == 110} == {"Geococcyx"}
    categories = fam.name_categories(
        [line.split(" ", 1)[1] for line in _class_names()])
    for r in _by_family(rows, "category_mcq"):
        assert set(r["options"]) <= set(categories)


def _class_names() -> list[str]:
    from importlib import resources

    text = resources.files("biovqa").joinpath("data", "cub", "vocabulary", "classes.txt").read_text()
    from biovqa.sources.cub import class_display_name

    return [f"{line.split(' ', 1)[0]} {class_display_name(line.split(' ', 1)[1])}" for line in text.splitlines()]


def test_category_counts_on_the_real_class_list() -> None:
    names = [line.split(" ", 1)[1] for line in _class_names()]
    categories = fam.name_categories(names)
    covered = [n for n in names if len(n.split()) >= 2]
    assert {"Gull", "Warbler", "Sparrow", "Albatross", "Nutcracker", "Waxwing", "Waterthrush"} <= set(categories)
    assert "Cardinal" not in categories and "Sayornis" not in categories
    # 190 classes: the paper's 11 191 category_mcq items = 11 788 minus the 10 one-word classes
    assert len(covered) == 190
    assert sorted(set(names) - set(covered)) == [
        "Bobolink", "Cardinal", "Frigatebird", "Gadwall", "Geococcyx", "Mallard", "Mockingbird",
        "Nighthawk", "Ovenbird", "Sayornis"]


PROMPT_INSTRUCTION_SPEC = """[CRITICAL INSTRUCTIONS - NO VIOLATIONS ALLOWED]:
1. Locate the 'Options:' section in the question above.
2. Identify the single correct choice from that list.
3. Output ONLY the matching option letter in parentheses and its exact trailing text string. For example, if the correct option is '(X) alpha bravo charlie', your entire response must be exactly: (X) alpha bravo charlie
4. DO NOT truncate the response to just the option letter (e.g., do not output just '(X)').
5. DO NOT invent, hallucinate, or insert any placeholder words from external examples. Absolutely DO NOT output any word unless it is explicitly written inside the chosen option string above.
6. Output exactly zero extra words, zero markdown formatting, and zero punctuation outside the option string."""


@pytest.mark.parametrize(
    ("family", "pattern"),
    [
        ("attr_bare_value", r"What is the [a-z ]+ of this bird\? Options: \(A\) .+"),
        ("attr_group_value", r"Which of the following is the most prominently visible physical trait of the bird in this image\? Options: \(A\) .+"),
        ("marker_localization", r"What is the body part of this bird marked with the (red|yellow|blue|green|white) (dot|square|triangle|star)\? Options: \(A\) .+"),
        ("visibility_partset", r"Which of the following parts of the bird are visible in this image\? Options: \(A\) .+, \(B\) .+, \(C\) .+, \(D\) None, \(E\) All three"),
        ("visibility_side", r"Which of the (eye|leg|wing)s of the bird are visible in this image\? Options: \(A\) Left, \(B\) Right, \(C\) Both, \(D\) None"),
        ("category_mcq", r"What type of bird is this in the image\? Options: \(A\) .+"),
        ("open_common_name", r"What is the common name of the bird\?"),
        ("open_scientific_name", r"What is the scientific name of the bird\?"),
        ("open_genus", r"What is the genus of the bird\?"),
        ("open_kind_of", r"What kind of [a-z]+ is the bird in this image\?"),
    ],
)
def test_prompts_verbatim(built, family: str, pattern: str) -> None:
    _, rows, _ = built
    items = _by_family(rows, family)
    assert items
    for r in items:
        assert re.fullmatch(pattern, r["question"]), r["question"]
        if r["options"] is not None:
            expected = ", ".join(f"({fam.LETTERS[i]}) {o}" for i, o in enumerate(r["options"]))
            assert r["question"] == f"{question_stem(r['question'])} Options: {expected}"
            assert r["instruction"] == PROMPT_INSTRUCTION_SPEC
    expected_instruction = {
        "open_scientific_name": "Answer with ONLY the scientific name of the bird. Do not write full sentences.",
        "open_genus": "Answer with ONLY the capitalized Genus name of the bird. Do not write full sentences.",
        "open_common_name": "Answer with ONLY the everyday English common name of the bird. Do not write full sentences.",
        "open_kind_of": "Answer with ONLY the everyday English common name of the bird. Do not write full sentences.",
    }
    if family in expected_instruction:
        assert {r["instruction"] for r in items} == {expected_instruction[family]}


def test_side_files(built) -> None:
    bench, _, cub = built
    layout = json.loads((bench.root / "c2" / "part_layout.json").read_text())
    assert set(layout) == {fam.part_text(p) for p in cub.part_names}
    boxes = cub.bounding_boxes
    p = cub.part_names.index("beak")
    seen = cub.part_visible[:, p]
    nx = (cub.part_xy[seen, p, 0] - boxes[seen, 0]) / boxes[seen, 2]
    ny = (cub.part_xy[seen, p, 1] - boxes[seen, 1]) / boxes[seen, 3]
    # medians after mirroring left-facing birds (beak left of tail, or of the back) — paper C.5
    flip = facing_left(cub)[seen]
    nx = np.where(flip, 1.0 - nx, nx)
    assert layout["beak"] == pytest.approx([np.median(nx), np.median(ny)], abs=1e-6)
    vocabulary = json.loads((bench.root / "c2" / "vocabulary.json").read_text())
    assert vocabulary["colour_words"] == list(fam.COLOUR_WORDS) and len(fam.COLOUR_WORDS) == 15
    assert len([g for g in vocabulary if g.startswith("has_")]) == 28
    assert set(vocabulary["has_bill_length"]) <= {"about the same as head", "longer than head", "shorter than head"}


def test_build_is_deterministic(cub_dir: Path, tmp_path: Path) -> None:
    first = build_c2(cub_dir, tmp_path / "a")
    second = build_c2(cub_dir, tmp_path / "b", workers=2)
    files = sorted(p.relative_to(first.root) for p in first.root.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second.root) for p in second.root.rglob("*") if p.is_file())
    assert any(str(f).startswith("rendered/") for f in files)
    for relative in files:
        assert (first.root / relative).read_bytes() == (second.root / relative).read_bytes(), relative
    other = build_c2(cub_dir, tmp_path / "c", seed=7)
    assert other.items.column("question") != first.items.column("question")


def test_chunked_generation_gives_the_same_items(cub_dir: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    whole = build_c2(cub_dir, tmp_path / "whole")
    monkeypatch.setattr("biovqa.components.c2.build.IMAGES_PER_CHUNK", 4)
    chunked = build_c2(cub_dir, tmp_path / "chunked")
    assert chunked.items_path.read_bytes() == whole.items_path.read_bytes()


def test_image_missing_on_disk_is_counted(tmp_path: Path) -> None:
    cub_path = write_cub(tmp_path, n_classes=2, images_per_class=2)
    first = (cub_path / "images.txt").read_text().splitlines()[0].split()[1]
    (cub_path / "images" / first).unlink()
    bench = build_c2(cub_path, tmp_path / "bench")
    assert bench.manifest["exclusions"] == {"image_missing_on_disk": 1}
    assert "1" not in set(bench.items.column("source_id").to_pylist())
    assert bench.manifest["images"]["source"] == 3


def test_shipped_name_map_covers_every_class() -> None:
    text = default_names_path().read_text(encoding="utf-8").splitlines()
    assert text[0] == "class_id,common_name,scientific_name"
    assert len(text) == 201
    genus_only = [line for line in text[1:] if len(line.split(",")[2].split()) == 1]
    assert [line.split(",")[1] for line in genus_only] == ["Sayornis", "Geococcyx"]


def _cub_for_names(tmp_path: Path):
    return read_cub(write_cub(tmp_path, n_classes=1, images_per_class=1))


@pytest.mark.parametrize(
    ("edit", "row", "field"),
    [
        (lambda lines: ["id,name,sci", *lines[1:]], 1, None),
        (lambda lines: [lines[0], "1,Laysan Albatross,Phoebastria immutabilis", *lines[2:]], 2, "common_name"),
        (lambda lines: [*lines, "201,Dodo,Raphus cucullatus"], 202, "class_id"),
        (lambda lines: [*lines, "1,Black footed Albatross,Phoebastria nigripes"], 202, "class_id"),
        (lambda lines: [lines[0], "x,Black footed Albatross,Phoebastria nigripes", *lines[2:]], 2, "class_id"),
        (lambda lines: lines[:-1], None, "class_id"),
    ],
)
def test_bad_name_map(tmp_path: Path, edit, row, field) -> None:
    cub = _cub_for_names(tmp_path)
    lines = default_names_path().read_text(encoding="utf-8").splitlines()
    path = tmp_path / "names.csv"
    path.write_text("\n".join(edit(lines)) + "\n", encoding="utf-8")
    with pytest.raises(InputFormatError) as info:
        read_name_map(path, cub)
    assert info.value.file == str(path)
    assert (info.value.row, info.value.field) == (row, field)


def test_missing_name_map(tmp_path: Path) -> None:
    with pytest.raises(MissingResourceError):
        read_name_map(tmp_path / "none.csv", _cub_for_names(tmp_path))


def test_floor_responses(built) -> None:
    bench, rows, _ = built
    replies = floor_responses(bench.items).to_pylist()
    assert len(replies) == len(rows)
    open_gold: dict[str, Counter] = {}
    mcq_gold: dict[tuple[str, str], Counter] = {}
    for r in rows:
        if r["options"] is None:
            open_gold.setdefault(r["task"], Counter())[r["answer"]] += 1
        else:
            mcq_gold.setdefault((r["task"], question_stem(r["question"])), Counter())[r["answer"]] += 1
    for r, reply in zip(rows, replies):
        if r["options"] is None:
            counts = open_gold[r["task"]]
            top = max(counts.values())
            assert reply == min(a for a, n in counts.items() if n == top)
        else:
            match = re.fullmatch(r"\(([A-E])\) (.+)", reply)
            assert match and r["options"][fam.LETTERS.index(match.group(1))] == match.group(2)
            counts = mcq_gold[(r["task"], question_stem(r["question"]))]
            scores = [counts[o] for o in r["options"]]
            assert fam.LETTERS.index(match.group(1)) == scores.index(max(scores))


def test_floor_on_hand_made_items() -> None:
    table = pa.table({
        "task": ["visibility_side", "visibility_side", "visibility_side", "open_genus", "open_genus", "open_genus"],
        "question": ["Q? Options: (A) Left, (B) Right"] * 3 + ["G?"] * 3,
        "options": [["Left", "Right"], ["Left", "Right"], ["Left", "Right"], None, None, None],
        "answer": ["Right", "Right", "Left", "Larus", "Sterna", "Larus"],
    })
    assert floor_responses(table).to_pylist() == ["(B) Right"] * 3 + ["Larus"] * 3


def test_floor_ties_go_to_the_earlier_letter_and_first_name() -> None:
    table = pa.table({
        "task": ["category_mcq"] * 2 + ["open_genus"] * 2,
        "question": ["What type? Options: (A) Gull, (B) Tern, (C) Wren",
                     "What type? Options: (A) Wren, (B) Tern, (C) Gull", "G?", "G?"],
        "options": [["Gull", "Tern", "Wren"], ["Wren", "Tern", "Gull"], None, None],
        "answer": ["Tern", "Wren", "Sterna", "Larus"],
    })
    assert floor_responses(table).to_pylist() == ["(B) Tern", "(A) Wren", "Larus", "Larus"]


def test_cli_build(cub_dir: Path, tmp_path: Path) -> None:
    from biovqa.cli.main import main

    main(["build", "c2", "--cub", str(cub_dir), "--out", str(tmp_path / "cli")])
    bench = open_bench(tmp_path / "cli")
    assert bench.component == "c2" and bench.items.num_rows > 0
    with pytest.raises(SystemExit) as info:
        main(["build", "c2", "--cub", str(tmp_path / "missing"), "--out", str(tmp_path / "x")])
    assert info.value.code == 2
