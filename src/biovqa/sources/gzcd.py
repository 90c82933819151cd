"""GZCD (Grevy's Zebra Census Dataset) reader for both native forms.

* **Table** — the GGR pipeline's tabular output (Imageomics ``animal-id``): one CSV row per
  annotation with the columns ``uuid, image uuid, bbox pred score, category id, annot species,
  annot census, bbox gt, bbox pred, bbox x, bbox y, bbox w, bbox h, image fname, …, path, bbox,
  predicted_viewpoint``. The box is taken from ``bbox x/y/w/h`` (pixels, xywh) when present, else
  from the corner box ``bbox gt`` then ``bbox pred`` (``"[x1, y1, x2, y2]"``). The photo is
  ``images/<image fname>`` beside the CSV, else the ``path`` column relative to the CSV's folder,
  else ``images/<image uuid>.jpg``; its size is read from the image header (the table has none).
* **COCO** — ``images/<uuid>.jpg`` + ``final_metadata.json`` with ``images[]`` (``id``,
  ``file_name``, ``width``, ``height``) and ``annotations[]`` (``bbox`` [x, y, w, h], ``image_id``,
  species from ``annot species``/``species`` or ``category_id`` → ``categories[]``, viewpoint
  from ``viewpoint``/``predicted_viewpoint``, census flag from ``annot census``/``census``).

:func:`read_gzcd` takes the CSV file, the JSON file, or a folder holding ``final_metadata.json``
or exactly one CSV whose header has ``image uuid`` and ``annot species``; anything else is a
:class:`~biovqa.errors.MissingResourceError` naming what was looked for.

Errors (:class:`~biovqa.errors.InputFormatError`, naming file, 1-based row — the CSV header is
row 1, in JSON the position in ``annotations[]`` — and field): a required column missing, an
empty ``image uuid`` / ``annot species``, a box value that is not a number, a corner box that is not
four numbers, a non-positive width/height, an ``annot census`` that is not a boolean. Counted
exclusions (:attr:`GzcdCatalog.exclusions`, per photograph, since a photo with a lost annotation
has an unverifiable count; the first photos of each reason in
:attr:`GzcdCatalog.exclusion_examples`): ``image file missing``, a photo the image inspector
refuses (``unreadable image``: truncated, corrupt; ``image over the pixel limit``), a COCO
``width``/``height`` that is not the photo's size, an annotation given twice (same id, or same box
and species: the count would be one too many), ``box outside the image`` (beyond
:data:`EDGE_TOLERANCE` of the side; smaller overhangs are clipped).
Viewpoints are normalised like the Wild Me catalogs (``"front, left"`` → ``frontleft``).

Every photo lies under the annotation file's folder (:attr:`GzcdCatalog.root`, whichever form the
path was given in), so benchmarks name it by its path there; a photo path from the file
(``image fname``, ``path``, ``file_name``) that leads out of that folder (``..``, an absolute path)
is an :class:`~biovqa.errors.InputFormatError` naming the row and field, and no such file is read.
The table form is the pipeline's detector output, not a census (a photo may show more animals than
it has rows): C3 counts from it only when the user declares it complete.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.sources.images import inspect_image_file
from biovqa.sources.validate import count_exclusion, csv_records, first_duplicate, json_id, relative_name
from biovqa.sources.waid import INSPECTOR_REASONS
from biovqa.sources.wildlife import GZCD_METADATA, json_number, normalize_viewpoint, read_coco_json

#: Columns every GGR table must have.
TABLE_REQUIRED: tuple[str, ...] = ("image uuid", "annot species")
XYWH_COLUMNS: tuple[str, ...] = ("bbox x", "bbox y", "bbox w", "bbox h")
#: Corner-box columns ([x1, y1, x2, y2]), in order of preference after ``bbox x/y/w/h``.
CORNER_COLUMNS: tuple[str, ...] = ("bbox gt", "bbox pred")
VIEWPOINT_KEYS: tuple[str, ...] = ("predicted_viewpoint", "viewpoint")
CENSUS_KEYS: tuple[str, ...] = ("annot census", "annot_census", "census")
SPECIES_KEYS: tuple[str, ...] = ("annot species", "annot_species", "species")
#: A box may overhang the photo by this fraction of its side before the photo is excluded.
EDGE_TOLERANCE = 0.01
#: GGR species codes → the name used in questions.
SPECIES_NAMES: dict[str, str] = {
    "zebra_grevys": "Grevy's zebra", "zebra_plains": "plains zebra", "giraffe_reticulated": "reticulated giraffe",
    "giraffe_masai": "Masai giraffe",
}
_TRUE = frozenset({"true", "1", "yes", "t", "y"})
_FALSE = frozenset({"false", "0", "no", "f", "n"})

EXCLUDED_IMAGE_MISSING = "image file missing"
EXCLUDED_UNREADABLE = "unreadable image"
EXCLUDED_OUTSIDE = "box outside the image"
EXCLUDED_SIZE_MISMATCH = "declared width/height is not the photo's size"
EXCLUDED_REPEATED = "an annotation given twice (same id, or same box and species)"


def species_name(code: str) -> str:
    """A GGR species code as words (``zebra_grevys`` → ``Grevy's zebra``)."""
    return SPECIES_NAMES.get(code, code.replace("_", " "))


@dataclass(frozen=True, slots=True)
class GzcdAnnotation:
    """One annotated animal: corner box in pixels, species code, census flag, viewpoint."""

    annotation_id: str
    box: tuple[float, float, float, float]
    species: str
    #: the GGR census-annotation flag (None: not given)
    census: bool | None
    #: normalised viewpoint label (None: not given)
    viewpoint: str | None
    #: 1-based CSV row (header = 1) or position in ``annotations[]``
    row: int


@dataclass(frozen=True, slots=True)
class GzcdImage:
    image_id: str
    path: Path
    width: int
    height: int
    annotations: tuple[GzcdAnnotation, ...]

    @property
    def boxes(self) -> tuple[tuple[float, float, float, float], ...]:
        return tuple(a.box for a in self.annotations)

    @property
    def species(self) -> tuple[str, ...]:
        return tuple(a.species for a in self.annotations)


@dataclass
class GzcdCatalog:
    """Photographs with every annotation, which form was read, and what was left out."""

    #: the folder of the annotation file (every photo path lies below it)
    root: Path
    form: str  # "table" | "coco"
    annotation_file: Path
    images: list[GzcdImage]
    exclusions: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)
    #: reason → the first photos it excluded (named under :attr:`root`)
    exclusion_examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def files(self) -> dict[str, Path]:
        return {f"gzcd_{self.form}": self.annotation_file}


