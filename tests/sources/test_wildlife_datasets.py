"""The wildlife-datasets package's Wild Me loaders against biovqa's own catalog reader, on
catalogs written in the native layout (datasets.md §8): annotation-for-annotation agreement for
WhaleSharkID, HyenaID2022, LeopardID2022 and BelugaID (nested ``beluga/beluga.coco``), where and why
the boxes differ, the errors of the package route, and C4/C3 builds through either reader giving
byte-identical items. Needs ``pip install 'biovqa[wildlife]'`` except the missing-package test."""

from __future__ import annotations

import builtins
import hashlib
import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fixtures.cli_runner import cli
from fixtures.wildlife import write_catalog
from PIL import Image

from biovqa.errors import BiovqaError, InputFormatError
from biovqa.sources.wildlife import (
    UNKNOWN_IDENTITY,
    WildlifeAnnotation,
    WildlifeCatalog,
    read_wildlife_catalog,
    write_coco_catalog,
)

needs_package = pytest.mark.skipif(
    importlib.util.find_spec("wildlife_datasets") is None,
    reason="wildlife-datasets is not installed (pip install 'biovqa[wildlife]')")

#: catalog name → (the package class expected to read it, archive year, folder holding <name>.coco)
CATALOGS = {
    "whaleshark": ("WhaleSharkID", 2020, ""),
    "hyena": ("HyenaID2022", 2022, ""),
    "leopard": ("LeopardID2022", 2022, ""),
    "beluga": ("BelugaID", 2022, "beluga"),
}


def _annotation_file(coco: Path) -> Path:
    (path,) = sorted((coco / "annotations").glob("instances_train*.json"))
    return path


def _edit(coco: Path, change: Any) -> None:
    path = _annotation_file(coco)
    payload = json.loads(path.read_text(encoding="utf-8"))
    change(payload)
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _corners(x: float, y: float, w: float, h: float, theta: float) -> list[float]:
    """The box's corners rotated by ``theta`` about its centre, as a closed polygon."""
    cx, cy = x + w / 2, y + h / 2
    c, s = math.cos(theta), math.sin(theta)
    points = []
    for dx, dy in ((-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2), (-w / 2, -h / 2)):
        points += [cx + dx * c - dy * s, cy + dx * s + dy * c]
    return points


def _catalog(tmp_path: Path, name: str, *, rotated: bool = True) -> Path:
    """The synthetic Wild Me catalog under ``tmp_path`` in ``name``'s archive layout, returned as the
    folder given to the readers (the ``<name>.coco`` folder, or ``beluga/`` above the nested one).
    Its viewpoint-less annotation carries ``"viewpoint": null`` (the package indexes the key on every
    annotation), and with ``rotated`` a rotated box whose segmentation is its corners is added."""
    _, year, nest = CATALOGS[name]
    parent = tmp_path / nest if nest else tmp_path
    coco = write_catalog(parent, name=name, year=year, n_individuals=4, images_per_view=2)

    def change(payload: dict[str, Any]) -> None:
        for entry in payload["annotations"]:
            entry.setdefault("viewpoint", None)
        if rotated:
            last = payload["annotations"][0]
            x, y, w, h, theta = 20.3, 15.7, 50.0, 30.0, 0.3
            payload["annotations"].append({**last, "id": 9001, "uuid": "00000000-0000-0000-0000-000000009001",
                                           "bbox": [x, y, w, h], "theta": theta, "viewpoint": "left",
                                           "segmentation": [_corners(x, y, w, h, theta)]})

    _edit(coco, change)
    return coco.parent if nest else coco


def _enclosing(a: WildlifeAnnotation) -> tuple[float, float, float, float]:
    x, y, w, h = a.bbox
    cx, cy = x + w / 2, y + h / 2
    c, s = abs(math.cos(a.theta)), abs(math.sin(a.theta))
    half_w, half_h = (w * c + h * s) / 2, (w * s + h * c) / 2
    return cx - half_w, cy - half_h, 2 * half_w, 2 * half_h


@needs_package
@pytest.mark.parametrize("name", sorted(CATALOGS))
def test_package_and_biovqa_reader_agree_annotation_for_annotation(tmp_path: Path, name: str) -> None:
    path = _catalog(tmp_path, name)
    ours = read_wildlife_catalog(path, name)
    theirs = read_wildlife_catalog(path, name, reader="wildlife-datasets")
    assert ours.reader == "biovqa" and theirs.reader == f"wildlife-datasets {CATALOGS[name][0]}"
    assert theirs.annotation_file == ours.annotation_file and theirs.images_dir == ours.images_dir
    assert theirs.exclusions == ours.exclusions == {"no viewpoint": 1}
    assert theirs.notes == ours.notes == {"unknown identity": 1}
    assert theirs.annotations_per_image == ours.annotations_per_image
    assert len(theirs.annotations) == len(ours.annotations) == 4 * 2 * 2 + 2
    fields = ("dataset", "annotation_id", "image_id", "image_path", "file_name", "width", "height",
              "viewpoint", "identity", "species", "row")
    for a, b in zip(ours.annotations, theirs.annotations):
        assert {f: getattr(a, f) for f in fields} == {f: getattr(b, f) for f in fields}
        assert b.image_path.is_file()
        # the package's box is the segmentation's extent: the rotated box's enclosing box
        assert b.theta == 0.0 and b.bbox == pytest.approx(_enclosing(a), abs=1e-9)
        assert b.crop_box() == a.crop_box()
    assert [a.identity for a in theirs.annotations].count(None) == 1
    assert sum(a.theta != 0 for a in ours.annotations) == 1
    assert {a.viewpoint for a in theirs.annotations} == {"left", "right"}
    assert {a.species for a in theirs.annotations} == {"whale_shark"}


