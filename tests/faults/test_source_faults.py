"""Faults in source datasets (bad input is one clear error, never a crash): damaged archives, hostile images, malformed CUB lists.

Each case goes through the command a user runs (``biovqa taxonomy index``, ``biovqa build c2``)
or the reader it calls, and asserts the documented outcome: exit 2 with one message naming the
file (and row/field where there is one) and no traceback — or, for a bad image, its exclusion
counted per reason in the manifest (docs/reliability.md, "Limits").
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from biovqa.cli.main import main
from biovqa.sources import images as limits
from biovqa.sources.cub import read_cub
from biovqa.synthetic import write_cub


def cli(argv: list[str | Path], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        main([str(a) for a in argv])
        code = 0
    except SystemExit as exited:
        code = int(exited.code or 0)
    err = capsys.readouterr().err
    return code, " ".join(err.split())


def _jpeg(width: int = 64, height: int = 48) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (90, 120, 30)).save(buffer, format="JPEG")
    return buffer.getvalue()


def _png(width: int = 64, height: int = 48) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (90, 120, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def _png_claiming(width: int, height: int) -> bytes:
    """A real PNG whose IHDR is rewritten to claim ``width``×``height`` (CRC fixed): a bomb header."""
    import zlib

    data = bytearray(_png(4, 4))
    ihdr = bytes(data[12:16]) + struct.pack(">II", width, height) + bytes(data[24:29])
    data[16:24] = struct.pack(">II", width, height)
    data[29:33] = struct.pack(">I", zlib.crc32(ihdr) & 0xFFFFFFFF)
    return bytes(data)


def _jpeg_claiming(width: int, height: int, *, keep_body: bool) -> bytes:
    """A real JPEG whose frame header claims ``width``×``height``; with ``keep_body`` False it is cut
    after the header (a 700-byte file claiming 11000² pixels)."""
    data = bytearray(_jpeg(16, 16))
    sof = next(i for i in range(2, len(data) - 9) if data[i] == 0xFF and data[i + 1] in (0xC0, 0xC2))
    data[sof + 5:sof + 9] = struct.pack(">HH", height, width)
    return bytes(data if keep_body else data[:700])


HOSTILE = {
    "random-bytes": (bytes(range(256)) * 8, limits.UNREADABLE),
    "zero-bytes": (b"", limits.UNREADABLE),
    "truncated-jpeg": (_jpeg()[:-200], limits.UNREADABLE),
    "png-cut-to-60-bytes": (_png()[:60], limits.UNREADABLE),
    "bomb-20000": (_png_claiming(20_000, 20_000), limits.OVER_PIXELS),
    "bomb-65000": (_png_claiming(65_000, 65_000), limits.OVER_PIXELS),
    "jpeg-700-bytes-claiming-11000": (_jpeg_claiming(11_000, 11_000, keep_body=False), limits.OVER_PIXELS),
    "jpeg-header-65000-truncated": (_jpeg_claiming(65_000, 65_000, keep_body=False), limits.OVER_PIXELS),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_image_limits_refuse_hostile_files(case: str, tmp_path: Path) -> None:
    data, reason = HOSTILE[case]
    assert limits.inspect_image(data) == reason
    path = tmp_path / "image.bin"
    path.write_bytes(data)
    assert limits.inspect_image_file(path) == reason


def test_image_limits_accept_real_images(tmp_path: Path) -> None:
    assert limits.inspect_image(_jpeg(64, 48)) == (64, 48)
    assert limits.inspect_image(_png(30, 20)) == (30, 20)
    buffer = io.BytesIO()
    Image.new("RGB", (12, 10)).save(buffer, format="BMP")  # a format without a header probe: decoded
    assert limits.inspect_image(buffer.getvalue()) == (12, 10)
    assert limits.inspect_image(buffer.getvalue()[:40]) == limits.UNREADABLE


def _cub(tmp_path: Path) -> Path:
    return write_cub(tmp_path / "cub", n_classes=4, images_per_class=3, seed=5, image_size=(120, 90))


def _image_paths(cub: Path) -> list[str]:
    return [line.split(maxsplit=1)[1] for line in (cub / "images.txt").read_text().splitlines() if line.strip()]


def test_cub_hostile_images_are_excluded_and_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cub = _cub(tmp_path)
    paths = _image_paths(cub)
    cases = sorted(HOSTILE)
    for relative, case in zip(paths, cases):
        (cub / "images" / relative).write_bytes(HOSTILE[case][0])
    dataset = read_cub(cub)
    expected: dict[str, int] = {}
    for case in cases[:len(paths)]:
        expected[HOSTILE[case][1]] = expected.get(HOSTILE[case][1], 0) + 1
    assert {k: v for k, v in dataset.exclusions.items() if k in limits.REASONS} == expected
    assert dataset.n_images == len(paths) - min(len(paths), len(cases))

    out = tmp_path / "bench"
    code, err = cli(["build", "c2", "--cub", cub, "--out", out], capsys)
    assert code == 0, err
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert json.dumps(expected, sort_keys=True)[1:-1] in json.dumps(manifest, sort_keys=True)


def test_cub_classes_not_utf8_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cub = _cub(tmp_path)
    lines = (cub / "classes.txt").read_bytes().splitlines(keepends=True)
    lines[2] = b"3 003.Sooty\xff\xfeAlbatross\n"
    (cub / "classes.txt").write_bytes(b"".join(lines))
    code, err = cli(["build", "c2", "--cub", cub, "--out", tmp_path / "bench"], capsys)
    assert code == 2 and "classes.txt" in err and "row 3" in err and "Traceback" not in err, err
    assert not (tmp_path / "bench").exists()


@pytest.mark.parametrize("bad_path", ["/etc/passwd", "../outside.jpg", "001.X/../../x.jpg"])
def test_cub_image_path_leaving_the_folder_is_exit_2(bad_path: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    cub = _cub(tmp_path)
    lines = (cub / "images.txt").read_text().splitlines()
    lines[1] = f"2 {bad_path}"
    (cub / "images.txt").write_text("\n".join(lines) + "\n")
    code, err = cli(["build", "c2", "--cub", cub, "--out", tmp_path / "bench"], capsys)
    assert code == 2 and "images.txt" in err and "row 2" in err and "image_name" in err, err
    assert "Traceback" not in err


def test_backbone_zip_with_corrupt_deflate_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fixtures.dwca import example_backbone

    source = example_backbone(tmp_path / "plain")
    archive = tmp_path / "backbone.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for member in sorted(p for p in source.rglob("*") if p.is_file()):
            body = member.read_bytes()
            if member.name == "Taxon.tsv":
                body = body * 40  # large enough that the damage lands inside the deflate stream
            out.writestr(member.relative_to(source).as_posix(), body)
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as zipped:
        info = zipped.getinfo(next(n for n in zipped.namelist() if n.endswith("Taxon.tsv")))
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for k in range(start + info.compress_size // 3, start + info.compress_size // 3 + 64):
        data[k] ^= 0x5A
    archive.write_bytes(bytes(data))
    out_dir = tmp_path / "index"
    code, err = cli(["taxonomy", "index", archive, "--out", out_dir], capsys)
    assert code == 2 and "backbone.zip" in err and "Taxon.tsv" in err and "Traceback" not in err, err
    assert not out_dir.exists() or not any(out_dir.iterdir())


def test_marker_rendering_refuses_an_image_over_the_pixel_limit(tmp_path: Path) -> None:
    from biovqa.components.c2.render import RenderJob, render_one
    from biovqa.errors import InputFormatError

    source = tmp_path / "bomb.png"
    source.write_bytes(_png_claiming(11_000, 11_000))
    with pytest.raises(InputFormatError, match="over the limit"):
        render_one(RenderJob(source, tmp_path / "out.png", ()))
    assert not (tmp_path / "out.png").exists()
