"""The records a re-identification catalog is read into (:class:`WildlifeAnnotation`,
:class:`WildlifeCatalog`) and what both catalog readers of :mod:`biovqa.sources.wildlife` share: the
COCO JSON helpers, the viewpoint and identity rules, and the admission rules that exclude or note
an annotation (the layouts and the exclusions: :mod:`biovqa.sources.wildlife`)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.sources.images import inspect_image_file
from biovqa.sources.validate import count_exclusion, json_id

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


class Admission:
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


def coco_species(payload: dict[str, Any]) -> dict[Any, Any]:
    # an id that is a list or an object cannot name a category: such entries name nothing
    return {c.get("id"): c.get("name") for c in payload.get("categories", []) or []
            if isinstance(c, dict) and isinstance(c.get("id"), (int, str)) and not isinstance(c.get("id"), bool)}


def coco_images(payload: dict[str, Any], annotation_file: Path) -> dict[Any, dict[str, Any]]:
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


def coco_image_of(entry: dict[str, Any], images: dict[Any, dict[str, Any]], annotation_file: Path,
              row: int) -> dict[str, Any]:
    image_id = json_id(entry.get("image_id"), file=annotation_file, row=row, field="image_id")
    if image_id not in images:
        raise InputFormatError(f"image_id {image_id!r} is not in images[]",
                               file=annotation_file, row=row, field="image_id")
    return images[image_id]


def coco_image_size(image: dict[str, Any], annotation_file: Path, row: int) -> tuple[int, int]:
    width, height = json_number(image.get("width")), json_number(image.get("height"))
    if width is None or height is None or width <= 0 or height <= 0:
        raise InputFormatError("image width and height must be positive numbers",
                               file=annotation_file, row=row, field="images[].width")
    return int(width), int(height)


def coco_annotation_id(entry: dict[str, Any], row: int) -> str:
    return str(entry.get("uuid") or entry.get("id", row))


def _enclosing(annotation: WildlifeAnnotation) -> tuple[float, float, float, float]:
    x, y, w, h = annotation.bbox
    if not annotation.theta:
        return x, y, x + w, y + h
    cx, cy = x + w / 2, y + h / 2
    c, s = abs(math.cos(annotation.theta)), abs(math.sin(annotation.theta))
    half_w, half_h = (w * c + h * s) / 2, (w * s + h * c) / 2
    return cx - half_w, cy - half_h, cx + half_w, cy + half_h


def identity_of(entry: dict[str, Any]) -> str | None:
    for key in _IDENTITY_KEYS:
        value = entry.get(key)
        if value is not None and str(value).strip():
            text = str(value).strip()
            return None if text == UNKNOWN_IDENTITY or text.lower() == "unknown" else text
    return None


__all__ = ["EXCLUDED_BOX_OUTSIDE", "EXCLUDED_IMAGE_MISSING", "EXCLUDED_NO_VIEWPOINT", "EXCLUDED_SIZE_MISMATCH",
           "GZCD_METADATA", "UNKNOWN_IDENTITY", "Admission", "WildlifeAnnotation", "WildlifeCatalog",
           "coco_annotation_id", "coco_image_of", "coco_image_size", "coco_images", "coco_species",
           "find_annotation_file", "identity_of", "json_number", "normalize_viewpoint", "read_coco_json"]