@needs_package
@pytest.mark.filterwarnings("ignore:The inplace keyword")  # inside the package, pandas ≥ 3.1
def test_the_package_frame_is_what_the_records_say(tmp_path: Path) -> None:
    """The mapping itself, checked against the package's DataFrame and the JSON it came from."""
    from wildlife_datasets.datasets import HyenaID2022

    coco = _catalog(tmp_path, "hyena")
    frame = HyenaID2022(str(tmp_path)).df
    payload = json.loads(_annotation_file(coco).read_text(encoding="utf-8"))
    names = [entry["name"] for entry in payload["annotations"]]
    assert UNKNOWN_IDENTITY in names
    assert list(frame["identity"]) == [n if n != UNKNOWN_IDENTITY else "unknown" for n in names]
    catalog = read_wildlife_catalog(coco, "hyena", reader="wildlife-datasets")
    by_row = {a.row: a for a in catalog.annotations}
    for position, record in frame.iterrows():
        if not isinstance(record["orientation"], str):  # null in the JSON → missing in the frame
            assert position + 1 not in by_row
            continue
        a = by_row[position + 1]
        assert a.identity == (None if record["identity"] == "unknown" else record["identity"])
        assert a.viewpoint == record["orientation"]
        assert a.image_path == tmp_path / record["path"]
        assert list(a.bbox) == pytest.approx(list(record["bbox"]))


@needs_package
def test_a_true_outline_is_where_the_readers_part(tmp_path: Path) -> None:
    """datasets.md §8: the box is ``bbox`` rotated by ``theta``; ``segmentation`` is one polygon,
    often the box corners. biovqa follows the box; the package takes the polygon's extent."""
    coco = tmp_path / "leopard.coco"
    write_coco_catalog(coco, [
        {"id": 1, "image_id": 1, "bbox": [10.0, 10.0, 60.0, 40.0], "theta": 0.0, "viewpoint": "left",
         "name": "a", "category_id": 0, "segmentation": [[20, 15, 50, 12, 60, 40, 25, 45, 20, 15]]},
    ], [{"id": 1, "file_name": "001.jpg", "width": 100, "height": 80, "date_captured": "NA"}],
        categories=[{"id": 0, "name": "leopard", "supercategory": "animal"}])
    Image.new("RGB", (100, 80), (90, 90, 90)).save(coco / "images" / "train2022" / "001.jpg")
    (ours,) = read_wildlife_catalog(coco, "leopard").annotations
    (theirs,) = read_wildlife_catalog(coco, "leopard", reader="wildlife-datasets").annotations
    assert ours.bbox == (10.0, 10.0, 60.0, 40.0)
    assert theirs.bbox == (20.0, 12.0, 40.0, 33.0)


@needs_package
def test_the_package_route_names_file_row_and_field(tmp_path: Path) -> None:
    coco = write_catalog(tmp_path, n_individuals=2, images_per_view=2)  # one annotation lacks viewpoint
    with pytest.raises(InputFormatError) as error:
        read_wildlife_catalog(coco, "whaleshark", reader="wildlife-datasets")
    assert error.value.field == "viewpoint" and error.value.row == 10
    assert error.value.file == str(_annotation_file(coco)) and "--catalog-reader biovqa" in str(error.value)

    def two_polygons(payload: dict[str, Any]) -> None:
        for entry in payload["annotations"]:
            entry.setdefault("viewpoint", None)
        payload["annotations"][2]["segmentation"] = [[1, 2, 3, 4], [5, 6, 7, 8]]

    _edit(coco, two_polygons)
    with pytest.raises(InputFormatError) as error:
        read_wildlife_catalog(coco, "whaleshark", reader="wildlife-datasets")
    assert error.value.field == "segmentation" and error.value.row == 3

    def bad_date(payload: dict[str, Any]) -> None:
        payload["annotations"][2]["segmentation"] = payload["annotations"][1]["segmentation"]
        payload["images"][0]["date_captured"] = "not a date"

    _edit(coco, bad_date)
    with pytest.raises(InputFormatError, match="wildlife-datasets .WhaleSharkID. could not read"):
        read_wildlife_catalog(coco, "whaleshark", reader="wildlife-datasets")
    with pytest.raises(BiovqaError, match="unknown catalog reader"):
        read_wildlife_catalog(coco, "whaleshark", reader="pandas")


