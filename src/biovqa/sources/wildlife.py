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
import math
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError
from biovqa.sources.images import inspect_image_file
from biovqa.sources.validate import count_exclusion, json_id
from biovqa.bench.paths import contained_path

#: Catalog names the toolkit knows → the species the catalog shows.
CATALOG_SPECIES: dict[str, str] = {
    "whaleshark": "whale shark",
    "beluga": "beluga whale",
    "hyena": "spotted hyena",
    "leopard": "leopard",
    "gzcd": "Grevy's zebra",
    "gzgc": "plains zebra / Masai giraffe",
}
#: Identity string meaning "unknown individual" in Wild Me exports.
UNKNOWN_IDENTITY = "____"
GZCD_METADATA = "final_metadata.json"
_ANNOTATION_GLOB = "instances_train*.json"
_IDENTITY_KEYS = ("name", "individual_id", "lca_cluster")
_SIMPLE_VIEWS = ("front", "back", "left", "right", "up", "down")

EXCLUDED_NO_VIEWPOINT = "no viewpoint"
EXCLUDED_BOX_OUTSIDE = "box outside the image"
EXCLUDED_IMAGE_MISSING = "image file missing"
EXCLUDED_SIZE_MISMATCH = "declared width/height is not the photo's size"

#: The catalog readers (``read_wildlife_catalog(reader=...)``, ``--catalog-reader``).
READERS: tuple[str, ...] = ("biovqa", "wildlife-datasets")
WILDLIFE_DATASETS_HINT = "pip install 'biovqa[wildlife]' (the wildlife-datasets package)"
#: catalog name → the wildlife-datasets class reading it, with the layout that class expects
#: (``<prefix>.coco/annotations/instances_train<year>.json`` under the class's root)
WILDLIFE_DATASETS_LOADERS: dict[str, tuple[str, str, int]] = {
    "whaleshark": ("WhaleSharkID", "whaleshark", 2020),
    "hyena": ("HyenaID2022", "hyena", 2022),
    "leopard": ("LeopardID2022", "leopard", 2022),
    "beluga": ("BelugaID", "beluga/beluga", 2022),
    "gzgc": ("GiraffeZebraID", "gzgc", 2020),
}
#: the keys the package's Wild Me loader indexes in every entry of each list
_PACKAGE_KEYS = {"annotations": ("name", "segmentation", "image_id", "category_id", "viewpoint"),
                 "images": ("id", "file_name", "date_captured"),
                 "categories": ("id", "name", "supercategory")}


@dataclass(frozen=True, slots=True)
class WildlifeAnnotation:
    """One annotated animal: where its photo is, its rotated box, viewpoint and identity."""

    dataset: str
    annotation_id: str
    image_id: str
    image_path: Path
    #: the photo relative to the catalog's images folder
    file_name: str
    width: int
    height: int
    #: [x, y, w, h] in pixels (before rotation by ``theta`` about the box centre)
    bbox: tuple[float, float, float, float]
    theta: float
    viewpoint: str
    #: the individual (``None``: unknown, ``"____"`` in the export)
    identity: str | None
    species: str | None
    #: 1-based position in the file's ``annotations[]`` (for messages)
    row: int

    def crop_box(self) -> tuple[int, int, int, int]:
        """The axis-aligned pixel box ``(left, top, right, bottom)`` enclosing the rotated box,
        clipped to the image (what the crop and the embedding see)."""
        x, y, w, h = self.bbox
        if self.theta:
            cx, cy = x + w / 2, y + h / 2
            c, s = abs(math.cos(self.theta)), abs(math.sin(self.theta))
            half_w, half_h = (w * c + h * s) / 2, (w * s + h * c) / 2
            x0, y0, x1, y1 = cx - half_w, cy - half_h, cx + half_w, cy + half_h
        else:
            x0, y0, x1, y1 = x, y, x + w, y + h
        left = max(0, int(math.floor(x0)))
        top = max(0, int(math.floor(y0)))
        right = min(self.width, int(math.ceil(x1)))
        bottom = min(self.height, int(math.ceil(y1)))
        return left, top, max(right, left + 1), max(bottom, top + 1)


