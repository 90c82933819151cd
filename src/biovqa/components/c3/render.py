"""Deterministic C3 canvases and overlays (the paper's §3.3 and Sec. A.3).

Every drawn image is a :class:`CanvasJob`: a canvas of fixed size, source photographs fitted into
rectangles (letterboxed, centred, optionally shrunk by a per-panel scale), and overlay shapes given
in the *source* pixels of a panel (mapped through that panel's fit). Kinds of overlay:

* ``line``: a measurement line; ``border`` draws it first ``2·border_px`` wider in the border colour
  (red with white border = the measured elytra, blue with green border = the 1 cm scale bar);
  width = max(3 px, 0.3 % of the canvas width) [DEFAULT];
* ``box``: a rectangle outline, solid or ``dotted`` (relative distance: dotted boxes; relative
  position: six solid boxes; viewpoint: red boxes).

Photos shown unchanged (OCR, localization, the viewpoint species tier) are :class:`SourcePhoto`:
nothing is drawn or copied; the item points at the source file (``<source>/<path under it>``,
resolved through the manifest's ``image_roots``) and records its sha256, so the model sees the
original file and the benchmark does not duplicate the photos.

Output is PNG with fixed encoder settings and no metadata, so equal jobs give equal bytes; each job
is a pure function of its inputs and a process pool changes the speed, not the bytes. JPEG sources
are decoded with ``draft`` (DCT-domain downscaling) when the canvas is at most half their size.

A photo whose header and end marker are intact but whose body is damaged passes the fast image
inspector and fails only when decoded. :func:`undecodable` decodes each photo in full once, before
any item is made, so the build leaves such a photo out (reason :data:`UNDECODABLE`) instead of
aborting while it draws a canvas, and no model is ever shown a photo that does not decode. A photo
that passed that check and still fails at drawing is a :class:`~biovqa.errors.BiovqaError` naming
it (the file changed under the build).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (230, 20, 20), "blue": (20, 70, 255), "green": (0, 200, 60), "white": (255, 255, 255),
    "cyan": (0, 230, 230), "black": (0, 0, 0), "background": (24, 24, 24),
}
PNG_SAVE_OPTIONS: dict[str, object] = {"format": "PNG", "compress_level": 1, "optimize": False}
LINE_FRACTION = 0.003
MIN_LINE_PX = 3
BORDER_PX = 2
DASH_PX = 10
#: The exclusion reason of a photo Pillow cannot decode in full (counted per source in the manifest).
UNDECODABLE = "undecodable_image"


@dataclass(frozen=True, slots=True)
class Panel:
    """A source photo fitted into the canvas rectangle (x, y, w, h), shrunk by ``scale`` ≤ 1."""

    source: Path
    rect: tuple[int, int, int, int]
    scale: float = 1.0


@dataclass(frozen=True, slots=True)
class Shape:
    kind: str  # "line" | "box"
    panel: int
    coords: tuple[float, float, float, float]  # source pixels of the panel (x1, y1, x2, y2)
    colour: str
    border: str | None = None
    dotted: bool = False


@dataclass(frozen=True, slots=True)
class CanvasJob:
    destination: Path
    size: tuple[int, int]
    panels: tuple[Panel, ...]
    shapes: tuple[Shape, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class SourcePhoto:
    """A source photo an item shows as it is: only hashed."""

    source: Path


def fit(source_size: tuple[int, int], panel: Panel) -> tuple[float, float, float, int, int]:
    """(scale, offset x, offset y, drawn width, drawn height) of a source in its rectangle."""
    sw, sh = source_size
    x, y, w, h = panel.rect
    s = min(w / sw, h / sh) * panel.scale
    dw, dh = max(1, round(sw * s)), max(1, round(sh * s))
    return s, x + (w - dw) // 2, y + (h - dh) // 2, dw, dh


def line_width(canvas_width: int) -> int:
    return max(MIN_LINE_PX, round(LINE_FRACTION * canvas_width))


def _dashes(x1: float, y1: float, x2: float, y2: float) -> list[tuple[float, float, float, float]]:
    import math

    length = math.hypot(x2 - x1, y2 - y1)
    if length == 0:
        return []
    out = []
    steps = max(1, int(length // (2 * DASH_PX)))
    for k in range(steps + 1):
        a = min(1.0, 2 * k * DASH_PX / length)
        b = min(1.0, (2 * k + 1) * DASH_PX / length)
        if a < b:
            out.append((x1 + (x2 - x1) * a, y1 + (y2 - y1) * a, x1 + (x2 - x1) * b, y1 + (y2 - y1) * b))
    return out


def draw(job: CanvasJob) -> Any:
    """The job's canvas as an RGB PIL image."""
    from PIL import Image, ImageDraw

    canvas = Image.new("RGB", job.size, COLOURS["background"])
    maps = []
    for panel in job.panels:
        try:
            with Image.open(panel.source) as source:
                s, ox, oy, dw, dh = fit(source.size, panel)
                if source.format == "JPEG" and (dw * 2 <= source.size[0] and dh * 2 <= source.size[1]):
                    source.draft("RGB", (dw, dh))
                image = source.convert("RGB")
        except (OSError, ValueError, SyntaxError) as error:  # Pillow's errors for damaged image data
            from biovqa.errors import BiovqaError

            raise BiovqaError(f"the photo no longer decodes while {job.destination.name} is drawn ({error})",
                              file=panel.source,
                              hint="it decoded when the build checked its photos: was it changed during the build?"
                              ) from None
        if image.size != (dw, dh):
            image = image.resize((dw, dh), Image.Resampling.BILINEAR, reducing_gap=2.0)
        canvas.paste(image, (int(ox), int(oy)))
        maps.append((s, ox, oy))
    pen = ImageDraw.Draw(canvas)
    width = line_width(job.size[0])
    for shape in job.shapes:
        s, ox, oy = maps[shape.panel]
        x1, y1, x2, y2 = (round(shape.coords[0] * s + ox, 1), round(shape.coords[1] * s + oy, 1),
                          round(shape.coords[2] * s + ox, 1), round(shape.coords[3] * s + oy, 1))
        colour = COLOURS[shape.colour]
        if shape.kind == "line":
            if shape.border:
                pen.line([(x1, y1), (x2, y2)], fill=COLOURS[shape.border], width=width + 2 * BORDER_PX)
            pen.line([(x1, y1), (x2, y2)], fill=colour, width=width)
        elif shape.kind == "box":
            lo_x, hi_x, lo_y, hi_y = min(x1, x2), max(x1, x2), min(y1, y2), max(y1, y2)
            if shape.dotted:
                for side in ((lo_x, lo_y, hi_x, lo_y), (hi_x, lo_y, hi_x, hi_y), (hi_x, hi_y, lo_x, hi_y),
                             (lo_x, hi_y, lo_x, lo_y)):
                    for dash in _dashes(*side):
                        pen.line([(dash[0], dash[1]), (dash[2], dash[3])], fill=colour, width=width)
            else:
                pen.rectangle([lo_x, lo_y, hi_x, hi_y], outline=colour, width=width)
        else:
            raise ValueError(f"unknown shape kind {shape.kind!r}")
    return canvas