@needs_package
def test_another_layout_goes_through_the_generic_loader(tmp_path: Path) -> None:
    coco = write_catalog(tmp_path, name="whaleshark", year=2022, n_individuals=2, images_per_view=2)
    _edit(coco, lambda payload: [entry.setdefault("viewpoint", None) for entry in payload["annotations"]])
    ours = read_wildlife_catalog(coco, "whaleshark")
    theirs = read_wildlife_catalog(coco, "whaleshark", reader="wildlife-datasets")
    assert theirs.reader == "wildlife-datasets WildlifeDatasetWildMe('whaleshark', 2022)"
    assert theirs.annotations == ours.annotations


@needs_package
def test_gzcd_is_read_by_biovqa_and_says_so(tmp_path: Path) -> None:
    from fixtures.wildlife import write_gzcd

    root = write_gzcd(tmp_path / "gzcd", [{"id": 1, "image_id": 1, "bbox": [5, 5, 30, 20], "theta": 0.0,
                                           "viewpoint": "right", "name": "z1"}])
    catalog = read_wildlife_catalog(root, "gzcd", reader="wildlife-datasets")
    assert catalog.reader == "biovqa" and len(catalog.annotations) == 1


def test_missing_package_is_a_clear_error_with_the_pip_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    coco = write_catalog(tmp_path, n_individuals=2, images_per_view=2, extras=False)
    real_import = builtins.__import__

    def no_package(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("wildlife_datasets"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_package)
    with pytest.raises(BiovqaError) as error:
        read_wildlife_catalog(coco, "whaleshark", reader="wildlife-datasets")
    assert error.value.hint is not None and "pip install 'biovqa[wildlife]'" in error.value.hint


class PixelEmbedder:
    """A deterministic stand-in for DINOv2: the crop's 6×6 grey thumbnail, L2-normalised."""

    name = "pixels-6x6"
    fingerprint = "pixels-6x6"
    batch_size = 8

    def embed(self, images: list[Any]) -> list[np.ndarray]:
        out = []
        for image in images:
            vector = np.asarray(image.convert("L").resize((6, 6)), dtype=np.float32).ravel() - 110.0
            out.append(vector / max(float(np.linalg.norm(vector)), 1e-6))
        return out


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix in (".parquet", ".png", ".jpg")
            and not p.name.startswith("embeddings-")}


@needs_package
def test_c4_build_is_byte_identical_through_either_reader(tmp_path: Path) -> None:
    from biovqa.components.c4.build import build_c4

    catalogs = {name: _catalog(tmp_path / "src" / name, name, rotated=name == "leopard") for name in CATALOGS}
    benches = {reader: build_c4(catalogs, PixelEmbedder(), tmp_path / reader, pairs_per_kind=2,
                                panel_height=96, catalog_reader=reader)
               for reader in ("biovqa", "wildlife-datasets")}
    ours, theirs = benches["biovqa"], benches["wildlife-datasets"]
    assert (ours.root / "items.parquet").read_bytes() == (theirs.root / "items.parquet").read_bytes()
    assert _digests(ours.root) == _digests(theirs.root) and len(_digests(ours.root)) > 1
    assert ours.items.num_rows == 4 * 3 * 2 * 2
    assert theirs.manifest["parameters"]["catalog_reader"] == "wildlife-datasets"
    assert {n: e["reader"] for n, e in theirs.manifest["datasets"].items()} == {
        n: f"wildlife-datasets {cls}" for n, (cls, _, _) in CATALOGS.items()}
    assert ours.manifest["datasets"]["leopard"]["exclusions"] == theirs.manifest["datasets"]["leopard"]["exclusions"]


@needs_package
def test_c3_build_is_byte_identical_through_either_reader(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _catalog(tmp_path / "src", "hyena")
    for reader in ("biovqa", "wildlife-datasets"):
        code, err = cli(["build", "c3", "--source", f"hyena={root}", "--out", tmp_path / reader, "--canvas", "64",
                         "--plate-side", "128", "--catalog-reader", reader], capsys)
        assert code == 0, err
    ours, theirs = tmp_path / "biovqa", tmp_path / "wildlife-datasets"
    assert (ours / "items.parquet").read_bytes() == (theirs / "items.parquet").read_bytes()
    assert _digests(ours) == _digests(theirs)
    manifest = json.loads((theirs / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["parameters"]["catalog_reader"] == "wildlife-datasets"
    assert manifest["counts"]["by_task"]["viewpoint"] > 0


def test_an_unknown_reader_is_refused_at_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_catalog(tmp_path, name="hyena", year=2022, n_individuals=2, images_per_view=2)
    code, err = cli(["build", "c3", "--source", f"hyena={root}", "--out", tmp_path / "b",
                     "--catalog-reader", "pandas"], capsys)
    assert code == 2 and "unknown catalog reader 'pandas'" in err and "Traceback" not in err


def test_the_catalog_record_says_which_reader(tmp_path: Path) -> None:
    catalog = read_wildlife_catalog(write_catalog(tmp_path, n_individuals=2, images_per_view=2), "whaleshark")
    assert isinstance(catalog, WildlifeCatalog) and catalog.reader == "biovqa"
