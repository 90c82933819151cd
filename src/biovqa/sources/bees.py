"""Boxes on Bees (and Pollen) reader: one Pascal VOC XML next to each image (a counting source of Bio-VQA Component 3).

``<annotation>`` holds ``<filename>`` (or ``<path>``), ``<size><width><height>`` and repeated
``<object><name>…</name><bndbox><xmin><ymin><xmax><ymax></bndbox></object>``; coordinates may be
written as floats. Only bee objects are counted: an object whose name, lower-cased, is ``bee`` or
``bees`` (other names, e.g. pollen, are ignored and tallied in ``ignored_names``).

Files are read through :mod:`biovqa.sources.validate`: an XML file is decoded in the encoding its
declaration names (``<?xml version="1.0" encoding="ISO-8859-1"?>``), UTF-8 without one.
Errors (file, line, field): XML that is not in its declared encoding or does not parse, no
``<size>`` (or a size that is not a whole positive number: ``inf``, ``1e400``), a box coordinate
that is missing or not a finite number, a ``<filename>`` that is a path rather than a file name.
Counted exclusions, each naming its first files: an XML without its image, an image without an
XML, two XML files naming one photo (both), a photo the image inspector refuses (truncated,
corrupt, a decompression bomb), a ``<size>`` that is not the photo's size (the boxes were drawn on
another image), a box outside the image (tolerance 1 px) or with non-positive area.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.bench.paths import contained_path
from biovqa.sources.validate import integer, number, read_xml
from biovqa.sources.waid import (
    EXCLUDED_NO_IMAGE,
    EXCLUDED_NO_LABELS,
    EXCLUDED_OUTSIDE,
    IMAGE_SUFFIXES,
    AnnotatedImage,
    CountingSource,
    find_image,
)

BEE_NAMES = frozenset({"bee", "bees"})
PIXEL_TOLERANCE = 1.0
#: Largest side a VOC ``<size>`` may declare (JPEG's own limit).
MAX_SIDE = 65_535

EXCLUDED_SHARED_PHOTO = "two XML files name one photo"
EXCLUDED_SIZE_MISMATCH = "declared <size> is not the photo's size"


def _text(node: ElementTree.Element, tag: str) -> str | None:
    child = node.find(tag)
    return None if child is None or child.text is None else child.text.strip()


def _number(node: ElementTree.Element, tag: str, *, file: Path, row: int | None) -> float:
    text = _text(node, tag)
    if text is None:
        return float("nan")
    return number(text, file=file, row=row, field=tag, what=f"<{tag}>")


def _line(node: ElementTree.Element) -> int | None:
    return getattr(node, "sourceline", None)


def read_voc(path: Path) -> tuple[str | None, int, int, list[tuple[str, tuple[float, float, float, float], int | None]]]:
    """(filename, width, height, [(name, (xmin, ymin, xmax, ymax), line)]) of one VOC file."""
    data, text = read_xml(path)
    try:
        root = ElementTree.fromstring(data)  # honours the declared encoding
    except ElementTree.ParseError as exc:
        raise InputFormatError(f"not well-formed XML: {exc}", file=path, row=exc.position[0]) from None
    # line numbers: ElementTree has none, so objects are located by a cheap text scan
    object_lines = [i for i, line in enumerate(text.splitlines(), start=1) if "<object" in line]
    size = root.find("size")
    if size is None:
        raise InputFormatError("the VOC annotation has no <size> element", file=path, field="size",
                               hint="every Boxes on Bees XML gives <size><width><height>")
    width, height = (integer(_text(size, tag), file=path, row=None, field=tag, low=1, high=MAX_SIDE,
                             what=f"<size><{tag}>") for tag in ("width", "height"))
    filename = _text(root, "filename") or (Path(_text(root, "path") or "").name or None)
    if filename and (filename in (".", "..") or "/" in filename or "\\" in filename):
        raise InputFormatError(f"<filename> must name a file beside the XML, found {filename[:80]!r}",
                               file=path, field="filename")
    objects = []
    for k, obj in enumerate(root.findall("object")):
        row = object_lines[k] if k < len(object_lines) else None
        name = (_text(obj, "name") or "").lower()
        box = obj.find("bndbox")
        if box is None:
            raise InputFormatError("an <object> has no <bndbox>", file=path, row=row, field="bndbox")
        coords = tuple(_number(box, tag, file=path, row=row) for tag in ("xmin", "ymin", "xmax", "ymax"))
        for tag, value in zip(("xmin", "ymin", "xmax", "ymax"), coords):
            if value != value:
                raise InputFormatError(f"<bndbox> lacks <{tag}>", file=path, row=row, field=tag)
        objects.append((name, (coords[0], coords[1], coords[2], coords[3]), row))
    return filename, width, height, objects


def read_bees(root: str | Path) -> CountingSource:
    """Read a Boxes on Bees folder (``ML-Data/`` or the folder holding the XML files)."""
    root = Path(root)
    if not root.is_dir():
        raise MissingResourceError("Boxes on Bees folder not found", file=root)
    folder = root / "ML-Data" if (root / "ML-Data").is_dir() else root
    source = CountingSource("bees", folder, [])
    xml_paths = sorted(folder.glob("*.xml"))
    if not xml_paths:
        raise MissingResourceError("no Pascal VOC .xml files found", file=folder,
                                   hint="pass the Boxes on Bees ML-Data folder")
    xml_stems = {p.stem for p in xml_paths}
    orphans = sorted(p for p in folder.iterdir() if p.suffix in IMAGE_SUFFIXES and p.stem not in xml_stems)
    if orphans:
        source.exclude(EXCLUDED_NO_LABELS, len(orphans), names=orphans)
    ignored: dict[str, int] = {}
    annotations = []
    for xml_path in xml_paths:
        filename, width, height, objects = read_voc(xml_path)
        named = contained_path(folder, filename, file=xml_path, field="filename", what="photo") if filename else None
        image_path = named if named is not None and named.is_file() else find_image(folder, xml_path.stem)
        if image_path is not None and image_path is not named:  # a photo beside the XML: no link out either
            contained_path(folder, image_path.name, file=xml_path, field="filename", what="photo")
        if image_path is None:
            source.exclude(EXCLUDED_NO_IMAGE, names=[xml_path])
            continue
        annotations.append((xml_path, image_path, width, height, objects))
    claimed: dict[Path, list[Path]] = {}
    for xml_path, image_path, *_ in annotations:
        claimed.setdefault(image_path, []).append(xml_path)
    for xml_path, image_path, width, height, objects in annotations:
        if len(claimed[image_path]) > 1:  # which of the two is the photo's annotation is unknown
            source.exclude(EXCLUDED_SHARED_PHOTO, names=[xml_path])
            continue
        size = source.size_or_exclude(image_path)
        if size is None:
            continue
        if size != (width, height):
            source.exclude(EXCLUDED_SIZE_MISMATCH,
                           names=[f"{xml_path.name}: <size> {width}x{height}, photo {size[0]}x{size[1]}"])
            continue
        boxes = []
        outside = False
        for name, (x1, y1, x2, y2), _ in objects:
            if name not in BEE_NAMES:
                ignored[name] = ignored.get(name, 0) + 1
                continue
            tol = PIXEL_TOLERANCE
            if x2 <= x1 or y2 <= y1 or x1 < -tol or y1 < -tol or x2 > width + tol or y2 > height + tol:
                outside = True
                break
            boxes.append((max(0.0, x1), max(0.0, y1), min(float(width), x2), min(float(height), y2)))
        if outside:
            source.exclude(EXCLUDED_OUTSIDE, names=[xml_path])
            continue
        source.images.append(AnnotatedImage(image_path, width, height, tuple(boxes), ("bee",) * len(boxes)))
    source.ignored_names = dict(sorted(ignored.items()))
    return source


__all__ = ["BEE_NAMES", "read_bees", "read_voc"]
