"""Image limits shared by every builder that takes source images (docs/reliability.md, "Limits").

An image file is accepted only when

* it holds at most :data:`MAX_IMAGE_BYTES` bytes;
* its header names a size of at most :data:`MAX_IMAGE_PIXELS` pixels (a decompression bomb — a
  small file that claims 20 000² or 65 000² pixels — is refused before anything is decoded);
* it is complete: a PNG ends with its ``IEND`` chunk, a JPEG with its end-of-image marker, a GIF
  with its trailer, a WebP with as many bytes as its RIFF header declares; other formats are
  decoded in full by Pillow (within the pixel limit).

The completeness check reads the file's head and tail only, so checking 100 000 images costs
little more than reading their headers; a file whose body is cut anywhere loses its end marker.
Each refusal has a reason, counted per reason in the benchmark manifest by the caller.
"""

from __future__ import annotations

import io
import os
import struct
from pathlib import Path

#: Largest image file accepted [DEFAULT] (the largest TreeOfLife / CUB photo is a few MB).
MAX_IMAGE_BYTES = 64 * 1024 * 1024
#: Most pixels accepted [DEFAULT]: below Pillow's own bomb warning (89.5 M), far above any photo
#: the benchmarks use (the largest CUB image is 4.5 M pixels).
MAX_IMAGE_PIXELS = 80_000_000

UNREADABLE = "unreadable_image"
OVER_BYTES = "image_over_byte_limit"
OVER_PIXELS = "image_over_pixel_limit"
#: Every reason :func:`inspect_image` may give.
REASONS: tuple[str, ...] = (UNREADABLE, OVER_BYTES, OVER_PIXELS)

_HEAD_BYTES = 1 << 16  # a JPEG's frame header lies within its first 64 KB (EXIF is at most 64 KB)
_TAIL_BYTES = 32


def header_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) read from the header of a PNG, JPEG, GIF or WebP file; None for other
    formats or a header that does not parse."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return int(width), int(height)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        chunk = data[12:16]
        if chunk == b"VP8 " and len(data) >= 30:
            w, h = struct.unpack("<HH", data[26:30])
            return w & 0x3FFF, h & 0x3FFF
        if chunk == b"VP8L" and len(data) >= 25:
            bits = int.from_bytes(data[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        if chunk == b"VP8X" and len(data) >= 30:
            return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
        return None
    if data[:2] == b"\xff\xd8":
        position = 2
        while position + 9 < len(data):
            if data[position] != 0xFF:
                return None
            marker = data[position + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
                position += 1 if marker == 0xFF else 2
                continue
            length = struct.unpack(">H", data[position + 2:position + 4])[0]
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                height, width = struct.unpack(">HH", data[position + 5:position + 9])
                return int(width), int(height)
            position += 2 + length
    return None


def _complete(head: bytes, tail: bytes, n_bytes: int) -> bool | None:
    """True/False for the formats whose end is checked from the tail; None for other formats."""
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return tail.endswith(b"IEND\xaeB`\x82")
    if head[:2] == b"\xff\xd8":
        # the end-of-image marker, possibly followed by padding some encoders leave
        return tail.rstrip(b"\x00\r\n\x20").endswith(b"\xff\xd9")
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return tail.rstrip(b"\x00").endswith(b"\x3b")
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP" and len(head) >= 8:
        return struct.unpack("<I", head[4:8])[0] + 8 <= n_bytes
    return None


def _pillow_size(data: bytes) -> tuple[int, int] | str:
    """Decode an image of another format in full with Pillow, within the pixel limit."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            if width * height > MAX_IMAGE_PIXELS:
                return OVER_PIXELS
            image.load()
    except Image.DecompressionBombError:
        return OVER_PIXELS
    except Exception:  # noqa: BLE001 - Pillow raises many types on bad data; all mean "unreadable"
        return UNREADABLE
    return int(width), int(height)


def inspect_image(data: bytes) -> tuple[int, int] | str:
    """(width, height) of an image file's bytes within the limits, or the reason it is refused."""
    if len(data) > MAX_IMAGE_BYTES:
        return OVER_BYTES
    return _inspect(data[:_HEAD_BYTES], data[-_TAIL_BYTES:], len(data), lambda: data)


def inspect_image_file(path: str | os.PathLike[str]) -> tuple[int, int] | str:
    """:func:`inspect_image` reading only the head and the tail of the file (the whole file only
    for formats whose header this module does not parse)."""
    try:
        with open(path, "rb") as handle:
            n_bytes = os.fstat(handle.fileno()).st_size
            if n_bytes > MAX_IMAGE_BYTES:
                return OVER_BYTES
            head = handle.read(_HEAD_BYTES)
            handle.seek(max(0, n_bytes - _TAIL_BYTES))
            tail = handle.read(_TAIL_BYTES)
    except OSError:
        return UNREADABLE
    return _inspect(head, tail, n_bytes, lambda: Path(path).read_bytes())


def _inspect(head: bytes, tail: bytes, n_bytes: int, whole: object) -> tuple[int, int] | str:
    size = header_size(head)
    complete = _complete(head, tail, n_bytes)
    if size is None or complete is None:
        if complete is not None:  # a known format whose header does not parse
            return UNREADABLE
        try:
            return _pillow_size(whole())  # type: ignore[operator]
        except OSError:
            return UNREADABLE
    width, height = size
    if width <= 0 or height <= 0:
        return UNREADABLE
    if width * height > MAX_IMAGE_PIXELS:
        return OVER_PIXELS
    if not complete:
        return UNREADABLE
    return width, height


__all__ = ["MAX_IMAGE_BYTES", "MAX_IMAGE_PIXELS", "OVER_BYTES", "OVER_PIXELS", "REASONS", "UNREADABLE",
           "header_size", "inspect_image", "inspect_image_file"]
