"""Wildlife re-identification catalogs in their native layouts (Wild Me / LILA COCO exports, GZCD).

Two layouts are read:

* **Wild Me / LILA COCO** (WhaleSharkID, BelugaID, HyenaID2022, LeopardID2022, GiraffeZebraID):
  ``<name>.coco/annotations/instances_train<YEAR>.json`` + ``<name>.coco/images/train<YEAR>/<file_name>``.
  The path given may be the ``<name>.coco`` folder itself or a folder above it (BelugaID nests
  ``beluga/beluga.coco``); the JSON file may also be given directly.
* **GZCD** (Grevy's Zebra Census Dataset): ``images/<uuid>.jpg`` + ``final_metadata.json``. The
  dataset card does not document the JSON keys; the reader takes the COCO shape the GGR pipeline
  exports (``images[]``, ``annotations[]`` with ``bbox``/``theta``/``viewpoint``/``name``), with the
  identity also accepted from ``individual_id`` or ``lca_cluster`` and a GGR-style comma-joined
  viewpoint (``"front, left"`` → ``"frontleft"``).

Every annotation becomes a :class:`WildlifeAnnotation` (image path, box ``[x, y, w, h]`` in pixels,
``theta`` in radians about the box centre, viewpoint, identity; ``"____"`` = unknown identity →
``None``). The reader is component-neutral: it excludes only what no component can use and counts
each exclusion by reason (:attr:`WildlifeCatalog.exclusions`):

* ``no viewpoint`` — the annotation has no (or an empty) ``viewpoint``;
* ``box outside the image`` — the box does not overlap the image at all (a box that overhangs the
  edge is kept and clipped when cropping, counted as ``box clipped`` in :attr:`~WildlifeCatalog.notes`);
* ``image file missing`` — the image named by the annotation is not on disk.

A file that does not follow the format (not JSON, no ``annotations``, a box that is not four numbers
with positive width and height, an annotation naming an unknown image, no viewpoint field anywhere)
is an :class:`~biovqa.errors.InputFormatError` naming the file, the 1-based row in ``annotations[]``
and the field.

Two readers give these records (``reader=``):

* ``"biovqa"`` (default) — this module's own reader; the box is the annotation's ``bbox`` rotated by
  its ``theta``.
* ``"wildlife-datasets"`` — the Wild Me catalogue of the ``wildlife-datasets`` package
  (``pip install 'biovqa[wildlife]'``; its WhaleSharkID, HyenaID2022, LeopardID2022, BelugaID and
  GiraffeZebraID loaders, or its generic Wild Me loader for another ``<name>.coco`` layout), whose
  DataFrame columns are mapped to the same records: ``identity`` (its ``unknown`` and the export's
  ``____`` → ``None``), ``orientation`` → viewpoint, ``path`` → image path, ``species``. That
  catalogue drops the annotation ``uuid``, the image size and ``theta``, which are taken from the
  same JSON rows; its ``bbox`` is the extent of the annotation's ``segmentation`` polygon, kept as an
  axis-aligned box (``theta = 0``). The two readers agree wherever the polygon is the (rotated) box's
  corners, as in the Wild Me exports; where a polygon is a true outline, the package's box is that
  outline's extent, while the documented box (the Wild Me export's) is ``bbox`` + ``theta``, which the
  ``biovqa`` reader follows. The package needs ``viewpoint`` and ``segmentation`` on every
  annotation (a missing one is an error naming the row, not an exclusion) and has no GZCD loader:
  a GZCD folder is read by the ``biovqa`` reader, and :attr:`WildlifeCatalog.reader` says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from biovqa.bench.paths import contained_path
from biovqa.errors import BiovqaError, InputFormatError

from biovqa.sources.validate import json_id

# the records and the rules both readers share (wildlife_catalog), and the package's reader
# (wildlife_datasets), live in their own modules; the names callers import from here stay here
from biovqa.sources.wildlife_catalog import (EXCLUDED_NO_VIEWPOINT, GZCD_METADATA, UNKNOWN_IDENTITY, Admission,
                                             WildlifeAnnotation, WildlifeCatalog, coco_annotation_id, coco_image_of,
                                             coco_image_size, coco_images, coco_species, find_annotation_file,
                                             identity_of, json_number, normalize_viewpoint, read_coco_json)
from biovqa.sources.wildlife_datasets import WILDLIFE_DATASETS_LOADERS, read_with_wildlife_datasets

#: Catalog names the toolkit knows → the species the catalog shows.
CATALOG_SPECIES: dict[str, str] = {
    "whaleshark": "whale shark",
    "beluga": "beluga whale",
    "hyena": "spotted hyena",
    "leopard": "leopard",
    "gzcd": "Grevy's zebra",
    "gzgc": "plains zebra / Masai giraffe",
}
#: The catalog readers (``read_wildlife_catalog(reader=...)``, ``--catalog-reader``).
READERS: tuple[str, ...] = ("biovqa", "wildlife-datasets")


def read_wildlife_catalog(path: str | Path, name: str | None = None, *,
                          check_images: bool = True, reader: str = "biovqa") -> WildlifeCatalog:
    """Read one catalog (see the module docstring). ``name`` defaults to the folder name without
    ``.coco``; ``check_images=False`` skips the on-disk check of every photo; ``reader`` is
    ``"biovqa"`` or ``"wildlife-datasets"`` (the package's loader, mapped to the same records)."""
    if reader not in READERS:
        raise BiovqaError(f"unknown catalog reader {reader!r}", field="reader",
                          hint=f"readers: {', '.join(READERS)}")
    annotation_file, images_dir = find_annotation_file(path)
    name = name or Path(path).name.removesuffix(".coco")
    if reader == "wildlife-datasets" and annotation_file.name != GZCD_METADATA:
        return read_with_wildlife_datasets(path, name, annotation_file, images_dir, check_images=check_images)
    payload = read_coco_json(annotation_file)
    species = coco_species(payload)
    images = coco_images(payload, annotation_file)
    raw = payload["annotations"]
    if raw and not any(isinstance(a, dict) and "viewpoint" in a for a in raw):
        raise InputFormatError("no annotation has a viewpoint", file=annotation_file, field="viewpoint",
                               hint="C3/C4 group annotations by viewpoint; this export lacks the field")
    admission = Admission(check_images)
    for row, entry in enumerate(raw, start=1):
        if not isinstance(entry, dict):
            raise InputFormatError("an annotation must be a JSON object", file=annotation_file, row=row)
        image = coco_image_of(entry, images, annotation_file, row)
        box = entry.get("bbox")
        numbers = [json_number(v) for v in box] if isinstance(box, list) else []
        if len(numbers) != 4 or any(v is None for v in numbers):
            raise InputFormatError(f"bbox must be four numbers [x, y, w, h], found {box!r}",
                                   file=annotation_file, row=row, field="bbox")
        x, y, w, h = (float(v) for v in numbers)  # type: ignore[arg-type]
        if w <= 0 or h <= 0:
            raise InputFormatError(f"bbox width and height must be positive, found {box!r}",
                                   file=annotation_file, row=row, field="bbox")
        theta = json_number(entry.get("theta", 0.0))
        if theta is None:
            raise InputFormatError(f"theta must be a number (radians), found {entry.get('theta')!r}",
                                   file=annotation_file, row=row, field="theta")
        width, height = coco_image_size(image, annotation_file, row)
        admission.count_image(str(image["file_name"]))
        viewpoint = normalize_viewpoint(entry.get("viewpoint"))
        if viewpoint is None:
            admission.exclude(EXCLUDED_NO_VIEWPOINT)
            continue
        admission.admit(WildlifeAnnotation(
            dataset=name, annotation_id=coco_annotation_id(entry, row),
            image_id=str(image["id"]),
            image_path=contained_path(images_dir, str(image["file_name"]), file=annotation_file, row=row,
                                      field="images[].file_name", what="photo"),
            file_name=str(image["file_name"]), width=width, height=height,
            bbox=(x, y, w, h), theta=float(theta), viewpoint=viewpoint,
            identity=identity_of(entry), species=species.get(
                json_id(entry["category_id"], file=annotation_file, row=row, field="category_id")
                if entry.get("category_id") is not None else None), row=row))
    return admission.catalog(name, path, images_dir, annotation_file, "biovqa")


def write_coco_catalog(root: str | Path, annotations: list[dict[str, Any]], images: list[dict[str, Any]],
                       *, year: int = 2022, categories: list[dict[str, Any]] | None = None) -> Path:
    """Write ``annotations/instances_train<year>.json`` in the Wild Me layout under ``root``
    (the ``<name>.coco`` folder); images go to ``root/images/train<year>/`` (the caller saves
    them). Returns the JSON path (used by the demo and the tests)."""
    root = Path(root)
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    (root / "images" / f"train{year}").mkdir(parents=True, exist_ok=True)
    path = root / "annotations" / f"instances_train{year}.json"
    payload = {"info": {"description": "biovqa synthetic Wild Me COCO catalog", "year": year},
               "licenses": [], "categories": categories or [{"id": 0, "name": "animal", "supercategory": "animal"}],
               "images": images, "annotations": annotations}
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


__all__ = [
    "CATALOG_SPECIES",
    "GZCD_METADATA",
    "READERS",
    "UNKNOWN_IDENTITY",
    "WILDLIFE_DATASETS_LOADERS",
    "WildlifeAnnotation",
    "WildlifeCatalog",
    "find_annotation_file",
    "json_number",
    "normalize_viewpoint",
    "read_coco_json",
    "read_wildlife_catalog",
    "write_coco_catalog",
]