def find_gzcd_file(path: str | Path) -> tuple[Path, str]:
    """``(annotation file, form)`` for a GZCD path given as the CSV, the JSON or a folder."""
    path = Path(path)
    if not path.exists():
        raise MissingResourceError("GZCD source not found", file=path)
    if path.is_file():
        if path.suffix.lower() == ".json":
            return path, "coco"
        if path.suffix.lower() in (".csv", ".txt"):
            return path, "table"
        raise InputFormatError("a GZCD file is a GGR table (.csv) or COCO JSON (.json)", file=path)
    if (path / GZCD_METADATA).is_file():
        return path / GZCD_METADATA, "coco"
    tables = [p for p in sorted(path.glob("*.csv")) if _is_ggr_table(p)]
    if len(tables) == 1:
        return tables[0], "table"
    if len(tables) > 1:
        raise InputFormatError(f"several GGR tables: {', '.join(p.name for p in tables[:4])}", file=path,
                               hint="give the CSV file itself")
    csvs = sorted(path.glob("*.csv"))
    header = {h.strip() for h in next(csv_records(csvs[0]), (1, []))[1]} if len(csvs) == 1 else set()
    if header & {*TABLE_REQUIRED, *XYWH_COLUMNS, *CORNER_COLUMNS}:
        # the one CSV there is a GGR table missing a column: say so, naming it
        missing = [c for c in TABLE_REQUIRED if c not in header]
        raise InputFormatError("a required GGR column is missing", file=csvs[0], row=1, field=missing[0],
                               hint=f"a GGR table has the columns {', '.join(TABLE_REQUIRED)}; or give "
                                    f"the COCO form ({GZCD_METADATA})")
    raise MissingResourceError(
        f"neither {GZCD_METADATA} (COCO form) nor a CSV with the columns 'image uuid' and 'annot species' "
        "(GGR table form) is in the folder", file=path,
        hint="give the GZCD folder, its final_metadata.json, or the GGR pipeline's output CSV")


