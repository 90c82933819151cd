"""Side-by-side C4 canvases (paper §3.4: the two photographs side by side on one canvas; the
layout is biovqa's): each photo resized to height 672 px
(width keeps the aspect ratio, rounded, at least 1 px) with Lanczos, the two placed left and right
on a white RGB canvas with a 16 px white gutter, saved as PNG without metadata, so the same pair
always gives the same bytes."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from biovqa.sources.wildlife import WildlifeAnnotation

if TYPE_CHECKING:
    from PIL import Image as PILImage

PANEL_HEIGHT = 672
GUTTER = 16
BACKGROUND = (255, 255, 255)
PNG_OPTIONS = {"optimize": False, "compress_level": 1}


def panel_width(image: PILImage.Image, height: int = PANEL_HEIGHT) -> int:
    """Width of ``image`` once resized to ``height`` (aspect kept, rounded, at least 1 px)."""
    return max(1, round(image.width * height / image.height))


def _panel(image: PILImage.Image, height: int) -> PILImage.Image:
    from PIL import Image

    width = panel_width(image, height)
    return image.convert("RGB").resize((width, height), Image.Resampling.LANCZOS)


def compose(left: PILImage.Image, right: PILImage.Image, *, height: int = PANEL_HEIGHT,
            gutter: int = GUTTER) -> PILImage.Image:
    """The canvas: ``left`` and ``right`` at ``height`` px, ``gutter`` px of white between."""
    from PIL import Image

    a, b = _panel(left, height), _panel(right, height)
    canvas = Image.new("RGB", (a.width + gutter + b.width, height), BACKGROUND)
    canvas.paste(a, (0, 0))
    canvas.paste(b, (a.width + gutter, 0))
    return canvas


def save_canvas(canvas: PILImage.Image, path: str | Path) -> str:
    """Write ``canvas`` as PNG (atomically) and return the SHA-256 of the bytes."""
    from biovqa.bench.folder import atomic_path

    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG", **PNG_OPTIONS)
    data = buffer.getvalue()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)
    return hashlib.sha256(data).hexdigest()




@dataclass(frozen=True, slots=True)
class CanvasJob:
    """One canvas to render: the two annotations (left, right) and where the PNG goes."""

    left: WildlifeAnnotation
    right: WildlifeAnnotation
    path: Path
    whole_photo: bool = False
    height: int = PANEL_HEIGHT


def render_job(job: CanvasJob) -> tuple[str, int]:
    """Render one canvas; returns (SHA-256 of the PNG, width of the left panel)."""
    from biovqa.components.c4.embed import load_crop

    left = load_crop(job.left, whole_photo=job.whole_photo)
    right = load_crop(job.right, whole_photo=job.whole_photo)
    digest = save_canvas(compose(left, right, height=job.height), job.path)
    return digest, panel_width(left, job.height)


def render_all(jobs: Sequence[CanvasJob], *, workers: int = 1) -> list[tuple[str, int]]:
    """Render every job, in order; ``workers > 1`` uses a process pool (each canvas depends only
    on its job, so the bytes are the same for any worker count)."""
    if workers <= 1 or len(jobs) < 2 * workers:
        return [render_job(job) for job in jobs]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(render_job, jobs, chunksize=max(1, len(jobs) // (workers * 8))))


__all__ = ["GUTTER", "PANEL_HEIGHT", "CanvasJob", "compose", "panel_width", "render_all", "render_job",
           "save_canvas"]
