"""Building the hierarchical VQA: distractor policies, small levels, shuffling, templates, the
released item format, sources and their errors (the hierarchical-VQA paper (Tan, Qing, Gong, arXiv:2505.24840): its benchmarks, item construction and prompts)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from fixtures.hca_data import LEVELS, TAXONOMY, write_images, write_taxonomy

from biovqa.components.hca.build import build_hca
from biovqa.components.hca.parse import parse_choice
from biovqa.components.hca.prompts import TEMPLATES, VISUAL_CLOSING
from biovqa.errors import BiovqaError, InputFormatError


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    labels = [leaf for leaf in TAXONOMY for _ in range(2)]
    return write_taxonomy(tmp_path / "data"), write_images(tmp_path / "data", labels)


def _build(tmp_path: Path, inputs: tuple[Path, Path], name: str = "bench", **options):
    taxonomy, images = inputs
    return build_hca(tmp_path / name, taxonomy=taxonomy, images=images, levels=LEVELS, **options)


def test_one_question_per_image_and_level_with_options_from_that_level(tmp_path: Path, inputs) -> None:
    bench = _build(tmp_path, inputs)
    items = bench.items.to_pylist()
    assert len(items) == 12 * 4
    for item in items:
        level_labels = {path[item["level"]] for path in TAXONOMY.values()}
        assert len(item["options"]) == 4 and len(set(item["options"])) == 4
        assert set(item["options"]) <= level_labels
        assert item["options"][ord(item["answer"]) - 65] == TAXONOMY[item["leaf"]][item["level"]]
        assert item["question"].endswith("\n".join(f"{'ABCD'[i]}. {o}" for i, o in enumerate(item["options"])))
        assert item["instruction"] == VISUAL_CLOSING and item["system"].startswith("You are an expert")
    first = items[0]
    assert first["question"].startswith("Given the animal in the image, what is its taxonomic classification "
                                        "at the order level?\nA. ")
    # seeded shuffling spreads the gold over the letters
    assert len(Counter(item["answer"] for item in items)) == 4


def test_taxonomy_policy_takes_siblings_first(tmp_path: Path, inputs) -> None:
    items = _build(tmp_path, inputs).items.to_pylist()
    species = [i for i in items if i["leaf"] == "Black-footed Albatross" and i["level"] == 4]
    assert all("Laysan Albatross" in i["options"] for i in species)   # the only sibling under Phoebastria
    gulls = [i for i in items if i["leaf"] == "Herring Gull" and i["level"] == 2]
    assert all("Stercorariidae" in i["options"] for i in gulls)       # sibling family under Charadriiformes


def test_same_seed_same_bytes_other_seed_other_shuffle(tmp_path: Path, inputs) -> None:
    one = _build(tmp_path, inputs, "one", policy="random", seed=3)
    two = _build(tmp_path, inputs, "two", policy="random", seed=3)
    three = _build(tmp_path, inputs, "three", policy="random", seed=4)
    assert (one.root / "items.parquet").read_bytes() == (two.root / "items.parquet").read_bytes()
    assert one.items.column("options").to_pylist() != three.items.column("options").to_pylist()
    assert one.manifest["parameters"]["policy"] == "random"


def test_small_levels_policy_is_explicit_and_recorded(tmp_path: Path) -> None:
    taxonomy = {leaf: ["Animalia", "Chordata" if i < 4 else "Arthropoda", *path[1:]]
                for i, (leaf, path) in enumerate(TAXONOMY.items())}  # level 1 has only two labels
    data = tmp_path / "data"
    images = write_images(data, list(taxonomy))
    levels = ("phylum", *LEVELS)
    fewer = build_hca(tmp_path / "fewer", taxonomy=write_taxonomy(data, taxonomy), images=images, levels=levels)
    asked = [i for i in fewer.items.to_pylist() if i["level"] == 1]
    assert len(asked) == 6 and all(len(i["options"]) == 2 for i in asked)
    assert fewer.manifest["levels"]["1"] == {"name": "phylum", "labels": 2, "action": "ask with 2 options"}
    skip = build_hca(tmp_path / "skip", taxonomy=data / "taxonomy.json", images=images, levels=levels,
                     small_levels="skip")
    assert 1 not in set(skip.items.column("level").to_pylist())
    assert skip.manifest["levels"]["1"]["action"] == "skip"
    assert skip.manifest["levels"]["2"]["action"] == "ask with 4 options"


@pytest.mark.parametrize(("template_set", "index", "start"), [
    ("cub", 0, "Based on taxonomy, what is the genus of the bird in this image?"),
    ("cub", 3, "How can the bird in this image be categorized taxonomically?"),
    ("inat", 0, "Based on taxonomy, where does the plant in the image fall in terms of genus?"),
    ("imgnet", 2, "Based on classification, what type of plant is this?"),
])
def test_table12_templates(tmp_path: Path, inputs, template_set: str, index: int, start: str) -> None:
    bench = _build(tmp_path, inputs, template_set=template_set, template=index, subject="plant")
    genus = next(i for i in bench.items.to_pylist() if i["level"] == 3)
    assert genus["question"].split("\n")[0] == start
    assert len(TEMPLATES[template_set]) == 5


def test_released_format_round_trip(tmp_path: Path, inputs) -> None:
    bench = _build(tmp_path, inputs)
    released = bench.root / "hca" / "items.jsonl"
    first = json.loads(released.read_text().splitlines()[0])
    assert list(first)[:4] == ["image", "label", "level1", "choices_level1"]
    assert first["level4"] == first["label"] and first["level4"] in first["choices_level4"]
    again = build_hca(tmp_path / "again", released=released, images_root=inputs[1].parent, levels=LEVELS)
    for name in ("item_id", "question", "options", "answer", "image", "level", "depth", "leaf"):
        assert again.items.column(name).to_pylist() == bench.items.column(name).to_pylist(), name
    assert again.manifest["parameters"]["policy"] == "released"


def test_a_released_line_with_a_null_level_skips_it(tmp_path: Path) -> None:
    line = {"image": "a.jpg", "label": "x", "level1": "p", "choices_level1": ["p", "q", "r", "s"],
            "level2": None, "choices_level2": None, "level3": "x", "choices_level3": ["x", "y", "z", "w"]}
    from PIL import Image

    Image.new("RGB", (8, 8)).save(tmp_path / "a.jpg")
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(line) + "\n")
    bench = build_hca(tmp_path / "b", released=path, template_set="imgnet", template=0)
    assert bench.items.column("level").to_pylist() == [1, 3]
    path.write_text(json.dumps(line | {"level1": "t"}) + "\n")
    with pytest.raises(InputFormatError) as caught:
        build_hca(tmp_path / "c", released=path, template_set="imgnet", template=0)
    assert (caught.value.row, caught.value.field) == (1, "choices_level1")


def test_input_errors_name_file_row_and_field(tmp_path: Path, inputs) -> None:
    taxonomy, images = inputs
    bad_list = tmp_path / "bad.csv"
    bad_list.write_text("image,label\na.png,Black-footed Albatross\nb.png,Dodo\n")
    with pytest.raises(InputFormatError) as caught:
        build_hca(tmp_path / "x", taxonomy=taxonomy, images=bad_list)
    assert (caught.value.row, caught.value.field) == (3, "label")
    broken = write_taxonomy(tmp_path / "t", {"Dodo": ["Aves", "Columbiformes", "Dodo"],
                                             "Kiwi": ["Aves", "Apterygiformes", "Bird"]})
    with pytest.raises(InputFormatError, match="ends in 'Bird'"):
        build_hca(tmp_path / "y", taxonomy=broken, images=images)
    with pytest.raises(BiovqaError, match="names the level"):
        build_hca(tmp_path / "z", taxonomy=taxonomy, images=images, template_set="cub", template=0)
    with pytest.raises(BiovqaError, match="exactly one source"):
        build_hca(tmp_path / "w", taxonomy=taxonomy, images=images, released=images)
    with pytest.raises(BiovqaError, match="needs --similarity-model"):
        build_hca(tmp_path / "v", taxonomy=taxonomy, images=images, levels=LEVELS, policy="similarity")


OPTIONS = ["Galliformes", "Anseriformes", "Passeriformes", "Strigiformes"]


@pytest.mark.parametrize(("reply", "letter"), [
    ("B", "B"), ("b.", "B"), ("**C**", "C"), ("(D)", "D"), ("B. Anseriformes", "B"), ("C) Passeriformes", "C"),
    ("The answer is A", "A"), ("answer is (d)", "D"), ("Anseriformes", "B"), ("strigiformes", "D"),
    ("Anseriformes, I think", None), ("It is B", None), ("A bird", None), ("", None), (None, None),
    ("The answer is a raven", None), ("The answer is a.", "A"), ("the answer is c", "C"),
])
def test_strict_parser_of_section_4_1(reply: str | None, letter: str | None) -> None:
    assert parse_choice(reply, OPTIONS) == letter


def test_parser_respects_fewer_options() -> None:
    assert parse_choice("C", ["x", "y"]) is None and parse_choice("B", ["x", "y"]) == "B"
