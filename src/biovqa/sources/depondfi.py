"""DePondFi'24 reader: ``Images/<name>.jpg`` and ``Keypoints/<name>.txt`` (a counting source of Bio-VQA Component 3).

A keypoint file holds one ``x,y`` pixel pair per line, nine consecutive lines per fish (mouth, eye,
top fin, fish centre, bottom centre, tail start, top / mid / bottom tail outline). Count = lines / 9;
a fish's box is the min/max of its nine points.

Files are read through :mod:`biovqa.sources.validate` (UTF-8, BOM and CRLF accepted, bounded
lines). Errors (file, line, field): a file that is not UTF-8, a line that is not two
comma-separated finite numbers (``nan``, ``inf`` are errors). Counted exclusions, each naming its
first files: a keypoint file whose line count is not a multiple of 9 (a partial fish: completeness
unverifiable), an image without a keypoint file, a keypoint file without an image, two photos with
one stem, a photo the image inspector refuses (truncated, corrupt, a decompression bomb), a point
outside the image (tolerance 1 px).
"""

from __future__ import annotations

from pathlib import Path

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.sources.validate import number, read_lines
from biovqa.sources.waid import (
    EXCLUDED_NO_IMAGE,
    EXCLUDED_NO_LABELS,
    EXCLUDED_OUTSIDE,
    IMAGE_SUFFIXES,
    AnnotatedImage,
    CountingSource,
    unique_stems,
    find_image,
)

POINTS_PER_FISH = 9
EXCLUDED_PARTIAL = "keypoint line count not a multiple of 9"
PIXEL_TOLERANCE = 1.0


def read_keypoints(path: Path) -> list[tuple[float, float]]:
    points = []
    for row, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.replace(";", ",").split(",")
        if len(fields) != 2:
            raise InputFormatError(f"a keypoint line is 'x,y', found {line.strip()[:60]!r}", file=path,
                                   row=row, field="x,y")
        x, y = (number(text.strip(), file=path, row=row, field=name)
                for name, text in zip(("x", "y"), fields))
        points.append((x, y))
    return points


def read_depondfi(root: str | Path) -> CountingSource:
    root = Path(root)
    images_dir, keypoints_dir = root / "Images", root / "Keypoints"
    for folder in (images_dir, keypoints_dir):
        if not folder.is_dir():
            raise MissingResourceError("DePondFi folder not found", file=folder,
                                       hint="pass the folder holding Images/ and Keypoints/")
    source = CountingSource("depondfi", root, [])
    keypoint_paths = {p.stem: p for p in sorted(keypoints_dir.glob("*.txt"))}
    image_paths = sorted(p for p in images_dir.iterdir() if p.suffix in IMAGE_SUFFIXES)
    stems = {p.stem for p in image_paths}
    image_paths = unique_stems(image_paths, source)
    orphans = sorted(set(keypoint_paths) - stems)
    if orphans:
        source.exclude(EXCLUDED_NO_IMAGE, len(orphans), names=[keypoint_paths[s] for s in orphans])
    if not image_paths and not keypoint_paths:
        raise MissingResourceError("no photo in Images/ and no keypoint file in Keypoints/", file=root,
                                   hint="an empty source would build an empty benchmark")
    tol = PIXEL_TOLERANCE
    for image_path in image_paths:
        kp = keypoint_paths.get(image_path.stem)
        if kp is None:
            source.exclude(EXCLUDED_NO_LABELS, names=[image_path])
            continue
        points = read_keypoints(kp)
        if len(points) % POINTS_PER_FISH:
            source.exclude(EXCLUDED_PARTIAL, names=[f"{source.name_of(kp)} ({len(points)} points)"])
            continue
        size = source.size_or_exclude(image_path)
        if size is None:
            continue
        width, height = size
        if any(x < -tol or y < -tol or x > width + tol or y > height + tol for x, y in points):
            source.exclude(EXCLUDED_OUTSIDE, names=[kp])
            continue
        boxes = []
        for k in range(0, len(points), POINTS_PER_FISH):
            xs = [p[0] for p in points[k:k + POINTS_PER_FISH]]
            ys = [p[1] for p in points[k:k + POINTS_PER_FISH]]
            boxes.append((max(0.0, min(xs)), max(0.0, min(ys)), min(float(width), max(xs)),
                          min(float(height), max(ys))))
        source.images.append(AnnotatedImage(image_path, width, height, tuple(boxes), ("fish",) * len(boxes)))
    return source


__all__ = ["POINTS_PER_FISH", "find_image", "read_depondfi", "read_keypoints"]
