"""Sources of the hierarchical VQA: a C1 benchmark (its lineage is the hierarchy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from biovqa.bench import open_bench
from biovqa.components.hca.build import build_hca
from biovqa.errors import InputFormatError


@pytest.mark.slow
def test_build_from_a_c1_bench_and_its_common_name_text_control(tmp_path: Path, demo_bench: Path) -> None:
    c1 = open_bench(demo_bench).items
    bench = build_hca(tmp_path / "visual", c1_bench=demo_bench, template_set="inat", template=1)
    items = bench.items.to_pylist()
    images = {row["image"] for row in c1.to_pylist() if row["species"]}
    assert {item["image_key"] for item in items} <= images
    lineage = {row["image"]: row for row in c1.to_pylist()}
    ranks = ("phylum", "class", "order", "family", "genus", "species")
    for item in items:
        gold = item["options"][ord(item["answer"]) - 65]
        assert gold == lineage[item["image_key"]][ranks[item["level"] - 1]]
        assert item["level_name"] == ranks[item["level"] - 1]
    assert bench.resolve_image(items[0]["image"]).is_file()
    assert set(bench.manifest["levels"]) == {"1", "2", "3", "4", "5", "6"}
    text = build_hca(tmp_path / "text", text_from=bench.root, entity="common")
    names = set(bench.manifest["common_names"].values())
    assert {row["source_id"] for row in text.items.to_pylist()} <= names
    assert not any(text.items.column("genus_leak").to_pylist())  # common names give no genus away
    binomial = build_hca(tmp_path / "binomial", text_from=bench.root)
    assert any(binomial.items.column("genus_leak").to_pylist())


def test_a_bench_of_another_component_is_refused(tmp_path: Path) -> None:
    from fixtures.bagel_items import APPENDIX_B, write_jsonl

    from biovqa.components.bagel.build import build_bagel

    bagel = build_bagel([write_jsonl(tmp_path / "b.jsonl", APPENDIX_B)], tmp_path / "bagel").root
    with pytest.raises(InputFormatError, match="not a C1 benchmark"):
        build_hca(tmp_path / "x", c1_bench=bagel)
    with pytest.raises(InputFormatError, match="not a visual hca benchmark"):
        build_hca(tmp_path / "y", text_from=bagel)


def test_build_from_cub_with_a_class_to_taxonomy_map(tmp_path: Path) -> None:
    """CUB-200-2011 in its native layout (a tiny archive with the real class list) plus the CUB
    taxonomy keyed by English names ("Black-footed Albatross" ↔ 001.Black_footed_Albatross)."""
    import json

    from biovqa.synthetic import write_cub

    root = write_cub(tmp_path / "cub", n_classes=4, images_per_class=4, seed=3, class_ids=(1, 2, 3, 4))
    taxonomy = {
        "Black-footed Albatross": ["Aves", "Procellariiformes", "Diomedeidae", "Phoebastria", "Black-footed Albatross"],
        "Laysan Albatross": ["Aves", "Procellariiformes", "Diomedeidae", "Phoebastria", "Laysan Albatross"],
        "Sooty Albatross": ["Aves", "Procellariiformes", "Diomedeidae", "Phoebetria", "Sooty Albatross"],
        "Groove-billed Ani": ["Aves", "Cuculiformes", "Cuculidae", "Crotophaga", "Groove-billed Ani"],
    }
    path = tmp_path / "cub_taxonomy.json"
    path.write_text(json.dumps(taxonomy))
    split = {int(a): int(b) for a, b in (line.split() for line in (root / "train_test_split.txt").read_text().split("\n") if line)}
    bench = build_hca(tmp_path / "bench", taxonomy=path, cub=root, levels=("order", "family", "genus", "species"),
                      template_set="cub", template=0)
    images = sorted(set(bench.items.column("image").to_pylist()))
    assert len(images) == sum(1 for v in split.values() if v == 0)
    assert all(bench.resolve_image(image).is_file() for image in images)
    first = bench.items.to_pylist()[0]
    assert first["image"].split("/")[0].replace("_", " ").split(".", 1)[1].casefold() == \
        first["leaf"].replace("-", " ").casefold()
    assert bench.manifest["levels"]["1"] == {"name": "order", "labels": 2, "action": "ask with 2 options"}
    del taxonomy["Groove-billed Ani"]
    path.write_text(json.dumps(taxonomy))
    with pytest.raises(InputFormatError, match="004.Groove_billed_Ani' has no leaf"):
        build_hca(tmp_path / "x", taxonomy=path, cub=root)
