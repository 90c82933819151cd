"""C3 builds that mean what the paper says, through ``biovqa build c3``: counting only from sources
whose counts are vouched for, relocatable benches whatever form a source was given in, the
viewpoint species tier on single-animal photos, ten counting subsets from the five ecological
datasets, balanced relative-position golds, two-panel canvases at half the Easy area."""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from biovqa.components.c3.demo import demo_beetle_plates, write_beetles, write_gzcd, write_waid, write_demo_sources
from biovqa.sources.wildlife import write_coco_catalog
from fixtures.cli_runner import cli

G, P, R = "zebra_grevys", "zebra_plains", "giraffe_reticulated"
TINY = ["--canvas", "64", "--plate-side", "128"]


def _manifest(bench: Path) -> dict:
    return json.loads((bench / "manifest.json").read_text())


def _items(bench: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(bench / "items.parquet").to_pylist()


def _drop_rows(table: Path, keep: int) -> int:
    """Keep only the first ``keep`` rows of the GGR table (a detector that missed animals); returns
    how many annotation rows the photos had."""
    with open(table, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    with open(table, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows[:1 + keep])
    return len(rows) - 1


def _whaleshark(root: Path, per_image: list[int]) -> Path:
    """A Wild Me catalog (``whaleshark.coco``) with ``per_image`` sharks per photo."""
    images = [{"id": k + 1, "file_name": f"{k:03d}.jpg", "width": 120, "height": 80, "date_captured": "NA"}
              for k in range(len(per_image))]
    annotations, n = [], 0
    for k, count in enumerate(per_image):
        for j in range(count):
            annotations.append({"id": n + 1, "image_id": k + 1, "bbox": [4.0 + 36 * j, 10.0, 30.0, 30.0],
                                "theta": 0.0, "viewpoint": ("left", "right", "front")[n % 3], "name": f"s{n}",
                                "category_id": 0})
            n += 1
    json_path = write_coco_catalog(root, annotations, images, year=2020,
                                   categories=[{"id": 0, "name": "whale_shark", "supercategory": "animal"}])
    for image in images:
        Image.new("RGB", (120, 80), (30, 60, 90)).save(root / "images" / "train2020" / image["file_name"])
    return json_path


# ------------------------------------------------------------------ counting completeness


def test_a_ggr_table_with_fewer_rows_than_animals_feeds_no_counting_unless_declared(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_gzcd(tmp_path / "gzcd", [[G, G, G], [G, G], [G, P, R]])
    table = folder / "ggr_output.csv"
    assert _drop_rows(table, 4) == 8  # the detector found 4 of the 8 animals drawn
    code, err = cli(["build", "c3", "--source", f"gzcd={table}", "--out", tmp_path / "plain", *TINY], capsys)
    assert code == 0, err
    manifest = _manifest(tmp_path / "plain")
    assert manifest["counting_sources"]["gzcd"]["counting"] is False
    assert "detector output" in manifest["counting_sources"]["gzcd"]["why"]
    assert "gzcd feeds no counting" in err and "--complete-counts gzcd" in err
    tasks = Counter(row["task"] for row in _items(tmp_path / "plain"))
    assert tasks["counting"] == tasks["relative_counting"] == 0 and "gzcd" not in manifest["subsets"]
    assert tasks["viewpoint"] == 4 and tasks["localization"] == 1  # it still feeds the catalog tasks

    code, err = cli(["build", "c3", "--source", f"gzcd={table}", "--complete-counts", "gzcd", "--out",
                     tmp_path / "declared", *TINY], capsys)
    assert code == 0, err
    manifest = _manifest(tmp_path / "declared")
    assert manifest["counting_sources"]["gzcd"] == {
        "counting": True, "basis": "declared complete by the user (--complete-counts gzcd)"}
    assert manifest["parameters"]["complete_counts"] == ["gzcd"]
    golds = [row["gold_number"] for row in _items(tmp_path / "declared") if row["task"] == "counting"]
    assert golds and manifest["subsets"]["gzcd"]["selected"] == 2  # the photos the 4 rows name

    code, err = cli(["build", "c3", "--source", f"gzcd={table}", "--complete-counts", "gzdc", "--out",
                     tmp_path / "x", *TINY], capsys)
    assert code == 2 and "did you mean 'gzcd'" in err and "Traceback" not in err


def test_every_source_says_what_its_counts_rest_on(tmp_path: Path) -> None:
    from biovqa.components.c3.build import build_c3

    sources = write_demo_sources(tmp_path / "src")
    bench = build_c3({**sources, "gzcd": write_gzcd(tmp_path / "coco", [[G], [G, P]], form="coco")},
                     tmp_path / "bench", per_subset=10, canvas=64, plate_side=128, rpos_items=8)
    entries = bench.manifest["counting_sources"]
    assert set(entries) == {"waid", "bees", "depondfi", "beetles", "gzcd"}
    assert all(entry["counting"] for entry in entries.values())  # GZCD's COCO release is the paper's source
    assert "leave some fish" in entries["depondfi"]["basis"] and "1..N" in entries["beetles"]["basis"]
    # ten counting subsets from the five ecological datasets (WAID one per class)
    assert sorted(bench.manifest["subsets"]) == ["bees", "beetles", "depondfi", "gzcd", "waid-camelus",
                                                 "waid-cattle", "waid-kiang", "waid-seal", "waid-sheep",
                                                 "waid-zebra"]


# ------------------------------------------------------------------ relocatable benches


def _host_strings(value: object, roots: tuple[str, ...]) -> list[str]:
    """Every string inside ``value`` that is absolute or names one of ``roots``."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _host_strings(k, roots) + _host_strings(v, roots)]
    if isinstance(value, list):
        return [s for v in value for s in _host_strings(v, roots)]
    if isinstance(value, str) and (value.startswith("/") or any(r in value for r in roots)):
        return [value]
    return []


def test_file_forms_build_relocatable_benches_with_one_name_per_photo(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "project"
    gzcd = write_gzcd(project / "src" / "gzcd", [[G], [G, G, P], [G], [R, G]])
    coco = write_gzcd(project / "src" / "gzcd-coco", [[G], [G, P]], form="coco")
    shark_json = _whaleshark(project / "src" / "whaleshark.coco", [1, 2, 1])
    beetles = write_beetles(project / "src" / "beetles", dict(list(demo_beetle_plates().items())[:1]))
    as_files = ["--source", f"gzcd={gzcd / 'ggr_output.csv'}", "--source", f"whaleshark={shark_json}",
                "--source", f"beetles={beetles}"]
    as_folders = ["--source", f"gzcd={gzcd}", "--source", f"whaleshark={project / 'src' / 'whaleshark.coco'}",
                  "--source", f"beetles={beetles}"]
    for name, args in (("files", as_files), ("folders", as_folders)):
        code, err = cli(["build", "c3", *args, "--out", project / name, "--rpos-items", "8", *TINY], capsys)
        assert code == 0, err
    code, err = cli(["build", "c3", "--source", f"gzcd={coco / 'final_metadata.json'}", "--out",
                     project / "coco", *TINY], capsys)
    assert code == 0, err
    # the form a source was given in changes nothing an item says
    assert (project / "files" / "items.parquet").read_bytes() == (project / "folders" / "items.parquet").read_bytes()
    for bench in ("files", "coco"):
        items, manifest = _items(project / bench), _manifest(project / bench)
        assert _host_strings(items, (str(tmp_path),)) == []
        assert _host_strings(manifest, (str(tmp_path),)) == []
        names = {row["cluster"] for row in items if row["task"] in ("localization", "viewpoint")}
        assert names and all(n.startswith(("gzcd/images/", "whaleshark/images/train2020/")) for n in names)
        for row in items:
            if not row["image"].startswith("rendered/"):
                assert row["image"] == row["cluster"]  # one name per photo
    assert _manifest(project / "files")["image_roots"] == {"beetles": "../src/beetles", "gzcd": "../src/gzcd",
                                                          "whaleshark": "../src/whaleshark.coco"}
    assert _manifest(project / "files")["source_forms"]["whaleshark"] == {
        "given": "file", "under_photo_folder": "annotations/instances_train2020.json"}
    # sources and bench moved elsewhere together: the audit finds every photo by its hash
    moved = tmp_path / "elsewhere" / "deeper"
    shutil.move(project, moved)
    for bench in ("files", "coco"):
        code, err = cli(["audit", moved / bench], capsys)
        assert code == 0 and "audit passed" in err, err


def test_a_photo_path_leading_out_of_the_tables_folder_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_gzcd(tmp_path / "gzcd", [[G]])
    table = folder / "ggr_output.csv"
    with open(table, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    photo = next((folder / "images").glob("*.jpg"))
    outside = tmp_path / "outside.jpg"
    photo.rename(outside)
    rows[1][rows[0].index("path")] = "../outside.jpg"
    with open(table, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    code, err = cli(["build", "c3", "--source", f"gzcd={table}", "--out", tmp_path / "b", *TINY], capsys)
    assert code == 2 and "Traceback" not in err
    assert "ggr_output.csv" in err and "row 2" in err and "'path'" in err and "outside" in err
    assert not (tmp_path / "b").exists()


# ------------------------------------------------------------------ viewpoint species tier


def test_the_species_tier_asks_only_about_single_animal_photos(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    photos = [[G], [G, G, P], [G, G], [G], [G, P, R, G], [P], [G, G, G], [G]]
    source = write_gzcd(tmp_path / "gzcd", photos, form="coco")
    code, err = cli(["build", "c3", "--source", f"gzcd={source}", "--out", tmp_path / "b", *TINY], capsys)
    assert code == 0, err
    items, manifest = _items(tmp_path / "b"), _manifest(tmp_path / "b")
    annotations = Counter(row["cluster"] for row in items if row["task"] == "viewpoint")
    assert sum(annotations.values()) == sum(map(len, photos))  # every annotation is still asked once
    species = [row for row in items if row["task"] == "viewpoint" and row["tier"] == "species"]
    assert species and all(annotations[row["cluster"]] == 1 for row in species)
    assert all(row["question"].startswith("What is the viewpoint of the ") for row in species)
    assert manifest["viewpoint_species_tier"]["excluded_multi_animal_photos"] == {"gzcd": 4}
    tiers = Counter(row["tier"] for row in items if row["task"] == "viewpoint")
    assert set(tiers) == {"red_box", "species", "three_panel"}


# ------------------------------------------------------------------ relative position


def test_relative_position_golds_are_balanced_or_the_shortfall_is_recorded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    beetles = write_beetles(tmp_path / "beetles", dict(list(demo_beetle_plates().items())[:2]))
    code, err = cli(["build", "c3", "--source", f"beetles={beetles}", "--rpos-items", "400", "--out",
                     tmp_path / "b", *TINY], capsys)
    assert code == 0, err
    golds = Counter(row["answer"] for row in _items(tmp_path / "b") if row["task"] == "relative_position")
    record = _manifest(tmp_path / "b")["relative_position"]
    assert len(golds) == 8 and len(set(golds.values())) == 1  # a constant reply scores exactly 1/8
    per = record["per_direction"]
    assert golds["right"] == per < record["per_direction_requested"] == 50
    assert record["shortfall"] == 400 - 8 * per and record["limited_by"]
    assert min(record["found_per_direction"].values()) == per
    assert max(record["found_per_direction"].values()) > per  # the plentiful directions were cut back


# ------------------------------------------------------------------ two-panel canvases


def test_two_panel_canvases_give_each_photo_half_its_easy_area(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    waid = write_waid(tmp_path / "waid", {"train": [1, 2, 3, 4, 5, 6]}, size=(160, 120))  # 4:3 photos
    code, err = cli(["build", "c3", "--source", f"waid={waid}", "--out", tmp_path / "b", "--canvas", "240"], capsys)
    assert code == 0, err
    rows = [row for row in _items(tmp_path / "b") if row["task"] == "counting"]
    easy = {row["cluster"]: row for row in rows if row["tier"] == "easy"}
    hard = [row for row in rows if row["tier"] == "hard"]
    assert hard
    with Image.open(tmp_path / "b" / next(iter(easy.values()))["image"]) as image:
        easy_size = image.size
    assert easy_size == (277, 208)  # the photo's 4:3 at the 240² pixel budget: it fills the canvas
    for row in hard:
        with Image.open(tmp_path / "b" / row["image"]) as image:
            width, height = image.size
        assert abs(width * height - 240 * 240) / (240 * 240) < 0.01  # the same pixel budget as Easy
        panel = (width // 2) * height
        assert panel / (easy_size[0] * easy_size[1]) == pytest.approx(0.5, abs=0.01)
        assert json.loads(row["answer_payload"])["area_vs_easy"] == pytest.approx(0.5, abs=0.01)
