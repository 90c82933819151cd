"""Marker rendering: geometry, colours, fixed PNG bytes, worker-count independence."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import pytest
from PIL import Image

from biovqa.components.c2.render import (
    MARKER_COLORS,
    MARKER_SHAPES,
    Marker,
    RenderJob,
    draw_markers,
    encode_png,
    marker_radius,
    render_all,
    render_one,
)


def _photo(path: Path, size: tuple[int, int] = (1000, 750), mode: str = "RGB") -> Path:
    Image.new(mode, size, (40, 90, 60) if mode == "RGB" else 90).save(path, format="JPEG", quality=85)
    return path


def _png_chunks(data: bytes) -> list[str]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, offset = [], 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset: offset + 4])
        chunks.append(data[offset + 4: offset + 8].decode("ascii"))
        offset += 12 + length
    return chunks


def test_radius_is_two_percent_of_the_diagonal() -> None:
    assert marker_radius(1000, 750) == pytest.approx(25.0)
    assert marker_radius(30, 40) == 3.0  # floor for tiny images


@pytest.mark.parametrize(
    ("shape", "inside", "outside"),
    [
        ("dot", (0, 0), (18, 18)),
        ("square", (18, 18), (0, -28)),
        ("triangle", (0, -28), (18, -18)),
        ("star", (0, -30), (18, 18)),
    ],
)
def test_shapes_are_distinguishable(shape: str, inside: tuple[int, int], outside: tuple[int, int]) -> None:
    base = Image.new("RGB", (1000, 750), (0, 0, 0))
    drawn = draw_markers(base, [Marker(500, 400, "yellow", shape)])
    assert drawn.getpixel((500 + inside[0], 400 + inside[1])) == MARKER_COLORS["yellow"]
    assert drawn.getpixel((500 + outside[0], 400 + outside[1])) == (0, 0, 0)
    assert base.getpixel((500, 400)) == (0, 0, 0)  # the source is not modified


def test_outline_is_dark() -> None:
    drawn = draw_markers(Image.new("RGB", (1000, 750), (255, 255, 255)), [Marker(500, 400, "white", "dot")])
    row = [drawn.getpixel((x, 400)) for x in range(470, 500)]
    assert any(max(pixel) < 60 for pixel in row)


def test_every_colour_and_shape(tmp_path: Path) -> None:
    source = _photo(tmp_path / "p.jpg")
    for k, color in enumerate(MARKER_COLORS):
        for j, shape in enumerate(MARKER_SHAPES):
            image = draw_markers(Image.open(source), [Marker(100 + 150 * k, 100 + 150 * j, color, shape)])
            assert image.getpixel((100 + 150 * k, 100 + 150 * j)) == MARKER_COLORS[color]


def test_unknown_marker_is_rejected() -> None:
    with pytest.raises(ValueError, match="colour"):
        draw_markers(Image.new("RGB", (50, 50)), [Marker(5, 5, "mauve", "dot")])
    with pytest.raises(ValueError, match="shape"):
        draw_markers(Image.new("RGB", (50, 50)), [Marker(5, 5, "red", "hexagon")])


@pytest.mark.parametrize("mode", ["RGB", "L"])
def test_png_is_rgb_without_metadata(tmp_path: Path, mode: str) -> None:
    source = _photo(tmp_path / "p.jpg", mode=mode)
    job = RenderJob(source, tmp_path / "out" / "m.png", (Marker(10, 10, "red", "star"),))
    digest = render_one(job)
    data = job.destination.read_bytes()
    assert hashlib.sha256(data).hexdigest() == digest
    assert _png_chunks(data) == ["IHDR"] + ["IDAT"] * (len(_png_chunks(data)) - 2) + ["IEND"]
    with Image.open(job.destination) as image:
        assert image.mode == "RGB"


def test_rendering_is_deterministic_for_any_worker_count(tmp_path: Path) -> None:
    jobs = []
    for k in range(6):
        source = tmp_path / f"p{k}.jpg"
        Image.new("RGB", (320, 240), (10 * k, 80, 200 - 10 * k)).save(source, format="JPEG", quality=90)
        markers = (Marker(40 + k, 50, "green", "square"), Marker(200, 120 + k, "green", "dot"),
                   Marker(100.4, 180.6, "blue", "square"))
        jobs.append(RenderJob(source, tmp_path / "w1" / f"{k}.png", markers))
    serial = render_all(jobs)
    first_bytes = [job.destination.read_bytes() for job in jobs]
    parallel_jobs = [RenderJob(j.source, tmp_path / "w2" / j.destination.name, j.markers) for j in jobs]
    assert render_all(parallel_jobs, workers=2) == serial
    assert [job.destination.read_bytes() for job in parallel_jobs] == first_bytes
    assert encode_png(draw_markers(Image.open(jobs[0].source), jobs[0].markers)) == first_bytes[0]
    assert len(set(serial)) == 6