@dataclass
class WildlifeCatalog:
    """The usable annotations of one catalog, with what was left out and why."""

    name: str
    root: Path
    images_dir: Path
    annotation_file: Path
    annotations: list[WildlifeAnnotation]
    exclusions: dict[str, int] = field(default_factory=dict)
    #: reason → the first photos (file names as the annotation file gives them) it excluded
    exclusion_examples: dict[str, list[str]] = field(default_factory=dict)
    #: counts of kept-but-adjusted annotations (``box clipped``, ``unknown identity``)
    notes: dict[str, int] = field(default_factory=dict)
    #: annotations per photo (``file_name``) in the file, kept or not: a photo whose kept count is
    #: lower lost an annotation, so its count of animals is unverifiable (C3 counting)
    annotations_per_image: dict[str, int] = field(default_factory=dict)
    #: which reader produced the records (``"biovqa"`` or ``"wildlife-datasets <class>"``)
    reader: str = "biovqa"

    @property
    def photos_root(self) -> Path:
        """The folder every photo is named under, whichever form the catalog was given in (the
        ``<name>.coco`` folder, a folder above it or the JSON file): the ``<name>.coco`` folder
        (GZCD: the folder of ``final_metadata.json``). Benchmarks name photos relative to it, so one
        photo has one name."""
        if self.annotation_file.name == GZCD_METADATA:
            return self.annotation_file.parent
        return self.annotation_file.parent.parent

    @property
    def viewpoints(self) -> list[str]:
        """The viewpoint labels present, sorted (built from the data, never hard-coded)."""
        return sorted({a.viewpoint for a in self.annotations})


