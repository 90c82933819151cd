"""CUB-200-2011 reader for the native archive layout (Bio-VQA Component 2 and the HCA benchmark).

``CUB_200_2011/`` holds ``images.txt``, ``classes.txt``, ``image_class_labels.txt``,
``bounding_boxes.txt``, ``parts/parts.txt``, ``parts/part_locs.txt``,
``attributes/image_attribute_labels.txt`` and ``attributes/certainties.txt``; the attribute
vocabulary ``attributes.txt`` sits either in ``attributes/`` (as the bundled README says) or at the
archive root beside ``CUB_200_2011/`` (as the real tarball has it) — both are looked for. Every
file is space separated with 1-based ids and no header.

The two large files are parsed vectorised (pandas' C tokenizer): ``image_attribute_labels.txt``
has 3 677 856 lines, 606 of which (images 2275 and 9364) carry a sixth token; only the first four
tokens (image, attribute, is_present, certainty) are used, as in the common public loaders.

Errors name the file, the 1-based line and the field: a file that is not UTF-8 (a byte-order mark
and CRLF line ends are accepted), an id/name file that lists nothing (a zero-byte ``classes.txt``
or ``certainties.txt`` is named as itself), a value that is not a finite number (``inf``,
``1e400``, ``nan``). An image listed in ``images.txt`` but absent on disk is not an error: it is
excluded from every array and counted in :attr:`CubDataset.exclusions`; so is a file that is
unreadable, truncated or over the limits of :mod:`biovqa.sources.images` (counted per reason),
and a photo whose bounding box or a visible part location lies outside it (beyond
:data:`EDGE_TOLERANCE` pixels or :data:`EDGE_FRACTION` of the side: ``1e300``, a point drawn on
another photo). The first files of
each reason are named in :attr:`CubDataset.exclusion_examples`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath

import numpy as np
import pandas as pd

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.sources.images import inspect_image_file
from biovqa.sources.validate import count_exclusion, read_lines

#: Relative paths of the native files (attributes.txt is searched for, see :func:`find_attributes_file`).
NATIVE_FILES: dict[str, str] = {
    "images": "images.txt",
    "classes": "classes.txt",
    "image_class_labels": "image_class_labels.txt",
    "bounding_boxes": "bounding_boxes.txt",
    "parts": "parts/parts.txt",
    "part_locs": "parts/part_locs.txt",
    "image_attribute_labels": "attributes/image_attribute_labels.txt",
    "certainties": "attributes/certainties.txt",
}

EXCLUSION_MISSING_ON_DISK = "image_missing_on_disk"
EXCLUSION_BOX_OUTSIDE = "bounding_box_outside_image"
EXCLUSION_PART_OUTSIDE = "part_location_outside_image"
#: A box or visible part may overhang the photo by this many pixels, or this fraction of its longer
#: side if more (annotators' rounding; real CUB boxes overhang by 1-2 px).
EDGE_TOLERANCE = 4.0
EDGE_FRACTION = 0.01

_CLASS_PREFIX_RE = re.compile(r"^\d+\.")


@dataclass(frozen=True)
class CubDataset:
    """The parsed archive, one row per kept image (in ``images.txt`` order).

    Arrays are indexed ``[image_row]``, ``[image_row, part_index]`` or
    ``[image_row, attribute_index]`` (indexes are 0-based: attribute id 1 → column 0).
    """

    root: Path
    images_dir: Path
    image_ids: np.ndarray  # int32 (n_images,)
    image_paths: tuple[str, ...]  # relative to images_dir, as in images.txt
    image_class_ids: np.ndarray  # int32 (n_images,)
    class_folders: dict[int, str]  # class id → "001.Black_footed_Albatross"
    bounding_boxes: np.ndarray  # float64 (n_images, 4): x, y, width, height
    part_names: tuple[str, ...]  # native names, e.g. "left_eye"
    part_xy: np.ndarray  # float64 (n_images, n_parts, 2)
    part_visible: np.ndarray  # bool (n_images, n_parts)
    attribute_names: tuple[str, ...]  # "has_bill_shape::dagger"
    is_present: np.ndarray  # bool (n_images, n_attributes)
    certainty: np.ndarray  # int8 (n_images, n_attributes); 0 where no label row exists
    certainty_names: dict[int, str]
    files: dict[str, Path]
    exclusions: dict[str, int] = field(default_factory=dict)
    #: reason → the first files excluded (paths under images/)
    exclusion_examples: dict[str, list[str]] = field(default_factory=dict)
    #: int64 (n_images, 2): width, height of each kept photo from the image inspector (zeros when
    #: the photos were not checked)
    image_sizes: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))

    @property
    def n_images(self) -> int:
        return int(self.image_ids.shape[0])

    @property
    def attribute_groups(self) -> tuple[str, ...]:
        """The group of each attribute (``has_bill_shape``), in attribute order."""
        return tuple(name.split("::", 1)[0] for name in self.attribute_names)

    @property
    def attribute_values(self) -> tuple[str, ...]:
        """The native value of each attribute (``curved_(up_or_down)``), in attribute order."""
        return tuple(name.split("::", 1)[1] for name in self.attribute_names)

    def class_name(self, class_id: int) -> str:
        """Display name: ``001.Black_footed_Albatross`` → ``Black footed Albatross``."""
        return class_display_name(self.class_folders[class_id])


def class_display_name(folder: str) -> str:
    """Strip the ``NNN.`` prefix and turn underscores into spaces."""
    return _CLASS_PREFIX_RE.sub("", folder.strip()).replace("_", " ").strip()


def find_attributes_file(root: Path) -> Path:
    """``attributes/attributes.txt``, ``attributes.txt`` at the CUB root, or beside the root."""
    candidates = [root / "attributes" / "attributes.txt", root / "attributes.txt",
                  root.parent / "attributes.txt"]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise MissingResourceError(
        "CUB attribute vocabulary attributes.txt not found",
        file=candidates[0],
        hint="the CUB_200_2011.tgz archive keeps it at its top level, beside CUB_200_2011/; "
        "copy it into CUB_200_2011/ or CUB_200_2011/attributes/",
    )


def _require_file(root: Path, relative: str) -> Path:
    path = root / relative
    if not path.is_file():
        raise MissingResourceError(
            f"CUB file {relative} not found",
            file=path,
            hint="point --cub at the extracted CUB_200_2011 folder (it holds images.txt, parts/, attributes/)",
        )
    return path


def _read_id_name(path: Path, *, value_field: str, allow_spaces: bool = False) -> list[tuple[int, str]]:
    """Small ``<id> <name>`` files, line by line with exact error positions."""
    rows: list[tuple[int, str]] = []
    try:
        lines = read_lines(path)
    except InputFormatError as error:
        raise InputFormatError(f"{error.message}", file=path, row=error.row, field=value_field,
                               hint="the CUB files are UTF-8; re-extract the archive") from None
    for line_no, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        parts = line.split(maxsplit=1) if allow_spaces else line.split()
        if len(parts) != 2:
            raise InputFormatError(
                f"expected '<id> <{value_field}>', found {line!r}",
                file=path, row=line_no, field=value_field,
            )
        try:
            ident = int(parts[0])
        except ValueError:
            raise InputFormatError(f"id is not an integer: {parts[0]!r}", file=path,
                                   row=line_no, field="id") from None
        rows.append((ident, parts[1].strip()))
    if not rows:
        raise InputFormatError(f"lists no '<id> <{value_field}>' line (the file is empty)", file=path,
                               row=1, field=value_field, hint="re-extract the CUB archive")
    ids = [r[0] for r in rows]
    if ids != list(range(1, len(ids) + 1)):
        bad = next(i for i, ident in enumerate(ids) if ident != i + 1)
        raise InputFormatError(
            f"ids must run 1, 2, 3, … in order; found {ids[bad]} at position {bad + 1}",
            file=path, row=bad + 1, field="id",
        )
    return rows


_TOO_MANY_RE = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")


def read_numeric_table(
    path: Path,
    fields: tuple[str, ...],
    *,
    integer_fields: tuple[str, ...],
    extra_fields: int = 0,
) -> pd.DataFrame:
    """Whitespace-separated numeric table, vectorised, with exact error positions.

    Each line must hold ``len(fields)`` tokens, or up to ``extra_fields`` more (ignored). Returns
    a frame with the named columns (float64, or int64 for ``integer_fields``) and the 1-based
    line number of each row in ``line``.
    """
    width = len(fields) + extra_fields
    try:
        frame = pd.read_csv(
            path, sep=r"\s+", header=None, names=list(range(width)), engine="c",
            skip_blank_lines=False,
        )
    except pd.errors.ParserError as exc:
        match = _TOO_MANY_RE.search(str(exc))
        line = int(match.group(2)) if match else None
        raise InputFormatError(
            f"too many fields (expected {len(fields)}: {' '.join(fields)})",
            file=path, row=line, field=None,
        ) from None
    except pd.errors.EmptyDataError:
        raise InputFormatError("file is empty", file=path) from None
    except UnicodeDecodeError:
        read_lines(path)  # names the first line that is not UTF-8
        raise InputFormatError("not UTF-8 text", file=path) from None
    frame = frame.iloc[:, : len(fields)]
    frame.columns = list(fields)
    out = pd.DataFrame({"line": np.arange(1, len(frame) + 1, dtype=np.int64)})
    for name in fields:
        column = frame[name]
        if pd.api.types.is_numeric_dtype(column.dtype):
            numeric = column.astype(np.float64)
        else:
            numeric = pd.to_numeric(column.astype(object), errors="coerce")
        bad = numeric.isna().to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            found = column.iloc[row]
            what = "missing" if pd.isna(found) else f"not a number: {found!r}"
            raise InputFormatError(
                f"{what} (expected {len(fields)} fields: {' '.join(fields)})",
                file=path, row=row + 1, field=name,
            )
        values = numeric.to_numpy(dtype=np.float64)
        infinite = ~np.isfinite(values)
        if infinite.any():
            row = int(np.flatnonzero(infinite)[0])
            raise InputFormatError(f"not a finite number: {column.iloc[row]!r}", file=path, row=row + 1,
                                   field=name)
        if name in integer_fields:
            integral = values == np.round(values)
            if not integral.all():
                row = int(np.flatnonzero(~integral)[0])
                raise InputFormatError(f"not an integer: {column.iloc[row]!r}", file=path,
                                       row=row + 1, field=name)
            out[name] = values.astype(np.int64)
        else:
            out[name] = values
    return out


def _check_range(frame: pd.DataFrame, column: str, low: int, high: int, path: Path, what: str) -> None:
    values = frame[column].to_numpy()
    bad = (values < low) | (values > high)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputFormatError(
            f"{what} {int(values[row])} out of range {low}..{high}",
            file=path, row=int(frame["line"].iloc[row]), field=column,
        )


def _row_index(frame: pd.DataFrame, id_to_row: np.ndarray, path: Path) -> np.ndarray:
    """Map the ``image_id`` column to image rows, rejecting ids absent from images.txt."""
    ids = frame["image_id"].to_numpy()
    known = (ids >= 1) & (ids < id_to_row.shape[0])
    rows = np.full(ids.shape, -1, dtype=np.int64)
    rows[known] = id_to_row[ids[known]]
    bad = rows < 0
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        raise InputFormatError(
            f"image id {int(ids[at])} is not listed in images.txt",
            file=path, row=int(frame["line"].iloc[at]), field="image_id",
        )
    return rows


def _check_complete(rows: np.ndarray, columns: np.ndarray | None, shape: tuple[int, ...],
                    path: Path, frame: pd.DataFrame, what: str, image_ids: np.ndarray) -> None:
    """Every (image[, column]) cell has exactly one line."""
    flat = rows if columns is None else rows * shape[1] + columns
    counts = np.bincount(flat, minlength=int(np.prod(shape)))
    if (counts > 1).any():
        cell = int(np.flatnonzero(counts > 1)[0])
        positions = np.flatnonzero(flat == cell)
        raise InputFormatError(
            f"duplicate {what} line", file=path, row=int(frame["line"].iloc[positions[1]]),
            field="image_id", hint="each image (and part/attribute) must appear once",
        )
    if (counts == 0).any():
        cell = int(np.flatnonzero(counts == 0)[0])
        image_row = cell if columns is None else cell // shape[1]
        detail = "" if columns is None else f", {what} id {cell % shape[1] + 1}"
        raise InputFormatError(
            f"no line for image id {int(image_ids[image_row])}{detail}",
            file=path, field="image_id",
            hint="the file looks truncated; re-extract the CUB archive",
        )


def read_cub(root: str | Path, *, check_images: bool = True) -> CubDataset:
    """Read an extracted ``CUB_200_2011`` folder; see the module docstring for the layout."""
    root = Path(root)
    if not root.is_dir():
        raise MissingResourceError("CUB folder not found", file=root,
                                   hint="extract CUB_200_2011.tgz and pass its CUB_200_2011 folder")
    files = {name: _require_file(root, rel) for name, rel in NATIVE_FILES.items()}
    files["attributes"] = find_attributes_file(root)

    # images.txt: <image_id> <relative path>
    images = _read_id_name(files["images"], value_field="image_name")
    for line_no, (_, relative) in enumerate(images, start=1):
        pure = PurePosixPath(relative.replace("\\", "/"))
        if pure.is_absolute() or ".." in pure.parts or PureWindowsPath(relative).drive:
            raise InputFormatError(f"image path {relative!r} leaves the images/ folder", file=files["images"],
                                   row=line_no, field="image_name",
                                   hint="images.txt lists paths relative to images/ (e.g. 001.Black_footed_Albatross/x.jpg)")
    n_listed = len(images)
    image_ids = np.arange(1, n_listed + 1, dtype=np.int32)
    image_paths = [p for _, p in images]
    id_to_row = np.full(n_listed + 1, -1, dtype=np.int64)
    id_to_row[1:] = np.arange(n_listed)

    classes = _read_id_name(files["classes"], value_field="class_name")
    class_folders = {ident: name for ident, name in classes}

    labels = read_numeric_table(files["image_class_labels"], ("image_id", "class_id"),
                                integer_fields=("image_id", "class_id"))
    _check_range(labels, "class_id", 1, len(classes), files["image_class_labels"], "class id")
    label_rows = _row_index(labels, id_to_row, files["image_class_labels"])
    _check_complete(label_rows, None, (n_listed,), files["image_class_labels"], labels,
                    "class label", image_ids)
    image_class_ids = np.zeros(n_listed, dtype=np.int32)
    image_class_ids[label_rows] = labels["class_id"].to_numpy()

    boxes_frame = read_numeric_table(files["bounding_boxes"], ("image_id", "x", "y", "width", "height"),
                                     integer_fields=("image_id",))
    box_rows = _row_index(boxes_frame, id_to_row, files["bounding_boxes"])
    _check_complete(box_rows, None, (n_listed,), files["bounding_boxes"], boxes_frame,
                    "bounding box", image_ids)
    bounding_boxes = np.zeros((n_listed, 4), dtype=np.float64)
    bounding_boxes[box_rows] = boxes_frame[["x", "y", "width", "height"]].to_numpy()

    parts = _read_id_name(files["parts"], value_field="part_name", allow_spaces=True)
    part_names = tuple(name.replace(" ", "_") for _, name in parts)
    n_parts = len(part_names)

    locs = read_numeric_table(files["part_locs"], ("image_id", "part_id", "x", "y", "visible"),
                              integer_fields=("image_id", "part_id", "visible"))
    _check_range(locs, "part_id", 1, n_parts, files["part_locs"], "part id")
    _check_range(locs, "visible", 0, 1, files["part_locs"], "visibility flag")
    loc_rows = _row_index(locs, id_to_row, files["part_locs"])
    part_cols = locs["part_id"].to_numpy() - 1
    _check_complete(loc_rows, part_cols, (n_listed, n_parts), files["part_locs"], locs, "part",
                    image_ids)
    part_xy = np.zeros((n_listed, n_parts, 2), dtype=np.float64)
    part_xy[loc_rows, part_cols] = locs[["x", "y"]].to_numpy()
    part_visible = np.zeros((n_listed, n_parts), dtype=bool)
    part_visible[loc_rows, part_cols] = locs["visible"].to_numpy() == 1

    attributes = _read_id_name(files["attributes"], value_field="attribute_name")
    for line_no, (_, name) in enumerate(attributes, start=1):
        if "::" not in name or not name.startswith("has_"):
            raise InputFormatError(f"attribute name {name!r} is not has_<group>::<value>",
                                   file=files["attributes"], row=line_no, field="attribute_name")
    attribute_names = tuple(name for _, name in attributes)
    n_attributes = len(attribute_names)

    certainties = _read_id_name(files["certainties"], value_field="certainty_name", allow_spaces=True)
    certainty_names = {ident: name for ident, name in certainties}

    attr_path = files["image_attribute_labels"]
    attr = read_numeric_table(attr_path, ("image_id", "attribute_id", "is_present", "certainty_id"),
                              integer_fields=("image_id", "attribute_id", "is_present", "certainty_id"),
                              extra_fields=2)
    _check_range(attr, "attribute_id", 1, n_attributes, attr_path, "attribute id")
    _check_range(attr, "is_present", 0, 1, attr_path, "is_present flag")
    _check_range(attr, "certainty_id", 1, max(certainty_names), attr_path, "certainty id")
    attr_rows = _row_index(attr, id_to_row, attr_path)
    attr_cols = attr["attribute_id"].to_numpy() - 1
    _check_complete(attr_rows, attr_cols, (n_listed, n_attributes), attr_path, attr, "attribute",
                    image_ids)
    is_present = np.zeros((n_listed, n_attributes), dtype=bool)
    is_present[attr_rows, attr_cols] = attr["is_present"].to_numpy() == 1
    certainty = np.zeros((n_listed, n_attributes), dtype=np.int8)
    certainty[attr_rows, attr_cols] = attr["certainty_id"].to_numpy().astype(np.int8)

    images_dir = root / "images"
    exclusions: dict[str, int] = {}
    examples: dict[str, list[str]] = {}

    def exclude(reason: str, row: int) -> None:
        keep[row] = False
        count_exclusion(exclusions, examples, reason, [image_paths[row]])

    keep = np.ones(n_listed, dtype=bool)
    sizes = np.zeros((n_listed, 2), dtype=np.int64)
    if check_images:
        for row in range(n_listed):
            if not (images_dir / image_paths[row]).is_file():
                exclude(EXCLUSION_MISSING_ON_DISK, row)
        # unreadable, truncated or oversized files (biovqa.sources.images) are counted per reason
        for row in (int(r) for r in np.flatnonzero(keep)):
            verdict = inspect_image_file(images_dir / image_paths[row])
            if isinstance(verdict, str):
                exclude(verdict, row)
                continue
            width, height = verdict
            sizes[row] = verdict
            tol = max(EDGE_TOLERANCE, EDGE_FRACTION * max(width, height))
            x, y, w, h = bounding_boxes[row]
            if x < -tol or y < -tol or w <= 0 or h <= 0 or x + w > width + tol or y + h > height + tol:
                exclude(EXCLUSION_BOX_OUTSIDE, row)
                continue
            xy = part_xy[row][part_visible[row]]
            if xy.size and ((xy < -tol).any() or (xy[:, 0] > width + tol).any() or (xy[:, 1] > height + tol).any()):
                exclude(EXCLUSION_PART_OUTSIDE, row)
    kept = np.flatnonzero(keep)
    return CubDataset(
        root=root,
        images_dir=images_dir,
        image_ids=image_ids[kept],
        image_paths=tuple(image_paths[i] for i in kept),
        image_class_ids=image_class_ids[kept],
        class_folders=class_folders,
        bounding_boxes=bounding_boxes[kept],
        part_names=part_names,
        part_xy=part_xy[kept],
        part_visible=part_visible[kept],
        attribute_names=attribute_names,
        is_present=is_present[kept],
        certainty=certainty[kept],
        certainty_names=certainty_names,
        files=files,
        exclusions=exclusions,
        exclusion_examples={reason: examples[reason] for reason in sorted(examples)},
        image_sizes=sizes[kept],
    )
