"""Boxes on Bees (and Pollen) reader: one Pascal VOC XML next to each image (datasets.md §6).

``<annotation>`` holds ``<filename>`` (or ``<path>``), ``<size><width><height>`` and repeated
``<object><name>…</name><bndbox><xmin><ymin><xmax><ymax></bndbox></object>``; coordinates may be
written as floats. Only bee objects are counted: an object whose name, lower-cased, is ``bee`` or
``bees`` (other names, e.g. pollen, are ignored and tallied in ``ignored_names``).

Errors (file, line, field): XML that does not parse, no ``<size>`` (or a size that is not a
positive number), a box coordinate that is missing or not a number. Counted exclusions: an XML
without its image, an image without an XML, a box outside the image (tolerance 1 px) or with
non-positive area.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

from biovqa.errors import InputFormatError, MissingResourceError
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


def _text(node: ElementTree.Element, tag: str) -> str | None:
    child = node.find(tag)
    return None if child is None or child.text is None else child.text.strip()


def _number(node: ElementTree.Element, tag: str, *, file: Path, row: int | None) -> float:
    text = _text(node, tag)
    try:
        return float(text) if text is not None else float("nan")
    except ValueError:
        raise InputFormatError(f"<{tag}> is not a number: {text!r}", file=file, row=row, field=tag) from None


def _line(node: ElementTree.Element) -> int | None:
    return getattr(node, "sourceline", None)


def read_voc(path: Path) -> tuple[str | None, int, int, list[tuple[str, tuple[float, float, float, float], int | None]]]:
    """(filename, width, height, [(name, (xmin, ymin, xmax, ymax), line)]) of one VOC file."""
    try:
        # line numbers: ElementTree has none, so objects are located by a cheap text scan
        text = path.read_text(encoding="utf-8")
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise InputFormatError(f"not well-formed XML: {exc}", file=path, row=exc.position[0]) from None
    object_lines = [i for i, line in enumerate(text.splitlines(), start=1) if "<object" in line]
    size = root.find("size")
    if size is None:
        raise InputFormatError("the VOC annotation has no <size> element", file=path, field="size",
                               hint="every Boxes on Bees XML gives <size><width><height>")
    width = _number(size, "width", file=path, row=None)
    height = _number(size, "height", file=path, row=None)
    if not (width > 0 and height > 0):
        raise InputFormatError("<size> needs a positive <width> and <height>", file=path, field="size")
    filename = _text(root, "filename") or (Path(_text(root, "path") or "").name or None)
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
    return filename, int(round(width)), int(round(height)), objects


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
    orphans = sum(1 for p in folder.iterdir() if p.suffix in IMAGE_SUFFIXES and p.stem not in xml_stems)
    if orphans:
        source.exclude(EXCLUDED_NO_LABELS, orphans)
    ignored: dict[str, int] = {}
    for xml_path in xml_paths:
        filename, width, height, objects = read_voc(xml_path)
        image_path = folder / filename if filename and (folder / filename).is_file() else find_image(folder, xml_path.stem)
        if image_path is None:
            source.exclude(EXCLUDED_NO_IMAGE)
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
            source.exclude(EXCLUDED_OUTSIDE)
            continue
        source.images.append(AnnotatedImage(image_path, width, height, tuple(boxes), ("bee",) * len(boxes)))
    source.ignored_names = dict(sorted(ignored.items()))
    return source


__all__ = ["BEE_NAMES", "read_bees", "read_voc"]