def normalize_viewpoint(value: Any) -> str | None:
    """A viewpoint label: lower-case, no spaces; a GGR comma-joined subset (``"front, left"``)
    joins its parts in the order front/back, left/right, up/down (→ ``"frontleft"``); empty → None."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if not text or text in ("none", "null", "unknown", "na"):
        return None
    if "," in text:
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if all(p in _SIMPLE_VIEWS for p in parts):
            order = {name: i for i, name in enumerate(("up", "down", "front", "back", "left", "right"))}
            parts.sort(key=lambda p: order[p])
        return "".join(parts) or None
    return re.sub(r"[\s_-]+", "", text)


def find_annotation_file(path: str | Path) -> tuple[Path, Path]:
    """``(annotation JSON, images folder)`` of a catalog given as the JSON file, the ``*.coco``
    folder, a folder above it, or a GZCD folder."""
    path = Path(path)
    if not path.exists():
        raise MissingResourceError("wildlife catalog not found", file=path,
                                   hint="give the extracted <name>.coco folder (or the GZCD folder)")
    if path.is_file():
        return path, _images_dir_for(path)
    gzcd = path / GZCD_METADATA
    if gzcd.is_file():
        return gzcd, path / "images"
    candidates = sorted(path.glob(f"annotations/{_ANNOTATION_GLOB}"))
    if not candidates:
        candidates = sorted(path.glob(f"**/annotations/{_ANNOTATION_GLOB}"))
    if not candidates:
        raise MissingResourceError(
            f"no annotations/{_ANNOTATION_GLOB} (Wild Me COCO) or {GZCD_METADATA} (GZCD) under the folder",
            file=path, hint="extract the LILA <name>.coco.tar.gz archive and give its <name>.coco folder")
    if len(candidates) > 1:
        raise InputFormatError(f"several annotation files: {[str(c) for c in candidates[:4]]}", file=path,
                               hint="give the annotation JSON file itself")
    return candidates[0], _images_dir_for(candidates[0])


def _images_dir_for(annotation_file: Path) -> Path:
    if annotation_file.name == GZCD_METADATA:
        return annotation_file.parent / "images"
    match = re.match(r"instances_(train\d*)\.json$", annotation_file.name)
    coco_root = annotation_file.parent.parent
    if match:
        return coco_root / "images" / match.group(1)
    return coco_root / "images"


def json_number(value: Any) -> float | None:
    """A finite JSON number as float (booleans and strings are not numbers); else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def read_coco_json(path: Path) -> dict[str, Any]:
    """A COCO-shaped JSON object with ``images[]`` and ``annotations[]`` lists (Wild Me catalogs,
    GZCD's ``final_metadata.json``); anything else is an error naming the file and key."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputFormatError(f"not valid JSON: {exc.msg}", file=path, row=exc.lineno) from None
    except UnicodeDecodeError:
        raise InputFormatError("not UTF-8 text", file=path) from None
    if not isinstance(payload, dict):
        raise InputFormatError("expected a JSON object with images[] and annotations[]", file=path)
    for key in ("images", "annotations"):
        if not isinstance(payload.get(key), list):
            raise InputFormatError(f"the COCO key {key!r} is missing or not a list", file=path, field=key)
    if not isinstance(payload.get("categories") or [], list):
        raise InputFormatError("the COCO key 'categories' is not a list", file=path, field="categories")
    return payload


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
        return _read_with_wildlife_datasets(path, name, annotation_file, images_dir, check_images=check_images)
    payload = read_coco_json(annotation_file)
    species = _species(payload)
    images = _images(payload, annotation_file)
    raw = payload["annotations"]
    if raw and not any(isinstance(a, dict) and "viewpoint" in a for a in raw):
        raise InputFormatError("no annotation has a viewpoint", file=annotation_file, field="viewpoint",
                               hint="C3/C4 group annotations by viewpoint; this export lacks the field")
    admission = _Admission(check_images)
    for row, entry in enumerate(raw, start=1):
        if not isinstance(entry, dict):
            raise InputFormatError("an annotation must be a JSON object", file=annotation_file, row=row)
        image = _image_of(entry, images, annotation_file, row)
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
        width, height = _image_size(image, annotation_file, row)
        admission.count_image(str(image["file_name"]))
        viewpoint = normalize_viewpoint(entry.get("viewpoint"))
        if viewpoint is None:
            admission.exclude(EXCLUDED_NO_VIEWPOINT)
            continue
        admission.admit(WildlifeAnnotation(
            dataset=name, annotation_id=_annotation_id(entry, row),
            image_id=str(image["id"]),
            image_path=contained_path(images_dir, str(image["file_name"]), file=annotation_file, row=row,
                                      field="images[].file_name", what="photo"),
            file_name=str(image["file_name"]), width=width, height=height,
            bbox=(x, y, w, h), theta=float(theta), viewpoint=viewpoint,
            identity=_identity(entry), species=species.get(
                json_id(entry["category_id"], file=annotation_file, row=row, field="category_id")
                if entry.get("category_id") is not None else None), row=row))
    return admission.catalog(name, path, images_dir, annotation_file, "biovqa")


def _photo_refusal(annotation: WildlifeAnnotation) -> str | None:
    """Why an annotation's photo cannot be used, through the one image inspector; None when it can."""
    if not annotation.image_path.is_file():
        return EXCLUDED_IMAGE_MISSING
    verdict = inspect_image_file(annotation.image_path)
    if isinstance(verdict, str):
        from biovqa.sources.waid import INSPECTOR_REASONS  # the counting sources' wording

        return INSPECTOR_REASONS[verdict]
    if verdict != (annotation.width, annotation.height):
        return EXCLUDED_SIZE_MISMATCH
    return None


