"""The Wild Me / LILA COCO and GZCD reader (datasets.md §8–9): records, layouts, exclusions and
errors that name file, row and field."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from fixtures.wildlife import write_catalog, write_gzcd, write_raw_coco

from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError
from biovqa.sources.wildlife import normalize_viewpoint, read_wildlife_catalog


def ann(k: int, image_id: int = 1, **fields):
    base = {"id": k, "image_id": image_id, "bbox": [4.0, 4.0, 20.0, 16.0], "theta": 0.0, "viewpoint": "left",
            "name": f"ind-{k % 2}", "category_id": 0, "uuid": f"u{k}"}
    base.update(fields)
    return {key: value for key, value in base.items() if value is not None}


def test_synthetic_catalog_reads_with_exclusions(tmp_path: Path) -> None:
    coco = write_catalog(tmp_path, n_individuals=3, images_per_view=2)
    catalog = read_wildlife_catalog(coco)
    assert catalog.name == "whaleshark"
    assert catalog.annotation_file.name == "instances_train2020.json"
    assert catalog.viewpoints == ["left", "right"]
    assert catalog.exclusions == {"no viewpoint": 1}
    assert catalog.notes == {"unknown identity": 1}
    assert len(catalog.annotations) == 3 * 2 * 2 + 1
    first = catalog.annotations[0]
    assert first.image_path.is_file() and first.species == "whale_shark" and first.row == 1
    left, top, right, bottom = first.crop_box()
    assert 0 <= left < right <= first.width and 0 <= top < bottom <= first.height
    # a folder above the .coco folder (BelugaID nests beluga/beluga.coco) and the JSON itself work too
    assert len(read_wildlife_catalog(tmp_path, "whaleshark").annotations) == len(catalog.annotations)
    assert len(read_wildlife_catalog(catalog.annotation_file, "x").annotations) == len(catalog.annotations)


def test_rotated_box_crop_encloses_the_rotation(tmp_path: Path) -> None:
    path = write_raw_coco(tmp_path / "leopard.coco", [ann(1, bbox=[20, 10, 20, 10], theta=math.pi / 2)])
    (record,) = read_wildlife_catalog(path.parent.parent).annotations
    assert record.crop_box() == (25, 5, 35, 25)


def test_no_viewpoint_anywhere_is_an_error_naming_file_and_field(tmp_path: Path) -> None:
    path = write_raw_coco(tmp_path / "leopard.coco", [ann(1, viewpoint=None), ann(2, viewpoint=None)])
    with pytest.raises(InputFormatError) as error:
        read_wildlife_catalog(tmp_path / "leopard.coco")
    assert error.value.file == str(path) and error.value.field == "viewpoint"


@pytest.mark.parametrize(("bad", "field", "row"), [
    ({"bbox": [1, 2, 3]}, "bbox", 2), ({"bbox": [1, 2, -3, 4]}, "bbox", 2), ({"bbox": "1,2,3,4"}, "bbox", 2),
    ({"theta": "up"}, "theta", 2), ({"image_id": 99}, "image_id", 2)])
def test_malformed_annotation_names_row_and_field(tmp_path: Path, bad: dict, field: str, row: int) -> None:
    path = write_raw_coco(tmp_path / "hyena.coco", [ann(1), ann(2, **bad)])
    with pytest.raises(InputFormatError) as error:
        read_wildlife_catalog(tmp_path / "hyena.coco")
    assert (error.value.file, error.value.row, error.value.field) == (str(path), row, field)
    assert f"row {row}" in str(error.value)


def test_boxes_outside_the_image_and_missing_photos_are_counted(tmp_path: Path) -> None:
    annotations = [ann(1), ann(2, bbox=[500.0, 500.0, 10.0, 10.0]), ann(3, bbox=[50.0, 40.0, 40.0, 40.0]),
                   ann(4, image_id=2), ann(5, viewpoint="")]
    write_raw_coco(tmp_path / "hyena.coco", annotations)
    (tmp_path / "hyena.coco" / "images" / "train2022" / "002.jpg").unlink()
    catalog = read_wildlife_catalog(tmp_path / "hyena.coco")
    assert catalog.exclusions == {"box outside the image": 1, "image file missing": 1, "no viewpoint": 1}
    assert catalog.notes == {"box clipped": 1}
    assert [a.annotation_id for a in catalog.annotations] == ["u1", "u3"]
    assert catalog.annotations[1].crop_box() == (50, 40, 64, 48)


def test_gzcd_layout_and_ggr_viewpoints(tmp_path: Path) -> None:
    write_gzcd(tmp_path / "gzcd", [ann(1, viewpoint="front, left", name=None, lca_cluster="c1"),
                                   ann(2, image_id=2, viewpoint="back,right", name="____")])
    catalog = read_wildlife_catalog(tmp_path / "gzcd", "gzcd")
    assert [a.viewpoint for a in catalog.annotations] == ["frontleft", "backright"]
    assert [a.identity for a in catalog.annotations] == ["c1", None]
    assert catalog.images_dir == tmp_path / "gzcd" / "images"


def test_missing_and_unreadable(tmp_path: Path) -> None:
    with pytest.raises(MissingResourceError):
        read_wildlife_catalog(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(MissingResourceError):
        read_wildlife_catalog(tmp_path / "empty")
    bad = tmp_path / "bad.coco" / "annotations"
    bad.mkdir(parents=True)
    (bad / "instances_train2020.json").write_text("{not json")
    with pytest.raises(InputFormatError) as error:
        read_wildlife_catalog(tmp_path / "bad.coco")
    assert error.value.row == 1
    (bad / "instances_train2020.json").write_text('{"images": []}')
    with pytest.raises(BiovqaError) as error:
        read_wildlife_catalog(tmp_path / "bad.coco")
    assert error.value.field == "annotations"


@pytest.mark.parametrize(("raw", "label"), [("Left", "left"), ("front, left", "frontleft"),
                                            ("left, front", "frontleft"), ("up-right", "upright"),
                                            ("", None), (None, None), ("NA", None)])
def test_normalize_viewpoint(raw: str | None, label: str | None) -> None:
    assert normalize_viewpoint(raw) == label
