"""The HCA paper's authors' own files (Tan, Qing, Gong 2025) through ``biovqa build`` / ``score`` / ``report``: their CUB
taxonomy as published (no root, a case-only leaf difference, leaf = genus, CUB folder names that
match only after dropping possessives or through the alias table), a label with two parents (their
ImageNet-artifact taxonomy), released items with their absolute cluster paths, the kingdom of iNat
items asked but not scored, and two datasets in one report."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures.bagel_items import write_jsonl
from fixtures.cli_runner import cli
from fixtures.hca_data import LEVELS, TAXONOMY, write_images, write_taxonomy

from biovqa.bench import open_bench

#: The authors' hierarchy_CUB200.json for seven CUB classes, verbatim (paths start at the order).
AUTHORS_CUB = {
    "Chuck-will's-widow": ["Caprimulgiformes", "Caprimulgidae", "Antrostomus", "Chuck-will's-widow"],
    "Brandt's Cormorant": ["Suliformes", "Phalacrocoracidae", "Phalacrocorax", "Brandt's Cormorant"],
    "Sayornis": ["Passeriformes", "Tyrannidae", "Sayornis", "Sayornis"],
    "Geococcyx": ["Cuculiformes", "Cuculidae", "Geococcyx", "Geococcyx"],
    "Nelson's Sharp-tailed Sparrow": ["Passeriformes", "Passerellidae", "Ammospiza", "Nelson's sharp-tailed Sparrow"],
    "Arctic Tern": ["Charadriiformes", "Laridae", "Sterna", "Arctic Tern"],
    "Forster's Tern": ["Charadriiformes", "Laridae", "Sterna", "Forster's Tern"],
}
#: Their CUB class ids: 022.Chuck_will_Widow, 023.Brandt_Cormorant, 103.Sayornis, 110.Geococcyx,
#: 126.Nelson_Sharp_tailed_Sparrow, 141.Artic_Tern, 146.Forsters_Tern.
CUB_IDS = (22, 23, 103, 110, 126, 141, 146)


def _wrong(item: dict) -> str:
    return "ABCD"[(ord(item["answer"]) - 64) % len(item["options"])]


def _score(tmp_path: Path, bench: Path, replies: dict[str, str], name: str, label: str, capsys, *options: str) -> dict:
    predictions = write_jsonl(tmp_path / f"{name}.jsonl", [{"item_id": k, "response": v} for k, v in replies.items()])
    code, err = cli(["score", bench, "-p", predictions, "-o", tmp_path / name, "--label", label, "--bootstrap", "0",
                     *options], capsys)
    assert code == 0, err
    return json.loads((tmp_path / name / "summary.json").read_text())


def test_the_authors_cub_taxonomy_builds_as_published_and_audits(tmp_path: Path, capsys) -> None:
    from biovqa.synthetic import write_cub

    cub = write_cub(tmp_path / "cub", images_per_class=2, seed=4, class_ids=CUB_IDS)
    taxonomy = tmp_path / "hierarchy_CUB200.json"
    taxonomy.write_text(json.dumps(AUTHORS_CUB, indent=4), encoding="utf-8")
    code, err = cli(["build", "hca", "--out", tmp_path / "bench", "--taxonomy", taxonomy, "--cub", cub,
                     "--levels", "order,family,genus,species", "--template-set", "cub", "--template", "0"], capsys)
    assert code == 0, err
    assert "the taxonomy has no root" in err
    assert "only in case" in err and "Nelson's sharp-tailed Sparrow" in err
    assert "leaf = genus: Geococcyx, Sayornis" in err
    bench = open_bench(tmp_path / "bench")
    manifest = bench.manifest
    assert manifest["cub_class_matches"]["alias"] == {"141.Artic_Tern": "Arctic Tern"}
    assert manifest["cub_class_matches"]["normalised"] == {
        "022.Chuck_will_Widow": "Chuck-will's-widow", "023.Brandt_Cormorant": "Brandt's Cormorant",
        "126.Nelson_Sharp_tailed_Sparrow": "Nelson's Sharp-tailed Sparrow", "146.Forsters_Tern": "Forster's Tern"}
    # no root: the order is level 1 and asked (5 orders among the seven classes)
    assert manifest["levels"]["1"] == {"name": "order", "labels": 5, "action": "ask with 4 options"}
    items = bench.items.to_pylist()
    assert {i["leaf"] for i in items} == set(AUTHORS_CUB)  # one test photo per class, every class matched
    gold = {(i["leaf"], i["level"]): i["options"][ord(i["answer"]) - 65] for i in items}
    assert gold[("Sayornis", 1)] == "Passeriformes"
    assert gold[("Sayornis", 3)] == gold[("Sayornis", 4)] == "Sayornis"
    assert gold[("Nelson's Sharp-tailed Sparrow", 4)] == "Nelson's Sharp-tailed Sparrow"
    assert all(i["depth"] == 4 for i in items)
    for item in items:
        digest = hashlib.sha256(bench.resolve_image(item["image"]).read_bytes()).hexdigest()
        assert item["image_sha256"] == digest
    code, err = cli(["audit", tmp_path / "bench"], capsys)
    assert code == 0, err
    # taxonomy in context shows the paths as published: no stand-in root
    code, err = cli(["build", "hca", "--out", tmp_path / "context", "--taxonomy", taxonomy, "--cub", cub,
                     "--levels", "order,family,genus,species", "--template-set", "cub", "--template", "0",
                     "--taxonomy-context"], capsys)
    assert code == 0, err
    question = open_bench(tmp_path / "context").items.column("question")[0].as_py()
    assert '"Sayornis": ["Sayornis", "Tyrannidae", "Passeriformes"]' in question and "(root)" not in question


#: The authors' ImageNet-artifact taxonomy in little: "sports equipment" sits under two parents.
ARTIFACT = {
    "racket": ["artifact", "instrumentality", "implement", "sports equipment", "racket"],
    "hammer": ["artifact", "instrumentality", "implement", "tool", "hammer"],
    "dumbbell": ["artifact", "instrumentality", "equipment", "sports equipment", "dumbbell"],
    "camera": ["artifact", "instrumentality", "equipment", "photographic equipment", "camera"],
    "bench": ["artifact", "structure", "furniture", "seat", "bench"],
    "arch stone": ["artifact", "structure", "arch", "masonry", "arch stone"],
}


def test_a_label_with_two_parents_is_scored_on_each_images_own_path_or_refused(tmp_path: Path, capsys) -> None:
    taxonomy = write_taxonomy(tmp_path / "data", ARTIFACT)
    images = write_images(tmp_path / "data", list(ARTIFACT))
    code, err = cli(["build", "hca", "--out", tmp_path / "bench", "--taxonomy", taxonomy, "--images", images,
                     "--template-set", "imgnet", "--template", "0"], capsys)
    assert code == 0, err
    assert "'sports equipment' under equipment and implement" in err
    bench = open_bench(tmp_path / "bench")
    assert bench.manifest["taxonomy_notes"]["several_parents"] == {"sports equipment": ["equipment", "implement"]}
    items = bench.items.to_pylist()
    # the racket is asked its own path: implement at level 2, sports equipment at level 3
    racket = {i["level"]: i["options"][ord(i["answer"]) - 65] for i in items if i["leaf"] == "racket"}
    dumbbell = {i["level"]: i["options"][ord(i["answer"]) - 65] for i in items if i["leaf"] == "dumbbell"}
    assert (racket[2], racket[3]) == ("implement", "sports equipment")
    assert (dumbbell[2], dumbbell[3]) == ("equipment", "sports equipment")
    # right on every level of its own path except the racket's level 2: only the racket path fails
    replies = {i["item_id"]: _wrong(i) if (i["leaf"], i["level"]) == ("racket", 2) else i["answer"] for i in items}
    summary = _score(tmp_path, bench.root, replies, "scores", "m", capsys)
    assert summary["metrics"]["hca"]["value"] == pytest.approx(5 / 6)
    assert summary["levels"]["3"]["value"] == 1.0
    code, err = cli(["build", "hca", "--out", tmp_path / "refused", "--taxonomy", taxonomy, "--images", images,
                     "--template-set", "imgnet", "--template", "0", "--several-parents", "refuse"], capsys)
    assert code == 2
    assert "label 'sports equipment' has 2 parents" in err and "--several-parents allow" in err
    assert "Traceback" not in err


def _released_line(image: str, label: str, golds: list[str], choices: list[list[str]]) -> dict:
    line: dict = {"image": image, "label": label, "split": "test"}
    for level, (gold, options) in enumerate(zip(golds, choices), start=1):
        line[f"level{level}"], line[f"choices_level{level}"] = gold, options
    return line


def _photos(root: Path, names: list[str]) -> None:
    from PIL import Image

    for k, name in enumerate(names):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (24, 16), (40 * k % 256, 90, 30)).save(root / name)


def test_released_items_with_the_authors_absolute_paths_are_rerooted_hashed_and_audited(tmp_path: Path,
                                                                                        capsys) -> None:
    cluster = "/projectnb/ivc-ml/yuwentan/dataset/CUB_200_2011/images/"
    names = ["001.Black_footed_Albatross/Black_Footed_Albatross_0001_796111.jpg",
             "002.Laysan_Albatross/Laysan_Albatross_0002_1027.jpg",
             "004.Groove_billed_Ani/Groove_Billed_Ani_0009_1522.jpg"]
    cub = tmp_path / "CUB_200_2011"
    _photos(cub / "images", names[:2])  # the third photo is not here
    orders = ["procellariiformes", "cuculiformes", "apodiformes", "pelecaniformes"]
    species = ["black-footed albatross", "laysan albatross", "groove-billed ani", "sooty albatross"]
    lines = [_released_line(cluster + name, label, [order, leaf], [orders, species])
             for name, label, order, leaf in zip(names, ["Black-footed Albatross", "Laysan Albatross", "Groove-billed Ani"],
                                                 ["procellariiformes", "procellariiformes", "cuculiformes"], species)]
    released = write_jsonl(tmp_path / "CUB200_with_similar_choice.jsonl", lines)
    code, err = cli(["build", "hca", "--out", tmp_path / "bench", "--released", released, "--images-root", cub,
                     "--template-set", "cub", "--template", "2"], capsys)
    assert code == 0, err
    bench = open_bench(tmp_path / "bench")
    assert bench.manifest["exclusions"] == {"missing_image": 1}
    assert bench.manifest["exclusion_examples"] == {"missing_image": [cluster + names[2]]}
    assert bench.manifest["unscored_levels"] == []  # CUB: level 1 (the order) is scored
    images = sorted(set(bench.items.column("image").to_pylist()))
    assert images == ["images/" + name for name in names[:2]]
    assert cluster not in json.dumps(bench.items.to_pylist())  # only the exclusion names the foreign path
    assert cluster not in (bench.root / "hca" / "items.jsonl").read_text()
    for row in bench.items.select(["image", "image_sha256"]).to_pylist():
        assert row["image_sha256"] == hashlib.sha256((cub / row["image"]).read_bytes()).hexdigest()
    code, err = cli(["audit", tmp_path / "bench"], capsys)
    assert code == 0, err
    # relocatable: no builder path recorded; bench and photos moved together still audit
    assert str(tmp_path) not in (tmp_path / "bench" / "manifest.json").read_text()
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (tmp_path / "bench").rename(moved / "bench")
    cub.rename(moved / "CUB_200_2011")
    code, err = cli(["audit", moved / "bench"], capsys)
    assert code == 0, err
    cub = moved / "CUB_200_2011"
    # a path that climbs out of its folder is refused, naming the line
    write_jsonl(released, [*lines, _released_line("../../etc/photo.jpg", "x", ["procellariiformes"], [orders])])
    code, err = cli(["build", "hca", "--out", tmp_path / "escape", "--released", released, "--images-root", cub,
                     "--template-set", "cub", "--template", "2"], capsys)
    assert code == 2 and "row 4" in err and "climbs out" in err


def test_the_kingdom_of_inat_items_is_asked_but_not_scored_unless_asked_to(tmp_path: Path, capsys) -> None:
    root = tmp_path / "inat"
    names = [f"val/{k:05d}_Plantae/{k}.jpg" for k in range(2)]
    _photos(root, names)
    kingdoms = ["plantae", "animalia", "fungi", "chromista"]
    phyla = ["tracheophyta", "bryophyta", "chordata", "arthropoda"]
    lines = [_released_line(f"/projectnb/ivc-ml/inat/{name}", f"plant {k}", ["plantae", "tracheophyta"],
                            [kingdoms, phyla]) for k, name in enumerate(names)]
    released = write_jsonl(tmp_path / "inat21_plantae_with_similar_choice.jsonl", lines)
    code, err = cli(["build", "hca", "--out", tmp_path / "bench", "--released", released, "--images-root", root,
                     "--levels", "kingdom,phylum"], capsys)
    assert code == 0, err
    assert "levels asked but not scored: [1]" in err
    bench = open_bench(tmp_path / "bench")
    assert sorted(set(bench.items.column("level").to_pylist())) == [1, 2]  # the kingdom is asked
    replies = {i["item_id"]: _wrong(i) if i["level"] == 1 else i["answer"] for i in bench.items.to_pylist()}
    summary = _score(tmp_path, bench.root, replies, "plain", "m", capsys)
    assert summary["metrics"]["hca"]["value"] == 1.0 and summary["unscored_levels"] == [1]
    assert summary["levels"]["1 kingdom"]["value"] == 0.0  # still reported
    scored = _score(tmp_path, bench.root, replies, "scored", "m", capsys, "-O", "score_unscored_levels=true")
    assert scored["metrics"]["hca"]["value"] == 0.0 and scored["unscored_levels"] == []


def test_two_datasets_in_one_report_pair_each_datasets_visual_and_text_scores(tmp_path: Path, capsys) -> None:
    """Per dataset, three models whose visual leaf is always right and whole visual paths right for
    the first v leaves, whole text paths for the first t: scaled HCA = v/6, text HCA = t/6. Dataset
    cub: (v, t) = (1, 1), (3, 2), (4, 3), r = 0.982; dataset inat: (1, 3), (3, 2), (4, 1), r = −0.982."""
    leaves = list(TAXONOMY)
    folders = []
    expected = {"cub": [(1, 1), (3, 2), (4, 3)], "inat": [(1, 3), (3, 2), (4, 1)]}
    for dataset, cells in expected.items():
        data = tmp_path / f"data-{dataset}"
        taxonomy, images = write_taxonomy(data), write_images(data, [leaf for leaf in TAXONOMY for _ in range(2)])
        code, err = cli(["build", "hca", "--out", tmp_path / dataset, "--taxonomy", taxonomy, "--images", images,
                         "--levels", ",".join(LEVELS), "--policy", "random", "--dataset", dataset], capsys)
        assert code == 0, err
        code, err = cli(["build", "hca", "--out", tmp_path / f"{dataset}-text", "--text-from", tmp_path / dataset],
                        capsys)
        assert code == 0, err
        visual, text = open_bench(tmp_path / dataset), open_bench(tmp_path / f"{dataset}-text")
        assert text.manifest["dataset"] == dataset
        for k, (v, t) in enumerate(cells):
            replies = {i["item_id"]: i["answer"] if i["leaf"] in leaves[:v] or i["level"] == 4 else _wrong(i)
                       for i in visual.items.to_pylist()}
            _score(tmp_path, visual.root, replies, f"{dataset}-v{k}", f"m{k}", capsys)
            replies = {i["item_id"]: i["answer"] if i["leaf"] in leaves[:t] else _wrong(i)
                       for i in text.items.to_pylist()}
            _score(tmp_path, text.root, replies, f"{dataset}-t{k}", f"m{k} [text]", capsys)
            folders += [tmp_path / f"{dataset}-v{k}", tmp_path / f"{dataset}-t{k}"]
    code, err = cli(["report", *folders, "--out", tmp_path / "report"], capsys)
    assert code == 0, err
    report = tmp_path / "report"
    import pandas as pd

    paired = pd.read_csv(report / "hca_text_vs_visual.csv")
    assert len(paired) == 6
    for dataset, cells in expected.items():
        rows = paired[paired["dataset"] == dataset].sort_values("model")
        assert rows["model"].tolist() == ["m0", "m1", "m2"]
        assert rows["scaled HCA"].tolist() == pytest.approx([round(v / 6, 3) for v, _ in cells])  # fractions
        assert rows["text HCA"].tolist() == pytest.approx([round(t / 6, 3) for _, t in cells])
    correlation = pd.read_csv(report / "hca_correlation.csv").set_index("dataset")
    assert correlation.loc["cub", "pearson_r"] == pytest.approx(0.982, abs=1e-4)
    assert correlation.loc["inat", "pearson_r"] == pytest.approx(-0.982, abs=1e-4)
    assert (correlation["models"] == 3).all()
    # per model across datasets: two datasets are too few for a correlation
    per_model = pd.read_csv(report / "hca_correlation_per_model.csv")
    assert (per_model["datasets"] == 2).all() and per_model["pearson_r"].isna().all()
    # HCA at depth k: depth 4 is HCA itself, depth 1 the order alone
    depth = pd.read_csv(report / "hca_depth.csv").set_index("depth")
    hierarchy = pd.read_csv(report / "hca_hierarchy.csv")
    first = hierarchy.iloc[0]
    column = f"{first['model']} ({first['kind']}, {first['dataset']})"
    assert depth.loc[4, column] == pytest.approx(first["HCA"])
    assert depth.loc[1, column] >= depth.loc[2, column] >= depth.loc[4, column]


def test_an_article_is_never_an_option_letter_and_cot_takes_the_final_answer(tmp_path: Path, capsys) -> None:
    taxonomy, images = write_taxonomy(tmp_path / "data"), write_images(tmp_path / "data", list(TAXONOMY))
    code, err = cli(["build", "hca", "--out", tmp_path / "plain", "--taxonomy", taxonomy, "--images", images,
                     "--levels", ",".join(LEVELS)], capsys)
    assert code == 0, err
    items = open_bench(tmp_path / "plain").items.to_pylist()
    replies = {items[0]["item_id"]: "The answer is a raven", items[1]["item_id"]: "Answer: a parasite",
               items[2]["item_id"]: "The answer is B"}
    _score(tmp_path, tmp_path / "plain", replies, "plain-scores", "m", capsys)
    parsed = pq.read_table(tmp_path / "plain-scores" / "items.parquet").column("parsed").to_pylist()
    assert parsed[:3] == [None, None, "B"]
    code, err = cli(["build", "hca", "--out", tmp_path / "cot", "--taxonomy", taxonomy, "--images", images,
                     "--levels", ",".join(LEVELS), "--cot"], capsys)
    assert code == 0, err
    items = open_bench(tmp_path / "cot").items.to_pylist()
    replies = {items[0]["item_id"]: "It has a hooked bill, so the answer is a raven.\nC",
               items[1]["item_id"]: "The correct answer is: B",
               items[2]["item_id"]: "The answer is B. On reflection, the answer is D."}
    _score(tmp_path, tmp_path / "cot", replies, "cot-scores", "m", capsys)
    parsed = pq.read_table(tmp_path / "cot-scores" / "items.parquet").column("parsed").to_pylist()
    assert parsed[:3] == ["C", "B", "D"]