class _Admission:
    """The exclusion rules both readers share: a box that misses the image and a missing photo are
    counted exclusions; an overhanging box and an unknown identity are counted notes."""

    def __init__(self, check_images: bool) -> None:
        self.check_images = check_images
        self.exclusions: dict[str, int] = {}
        self.notes: dict[str, int] = {}
        self.per_image: dict[str, int] = {}
        self.existing: dict[str, str | None] = {}  # file name → why its photo is refused (None: kept)
        self.examples: dict[str, list[str]] = {}
        self.out: list[WildlifeAnnotation] = []

    def exclude(self, reason: str, name: str | None = None) -> None:
        count_exclusion(self.exclusions, self.examples, reason, [name] if name is not None else [])

    def note(self, reason: str) -> None:
        self.notes[reason] = self.notes.get(reason, 0) + 1

    def count_image(self, file_name: str) -> None:
        self.per_image[file_name] = self.per_image.get(file_name, 0) + 1

    def admit(self, annotation: WildlifeAnnotation) -> None:
        x0, y0, x1, y1 = _enclosing(annotation)
        if x1 <= 0 or y1 <= 0 or x0 >= annotation.width or y0 >= annotation.height:
            self.exclude(EXCLUDED_BOX_OUTSIDE)
            return
        if x0 < 0 or y0 < 0 or x1 > annotation.width or y1 > annotation.height:
            self.note("box clipped")
        if annotation.identity is None:
            self.note("unknown identity")
        if self.check_images:
            key = annotation.file_name
            if key not in self.existing:
                self.existing[key] = _photo_refusal(annotation)
            refusal = self.existing[key]
            if refusal is not None:  # missing, truncated, a bomb, or not the declared size
                self.exclude(refusal, key)
                return
        self.out.append(annotation)

    def catalog(self, name: str, path: str | Path, images_dir: Path, annotation_file: Path,
                reader: str) -> WildlifeCatalog:
        return WildlifeCatalog(name=name, root=Path(path), images_dir=images_dir,
                               annotation_file=annotation_file, annotations=self.out,
                               exclusions=dict(sorted(self.exclusions.items())),
                               exclusion_examples={r: self.examples.get(r, []) for r in sorted(self.exclusions)},
                               notes=dict(sorted(self.notes.items())),
                               annotations_per_image=dict(sorted(self.per_image.items())), reader=reader)


def _species(payload: dict[str, Any]) -> dict[Any, Any]:
    # an id that is a list or an object cannot name a category: such entries name nothing
    return {c.get("id"): c.get("name") for c in payload.get("categories", []) or []
            if isinstance(c, dict) and isinstance(c.get("id"), (int, str)) and not isinstance(c.get("id"), bool)}


def _images(payload: dict[str, Any], annotation_file: Path) -> dict[Any, dict[str, Any]]:
    images: dict[Any, dict[str, Any]] = {}
    for index, image in enumerate(payload["images"], start=1):
        if not isinstance(image, dict) or "id" not in image or "file_name" not in image:
            raise InputFormatError("an image needs id and file_name", file=annotation_file, row=index,
                                   field="images[].file_name")
        image_id = json_id(image["id"], file=annotation_file, row=index, field="images[].id")
        if image_id in images:
            raise InputFormatError(f"images[].id {image_id!r} is given twice", file=annotation_file, row=index,
                                   field="images[].id")
        images[image_id] = image
    return images


def _image_of(entry: dict[str, Any], images: dict[Any, dict[str, Any]], annotation_file: Path,
              row: int) -> dict[str, Any]:
    image_id = json_id(entry.get("image_id"), file=annotation_file, row=row, field="image_id")
    if image_id not in images:
        raise InputFormatError(f"image_id {image_id!r} is not in images[]",
                               file=annotation_file, row=row, field="image_id")
    return images[image_id]


def _image_size(image: dict[str, Any], annotation_file: Path, row: int) -> tuple[int, int]:
    width, height = json_number(image.get("width")), json_number(image.get("height"))
    if width is None or height is None or width <= 0 or height <= 0:
        raise InputFormatError("image width and height must be positive numbers",
                               file=annotation_file, row=row, field="images[].width")
    return int(width), int(height)


def _annotation_id(entry: dict[str, Any], row: int) -> str:
    return str(entry.get("uuid") or entry.get("id", row))


# ------------------------------------------------------------------ wildlife-datasets reader


