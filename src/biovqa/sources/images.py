"""Image limits shared by every builder that takes source images (docs/reliability.md, "Limits").

An image file is accepted only when

* it holds at most :data:`MAX_IMAGE_BYTES` bytes;
* its header names a size of at most :data:`MAX_IMAGE_PIXELS` pixels (a decompression bomb — a
  small file that claims 20 000² or 65 000² pixels — is refused before anything is decoded);
* it is complete: a PNG ends with its ``IEND`` chunk and every chunk holds its CRC (a damaged body
  is caught without decompressing), a JPEG ends with its end-of-image marker, a GIF with its
  trailer, a WebP holds as many bytes as its RIFF header declares;
* where that fast path cannot tell (another format, a header it cannot parse, a JPEG whose end
  marker is followed by a camera trailer), Pillow decodes the file in full — within the pixel
  limit, so a decompression bomb is refused, never decoded — and a file Pillow cannot decode
  (truncated, corrupt) is refused.

The fast path reads the headers and the tail only: a JPEG's markers are walked with seeks, so its
frame header is found behind a 65 534-byte EXIF segment or any ICC/XMP segments, and checking
100 000 images costs little more than reading their headers; a file whose body is cut anywhere
loses its end marker. Each refusal has a reason; the caller counts it per reason in the
benchmark manifest and names the file (``exclusion_examples``), and never aborts a build on it.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

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

_HEAD_BYTES = 64  # every non-JPEG frame header handled here lies in the first 30 bytes
_TAIL_BYTES = 32
#: JPEG segments walked before giving up on finding the frame header (a real photo has < 30).
_MAX_JPEG_SEGMENTS = 4096
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # frame headers (not DHT/JPG/DAC)


def _jpeg_frame_size(handle: BinaryIO) -> tuple[int, int] | None:
    """(width, height) from a JPEG's frame header, found by walking its markers with seeks.

    The frame header may lie anywhere before the first scan: a camera's APP1 EXIF segment alone can
    take 65 534 bytes, ICC and XMP segments more, so reading a fixed head would miss it. Each step
    reads four bytes and seeks past the segment; None when the markers do not lead to a frame."""
    position = 2
    for _ in range(_MAX_JPEG_SEGMENTS):
        handle.seek(position)
        marker = handle.read(2)
        if len(marker) < 2 or marker[0] != 0xFF:
            return None
        code = marker[1]
        if code == 0xFF:  # fill byte before a marker
            position += 1
            continue
        if code in (0xD8, 0x01) or 0xD0 <= code <= 0xD7:  # markers without a length
            position += 2
            continue
        if code in (0xD9, 0xDA):  # end of image or a scan before any frame header
            return None
        length_bytes = handle.read(2)
        if len(length_bytes) < 2:
            return None
        length = struct.unpack(">H", length_bytes)[0]
        if length < 2:
            return None
        if code in _JPEG_SOF:
            frame = handle.read(5)
            if len(frame) < 5:
                return None
            height, width = struct.unpack(">HH", frame[1:5])
            return int(width), int(height)
        position += 2 + length
    return None


def _fixed_header_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of a PNG, GIF or WebP file from its first 30 bytes; None otherwise."""
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


def _header_size(handle: BinaryIO, head: bytes) -> tuple[int, int] | None:
    if head[:2] == b"\xff\xd8":
        return _jpeg_frame_size(handle)
    return _fixed_header_size(head)


def header_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) read from the header of a PNG, JPEG, GIF or WebP file; None for other
    formats or a header that does not parse. A JPEG's frame header is found wherever it lies."""
    return _header_size(io.BytesIO(data), data[:_HEAD_BYTES])


def _png_chunks_intact(handle: BinaryIO, n_bytes: int) -> bool:
    """Every chunk of a PNG holds the CRC its bytes give, up to an ``IEND`` that ends the file.

    A PNG whose body is damaged but whose ``IEND`` survived would pass the tail check and then fail
    when a canvas is drawn from it; the CRCs catch it for one pass of ``zlib.crc32`` over the file
    (milliseconds for a photo), without decompressing anything."""
    import zlib

    position = 8
    while position + 12 <= n_bytes:
        handle.seek(position)
        header = handle.read(8)
        if len(header) < 8:
            return False
        length = struct.unpack(">I", header[:4])[0]
        if position + 12 + length > n_bytes:
            return False
        crc = zlib.crc32(header[4:8])
        remaining = length
        while remaining:
            block = handle.read(min(remaining, 1 << 20))
            if not block:
                return False
            crc = zlib.crc32(block, crc)
            remaining -= len(block)
        stored = handle.read(4)
        if len(stored) < 4 or struct.unpack(">I", stored)[0] != crc & 0xFFFFFFFF:
            return False
        position += 12 + length
        if header[4:8] == b"IEND":
            return position == n_bytes
    return False


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
    import warnings

    from PIL import Image

    try:
        # a damaged file makes Pillow warn ("Corrupt EXIF data", "Truncated File Read"); the
        # verdict is what counts, so the build's output is not littered with them
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
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
    return _inspect(io.BytesIO(data), len(data), lambda: data)


def inspect_image_file(path: str | os.PathLike[str]) -> tuple[int, int] | str:
    """:func:`inspect_image` reading only the headers and the tail of the file (the whole file only
    for formats whose header this module does not parse). This is the one check every builder
    applies to a source photo before it counts it: a refusal is an exclusion, never an error."""
    try:
        with open(path, "rb") as handle:
            n_bytes = os.fstat(handle.fileno()).st_size
            if n_bytes > MAX_IMAGE_BYTES:
                return OVER_BYTES
            return _inspect(handle, n_bytes, lambda: Path(path).read_bytes())
    except OSError:
        return UNREADABLE


def _inspect(handle: BinaryIO, n_bytes: int, whole: Callable[[], bytes]) -> tuple[int, int] | str:
    head = handle.read(_HEAD_BYTES)
    handle.seek(max(0, n_bytes - _TAIL_BYTES))
    tail = handle.read(_TAIL_BYTES)
    complete = _complete(head, tail, n_bytes)
    size = _header_size(handle, head) if complete is not None else None
    if complete and head[:8] == b"\x89PNG\r\n\x1a\n" and size is not None \
            and size[0] * size[1] <= MAX_IMAGE_PIXELS:  # a bomb's header is refused without reading on
        complete = _png_chunks_intact(handle, n_bytes)
    if size is not None:
        width, height = size
        if width <= 0 or height <= 0:
            return UNREADABLE
        if width * height > MAX_IMAGE_PIXELS:
            return OVER_PIXELS
        if complete:
            return width, height
    # the fast path cannot tell (another format, markers that do not lead to a frame header, no
    # end marker where a trailer may follow it): decode in full, within the pixel limit
    try:
        return _pillow_size(whole())
    except OSError:
        return UNREADABLE


__all__ = ["MAX_IMAGE_BYTES", "MAX_IMAGE_PIXELS", "OVER_BYTES", "OVER_PIXELS", "REASONS", "UNREADABLE",
           "header_size", "inspect_image", "inspect_image_file"]
