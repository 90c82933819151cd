"""Marker rendering for C2 marker localization (paper §3.2, App. A.2).

A copy of each source photo carries three markers at CUB part locations: the target (colour c,
shape s), a colour control (c, another shape) and a shape control (another colour, s), so that
neither cue alone names the target. Markers are filled shapes with a 1-pixel dark outline and a
radius of 2% of the image diagonal [DEFAULT].

Output is PNG with fixed encoder settings and no metadata chunks (no timestamps, no ICC profile,
no EXIF), so the same source image and marker list always give the same bytes. Rendering one
image is a pure function of its inputs, so a process pool changes the speed but not the bytes.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw

from biovqa.errors import InputFormatError
from biovqa.sources.images import MAX_IMAGE_PIXELS

#: Marker colours [DEFAULT], RGB. Names are the words used in the question.
MARKER_COLORS: dict[str, tuple[int, int, int]] = {
    "red": (228, 26, 28),
    "yellow": (255, 221, 0),
    "blue": (30, 100, 255),
    "green": (0, 170, 60),
    "white": (255, 255, 255),
}
#: Marker shapes [DEFAULT]; names are the words used in the question.
MARKER_SHAPES: tuple[str, ...] = ("dot", "square", "triangle", "star")
OUTLINE_COLOR: tuple[int, int, int] = (20, 20, 20)
OUTLINE_WIDTH = 1
#: Marker radius as a fraction of the image diagonal [DEFAULT].
RADIUS_FRACTION = 0.02
#: Fixed PNG encoder settings: zlib level 1 (fast; about 8% larger than level 6 on photos)
#: without the optimizer, no metadata.
PNG_SAVE_OPTIONS: dict[str, object] = {"format": "PNG", "compress_level": 1, "optimize": False}


@dataclass(frozen=True, slots=True)
class Marker:
    """One marker centred on a part location, in source-image pixels."""

    x: float
    y: float
    color: str
    shape: str


@dataclass(frozen=True, slots=True)
class RenderJob:
    """Render ``markers`` onto ``source`` and write the PNG to ``destination``."""

    source: Path
    destination: Path
    markers: tuple[Marker, ...]


def marker_radius(width: int, height: int) -> float:
    """r = RADIUS_FRACTION · √(width² + height²), at least 3 pixels so tiny images stay legible."""
    return max(3.0, RADIUS_FRACTION * math.hypot(width, height))


def _polygon(shape: str, x: float, y: float, r: float) -> list[tuple[float, float]]:
    if shape == "square":
        half = r * math.sqrt(math.pi) / 2  # same area as the dot
        return [(x - half, y - half), (x + half, y - half), (x + half, y + half), (x - half, y + half)]
    if shape == "triangle":
        big = r * 1.3
        return [(x + big * math.cos(a), y + big * math.sin(a))
                for a in (-math.pi / 2, math.pi / 6, 5 * math.pi / 6)]
    if shape == "star":
        outer, inner = r * 1.35, r * 0.55
        points = []
        for k in range(10):
            angle = -math.pi / 2 + k * math.pi / 5
            radius = outer if k % 2 == 0 else inner
            points.append((x + radius * math.cos(angle), y + radius * math.sin(angle)))
        return points
    raise ValueError(f"unknown marker shape {shape!r}; known: {', '.join(MARKER_SHAPES)}")


def draw_markers(image: Image.Image, markers: Sequence[Marker]) -> Image.Image:
    """Return an RGB copy of ``image`` with ``markers`` drawn in order (later ones on top)."""
    canvas = image.convert("RGB") if image.mode != "RGB" else image.copy()
    draw = ImageDraw.Draw(canvas)
    r = marker_radius(*canvas.size)
    for marker in markers:
        if marker.color not in MARKER_COLORS:
            raise ValueError(f"unknown marker colour {marker.color!r}; known: {', '.join(MARKER_COLORS)}")
        fill = MARKER_COLORS[marker.color]
        x, y = round(marker.x, 2), round(marker.y, 2)
        if marker.shape == "dot":
            draw.ellipse([x - r, y - r, x + r, y + r], fill=fill, outline=OUTLINE_COLOR,
                         width=OUTLINE_WIDTH)
        else:
            draw.polygon(_polygon(marker.shape, x, y, r), fill=fill, outline=OUTLINE_COLOR,
                         width=OUTLINE_WIDTH)
    return canvas


def encode_png(image: Image.Image) -> bytes:
    """PNG bytes with :data:`PNG_SAVE_OPTIONS` and no metadata."""
    buffer = io.BytesIO()
    image.save(buffer, **PNG_SAVE_OPTIONS)  # type: ignore[arg-type]
    return buffer.getvalue()


def render_one(job: RenderJob) -> str:
    """Render one job, write it, and return the SHA-256 of the written bytes."""
    with Image.open(job.source) as source:
        if source.width * source.height > MAX_IMAGE_PIXELS:  # read_cub excludes these; never decode one
            raise InputFormatError(f"image of {source.width}×{source.height} pixels is over the limit "
                                   f"({MAX_IMAGE_PIXELS:,})", file=job.source)
        source.load()
        data = encode_png(draw_markers(source, job.markers))
    job.destination.parent.mkdir(parents=True, exist_ok=True)
    job.destination.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def render_all(jobs: Iterable[RenderJob], *, workers: int = 1,
               advance: Callable[[int], None] | None = None) -> list[str]:
    """Render every job (in order) and return their SHA-256 digests, in job order;
    ``advance(1)`` after each job (progress).

    ``workers > 1`` uses a process pool; each output depends only on its job, so the bytes are
    the same for any worker count.
    """
    jobs = list(jobs)
    step = advance or (lambda n: None)
    digests: list[str] = []
    if workers <= 1 or len(jobs) < 2 * workers:
        for job in jobs:
            digests.append(render_one(job))
            step(1)
        return digests
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for digest in pool.map(render_one, jobs, chunksize=max(1, len(jobs) // (workers * 8))):
            digests.append(digest)
            step(1)
    return digests
