"""WAID (Wildlife Aerial Images from Drone) reader for the native layout (a counting source of Bio-VQA Component 3).

``WAID/classes.txt`` (class id = 0-based line index), ``WAID/images/<split>/*.jpg`` and
``WAID/labels/<split>/<same stem>.txt``; a label file holds one YOLO line per animal,
``<class> <cx> <cy> <w> <h>`` normalised to [0, 1]. The count of an image is its number of lines.

Files are read through :mod:`biovqa.sources.validate` (UTF-8, BOM and CRLF accepted, bounded
lines). Errors (:class:`~biovqa.errors.InputFormatError`, naming file, 1-based line and field): a
file that is not UTF-8, an empty classes.txt or a class named twice, a label line without exactly
five fields, a field that is not a finite number (``nan``, ``inf``) or far outside [0, 1], a class
id not in classes.txt. Counted exclusions (:attr:`CountingSource.exclusions`, the first files of
each in :attr:`CountingSource.exclusion_examples`): an image without a label file (its annotation
completeness cannot be verified), a label file without an image, a box reaching outside the image
(beyond a tolerance of 0.5 %), two photos with one stem (``a.jpg`` and ``a.png``), a photo the
image inspector refuses (truncated, corrupt, over the pixel limit:
:func:`biovqa.sources.images.inspect_image_file`).

This module also defines :class:`AnnotatedImage` and :class:`CountingSource`, the record shapes
shared by the counting readers (Boxes on Bees, DePondFi).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.sources import images as limits
from biovqa.sources.validate import count_exclusion, first_duplicate, number, read_lines, relative_name

#: Image suffixes searched beside a label file.
IMAGE_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".JPG", ".JPEG", ".PNG")
#: Normalised coordinates may exceed [0, 1] by this much (rounding in exporters).
NORMALISED_TOLERANCE = 0.005

EXCLUDED_NO_LABELS = "image without a label file (completeness unverifiable)"
EXCLUDED_NO_IMAGE = "label file without an image"
EXCLUDED_OUTSIDE = "box outside the image"
EXCLUDED_UNREADABLE = "unreadable image"
EXCLUDED_DUPLICATE_STEM = "two photos with one stem (which one the labels describe is unknown)"
EXCLUDED_OVER_PIXELS = "image over the pixel limit"
EXCLUDED_OVER_BYTES = "image over the byte limit"
#: the image inspector's reasons, as a counting source words them
INSPECTOR_REASONS: dict[str, str] = {limits.UNREADABLE: EXCLUDED_UNREADABLE,
                                     limits.OVER_PIXELS: EXCLUDED_OVER_PIXELS,
                                     limits.OVER_BYTES: EXCLUDED_OVER_BYTES}


@dataclass(frozen=True, slots=True)
class AnnotatedImage:
    """One photograph with every annotated individual: pixel boxes (x1, y1, x2, y2)."""

    path: Path
    width: int
    height: int
    boxes: tuple[tuple[float, float, float, float], ...]
    labels: tuple[str, ...]
    #: sub-collection (WAID split; "" for single-collection sources)
    split: str = ""

    @property
    def count(self) -> int:
        return len(self.boxes)


@dataclass
class CountingSource:
    """What a counting reader returns: images (sorted by path) and exclusions per reason, each
    reason with the first :data:`~biovqa.sources.validate.MAX_EXAMPLES` files it excluded (named
    under the source folder)."""

    name: str
    root: Path
    images: list[AnnotatedImage]
    exclusions: dict[str, int] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    #: object names seen but not counted (e.g. pollen in Boxes on Bees)
    ignored_names: dict[str, int] = field(default_factory=dict)
    #: reason → the first files (or ``file:row``) it excluded
    exclusion_examples: dict[str, list[str]] = field(default_factory=dict)

    def exclude(self, reason: str, n: int = 1, *, names: Iterable[str | Path] = ()) -> None:
        count_exclusion(self.exclusions, self.exclusion_examples, reason, (self.name_of(p) for p in names), n)

    def name_of(self, path: str | Path) -> str:
        """A file named as it lies under the source folder (no builder-local path)."""
        return relative_name(path, self.root) if isinstance(path, Path) else path

    def size_or_exclude(self, path: Path) -> tuple[int, int] | None:
        """(width, height) of a photo from the one image inspector
        (:func:`biovqa.sources.images.inspect_image_file`); None, counted under the inspector's
        reason and naming the file, when it is truncated, corrupt or over a limit."""
        verdict = limits.inspect_image_file(path)
        if isinstance(verdict, str):
            self.exclude(INSPECTOR_REASONS[verdict], names=[path])
            return None
        return verdict


def image_size(path: Path) -> tuple[int, int] | None:
    """(width, height) of a photo the image inspector accepts; None when it refuses it."""
    verdict = limits.inspect_image_file(path)
    return None if isinstance(verdict, str) else verdict


def find_image(folder: Path, stem: str) -> Path | None:
    for suffix in IMAGE_SUFFIXES:
        candidate = folder / f"{stem}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def _waid_root(root: Path) -> Path:
    if (root / "classes.txt").is_file():
        return root
    if (root / "WAID" / "classes.txt").is_file():
        return root / "WAID"
    raise MissingResourceError("WAID classes.txt not found", file=root / "classes.txt",
                               hint="pass the WAID folder holding classes.txt, images/ and labels/")


def read_classes(path: Path) -> list[str]:
    names: list[str] = []
    for line_no, line in enumerate(read_lines(path), start=1):
        name = line.strip()
        if not name:
            continue
        if len(names) != line_no - 1:
            raise InputFormatError("blank line inside classes.txt (ids are line indexes)", file=path,
                                   row=line_no - 1)
        names.append(name)
    if not names:
        raise InputFormatError("classes.txt lists no class", file=path,
                               hint="WAID's classes.txt names one class per line (id = line index)")
    duplicate = first_duplicate(names)
    if duplicate is not None:
        raise InputFormatError(f"class {duplicate[0]!r} is named twice (lines {duplicate[1] + 1} and "
                               f"{duplicate[2] + 1})", file=path, row=duplicate[2] + 1)
    return names


def parse_yolo_line(line: str, *, file: Path, row: int, n_classes: int
                    ) -> tuple[int, float, float, float, float]:
    """``class cx cy w h`` → (class id, cx, cy, w, h); errors name file, line and field."""
    fields = line.split()
    if len(fields) != 5:
        raise InputFormatError(f"a YOLO label line has 5 fields (class cx cy w h), found {len(fields)}: "
                               f"{line.strip()[:80]!r}", file=file, row=row,
                               field="class" if len(fields) < 1 else "h" if len(fields) == 4 else None)
    names = ("class", "cx", "cy", "w", "h")
    try:
        class_id = int(fields[0])
    except ValueError:
        raise InputFormatError(f"class id is not an integer: {fields[0]!r}", file=file, row=row,
                               field="class") from None
    if not 0 <= class_id < n_classes:
        raise InputFormatError(f"class id {class_id} is not in classes.txt (0..{n_classes - 1})",
                               file=file, row=row, field="class")
    # normalised coordinates: finite, and within [-1, 2] so that nan or 1e300 never reach a box
    values = [number(text, file=file, row=row, field=name, low=-1.0, high=2.0)
              for name, text in zip(names[1:], fields[1:])]
    return class_id, values[0], values[1], values[2], values[3]


def unique_stems(image_paths: list[Path], source: CountingSource) -> list[Path]:
    """One photo per label stem: a stem present as two files (``a.jpg`` and ``a.png``) leaves its
    label file ambiguous, so both are excluded and named."""
    by_stem: dict[str, list[Path]] = {}
    for path in image_paths:
        by_stem.setdefault(path.stem, []).append(path)
    kept = []
    for stem, paths in sorted(by_stem.items()):
        if len(paths) > 1:
            source.exclude(EXCLUDED_DUPLICATE_STEM, len(paths), names=paths)
        else:
            kept.append(paths[0])
    return sorted(kept)


def read_waid(root: str | Path) -> CountingSource:
    """Read every split of a WAID folder (see the module docstring)."""
    root = _waid_root(Path(root))
    classes = read_classes(root / "classes.txt")
    source = CountingSource("waid", root, [], files={"waid_classes": root / "classes.txt"})
    images_dir, labels_dir = root / "images", root / "labels"
    if not images_dir.is_dir():
        raise MissingResourceError("WAID images/ folder not found", file=images_dir)
    splits = sorted(p.name for p in images_dir.iterdir() if p.is_dir())
    tol = NORMALISED_TOLERANCE
    for split in splits:
        label_folder = labels_dir / split
        label_stems = {p.stem for p in label_folder.glob("*.txt")} if label_folder.is_dir() else set()
        image_paths = sorted(p for p in (images_dir / split).iterdir() if p.suffix in IMAGE_SUFFIXES)
        image_stems = {p.stem for p in image_paths}
        image_paths = unique_stems(image_paths, source)
        orphans = sorted(label_stems - image_stems)
        if orphans:
            source.exclude(EXCLUDED_NO_IMAGE, len(orphans),
                           names=[label_folder / f"{stem}.txt" for stem in orphans])
        for image_path in image_paths:
            label_path = label_folder / f"{image_path.stem}.txt"
            if image_path.stem not in label_stems:
                source.exclude(EXCLUDED_NO_LABELS, names=[image_path])
                continue
            size = source.size_or_exclude(image_path)
            if size is None:
                continue
            width, height = size
            boxes, labels, outside = [], [], False
            for row, line in enumerate(read_lines(label_path), start=1):
                if not line.strip():
                    continue
                class_id, cx, cy, w, h = parse_yolo_line(line, file=label_path, row=row,
                                                         n_classes=len(classes))
                x1, y1, x2, y2 = cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2
                if w <= 0 or h <= 0 or x1 < -tol or y1 < -tol or x2 > 1 + tol or y2 > 1 + tol:
                    outside = True
                    break
                boxes.append((max(0.0, x1) * width, max(0.0, y1) * height,
                              min(1.0, x2) * width, min(1.0, y2) * height))
                labels.append(classes[class_id])
            if outside:
                source.exclude(EXCLUDED_OUTSIDE, names=[f"{source.name_of(label_path)}:{row}"])
                continue
            source.images.append(AnnotatedImage(image_path, width, height, tuple(boxes), tuple(labels),
                                                split=split))
    if not source.images and not source.exclusions:
        raise MissingResourceError("no photo found in any split folder", file=images_dir,
                                   hint="WAID keeps its photos in images/<split>/ beside labels/<split>/; an empty "
                                        "source would build an empty benchmark")
    return source


__all__ = ["AnnotatedImage", "CountingSource", "parse_yolo_line", "read_classes", "read_waid"]