def _read_with_wildlife_datasets(path: str | Path, name: str, annotation_file: Path, images_dir: Path, *,
                                 check_images: bool) -> WildlifeCatalog:
    """The catalog as the wildlife-datasets package reads it, mapped to biovqa's records. Its
    catalogue row ``image_id`` is the annotation's 0-based position in ``annotations[]``; the
    annotation ``uuid`` and the image size it drops are taken from that JSON row."""
    payload = read_coco_json(annotation_file)
    _check_package_keys(payload, annotation_file)
    images = _images(payload, annotation_file)
    raw = payload["annotations"]
    frame, root, label = _package_catalogue(annotation_file, name)
    unknown = str(frame.attrs.get("unknown_name", "unknown"))
    admission = _Admission(check_images)
    for record in _frame_records(frame):
        position = record.get("image_id")
        if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < len(raw):
            raise InputFormatError(f"wildlife-datasets returned a row ({position!r}) that is not an annotation "
                                   "position", file=annotation_file, field="image_id")
        row = position + 1
        entry = raw[position]
        image = _image_of(entry, images, annotation_file, row)
        width, height = _image_size(image, annotation_file, row)
        admission.count_image(str(image["file_name"]))
        box: Any = record.get("bbox")
        numbers = [number for number in (json_number(float(v)) for v in box) if number is not None] \
            if _is_sequence(box) else []
        if len(numbers) != 4 or numbers[2] <= 0 or numbers[3] <= 0:
            raise InputFormatError(f"the segmentation polygon spans no area (wildlife-datasets box {box!r})",
                                   file=annotation_file, row=row, field="segmentation")
        viewpoint = normalize_viewpoint(_missing_to_none(record.get("orientation")))
        if viewpoint is None:
            admission.exclude(EXCLUDED_NO_VIEWPOINT)
            continue
        identity = _missing_to_none(record.get("identity"))
        species = _missing_to_none(record.get("species"))
        admission.admit(WildlifeAnnotation(
            dataset=name, annotation_id=_annotation_id(entry, row), image_id=str(image["id"]),
            image_path=contained_path(root, str(record["path"]), file=annotation_file, row=row,
                                      field="images[].file_name", what="photo"),
            file_name=str(image["file_name"]),
            width=width, height=height, bbox=(numbers[0], numbers[1], numbers[2], numbers[3]),
            theta=0.0, viewpoint=viewpoint,
            identity=None if identity is None or str(identity) == unknown else _identity({"name": identity}),
            species=None if species is None else str(species), row=row))
    return admission.catalog(name, path, images_dir, annotation_file, f"wildlife-datasets {label}")


def _check_package_keys(payload: dict[str, Any], annotation_file: Path) -> None:
    """The package indexes these keys without a check (a KeyError deep inside it): name the first
    entry lacking one instead. It also needs exactly one segmentation polygon per annotation."""
    for key, needed in _PACKAGE_KEYS.items():
        entries = payload.get(key)
        if key == "categories" and not isinstance(entries, list):
            raise InputFormatError("wildlife-datasets needs a categories[] list", file=annotation_file,
                                   field="categories", hint="read this catalog with --catalog-reader biovqa")
        for row, entry in enumerate(entries or [], start=1):
            if not isinstance(entry, dict):
                raise InputFormatError(f"an entry of {key}[] must be a JSON object", file=annotation_file, row=row)
            for needed_key in needed:
                if needed_key not in entry:
                    raise InputFormatError(
                        f"wildlife-datasets needs {needed_key!r} on every entry of {key}[]", file=annotation_file,
                        row=row, field=needed_key if key == "annotations" else f"{key}[].{needed_key}",
                        hint="read this catalog with --catalog-reader biovqa")
            if key == "annotations":
                polygons = entry["segmentation"]
                if not isinstance(polygons, list) or len(polygons) != 1 or not isinstance(polygons[0], list) \
                        or len(polygons[0]) < 2 or len(polygons[0]) % 2 \
                        or any(json_number(v) is None for v in polygons[0]):
                    raise InputFormatError("wildlife-datasets needs exactly one segmentation polygon "
                                           "[x1, y1, x2, y2, ...]", file=annotation_file, row=row,
                                           field="segmentation", hint="read this catalog with --catalog-reader biovqa")


