"""Wildlife re-identification catalogs in their native layouts (datasets.md §8–9).

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
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biovqa.errors import InputFormatError, MissingResourceError

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
    #: counts of kept-but-adjusted annotations (``box clipped``, ``unknown identity``)
    notes: dict[str, int] = field(default_factory=dict)
    #: annotations per photo (``file_name``) in the file, kept or not: a photo whose kept count is
    #: lower lost an annotation, so its count of animals is unverifiable (C3 counting)
    annotations_per_image: dict[str, int] = field(default_factory=dict)

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
    return payload


def read_wildlife_catalog(path: str | Path, name: str | None = None, *,
                          check_images: bool = True) -> WildlifeCatalog:
    """Read one catalog (see the module docstring). ``name`` defaults to the folder name without
    ``.coco``; ``check_images=False`` skips the on-disk check of every photo."""
    annotation_file, images_dir = find_annotation_file(path)
    name = name or Path(path).name.removesuffix(".coco")
    payload = read_coco_json(annotation_file)
    species = {c.get("id"): c.get("name") for c in payload.get("categories", []) or [] if isinstance(c, dict)}
    images: dict[Any, dict[str, Any]] = {}
    for index, image in enumerate(payload["images"], start=1):
        if not isinstance(image, dict) or "id" not in image or "file_name" not in image:
            raise InputFormatError("an image needs id and file_name", file=annotation_file, row=index,
                                   field="images[].file_name")
        images[image["id"]] = image
    raw = payload["annotations"]
    if raw and not any(isinstance(a, dict) and "viewpoint" in a for a in raw):
        raise InputFormatError("no annotation has a viewpoint", file=annotation_file, field="viewpoint",
                               hint="C3/C4 group annotations by viewpoint; this export lacks the field")
    exclusions: dict[str, int] = {}
    notes: dict[str, int] = {}
    existing: dict[str, bool] = {}
    out: list[WildlifeAnnotation] = []
    per_image: dict[str, int] = {}

    def count(bucket: dict[str, int], reason: str) -> None:
        bucket[reason] = bucket.get(reason, 0) + 1

    for row, entry in enumerate(raw, start=1):
        if not isinstance(entry, dict):
            raise InputFormatError("an annotation must be a JSON object", file=annotation_file, row=row)
        if entry.get("image_id") not in images:
            raise InputFormatError(f"image_id {entry.get('image_id')!r} is not in images[]",
                                   file=annotation_file, row=row, field="image_id")
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
        image = images[entry["image_id"]]
        per_image[str(image["file_name"])] = per_image.get(str(image["file_name"]), 0) + 1
        width, height = json_number(image.get("width")), json_number(image.get("height"))
        if width is None or height is None or width <= 0 or height <= 0:
            raise InputFormatError("image width and height must be positive numbers",
                                   file=annotation_file, row=row, field="images[].width")
        viewpoint = normalize_viewpoint(entry.get("viewpoint"))
        if viewpoint is None:
            count(exclusions, EXCLUDED_NO_VIEWPOINT)
            continue
        annotation = WildlifeAnnotation(
            dataset=name, annotation_id=str(entry.get("uuid") or entry.get("id", row)),
            image_id=str(image["id"]), image_path=images_dir / str(image["file_name"]),
            file_name=str(image["file_name"]), width=int(width), height=int(height),
            bbox=(x, y, w, h), theta=float(theta), viewpoint=viewpoint,
            identity=_identity(entry), species=species.get(entry.get("category_id")), row=row)
        x0, y0, x1, y1 = _enclosing(annotation)
        if x1 <= 0 or y1 <= 0 or x0 >= annotation.width or y0 >= annotation.height:
            count(exclusions, EXCLUDED_BOX_OUTSIDE)
            continue
        if x0 < 0 or y0 < 0 or x1 > annotation.width or y1 > annotation.height:
            count(notes, "box clipped")
        if annotation.identity is None:
            count(notes, "unknown identity")
        if check_images:
            key = annotation.file_name
            if key not in existing:
                existing[key] = annotation.image_path.is_file()
            if not existing[key]:
                count(exclusions, EXCLUDED_IMAGE_MISSING)
                continue
        out.append(annotation)
    return WildlifeCatalog(name=name, root=Path(path), images_dir=images_dir,
                           annotation_file=annotation_file, annotations=out,
                           exclusions=dict(sorted(exclusions.items())), notes=dict(sorted(notes.items())),
                           annotations_per_image=dict(sorted(per_image.items())))


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
    "UNKNOWN_IDENTITY",
    "WildlifeAnnotation",
    "WildlifeCatalog",
    "find_annotation_file",
    "json_number",
    "normalize_viewpoint",
    "read_coco_json",
    "read_wildlife_catalog",
    "write_coco_catalog",
]