def _is_ggr_table(path: Path) -> bool:
    try:
        header = next(csv_records(path), (1, []))[1]
    except InputFormatError:
        return False
    names = {h.strip() for h in header}
    return all(c in names for c in TABLE_REQUIRED)


def read_gzcd(path: str | Path) -> GzcdCatalog:
    """Read GZCD in either form (see the module docstring)."""
    annotation_file, form = find_gzcd_file(path)
    rows = _table_rows(annotation_file) if form == "table" else _coco_rows(annotation_file)
    return _assemble(form, annotation_file, rows)


# ----------------------------------------------------------------------------- table form


def _number(text: str | None, *, file: Path, row: int, column: str) -> float:
    try:
        value = float(str(text).strip())
    except (TypeError, ValueError):
        raise InputFormatError(f"{column} is not a number: {text!r}", file=file, row=row, field=column) from None
    if not math.isfinite(value):
        raise InputFormatError(f"{column} is not a finite number: {text!r}", file=file, row=row, field=column)
    return value


def _corner_box(text: str, *, file: Path, row: int, column: str) -> tuple[float, float, float, float]:
    parts = [p for p in str(text).strip().strip("[]()").replace(" ", "").split(",") if p != ""]
    if len(parts) != 4:
        raise InputFormatError(f"{column} must be a corner box [x1, y1, x2, y2], found {text!r}",
                               file=file, row=row, field=column)
    x1, y1, x2, y2 = (_number(p, file=file, row=row, column=column) for p in parts)
    if x2 <= x1 or y2 <= y1:
        raise InputFormatError(f"{column} needs x2 > x1 and y2 > y1, found {text!r}", file=file, row=row,
                               field=column)
    return x1, y1, x2, y2