def _package_catalogue(annotation_file: Path, name: str) -> tuple[Any, Path, str]:
    """(the package's catalogue DataFrame, the root its ``path`` column is relative to, the loader
    used). The named class (WhaleSharkID, …) reads a catalog in the layout it expects; any other
    ``<prefix>.coco`` layout goes through the package's generic Wild Me loader."""
    try:
        from wildlife_datasets.datasets import datasets_wildme
        from wildlife_datasets import datasets as package
    except ImportError as exc:
        raise BiovqaError(f"the wildlife-datasets catalog reader needs the wildlife-datasets package: {exc}",
                          hint=WILDLIFE_DATASETS_HINT) from None
    coco = annotation_file.parent.parent
    match = re.match(r"instances_train(\d+)\.json$", annotation_file.name)
    if annotation_file.parent.name != "annotations" or not coco.name.endswith(".coco") or match is None:
        raise InputFormatError("wildlife-datasets reads only the <name>.coco/annotations/instances_train<YEAR>.json "
                               "layout", file=annotation_file, hint="read this catalog with --catalog-reader biovqa")
    year = int(match.group(1))
    prefix_parts = [coco.name.removesuffix(".coco")]
    known = WILDLIFE_DATASETS_LOADERS.get(name)
    loader: Any
    if known is not None and Path(known[1]).parts[-1] == prefix_parts[0] and known[2] == year:
        class_name, prefix, _ = known
        depth = len(Path(prefix).parts)
        root = coco.parents[depth - 1] if depth > 1 else coco.parent
        if (root / f"{prefix}.coco").resolve() != coco.resolve():
            class_name = ""
    else:
        class_name = ""
    if class_name:
        loader, label = getattr(package, class_name), class_name
    else:
        prefix, root = prefix_parts[0], coco.parent

        class _Generic(datasets_wildme.WildlifeDatasetWildMe):  # type: ignore[misc]
            def create_catalogue(self) -> Any:
                return self.create_catalogue_wildme(prefix, year)

        loader, label = _Generic, f"WildlifeDatasetWildMe({prefix!r}, {year})"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # BelugaID warns that BelugaIDv2 exists (another release)
            dataset = loader(str(root), check_files=False)
    except Exception as exc:  # the package raises bare Exception / KeyError / ValueError
        raise InputFormatError(f"wildlife-datasets ({label}) could not read the catalog: "
                               f"{type(exc).__name__}: {exc}", file=annotation_file,
                               hint="read this catalog with --catalog-reader biovqa") from None
    frame = dataset.df
    frame.attrs["unknown_name"] = getattr(dataset, "unknown_name", "unknown")
    return frame, root, label


def _frame_records(frame: Any) -> Iterator[dict[str, Any]]:
    columns = list(frame.columns)
    for values in frame.itertuples(index=False, name=None):
        record = dict(zip(columns, values))
        position = record.get("image_id")
        if position is not None and not isinstance(position, bool):
            try:
                record["image_id"] = int(position)
            except (TypeError, ValueError):
                pass
        yield record


def _is_sequence(value: Any) -> bool:
    return isinstance(value, (list, tuple)) or (hasattr(value, "__len__") and hasattr(value, "__getitem__")
                                                 and not isinstance(value, (str, bytes)))


def _missing_to_none(value: Any) -> Any:
    """``None`` for the package's missing values (NaN / pandas NA), else the value."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    try:
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return None
    except ImportError:  # pragma: no cover - the package depends on pandas
        pass
    return value


def _enclosing(annotation: WildlifeAnnotation) -> tuple[float, float, float, float]:
    x, y, w, h = annotation.bbox
    if not annotation.theta:
        return x, y, x + w, y + h
    cx, cy = x + w / 2, y + h / 2
    c, s = abs(math.cos(annotation.theta)), abs(math.sin(annotation.theta))
    half_w, half_h = (w * c + h * s) / 2, (w * s + h * c) / 2
    return cx - half_w, cy - half_h, cx + half_w, cy + half_h


def _identity(entry: dict[str, Any]) -> str | None:
    for key in _IDENTITY_KEYS:
        value = entry.get(key)
        if value is not None and str(value).strip():
            text = str(value).strip()
            return None if text == UNKNOWN_IDENTITY or text.lower() == "unknown" else text
    return None


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
