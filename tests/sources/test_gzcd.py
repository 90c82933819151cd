"""GZCD reader on tiny fixtures in both native forms: the GGR pipeline's table and COCO JSON."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from biovqa.components.c3.demo import GGR_COLUMNS, write_gzcd
from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.sources.gzcd import EXCLUDED_IMAGE_MISSING, EXCLUDED_OUTSIDE, find_gzcd_file, read_gzcd

PHOTOS = [["zebra_grevys"], ["zebra_grevys", "zebra_grevys", "zebra_plains"], ["giraffe_reticulated"]]


def _rows(csv_path: Path) -> list[dict[str, str]]:
    with open(csv_path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _rewrite(csv_path: Path, rows: list[dict[str, str]], columns: list[str] | tuple[str, ...] = GGR_COLUMNS) -> None:
    with open(csv_path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def test_table_and_coco_forms_read_the_same_photos(tmp_path: Path) -> None:
    table = read_gzcd(write_gzcd(tmp_path / "t", PHOTOS, form="table"))
    coco = read_gzcd(write_gzcd(tmp_path / "c", PHOTOS, form="coco"))
    assert (table.form, coco.form) == ("table", "coco")
    for catalog in (table, coco):
        by_species = sorted(tuple(sorted(im.species)) for im in catalog.images)
        assert by_species == sorted(tuple(sorted(p)) for p in PHOTOS)
        assert catalog.exclusions == {}
    pairs = {im.image_id: im for im in table.images}
    assert len(pairs) == 3
    for t, c in zip(sorted(table.images, key=lambda im: im.path.name), sorted(coco.images, key=lambda im: im.path.name)):
        assert (t.width, t.height) == (c.width, c.height) == (192, 128)  # the table's size comes from the photo
        for a, b in zip(t.annotations, c.annotations):
            assert a.box == pytest.approx(b.box, abs=1e-3)
            assert (a.species, a.census, a.viewpoint) == (b.species, b.census, b.viewpoint)
    views = [a.viewpoint for im in table.images for a in im.annotations]
    assert set(views) <= {"right", "left", "frontright", "backleft", "front", "backright"}
    assert "frontright" in views  # "front, right" joined
    assert table.images[0].annotations[0].row >= 2  # the header is row 1


def test_corner_boxes_are_read_when_xywh_columns_are_absent(tmp_path: Path) -> None:
    root = write_gzcd(tmp_path / "g", PHOTOS[:1])
    rows = _rows(root / "ggr_output.csv")
    rows[0]["bbox gt"] = "[10, 20, 110, 70]"
    _rewrite(root / "ggr_output.csv", rows, [c for c in GGR_COLUMNS if c not in ("bbox x", "bbox y", "bbox w", "bbox h")])
    (annotation,) = read_gzcd(root).images[0].annotations
    assert annotation.box == (10.0, 20.0, 110.0, 70.0)


def test_form_detection(tmp_path: Path) -> None:
    table = write_gzcd(tmp_path / "t", PHOTOS[:1])
    coco = write_gzcd(tmp_path / "c", PHOTOS[:1], form="coco")
    assert find_gzcd_file(table) == (table / "ggr_output.csv", "table")
    assert find_gzcd_file(table / "ggr_output.csv")[1] == "table"
    assert find_gzcd_file(coco) == (coco / "final_metadata.json", "coco")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.csv").write_text("a,b\n1,2\n")
    with pytest.raises(MissingResourceError, match="neither final_metadata.json"):
        read_gzcd(empty)
    (table / "copy.csv").write_text((table / "ggr_output.csv").read_text())
    with pytest.raises(InputFormatError, match="several GGR tables"):
        read_gzcd(table)


@pytest.mark.parametrize(("column", "value", "field", "message"), [
    ("bbox x", "left", "bbox x", "not a number"),
    ("bbox w", "-3", "bbox w", "must be positive"),
    ("annot census", "maybe", "annot census", "True or False"),
    ("image uuid", "", "image uuid", "is empty"),
    ("annot species", " ", "annot species", "is empty"),
])
def test_table_errors_name_file_row_and_column(tmp_path: Path, column: str, value: str, field: str,
                                               message: str) -> None:
    root = write_gzcd(tmp_path / "g", PHOTOS[1:2])
    rows = _rows(root / "ggr_output.csv")
    rows[1][column] = value
    _rewrite(root / "ggr_output.csv", rows)
    with pytest.raises(InputFormatError, match=message) as caught:
        read_gzcd(root)
    assert (caught.value.file, caught.value.row, caught.value.field) == (str(root / "ggr_output.csv"), 3, field)


def test_table_structure_errors(tmp_path: Path) -> None:
    root = write_gzcd(tmp_path / "g", PHOTOS[:1])
    rows = _rows(root / "ggr_output.csv")
    _rewrite(root / "ggr_output.csv", rows, [c for c in GGR_COLUMNS if c != "annot species"])
    with pytest.raises(InputFormatError) as caught:
        read_gzcd(root / "ggr_output.csv")
    assert (caught.value.row, caught.value.field) == (1, "annot species")
    columns = [c for c in GGR_COLUMNS if not c.startswith("bbox ")]
    _rewrite(root / "ggr_output.csv", rows, columns)
    with pytest.raises(InputFormatError, match="no box columns"):
        read_gzcd(root / "ggr_output.csv")
    rows[0]["bbox gt"] = "[10, 20, 110]"
    _rewrite(root / "ggr_output.csv", rows, [*columns, "bbox gt"])
    with pytest.raises(InputFormatError, match="corner box") as caught:
        read_gzcd(root / "ggr_output.csv")
    assert (caught.value.row, caught.value.field) == (2, "bbox gt")


def test_coco_errors_name_the_annotation_and_field(tmp_path: Path) -> None:
    root = write_gzcd(tmp_path / "g", PHOTOS[1:2], form="coco")
    path = root / "final_metadata.json"
    payload = json.loads(path.read_text())
    payload["annotations"][2]["bbox"] = [1, 2, 3]
    path.write_text(json.dumps(payload))
    with pytest.raises(InputFormatError) as caught:
        read_gzcd(root)
    assert (caught.value.row, caught.value.field) == (3, "bbox")
    payload["annotations"][2]["bbox"] = [1, 2, 3, 4]
    payload["annotations"][1]["image_id"] = 99
    path.write_text(json.dumps(payload))
    with pytest.raises(InputFormatError) as caught:
        read_gzcd(root)
    assert (caught.value.row, caught.value.field) == (2, "image_id")
    payload["annotations"][1]["image_id"] = 1
    del payload["annotations"][0]["annot species"]
    path.write_text(json.dumps(payload))
    with pytest.raises(InputFormatError) as caught:
        read_gzcd(root)
    assert (caught.value.row, caught.value.field) == (1, "annot species")


def test_counted_exclusions(tmp_path: Path) -> None:
    root = write_gzcd(tmp_path / "g", PHOTOS)
    rows = _rows(root / "ggr_output.csv")
    missing = rows[0]["image uuid"]
    (root / "images" / f"{missing}.jpg").unlink()
    rows[1]["bbox x"] = "500"  # photo 2 is 192 px wide: a box far outside excludes the whole photo
    rows[4]["bbox x"] = "-1"  # a 1-px overhang is clipped
    _rewrite(root / "ggr_output.csv", rows)
    catalog = read_gzcd(root)
    assert catalog.exclusions == {EXCLUDED_IMAGE_MISSING: 1, EXCLUDED_OUTSIDE: 1}
    assert catalog.notes == {"box clipped": 1}
    (kept,) = catalog.images
    assert kept.species == ("giraffe_reticulated",) and kept.annotations[0].box[0] == 0.0


def test_coco_file_errors(tmp_path: Path) -> None:
    root = write_gzcd(tmp_path / "g", PHOTOS[:1], form="coco")
    path = root / "final_metadata.json"
    payload = json.loads(path.read_text())
    payload["images"][0]["width"] = "wide"
    path.write_text(json.dumps(payload))
    with pytest.raises(InputFormatError) as caught:
        read_gzcd(path)
    assert (caught.value.row, caught.value.field) == (1, "images[].width")
    path.write_text('{"images": [], "annotations": [')
    with pytest.raises(InputFormatError, match="not valid JSON") as caught:
        read_gzcd(root)
    assert caught.value.file == str(path)
    path.write_text('{"images": []}')
    with pytest.raises(InputFormatError) as caught:
        read_gzcd(root)
    assert caught.value.field == "annotations"