def _census(value: Any, *, file: Path, row: int, column: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if not text:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InputFormatError(f"{column} must be True or False, found {value!r}", file=file, row=row, field=column)


def _table_rows(csv_path: Path) -> list[dict[str, Any]]:
    """One dict per annotation: image key, file candidates, box (x1, y1, x2, y2), species, …"""
    out: list[dict[str, Any]] = []
    records = csv_records(csv_path)  # UTF-8 (BOM, CRLF accepted), lines and fields bounded
    header = [h.strip() for h in next(records, (1, []))[1]]
    if not header:
        raise InputFormatError("empty CSV", file=csv_path, row=1)
    for column in TABLE_REQUIRED:
        if column not in header:
            raise InputFormatError("a required GGR column is missing", file=csv_path, row=1, field=column)
    has_xywh = all(c in header for c in XYWH_COLUMNS)
    corners = [c for c in CORNER_COLUMNS if c in header]
    if not has_xywh and not corners:
        raise InputFormatError("no box columns: expected 'bbox x', 'bbox y', 'bbox w', 'bbox h' or "
                               "'bbox gt' / 'bbox pred'", file=csv_path, row=1, field="bbox x")
    viewpoint_key = next((k for k in VIEWPOINT_KEYS if k in header), None)
    census_key = next((k for k in CENSUS_KEYS if k in header), None)
    for row_no, record in records:
        if not any(v.strip() for v in record):
            continue
        if len(record) != len(header):
            raise InputFormatError(f"expected {len(header)} fields, found {len(record)}", file=csv_path,
                                   row=row_no)
        values = dict(zip(header, record))
        image_uuid = values["image uuid"].strip()
        species = values["annot species"].strip()
        for column, value in (("image uuid", image_uuid), ("annot species", species)):
            if not value:
                raise InputFormatError(f"{column} is empty", file=csv_path, row=row_no, field=column)
        if has_xywh and all(values[c].strip() for c in XYWH_COLUMNS):
            x, y, w, h = (_number(values[c], file=csv_path, row=row_no, column=c) for c in XYWH_COLUMNS)
            if w <= 0 or h <= 0:
                raise InputFormatError(f"bbox w and bbox h must be positive, found {w:g} × {h:g}",
                                       file=csv_path, row=row_no, field="bbox w" if w <= 0 else "bbox h")
            box = (x, y, x + w, y + h)
        else:
            corner = next((c for c in corners if values[c].strip()), None)
            if corner is None:
                raise InputFormatError("the row has no box", file=csv_path, row=row_no,
                                       field="bbox x" if has_xywh else corners[0])
            box = _corner_box(values[corner], file=csv_path, row=row_no, column=corner)
        names = [n for n in (values.get("image fname", "").strip(),) if n]
        candidates = [(csv_path.parent / "images" / n, "image fname") for n in names]
        if values.get("path", "").strip():
            candidates.append((csv_path.parent / values["path"].strip(), "path"))
        candidates.append((csv_path.parent / "images" / f"{image_uuid}.jpg", "image uuid"))
        out.append({
            "image": image_uuid, "candidates": candidates, "width": None, "height": None, "box": box,
            "species": species, "row": row_no, "annotation_id": values.get("uuid", "").strip() or str(row_no),
            "census": _census(values.get(census_key), file=csv_path, row=row_no, column=census_key)
            if census_key else None,
            "viewpoint": normalize_viewpoint(values.get(viewpoint_key)) if viewpoint_key else None,
        })
    return out


# ----------------------------------------------------------------------------- COCO form


def _category_name(categories: dict[Any, Any], entry: dict[str, Any], *, file: Path, row: int) -> Any:
    """The name ``categories[]`` gives the annotation's ``category_id`` (None when it has none)."""
    if entry.get("category_id") is None:
        return None
    return categories.get(json_id(entry["category_id"], file=file, row=row, field="category_id"))


def _coco_rows(json_path: Path) -> list[dict[str, Any]]:
    payload = read_coco_json(json_path)
    categories = {json_id(c.get("id"), file=json_path, row=k, field="categories[].id"): c.get("name")
                  for k, c in enumerate(payload.get("categories") or [], start=1) if isinstance(c, dict)}
    images: dict[Any, dict[str, Any]] = {}
    for index, image in enumerate(payload["images"], start=1):
        if not isinstance(image, dict) or "id" not in image or not image.get("file_name"):
            raise InputFormatError("an image needs id and file_name", file=json_path, row=index,
                                   field="images[].file_name")
        for key in ("width", "height"):
            value = json_number(image.get(key))
            if value is None or value <= 0:
                raise InputFormatError(f"image {key} must be a positive number, found {image.get(key)!r}",
                                       file=json_path, row=index, field=f"images[].{key}")
        image_id = json_id(image["id"], file=json_path, row=index, field="images[].id")
        if image_id in images:
            raise InputFormatError(f"images[].id {image_id!r} is given twice", file=json_path, row=index,
                                   field="images[].id")
        images[image_id] = image
    out: list[dict[str, Any]] = []
    for row, entry in enumerate(payload["annotations"], start=1):
        if not isinstance(entry, dict):
            raise InputFormatError("an annotation must be a JSON object", file=json_path, row=row)
        image = images.get(json_id(entry.get("image_id"), file=json_path, row=row, field="image_id"))
        if image is None:
            raise InputFormatError(f"image_id {entry.get('image_id')!r} is not in images[]", file=json_path,
                                   row=row, field="image_id")
        bbox = entry.get("bbox")
        numbers = [json_number(v) for v in bbox] if isinstance(bbox, list) else []
        if len(numbers) != 4 or any(v is None for v in numbers):
            raise InputFormatError(f"bbox must be four numbers [x, y, w, h], found {bbox!r}", file=json_path,
                                   row=row, field="bbox")
        x, y, w, h = (float(v) for v in numbers)  # type: ignore[arg-type]
        if w <= 0 or h <= 0:
            raise InputFormatError(f"bbox width and height must be positive, found {bbox!r}", file=json_path,
                                   row=row, field="bbox")
        species_key = next((k for k in SPECIES_KEYS if entry.get(k)), None)
        species = str(entry[species_key]) if species_key else _category_name(
            categories, entry, file=json_path, row=row)
        if not species:
            raise InputFormatError("the annotation names no species (annot species, species or a known "
                                   "category_id)", file=json_path, row=row, field="annot species")
        census_key = next((k for k in CENSUS_KEYS if k in entry), None)
        viewpoint_key = next((k for k in VIEWPOINT_KEYS if k in entry), None)
        out.append({
            "image": str(image["id"]),
            "candidates": [(json_path.parent / "images" / str(image["file_name"]), "images[].file_name")],
            "width": int(image["width"]), "height": int(image["height"]), "box": (x, y, x + w, y + h),
            "species": str(species).strip(), "row": row,
            "annotation_id": str(entry.get("uuid") or entry.get("id", row)),
            "census": _census(entry.get(census_key), file=json_path, row=row, column=census_key)
            if census_key else None,
            "viewpoint": normalize_viewpoint(entry.get(viewpoint_key)) if viewpoint_key else None,
        })
    return out


# ----------------------------------------------------------------------------- both forms


def _assemble(form: str, annotation_file: Path, rows: list[dict[str, Any]]) -> GzcdCatalog:
    catalog = GzcdCatalog(root=annotation_file.parent, form=form, annotation_file=annotation_file, images=[])
    by_image: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_image.setdefault(row["image"], []).append(row)

    def exclude(reason: str, name: str) -> None:
        count_exclusion(catalog.exclusions, catalog.exclusion_examples, reason, [name])

    # lexical containment: a name from the file may not climb out ('..', an absolute path); a
    # symlinked photo folder the user set up stays allowed
    root = Path(os.path.abspath(catalog.root))

    def within(candidate: Path) -> bool:
        return Path(os.path.normpath(os.path.abspath(candidate))).is_relative_to(root)

    for image_id, members in sorted(by_image.items()):
        candidates = members[0]["candidates"]
        path = next((p for p, _ in candidates if within(p) and p.is_file()), None)
        if path is None:
            escaping = [(p, name) for p, name in candidates if not within(p)]
            if escaping:  # a photo named outside the annotation file's folder is never read
                escaped, name = escaping[0]
                raise InputFormatError(f"the photo path {str(escaped)!r} leads outside the folder of the "
                                       f"annotation file ({catalog.root})", file=annotation_file,
                                       row=members[0]["row"], field=name,
                                       hint="put the photos in images/ beside the annotation file (or below "
                                            "its folder) and name them relative to it")
            exclude(EXCLUDED_IMAGE_MISSING, relative_name(candidates[0][0], catalog.root))
            continue
        path = Path(os.path.normpath(path))  # "./images/x.jpg", "a/../images/x.jpg": one name per photo
        shown = relative_name(path, catalog.root)
        # every photo goes through the one image inspector, whether or not its size is declared:
        # a truncated or bomb photo is excluded here, not discovered when a canvas is drawn
        verdict = inspect_image_file(path)
        if isinstance(verdict, str):
            exclude(INSPECTOR_REASONS[verdict], shown)
            continue
        width, height = members[0]["width"], members[0]["height"]
        if width is not None and (width, height) != verdict:  # COCO width/height that lie
            exclude(EXCLUDED_SIZE_MISMATCH, f"{shown}: declared {width}x{height}, photo {verdict[0]}x{verdict[1]}")
            continue
        width, height = verdict
        ids = [row["annotation_id"] for row in members]
        boxes = [(row["box"], row["species"]) for row in members]
        if first_duplicate(ids) is not None or first_duplicate(boxes) is not None:
            # one animal given twice would make the count one too many
            exclude(EXCLUDED_REPEATED, f"{shown} (rows {', '.join(str(row['row']) for row in members[:6])})")
            continue
        annotations, outside = [], False
        tol_x, tol_y = EDGE_TOLERANCE * width, EDGE_TOLERANCE * height
        for row in members:
            x1, y1, x2, y2 = row["box"]
            if x1 < -tol_x or y1 < -tol_y or x2 > width + tol_x or y2 > height + tol_y:
                outside = True
                break
            clipped = (max(0.0, x1), max(0.0, y1), min(float(width), x2), min(float(height), y2))
            if clipped != row["box"]:
                catalog.notes["box clipped"] = catalog.notes.get("box clipped", 0) + 1
            annotations.append(GzcdAnnotation(row["annotation_id"], clipped, row["species"], row["census"],
                                              row["viewpoint"], row["row"]))
        if outside:
            exclude(EXCLUDED_OUTSIDE, shown)
            continue
        catalog.images.append(GzcdImage(image_id, path, int(width), int(height), tuple(annotations)))
    catalog.images.sort(key=lambda im: str(im.path))
    catalog.exclusions = dict(sorted(catalog.exclusions.items()))
    catalog.exclusion_examples = dict(sorted(catalog.exclusion_examples.items()))
    return catalog


__all__ = ["GzcdAnnotation", "GzcdCatalog", "GzcdImage", "find_gzcd_file", "read_gzcd", "species_name"]
