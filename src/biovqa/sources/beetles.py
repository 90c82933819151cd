"""2018-NEON-beetles reader: ``BeetleMeasurements.csv`` + ``group_images/`` (Bio-VQA Component 3: distance, position, OCR, counting).

One CSV row per (annotator, beetle, structure). Both the current column names and the older ones
are accepted (``PictureID → pictureID``, ``scale_dist_pix → cm_pix``, ``lyingstraight →
lying_flat``, ``NEON_sampleID_ → NEON_sampleID``, ``field_site_name → site_name``, ``workflow_id →
workflowID``). ``scalebar`` and ``coords_pix`` are JSON strings ``{"x1":…,"y1":…,"x2":…,"y2":…}``;
``dist_cm = dist_pix / cm_pix`` (``dist_pix`` is recomputed from the endpoints when absent, and
``cm_pix`` from the scale bar). Coordinates were annotated on resized images: when
``resized_image_dim`` (a NumPy shape ``(height, width, channels)``) is given, endpoints are mapped
to the plate photo actually found in ``group_images/`` by the per-axis ratio of the two sizes.

Cleaning (every dropped row counted in :attr:`BeetleSource.exclusions` under its reason):

* a row without a usable scale bar (empty ``scalebar`` and ``cm_pix``, or a non-positive length);
* duplicated annotators: per plate only the annotator with most rows is kept (ties: the
  alphabetically first ``user_name``); the other annotators' rows are dropped;
* a repeated (plate, individual, structure) row of the kept annotator (first kept);
* transposed length/width: a beetle whose ElytraLength is shorter than its ElytraWidth (both rows);
* rows of a plate whose photo is missing or refused by the image inspector (truncated, corrupt, a
  decompression bomb); endpoints outside the photo;

* a row whose ``dist_pix`` is not the length of its ``coords_pix`` line, or whose ``cm_pix`` is not
  the length of its ``scalebar`` (beyond 1 px or 1 %): the gold ``dist_cm`` would rest on a number
  the endpoints contradict.

The CSV is read through :mod:`biovqa.sources.validate` (UTF-8, BOM and CRLF accepted, lines and
fields bounded). Errors (:class:`~biovqa.errors.InputFormatError` naming file, row and field): a
CSV that is not UTF-8 or has a header only, a required column missing, malformed JSON endpoints,
a ``cm_pix``/``dist_pix``/``individual`` or endpoint that is not a finite number in range
(``inf``, ``1e400``, ``nan``, a ``cm_pix`` of ``1e-300``: a centimetre is at least a pixel), an
``individual`` that is not a whole number, a ``resized_image_dim`` that is not a positive shape.
A plate is *complete* (usable for counting) when its kept individuals are exactly 1..N.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.bench.paths import contained_path
from biovqa.sources import images as limits
from biovqa.sources.validate import count_exclusion, csv_records, integer, number

CSV_NAME = "BeetleMeasurements.csv"
IMAGES_FOLDER = "group_images"
#: older column name → current name
COLUMN_ALIASES: dict[str, str] = {
    "PictureID": "pictureID", "scale_dist_pix": "cm_pix", "lyingstraight": "lying_flat",
    "NEON_sampleID_": "NEON_sampleID", "field_site_name": "site_name", "workflow_id": "workflowID",
}
REQUIRED_COLUMNS: tuple[str, ...] = ("pictureID", "individual", "structure", "coords_pix")
STRUCTURES: dict[str, str] = {"elytralength": "length", "elytrawidth": "width"}
CODE_RE = re.compile(r"^A\d{11}$")

EXCLUDED_NO_SCALEBAR = "row without a scale bar"
EXCLUDED_OTHER_ANNOTATOR = "duplicate annotation (another annotator of the plate)"
EXCLUDED_REPEATED = "repeated (plate, individual, structure) row"
EXCLUDED_TRANSPOSED = "length/width transposed"
EXCLUDED_NO_IMAGE = "plate photo missing"
EXCLUDED_OUTSIDE = "endpoint outside the plate photo"
EXCLUDED_STRUCTURE = "structure is not ElytraLength/ElytraWidth"
EXCLUDED_UNREADABLE = "plate photo refused by the image inspector"
EXCLUDED_DIST_MISMATCH = "dist_pix is not the length of coords_pix"
EXCLUDED_CM_MISMATCH = "cm_pix is not the length of the scalebar"
#: dist_pix / cm_pix may differ from the endpoints' length by this many pixels or this fraction
LENGTH_TOLERANCE_PX = 1.0
LENGTH_TOLERANCE = 0.01
#: pixels per centimetre: a centimetre spans at least a pixel and less than a plate's side
CM_PIX_RANGE = (1.0, 100_000.0)
#: largest coordinate or image side accepted (JPEG's own limit)
MAX_SIDE = 65_535

Segment = tuple[float, float, float, float]


@dataclass(frozen=True, slots=True)
class Measurement:
    """One elytra measurement, endpoints in the pixels of the plate photo on disk."""

    picture_id: str
    individual: int
    measure: str  # "length" | "width"
    line: Segment
    scalebar: Segment
    dist_pix: float  # as annotated (annotation frame)
    cm_pix: float  # as annotated (annotation frame)
    dist_cm: float
    user_name: str
    scientific_name: str
    row: int

    @property
    def line_px(self) -> float:
        return segment_length(self.line)

    @property
    def scalebar_px(self) -> float:
        return segment_length(self.scalebar)


@dataclass
class BeetlePlate:
    picture_id: str
    path: Path
    width: int
    height: int
    measurements: list[Measurement] = field(default_factory=list)

    @property
    def code(self) -> str | None:
        """The accession code printed under the label barcode (``A`` + 11 digits) = the stem."""
        stem = Path(self.picture_id).stem
        return stem if CODE_RE.match(stem) else None

    def individuals(self) -> dict[int, dict[str, Measurement]]:
        out: dict[int, dict[str, Measurement]] = {}
        for m in self.measurements:
            out.setdefault(m.individual, {})[m.measure] = m
        return dict(sorted(out.items()))

    @property
    def complete(self) -> bool:
        ids = sorted(self.individuals())
        return bool(ids) and ids == list(range(1, len(ids) + 1))

    def specimen_box(self, individual: int, pad: float = 0.15) -> tuple[float, float, float, float]:
        """A box around a beetle: the bounding box of its measurement endpoints, padded by
        ``pad`` × its larger side, clipped to the photo."""
        xs, ys = [], []
        for m in self.individuals()[individual].values():
            xs += [m.line[0], m.line[2]]
            ys += [m.line[1], m.line[3]]
        side = max(max(xs) - min(xs), max(ys) - min(ys), 4.0)
        margin = pad * side + 2
        return (max(0.0, min(xs) - margin), max(0.0, min(ys) - margin),
                min(float(self.width), max(xs) + margin), min(float(self.height), max(ys) + margin))


@dataclass
class BeetleSource:
    root: Path
    plates: list[BeetlePlate]
    exclusions: dict[str, int] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    n_rows: int = 0

    #: reason → the first rows (``BeetleMeasurements.csv:row``) or photos it excluded
    exclusion_examples: dict[str, list[str]] = field(default_factory=dict)

    def exclude(self, reason: str, n: int = 1, *, names: list[str] | tuple[str, ...] = ()) -> None:
        count_exclusion(self.exclusions, self.exclusion_examples, reason, names, n)


def segment_length(s: Segment) -> float:
    return math.hypot(s[2] - s[0], s[3] - s[1])


def parse_segment(text: str, *, file: Path, row: int, column: str) -> Segment | None:
    """``{"x1":…,"y1":…,"x2":…,"y2":…}`` → (x1, y1, x2, y2); empty text → None."""
    text = (text or "").strip()
    if not text or text.lower() in {"nan", "none", "null"}:
        return None
    try:
        value = json.loads(text)
        raw = (value["x1"], value["y1"], value["x2"], value["y2"])
    except (json.JSONDecodeError, KeyError, TypeError):
        raise InputFormatError(f"expected a JSON segment {{\"x1\":…,\"y1\":…,\"x2\":…,\"y2\":…}}, found {text[:80]!r}",
                               file=file, row=row, field=column) from None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw):
        raise InputFormatError(f"segment endpoints must be numbers, found {text[:80]!r}", file=file, row=row,
                               field=column)
    x1, y1, x2, y2 = (number(float(v), file=file, row=row, field=column, low=-MAX_SIDE, high=MAX_SIDE,
                             what=f"{column} endpoint") for v in raw)
    return (x1, y1, x2, y2)


def parse_dims(text: str | None, *, file: Path | None = None, row: int | None = None) -> tuple[int, int] | None:
    """``(3712, 5568, 3)`` (NumPy shape: height, width, channels) → (width, height); a shape with a
    zero or oversized side is an error naming the field."""
    numbers = re.findall(r"\d+", text or "")
    if len(numbers) < 2:
        return None
    height, width = (integer(n, file=file or Path(CSV_NAME), row=row, field="resized_image_dim", low=1,
                             high=MAX_SIDE, what="resized_image_dim side") for n in numbers[:2])
    return width, height


def _float(text: str | None, *, file: Path, row: int, column: str, low: float | None = None,
           high: float | None = None) -> float | None:
    text = (text or "").strip()
    if not text or text.lower() == "nan":
        return None
    return number(text, file=file, row=row, field=column, low=low, high=high)


def _close(given: float, measured: float) -> bool:
    return abs(given - measured) <= max(LENGTH_TOLERANCE_PX, LENGTH_TOLERANCE * measured)


def _find_csv(root: Path) -> Path:
    for candidate in (root / CSV_NAME, root):
        if candidate.is_file():
            return candidate
    raise MissingResourceError(f"{CSV_NAME} not found", file=root / CSV_NAME,
                               hint="pass the 2018-NEON-beetles folder (BeetleMeasurements.csv + group_images/)")


def read_beetles(root: str | Path) -> BeetleSource:
    """Read and clean the measurements; see the module docstring."""
    root = Path(root)
    csv_path = _find_csv(root)
    folder = csv_path.parent
    source = BeetleSource(folder, [], files={"beetle_measurements": csv_path})
    rows: list[dict[str, Any]] = []
    records = csv_records(csv_path)
    first = next(records, None)
    if first is None:
        raise InputFormatError("empty CSV", file=csv_path, row=1)
    header = first[1]
    names = [COLUMN_ALIASES.get(h.strip(), h.strip()) for h in header]
    for column in REQUIRED_COLUMNS:
        if column not in names:
            raise InputFormatError("a required column is missing", file=csv_path, row=1, field=column)
    if "cm_pix" not in names and "scalebar" not in names:
        raise InputFormatError("neither cm_pix (scale_dist_pix) nor scalebar is present", file=csv_path,
                               row=1, field="cm_pix")
    for row_no, record in records:
        if not record or all(not v.strip() for v in record):
            continue
        if len(record) != len(names):
            raise InputFormatError(f"expected {len(names)} fields, found {len(record)}", file=csv_path, row=row_no)
        values: dict[str, Any] = dict(zip(names, record))
        values["_row"] = row_no
        rows.append(values)
    if not rows:
        raise InputFormatError("the CSV has a header but no measurement row", file=csv_path, row=2,
                               hint="an empty source would build an empty benchmark; pass the full "
                                    "BeetleMeasurements.csv")
    source.n_rows = len(rows)

    parsed: list[dict[str, Any]] = []
    for values in rows:
        row_no = values["_row"]
        structure = STRUCTURES.get(values["structure"].strip().lower())
        if structure is None:
            source.exclude(EXCLUDED_STRUCTURE, names=[f"{csv_path.name}:{row_no}"])
            continue
        individual = integer(values["individual"].strip(), file=csv_path, row=row_no, field="individual",
                             low=0, high=100_000)
        line = parse_segment(values["coords_pix"], file=csv_path, row=row_no, column="coords_pix")
        scalebar = parse_segment(values.get("scalebar", ""), file=csv_path, row=row_no, column="scalebar")
        cm_pix = _float(values.get("cm_pix"), file=csv_path, row=row_no, column="cm_pix",
                        low=CM_PIX_RANGE[0], high=CM_PIX_RANGE[1])
        where = f"{csv_path.name}:{row_no}"
        if cm_pix is not None and scalebar is not None and not _close(cm_pix, segment_length(scalebar)):
            source.exclude(EXCLUDED_CM_MISMATCH, names=[where])
            continue
        if cm_pix is None and scalebar is not None:
            cm_pix = segment_length(scalebar)
        if line is None:
            raise InputFormatError("coords_pix is empty", file=csv_path, row=row_no, field="coords_pix")
        if scalebar is None or cm_pix is None or not CM_PIX_RANGE[0] <= cm_pix <= CM_PIX_RANGE[1]:
            source.exclude(EXCLUDED_NO_SCALEBAR, names=[where])
            continue
        dist_pix = _float(values.get("dist_pix"), file=csv_path, row=row_no, column="dist_pix", low=0.0,
                          high=4.0 * MAX_SIDE)
        if dist_pix is None:
            dist_pix = segment_length(line)
        elif not _close(dist_pix, segment_length(line)):
            source.exclude(EXCLUDED_DIST_MISMATCH, names=[where])
            continue
        parsed.append({"picture": values["pictureID"].strip(), "individual": individual,
                       "measure": structure, "line": line, "scalebar": scalebar, "cm_pix": cm_pix,
                       "dist_pix": dist_pix, "user": values.get("user_name", "").strip(),
                       "name": values.get("scientificName", "").strip(), "row": row_no,
                       "resized": parse_dims(values.get("resized_image_dim"), file=csv_path, row=row_no)})

    by_plate: dict[str, list[dict[str, Any]]] = {}
    for entry in parsed:
        by_plate.setdefault(entry["picture"], []).append(entry)
    for picture in sorted(by_plate):
        entries = by_plate[picture]
        users: dict[str, int] = {}
        for entry in entries:
            users[entry["user"]] = users.get(entry["user"], 0) + 1
        keep_user = min(users.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        kept: dict[tuple[int, str], dict[str, Any]] = {}
        for entry in entries:
            where = f"{csv_path.name}:{entry['row']}"
            if entry["user"] != keep_user:
                source.exclude(EXCLUDED_OTHER_ANNOTATOR, names=[where])
                continue
            key = (entry["individual"], entry["measure"])
            if key in kept:
                source.exclude(EXCLUDED_REPEATED, names=[where])
                continue
            kept[key] = entry
        for individual in sorted({k[0] for k in kept}):
            length, width = kept.get((individual, "length")), kept.get((individual, "width"))
            if length is not None and width is not None and length["dist_pix"] < width["dist_pix"]:
                source.exclude(EXCLUDED_TRANSPOSED, 2, names=[f"{csv_path.name}:{length['row']}",
                                                              f"{csv_path.name}:{width['row']}"])
                del kept[(individual, "length")], kept[(individual, "width")]
        if not kept:
            continue
        # pictureID comes from the CSV: it must name a photo inside the images folder
        image_path = contained_path(folder / IMAGES_FOLDER, picture, file=csv_path, row=entries[0]["row"],
                                    field="pictureID", what="plate photo")
        verdict = limits.inspect_image_file(image_path) if image_path.is_file() else None
        if not isinstance(verdict, tuple):
            reason = EXCLUDED_NO_IMAGE if verdict is None else EXCLUDED_UNREADABLE
            source.exclude(reason, len(kept), names=[f"{IMAGES_FOLDER}/{picture}"])
            continue
        size = verdict
        width_px, height_px = size
        plate = BeetlePlate(picture, image_path, width_px, height_px)
        for (individual, measure), entry in sorted(kept.items()):
            frame = entry["resized"] or (width_px, height_px)
            sx, sy = width_px / frame[0], height_px / frame[1]
            line = _scale(entry["line"], sx, sy)
            scalebar = _scale(entry["scalebar"], sx, sy)
            if not (_inside(line, width_px, height_px) and _inside(scalebar, width_px, height_px)):
                source.exclude(EXCLUDED_OUTSIDE, names=[f"{csv_path.name}:{entry['row']}"])
                continue
            plate.measurements.append(Measurement(
                picture_id=picture, individual=individual, measure=measure, line=line, scalebar=scalebar,
                dist_pix=entry["dist_pix"], cm_pix=entry["cm_pix"],
                dist_cm=entry["dist_pix"] / entry["cm_pix"], user_name=entry["user"],
                scientific_name=entry["name"], row=entry["row"]))
        if plate.measurements:
            source.plates.append(plate)
    return source


def _scale(s: Segment, sx: float, sy: float) -> Segment:
    return (s[0] * sx, s[1] * sy, s[2] * sx, s[3] * sy)


def _inside(s: Segment, width: int, height: int, tol: float = 1.0) -> bool:
    return all(-tol <= v <= width + tol for v in (s[0], s[2])) and all(-tol <= v <= height + tol for v in (s[1], s[3]))


__all__ = ["BeetlePlate", "BeetleSource", "Measurement", "parse_dims", "parse_segment", "read_beetles",
           "segment_length"]
