from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from biovqa.components.c1.build import C1BuildOptions, build_c1
from biovqa.components.c1.prompts import INSTRUCTIONS, MCQ_TEMPLATE, NAME_TEMPLATES, RANK_TEMPLATES
from biovqa.components.c1.tasks import TASK_NAMES
from biovqa.bench import open_bench
from biovqa.text import normalize_c1


@pytest.fixture(scope="module")
def items(demo_bench: Path) -> list[dict]:
    return open_bench(demo_bench).items.to_pylist()


def test_nine_questions_per_image_eight_for_reptiles(items: list[dict]) -> None:
    per_image = Counter(row["source_id"] for row in items)
    groups = {row["source_id"]: row["group"] for row in items}
    for uuid, n in per_image.items():
        assert n == (8 if groups[uuid] == "Reptiles" else 9), uuid
    reptile_tasks = {row["task"] for row in items if row["group"] == "Reptiles"}
    assert "order" not in reptile_tasks
    assert {row["task"] for row in items} == set(TASK_NAMES)


def test_all_ten_groups_with_per_group_quota(demo_bench: Path, items: list[dict]) -> None:
    manifest = open_bench(demo_bench).manifest
    images_per_group = Counter({row["source_id"]: row["group"] for row in items}.values())
    assert len(images_per_group) == 10
    assert all(n == 8 for n in images_per_group.values())
    assert manifest["images"] == 80
    assert manifest["counts"]["total"] == len(items) == 80 * 9 - 8


def test_exclusions_are_counted_not_silent(demo_bench: Path) -> None:
    exclusions = open_bench(demo_bench).manifest["exclusions"]
    assert exclusions["missing_image"] == {"Amphibians": 1} or sum(exclusions["missing_image"].values()) == 1
    assert sum(exclusions["incomplete_lineage"].values()) == 1


def test_questions_use_verbatim_templates(items: list[dict]) -> None:
    for row in items:
        label = {"Animalia": "animal", "Plantae": "plant"}.get(row["kingdom"], "organism")
        assert row["instruction"] == INSTRUCTIONS[row["task"]]
        if row["task"] == "common_name_mcq":
            expected = MCQ_TEMPLATE.format(label=label, o1=row["options"][0], o2=row["options"][1],
                                           o3=row["options"][2], o4=row["options"][3])
            assert row["question"] == expected
            continue
        word = {"species": "species epithet", "scientific_name": "scientific name",
                "common_name": "common name"}.get(row["task"], row["task"])
        templates = NAME_TEMPLATES if row["task"] in ("scientific_name", "common_name") else RANK_TEMPLATES
        assert row["question"] in {t.format(rank=word, label=label) for t in templates}


def test_gold_answers_per_task(items: list[dict]) -> None:
    for row in items:
        task = row["task"]
        if task in ("phylum", "class", "order", "family", "genus"):
            assert row["answer"] == row[task]
        elif task == "species":
            assert row["answer"] == row["species"].split()[1] == row["epithet"]
        elif task == "scientific_name":
            assert row["answer"] == row["species"]
        else:
            assert row["answer"] == row["common_name"]


def test_mcq_options_four_distinct_with_gold(items: list[dict]) -> None:
    mcq = [row for row in items if row["task"] == "common_name_mcq"]
    assert mcq
    for row in mcq:
        options = row["options"]
        assert len(options) == 4 and row["answer"] in options
        assert len({normalize_c1(o) for o in options}) == 4
        assert row["tier_method"] == "confusability" and row["mcq_tier"] in {"Easy", "Medium", "Hard"}
    assert Counter(row["options"].index(row["answer"]) for row in mcq).most_common(1)[0][1] < len(mcq)


def test_non_english_common_names_replaced_and_recorded(demo_bench: Path, items: list[dict]) -> None:
    spruce = {row["common_name"] for row in items if row["species"] == "Picea abies"}
    frog = {row["common_name"] for row in items if row["species"] == "Rana arvalis"}
    assert spruce <= {"Norway Spruce"} and frog <= {"Moor Frog"}
    assert spruce or frog
    replaced = pq.read_table(demo_bench / "c1" / "common_names.parquet").to_pylist()
    assert {r["catalog_common_name"] for r in replaced} <= {"gran", "åkergroda", "Silvergreen Bryum Moss", "Bluegill"}
    assert all(r["common_name_source"] == "gbif_en" for r in replaced)


def test_tiers_recorded_on_every_item(items: list[dict]) -> None:
    for row in items:
        if row["task"] == "common_name_mcq":
            continue
        assert row["tier_method"] == "prevalence"
        assert row["prevalence_tier"] in {"Easy", "Medium", "Hard", "Degenerate"}
        assert row["tier"] == row["prevalence_tier"]
    phylum = {row["tier"] for row in items if row["task"] == "phylum"}
    assert phylum == {"Degenerate"}  # four phyla: thin everywhere, as in the paper


def test_build_is_byte_identical(tmp_path: Path, demo_data: Path, demo_index: Path, demo_images: Path) -> None:
    outputs = []
    for name in ("a", "b"):
        build_c1(demo_data / "catalog.csv", demo_index, demo_images, tmp_path / name,
                 options=C1BuildOptions(per_group=8, species_cap=2))
        outputs.append(tmp_path / name)
    for file in ("items.parquet", "manifest.json", "c1/tree.parquet", "c1/vernacular.parquet"):
        assert (outputs[0] / file).read_bytes() == (outputs[1] / file).read_bytes(), file
    manifest = json.loads((outputs[0] / "manifest.json").read_text())
    assert manifest["sources"]["catalog"]["sha256"]
    assert manifest["counts"]["by_task"]["order"] == 72


def test_other_seed_gives_other_sample(tmp_path: Path, demo_data: Path, demo_index: Path, demo_images: Path) -> None:
    a = build_c1(demo_data / "catalog.csv", demo_index, demo_images, tmp_path / "a",
                 options=C1BuildOptions(per_group=4, species_cap=1, seed=1))
    b = build_c1(demo_data / "catalog.csv", demo_index, demo_images, tmp_path / "b",
                 options=C1BuildOptions(per_group=4, species_cap=1, seed=2))
    assert set(a.items.column("source_id").to_pylist()) != set(b.items.column("source_id").to_pylist())


@pytest.mark.parametrize(("fmt", "options"), [("PNG", {}), ("JPEG", {}), ("JPEG", {"progressive": True}),
                                              ("GIF", {}), ("WEBP", {}), ("WEBP", {"lossless": True})])
def test_image_size_from_header_matches_pil(fmt: str, options: dict) -> None:
    import io

    from PIL import Image

    from biovqa.components.c1.build.images import image_size

    buffer = io.BytesIO()
    Image.new("RGB", (321, 123), (10, 20, 30)).save(buffer, format=fmt, **options)
    assert image_size(buffer.getvalue()) == (321, 123)
    assert image_size(b"not an image at all") is None