def encode_png(image: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, **PNG_SAVE_OPTIONS)
    return buffer.getvalue()


def render_one(job: CanvasJob | SourcePhoto) -> str:
    """Write one canvas and return the SHA-256 of the written bytes (a source photo: its
    SHA-256)."""
    if isinstance(job, SourcePhoto):
        with open(job.source, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    job.destination.parent.mkdir(parents=True, exist_ok=True)
    data = encode_png(draw(job))
    job.destination.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def render_all(jobs: Iterable[CanvasJob | SourcePhoto], *, workers: int = 1,
               advance: Callable[[int], None] | None = None) -> list[str]:
    """Render every job; SHA-256 digests in job order (identical for any ``workers``);
    ``advance(1)`` after each job (progress)."""
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


def decodes(path: Path) -> bool:
    """True when Pillow decodes the whole photo (every pixel, not only its header): the check a
    photo passes before any item shows it. A canvas decodes a JPEG with ``draft``, which reads the
    same entropy-coded data, so a photo that decodes here decodes there."""
    import warnings

    from PIL import Image

    try:
        # damaged data makes Pillow warn ("Corrupt JPEG data", "Truncated File Read"); the verdict
        # is what counts, so the build's output is not littered with them
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(path) as image:
                image.load()
    except Exception:  # noqa: BLE001 - Pillow raises many types on bad data; all mean "undecodable"
        return False
    return True


def undecodable(paths: Iterable[Path], *, workers: int = 1) -> list[Path]:
    """The photos of ``paths`` that do not decode in full (:func:`decodes`), in the order given; a
    process pool changes the speed, not the verdicts."""
    paths = list(paths)
    if workers <= 1 or len(paths) < 2 * workers:
        verdicts = [decodes(path) for path in paths]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            verdicts = list(pool.map(decodes, paths, chunksize=max(1, len(paths) // (workers * 8))))
    return [path for path, ok in zip(paths, verdicts) if not ok]


def single(source: Path, destination: Path, size: tuple[int, int], shapes: Sequence[Shape] = ()) -> CanvasJob:
    return CanvasJob(destination, size, (Panel(source, (0, 0, size[0], size[1])),), tuple(shapes))


__all__ = ["COLOURS", "UNDECODABLE", "CanvasJob", "Panel", "Shape", "SourcePhoto", "decodes", "draw", "fit",
           "line_width", "render_all", "render_one", "single", "undecodable"]
