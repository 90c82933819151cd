"""The one image inspector: sizes from headers wherever they lie, a full decode where the fast path
cannot tell, every refusal a reason (never an exception)."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from PIL import Image

from biovqa.sources import images as limits


def encoded(fmt: str, size: tuple[int, int] = (37, 23), **options: object) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 30, 60)).save(buffer, format=fmt, **options)
    return buffer.getvalue()


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "GIF", "WEBP"])
def test_header_sizes_of_every_fast_format(fmt: str, tmp_path: Path) -> None:
    data = encoded(fmt)
    assert limits.header_size(data) == (37, 23)
    assert limits.inspect_image(data) == (37, 23)
    path = tmp_path / f"x.{fmt.lower()}"
    path.write_bytes(data)
    assert limits.inspect_image_file(path) == (37, 23)


def test_progressive_jpeg_and_segments_before_the_frame_header() -> None:
    progressive = encoded("JPEG", progressive=True)
    assert limits.header_size(progressive) == (37, 23)
    data = encoded("JPEG")
    # 70 KB of APPn segments (ICC-like, XMP-like) and fill bytes before the first marker after SOI
    segments = b"".join(b"\xff\xe2" + struct.pack(">H", 35_002) + b"\x00" * 35_000 for _ in range(2))
    padded = data[:2] + b"\xff\xff" + segments + data[2:]
    assert limits.header_size(padded) == (37, 23)
    assert limits.inspect_image(padded) == (37, 23)


def test_a_jpeg_trailer_after_the_end_marker_is_decoded_not_refused() -> None:
    data = encoded("JPEG") + b"MPF trailer bytes a camera appends"
    assert limits.inspect_image(data) == (37, 23)


def test_markers_that_lead_nowhere_fall_back_to_pillow() -> None:
    data = encoded("JPEG")
    broken = data[:2] + b"\x00\x00" + data[2:]  # not a marker where one must be: Pillow decides
    verdict = limits.inspect_image(broken)
    assert verdict == (37, 23) or verdict == limits.UNREADABLE


def noisy(fmt: str) -> bytes:
    """A 96 x 64 photo of noise: its pixel data is most of the file, so a cut lands inside it."""
    import numpy as np

    pixels = np.random.default_rng(3).integers(0, 256, (64, 96, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=fmt)
    return buffer.getvalue()


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "GIF", "WEBP"])
@pytest.mark.parametrize("keep", [0.3, 0.9])
def test_truncated_files_are_a_reason(fmt: str, keep: float) -> None:
    data = noisy(fmt)
    assert limits.inspect_image(data) == (96, 64)
    assert limits.inspect_image(data[:int(len(data) * keep)]) == limits.UNREADABLE


def test_a_file_over_the_byte_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_IMAGE_BYTES", 20)
    data = encoded("PNG")
    assert limits.inspect_image(data) == limits.OVER_BYTES
    (tmp_path / "x.png").write_bytes(data)
    assert limits.inspect_image_file(tmp_path / "x.png") == limits.OVER_BYTES
    assert limits.inspect_image_file(tmp_path / "missing.png") == limits.UNREADABLE


def test_a_png_whose_body_is_damaged_but_whose_end_survived_is_refused() -> None:
    data = bytearray(noisy("PNG"))
    middle = len(data) // 2
    data[middle] ^= 0x5A  # inside IDAT: IEND intact, so the tail alone would pass it
    assert bytes(data).endswith(b"IEND\xaeB`\x82")
    assert limits.inspect_image(bytes(data)) == limits.UNREADABLE
    with pytest.raises(Exception):  # what a canvas drawn from it would have met
        with Image.open(io.BytesIO(bytes(data))) as image:
            image.load()
