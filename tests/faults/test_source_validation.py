"""Source files as real downloads ship them (issues 20 and 22): camera JPEGs whose EXIF pushes the
frame header past 64 KiB, truncated photos and decompression bombs among WAID / Boxes on Bees /
DePondFi / GZCD / CUB photos, other encodings, non-finite numbers, duplicate ids, declared sizes
that lie, empty files.

Each case runs ``biovqa build`` (in-process, the real command line) on a tiny source in its exact
native layout and asserts what a user needs: the photo built and counted; or a counted exclusion
naming the file in the manifest and in the summary the build prints; or exit 2 with one message
naming file, row and field, no traceback and no benchmark folder.
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from fixtures.cli_runner import cli
from biovqa.components.c3.demo import write_beetles
from biovqa.sources import images as limits
from biovqa.synthetic import write_cub

C3_SMALL = ["--per-subset", "10", "--canvas", "64", "--plate-side", "128", "--rpos-items", "8"]


# ----------------------------------------------------------------------------- photo bytes


def jpeg(size: tuple[int, int] = (120, 90), *, exif_bytes: int = 0) -> bytes:
    """A JPEG; with ``exif_bytes`` an APP1 EXIF segment of that many payload bytes after APP0 (a
    Nikon photo of CUB has 65 534), so the frame header lies past the first 64 KiB."""
    buffer = io.BytesIO()
    exif = b"Exif\x00\x00" + b"\x00" * (exif_bytes - 6) if exif_bytes else b""
    Image.new("RGB", size, (120, 90, 60)).save(buffer, format="JPEG", exif=exif)
    return buffer.getvalue()


def with_xmp(data: bytes, n_bytes: int) -> bytes:
    """``data`` with an extra APP1 (XMP-like) segment of ``n_bytes`` inserted after SOI."""
    payload = b"http://ns.adobe.com/xap/1.0/\x00" + b" " * (n_bytes - 29)
    return data[:2] + b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload + data[2:]


def png_bomb(width: int = 60_000, height: int = 60_000) -> bytes:
    """A header-only PNG claiming ``width`` × ``height`` (Pillow: DecompressionBombError)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk))


def jpeg_bomb(width: int = 60_000, height: int = 60_000) -> bytes:
    """A JPEG cut after its frame header, which claims ``width`` × ``height``."""
    data = bytearray(jpeg((16, 16)))
    sof = next(i for i in range(2, len(data) - 9) if data[i] == 0xFF and data[i + 1] in (0xC0, 0xC2))
    data[sof + 5:sof + 9] = struct.pack(">HH", height, width)
    return bytes(data[:sof + 20])


def test_the_inspector_finds_the_frame_header_behind_large_app_segments() -> None:
    camera = jpeg((500, 441), exif_bytes=65_526)  # APP1 of 65 534 bytes with its length field
    assert camera.index(b"\xff\xc0") > 65_536
    assert limits.inspect_image(camera) == (500, 441)
    assert limits.inspect_image(with_xmp(camera, 40_000)) == (500, 441)
    assert limits.inspect_image(camera + b"\x00camera trailer") == (500, 441)  # decoded in full
    assert limits.inspect_image(camera[:-400]) == limits.UNREADABLE
    assert limits.inspect_image(png_bomb()) == limits.OVER_PIXELS
    assert limits.inspect_image(jpeg_bomb()) == limits.OVER_PIXELS


# ----------------------------------------------------------------------------- C3 sources


def waid(root: Path, photos: dict[str, bytes], *, classes: bytes = b"sheep\ncattle\n",
         label: str = "0 0.5 0.5 0.1 0.1\n1 0.2 0.2 0.1 0.1\n") -> Path:
    folder = root / "WAID"
    (folder / "images" / "test").mkdir(parents=True)
    (folder / "labels" / "test").mkdir(parents=True)
    (folder / "classes.txt").write_bytes(classes)
    for name, data in photos.items():
        (folder / "images" / "test" / name).write_bytes(data)
        (folder / "labels" / "test" / f"{Path(name).stem}.txt").write_text(label)
    return folder


VOC = """<?xml version="1.0" encoding="{encoding}"?>
<annotation>
  <folder>ML-Data</folder>
  <filename>{name}</filename>
  <size><width>{width}</width><height>{height}</height><depth>3</depth></size>
  <object><name>bee</name><bndbox><xmin>10</xmin><ymin>10</ymin><xmax>30</xmax><ymax>30</ymax></bndbox></object>
  <object><name>{other}</name><bndbox><xmin>40</xmin><ymin>40</ymin><xmax>60</xmax><ymax>60</ymax></bndbox></object>
</annotation>
"""


def bees(root: Path, photos: dict[str, bytes], *, xml: dict[str, bytes] | None = None) -> Path:
    folder = root / "ML-Data"
    folder.mkdir(parents=True)
    for name, data in photos.items():
        (folder / name).write_bytes(data)
        (folder / f"{Path(name).stem}.xml").write_bytes(
            VOC.format(encoding="UTF-8", name=name, width=120, height=90, other="bee").encode())
    for name, data in (xml or {}).items():
        (folder / name).write_bytes(data)
    return folder


def build_c3(tmp_path: Path, capsys: pytest.CaptureFixture[str], *sources: str) -> tuple[int, str, Path]:
    out = tmp_path / "bench"
    argv: list[str | Path] = ["build", "c3"]
    for source in sources:
        argv += ["--source", source]
    code, err = cli([*argv, "--out", out, *C3_SMALL], capsys)
    return code, err, out


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


PHOTOS = {f"p{k}.jpg": jpeg((120, 90)) for k in range(4)}


def test_waid_camera_jpeg_with_64k_exif_is_built_and_counted(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    folder = waid(tmp_path, {**PHOTOS, "nikon.jpg": with_xmp(jpeg((120, 90), exif_bytes=65_526), 9_000)})
    code, err, out = build_c3(tmp_path, capsys, f"waid={folder}")
    assert code == 0, err
    assert manifest(out)["exclusions"]["waid"] == {}
    assert manifest(out)["subsets"]["waid-sheep"]["available"] == 5


@pytest.mark.parametrize("damage", ["truncated", "bomb-png", "bomb-jpeg"])
def test_a_damaged_waid_photo_is_a_named_exclusion_and_the_build_completes(
        damage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = {"truncated": ("broken.jpg", jpeg((120, 90))[:-300]), "bomb-png": ("broken.png", png_bomb()),
           "bomb-jpeg": ("broken.jpg", jpeg_bomb())}[damage]
    reason = "unreadable image" if damage == "truncated" else "image over the pixel limit"
    folder = waid(tmp_path, {**PHOTOS, bad[0]: bad[1]})
    code, err, out = build_c3(tmp_path, capsys, f"waid={folder}")
    assert code == 0 and "image file is truncated" not in err, err
    assert manifest(out)["exclusions"]["waid"] == {reason: 1}
    assert manifest(out)["exclusion_examples"]["waid"][reason] == [f"images/test/{bad[0]}"]
    assert f"waid: {reason}: 1 (images/test/{bad[0]})" in err  # the summary the build prints
    assert str(tmp_path) not in json.dumps(manifest(out)["exclusion_examples"])


def test_a_truncated_bees_photo_is_a_named_exclusion_and_the_build_completes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = bees(tmp_path, {**PHOTOS, "cut.jpg": jpeg((120, 90))[:-250]})
    code, err, out = build_c3(tmp_path, capsys, f"bees={folder}")
    assert code == 0 and "image file is truncated" not in err, err
    assert manifest(out)["exclusions"]["bees"] == {"unreadable image": 1}
    assert manifest(out)["exclusion_examples"]["bees"]["unreadable image"] == ["cut.jpg"]
    assert "bees: unreadable image: 1 (cut.jpg)" in err


def test_a_truncated_gzcd_photo_is_a_counted_exclusion_and_the_build_completes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "gzcd"
    (folder / "images").mkdir(parents=True)
    rows = ["image uuid,annot species,bbox x,bbox y,bbox w,bbox h,image fname,predicted_viewpoint"]
    for k in range(3):
        data = jpeg((120, 90)) if k else jpeg((120, 90))[:-300]
        (folder / "images" / f"g{k}.jpg").write_bytes(data)
        rows.append(f"u{k},zebra_grevys,10,10,40,30,g{k}.jpg,left")
    (folder / "ggr.csv").write_text("\n".join(rows) + "\n")
    code, err, out = build_c3(tmp_path, capsys, f"gzcd={folder}")
    assert code == 0 and "image file is truncated" not in err, err
    assert manifest(out)["exclusions"]["gzcd"] == {"unreadable image": 1}
    assert manifest(out)["exclusion_examples"]["gzcd"]["unreadable image"] == ["images/g0.jpg"]
    assert "gzcd: unreadable image: 1 (images/g0.jpg)" in err


def test_a_depondfi_partial_fish_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "depondfi"
    (root / "Images").mkdir(parents=True)
    (root / "Keypoints").mkdir()
    fish = "".join(f"{10 + k},{20 + k}\n" for k in range(9))
    for k in range(3):
        (root / "Images" / f"f{k}.jpg").write_bytes(jpeg((120, 90)))
        (root / "Keypoints" / f"f{k}.txt").write_text(fish * (k + 1) if k else fish + "5,5\n")
    code, err, out = build_c3(tmp_path, capsys, f"depondfi={root}")
    assert code == 0, err
    reason = "keypoint line count not a multiple of 9"
    assert manifest(out)["exclusion_examples"]["depondfi"][reason] == ["Keypoints/f0.txt (10 points)"]
    assert f"depondfi: {reason}: 1 (Keypoints/f0.txt (10 points))" in err


def test_duplicate_ids_are_named_exclusions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = waid(tmp_path / "w", {**PHOTOS, "twin.jpg": jpeg(), "twin.png": jpeg()})
    code, err, out = build_c3(tmp_path / "w", capsys, f"waid={folder}")
    assert code == 0, err
    reason = "two photos with one stem (which one the labels describe is unknown)"
    assert manifest(out)["exclusion_examples"]["waid"][reason] == ["images/test/twin.jpg", "images/test/twin.png"]

    second = VOC.format(encoding="UTF-8", name="p0.jpg", width=120, height=90, other="bee").encode()
    folder = bees(tmp_path / "b", PHOTOS, xml={"copy_of_p0.xml": second})
    code, err, out = build_c3(tmp_path / "b", capsys, f"bees={folder}")
    assert code == 0, err
    assert manifest(out)["exclusion_examples"]["bees"]["two XML files name one photo"] == ["copy_of_p0.xml", "p0.xml"]


def test_a_declared_size_ten_times_the_photo_is_a_named_exclusion(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    lying = VOC.format(encoding="UTF-8", name="big.jpg", width=1200, height=900, other="bee").encode()
    folder = bees(tmp_path, {**PHOTOS, "big.jpg": jpeg((120, 90))}, xml={"big.xml": lying})
    code, err, out = build_c3(tmp_path, capsys, f"bees={folder}")
    assert code == 0, err
    assert manifest(out)["exclusion_examples"]["bees"]["declared <size> is not the photo's size"] == [
        "big.xml: <size> 1200x900, photo 120x90"]


def test_bees_xml_in_its_declared_encoding_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    latin = VOC.format(encoding="ISO-8859-1", name="p0.jpg", width=120, height=90, other="Pollen ä").encode("latin-1")
    folder = bees(tmp_path, PHOTOS, xml={"p0.xml": latin})
    code, err, out = build_c3(tmp_path, capsys, f"bees={folder}")
    assert code == 0, err
    assert manifest(out)["ignored_object_names"]["bees"] == {"pollen ä": 1}


def test_waid_classes_with_bom_and_crlf_are_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = waid(tmp_path, PHOTOS, classes=b"\xef\xbb\xbfsheep\r\ncattle\r\n",
                  label="0 0.5 0.5 0.1 0.1\r\n1 0.2 0.2 0.1 0.1\r\n")
    code, err, out = build_c3(tmp_path, capsys, f"waid={folder}")
    assert code == 0, err
    assert set(manifest(out)["subsets"]) == {"waid-sheep"}


# ----------------------------------------------------------------------------- named errors

def _bees_bad(tmp_path: Path, xml: bytes) -> Path:
    return bees(tmp_path, PHOTOS, xml={"p0.xml": xml})


def _waid_bad_label(tmp_path: Path, label: bytes) -> Path:
    folder = waid(tmp_path, PHOTOS)
    (folder / "labels" / "test" / "p1.txt").write_bytes(label)
    return folder


def _depondfi_bad(tmp_path: Path, text: bytes) -> Path:
    root = tmp_path / "depondfi"
    (root / "Images").mkdir(parents=True)
    (root / "Keypoints").mkdir()
    (root / "Images" / "f0.jpg").write_bytes(jpeg())
    (root / "Keypoints" / "f0.txt").write_bytes(text)
    return root


def _beetles(tmp_path: Path, column: str | None = None, value: str = "", *, header_only: bool = False,
             raw: bytes | None = None) -> Path:
    root = tmp_path / "beetles"
    write_beetles(root, {"A00000032929.jpg": [(1.404, 0.5), (1.0, 0.4)]})
    path = root / "BeetleMeasurements.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    if header_only:
        lines = lines[:1]
    elif column is not None:
        import csv

        rows = list(csv.reader(lines))
        rows[2][rows[0].index(column)] = value
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(rows)
        lines = buffer.getvalue().splitlines()
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if raw is not None:
        data = path.read_bytes().splitlines(keepends=True)
        data[2] = raw
        path.write_bytes(b"".join(data))
    return root


NAMED_ERRORS = {
    # case: (make source (tmp_path) → --source argument, file named, row, field)
    "bees-width-inf": (lambda t: "bees=" + str(_bees_bad(t, VOC.format(
        encoding="UTF-8", name="p0.jpg", width="inf", height=90, other="bee").encode())), "p0.xml", None, "width"),
    "bees-width-1e400": (lambda t: "bees=" + str(_bees_bad(t, VOC.format(
        encoding="UTF-8", name="p0.jpg", width="1e400", height=90, other="bee").encode())), "p0.xml", None, "width"),
    "bees-undeclared-latin1": (lambda t: "bees=" + str(_bees_bad(t, VOC.replace(
        '<?xml version="1.0" encoding="{encoding}"?>\n', "").format(
        name="p0.jpg", width=120, height=90, other="Pollen ä").encode("latin-1"))), "p0.xml", 6, None),
    "waid-cx-nan": (lambda t: "waid=" + str(_waid_bad_label(t, b"0 nan 0.5 0.1 0.1\n")), "p1.txt", 1, "cx"),
    "waid-label-not-utf8": (lambda t: "waid=" + str(_waid_bad_label(t, b"0 0.5 0.5 0.1 0.1\n\xff\xfe\n")),
                            "p1.txt", 2, None),
    "waid-classes-empty": (lambda t: "waid=" + str(waid(t, PHOTOS, classes=b"")), "classes.txt", None, None),
    "depondfi-x-nan": (lambda t: "depondfi=" + str(_depondfi_bad(t, b"nan,3\n" * 9)), "f0.txt", 1, "x"),
    "depondfi-not-utf8": (lambda t: "depondfi=" + str(_depondfi_bad(t, b"1,2\n\xe9,3\n")), "f0.txt", 2, None),
    "beetles-individual-1e400": (lambda t: "beetles=" + str(_beetles(t, "individual", "1e400")),
                                 "BeetleMeasurements.csv", 3, "individual"),
    "beetles-cm-pix-inf": (lambda t: "beetles=" + str(_beetles(t, "cm_pix", "inf")),
                           "BeetleMeasurements.csv", 3, "cm_pix"),
    "beetles-cm-pix-1e-300": (lambda t: "beetles=" + str(_beetles(t, "cm_pix", "1e-300")),
                              "BeetleMeasurements.csv", 3, "cm_pix"),
    "beetles-resized-dim-zero": (lambda t: "beetles=" + str(_beetles(t, "resized_image_dim", "(0, 0, 3)")),
                                 "BeetleMeasurements.csv", 3, "resized_image_dim"),
    "beetles-field-over-131072": (lambda t: "beetles=" + str(_beetles(t, "scientificName", "x" * 140_000)),
                                  "BeetleMeasurements.csv", 3, None),
    "beetles-header-only": (lambda t: "beetles=" + str(_beetles(t, header_only=True)),
                            "BeetleMeasurements.csv", 2, None),
    "beetles-not-utf8": (lambda t: "beetles=" + str(_beetles(t, raw=b"A00000032929.jpg,\xff\n")),
                         "BeetleMeasurements.csv", 3, None),
}


@pytest.mark.parametrize("case", sorted(NAMED_ERRORS))
def test_bad_source_values_are_exit_2_naming_file_row_and_field(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make, file, row, field = NAMED_ERRORS[case]
    code, err, out = build_c3(tmp_path, capsys, make(tmp_path))
    assert code == 2 and "Traceback" not in err and "bug" not in err.lower(), err
    assert file in err, err
    if row is not None:
        assert f"row {row}" in err, err
    if field is not None:
        assert f"field '{field}'" in err, err
    assert not out.exists()


def test_beetle_dist_pix_contradicting_its_endpoints_is_a_named_exclusion(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import csv

    root = _beetles(tmp_path)
    path = root / "BeetleMeasurements.csv"
    rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
    column = rows[0].index("dist_pix")
    rows[1][column] = f"{float(rows[1][column]) * 10:.6f}"  # a 1.4 cm line would read 14 cm
    with open(path, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    code, err, out = build_c3(tmp_path, capsys, f"beetles={root}")
    assert code == 0, err
    reason = "dist_pix is not the length of coords_pix"
    assert manifest(out)["exclusions"]["beetles"][reason] == 1
    assert manifest(out)["exclusion_examples"]["beetles"][reason] == ["BeetleMeasurements.csv:2"]


# ----------------------------------------------------------------------------- CUB through build c2


def _cub(tmp_path: Path) -> Path:
    return write_cub(tmp_path / "cub", n_classes=4, images_per_class=3, seed=5, image_size=(120, 90))


def _build_c2(cub: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, Path]:
    out = tmp_path / "bench"
    code, err = cli(["build", "c2", "--cub", cub, "--out", out], capsys)
    return code, err, out


def _first_image(cub: Path) -> str:
    return (cub / "images.txt").read_text().splitlines()[0].split(maxsplit=1)[1]


def test_cub_camera_jpeg_with_64k_exif_is_built(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cub = _cub(tmp_path)
    photo = cub / "images" / _first_image(cub)
    with Image.open(photo) as image:
        size = image.size
    photo.write_bytes(jpeg(size, exif_bytes=65_526))
    code, err, out = _build_c2(cub, tmp_path, capsys)
    assert code == 0, err
    assert manifest(out)["exclusions"] == {}


def test_cub_part_location_at_1e300_is_a_named_exclusion(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cub = _cub(tmp_path)
    path = cub / "parts" / "part_locs.txt"
    lines = path.read_text().splitlines()
    first_visible = next(i for i, line in enumerate(lines) if line.split()[-1] == "1" and line.split()[0] == "1")
    fields = lines[first_visible].split()
    lines[first_visible] = " ".join([fields[0], fields[1], "1e300", fields[3], "1"])
    path.write_text("\n".join(lines) + "\n")
    code, err, out = _build_c2(cub, tmp_path, capsys)
    assert code == 0, err
    assert manifest(out)["exclusion_examples"]["part_location_outside_image"] == [_first_image(cub)]
    assert f"part_location_outside_image: 1 ({_first_image(cub)})" in err


@pytest.mark.parametrize("case", ["classes-zero-bytes", "certainties-empty", "boxes-not-utf8", "part-locs-inf"])
def test_cub_files_name_themselves(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cub = _cub(tmp_path)
    if case == "classes-zero-bytes":
        (cub / "classes.txt").write_bytes(b"")
        named, row = "classes.txt", None
    elif case == "certainties-empty":
        (cub / "attributes" / "certainties.txt").write_bytes(b"")
        named, row = "certainties.txt", None
    elif case == "boxes-not-utf8":
        lines = (cub / "bounding_boxes.txt").read_bytes().splitlines(keepends=True)
        lines[1] = b"2 \xff1.0 2.0 3.0 4.0\n"
        (cub / "bounding_boxes.txt").write_bytes(b"".join(lines))
        named, row = "bounding_boxes.txt", 2
    else:
        lines = (cub / "parts" / "part_locs.txt").read_text().splitlines()
        fields = lines[3].split()
        lines[3] = " ".join([fields[0], fields[1], "inf", fields[3], fields[4]])
        (cub / "parts" / "part_locs.txt").write_text("\n".join(lines) + "\n")
        named, row = "part_locs.txt", 4
    code, err, out = _build_c2(cub, tmp_path, capsys)
    assert code == 2 and named in err and "Traceback" not in err, err
    if row is not None:
        assert f"row {row}" in err, err
    assert not out.exists()


# ----------------------------------------------------------------------------- C1 through build c1


def test_c1_duplicate_truncated_and_camera_photos(tmp_path: Path, demo_data: Path, demo_index: Path,
                                                 demo_images: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    images = tmp_path / "images"
    shutil.copytree(demo_images, images)
    files = sorted(p for p in images.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    twin, cut, camera = files[0], files[1], files[2]
    (images / f"{twin.stem}.png").write_bytes(twin.read_bytes() if twin.suffix == ".png" else jpeg((300, 300)))
    if twin.suffix == ".png":
        (images / f"{twin.stem}.jpg").write_bytes(jpeg((300, 300)))
    cut.write_bytes(jpeg((300, 300))[:-500])
    with Image.open(camera) as image:
        size = image.size
    camera.unlink()
    (images / f"{camera.stem}.jpg").write_bytes(jpeg(size, exif_bytes=65_526))
    out = tmp_path / "bench"
    code, err = cli(["build", "c1", "--catalog", demo_data / "catalog.csv", "--backbone", demo_index,
                     "--images", images, "--out", out, "--per-group", "100", "--species-cap", "2"], capsys)
    assert code == 0, err
    built = manifest(out)
    from biovqa.bench import open_bench

    kept = set(open_bench(out).items.column("source_id").to_pylist())
    assert twin.stem not in kept and cut.stem not in kept and camera.stem in kept
    examples = built["exclusion_examples"]
    assert examples["duplicate_image_file"] == [f"{twin.stem}.jpg and {twin.stem}.png"]
    assert examples[limits.UNREADABLE] == [cut.name]
    assert f"duplicate_image_file: 1 ({twin.stem}.jpg and {twin.stem}.png)" in err


# ----------------------------------------------------------------------------- GBIF Backbone


def test_a_taxon_tsv_holding_one_400_mb_line_is_exit_2_naming_the_line(tmp_path: Path) -> None:
    """The real process (a subprocess): the error is named and the exit is 2, never an abort."""
    import os
    import subprocess
    import sys
    import zipfile

    from fixtures.dwca import example_backbone

    source = example_backbone(tmp_path / "plain")
    archive = tmp_path / "backbone.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for member in sorted(p for p in source.rglob("*") if p.is_file()):
            name = member.relative_to(source).as_posix()
            if member.name != "Taxon.tsv":
                out.writestr(name, member.read_bytes())
                continue
            lines = member.read_bytes().splitlines(keepends=True)
            with out.open(name, "w", force_zip64=True) as handle:
                handle.writelines(lines[:2])
                chunk = b"x" * (1 << 20)
                for _ in range(400):
                    handle.write(chunk)
                handle.write(b"\n")
                handle.writelines(lines[2:])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "biovqa", "taxonomy", "index", str(archive), "--out",
                           str(tmp_path / "index")], capture_output=True, text=True, env=env, timeout=300)
    err = " ".join(done.stderr.split())
    assert done.returncode == 2, err
    assert "backbone.zip!Taxon.tsv, row 3" in err and "line longer than" in err and "Traceback" not in err
    assert not (tmp_path / "index").exists()


def test_a_parent_id_naming_no_row_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fixtures.dwca import example_backbone

    source = example_backbone(tmp_path / "plain")
    path = source / "Taxon.tsv"
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    row = lines[5].split("\t")
    row[header.index("parentNameUsageID")] = "987654321"
    lines[5] = "\t".join(row)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, err = cli(["taxonomy", "index", source, "--out", tmp_path / "index"], capsys)
    assert code == 2 and "Taxon.tsv, row 6, field 'parentNameUsageID'" in err and "987654321" in err, err


def test_a_coco_width_ten_times_the_photo_is_a_named_exclusion(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "gzcd"
    (folder / "images").mkdir(parents=True)
    images, annotations = [], []
    for k in range(3):
        (folder / "images" / f"z{k}.jpg").write_bytes(jpeg((120, 90)))
        scale = 10 if k == 0 else 1
        images.append({"id": k + 1, "file_name": f"z{k}.jpg", "width": 120 * scale, "height": 90 * scale})
        annotations.append({"id": k + 1, "image_id": k + 1, "bbox": [10, 10, 40, 30],
                            "annot species": "zebra_grevys", "viewpoint": "left"})
    (folder / "final_metadata.json").write_text(json.dumps({"images": images, "annotations": annotations,
                                                            "categories": []}))
    code, err, out = build_c3(tmp_path, capsys, f"gzcd={folder}")
    assert code == 0, err
    reason = "declared width/height is not the photo's size"
    assert manifest(out)["exclusion_examples"]["gzcd"][reason] == ["images/z0.jpg: declared 1200x900, photo 120x90"]


def test_a_truncated_whale_shark_photo_is_a_named_exclusion(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from fixtures.wildlife import write_catalog

    coco = write_catalog(tmp_path / "catalog")
    photos = sorted(p for p in coco.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    cut = photos[0]
    cut.write_bytes(cut.read_bytes()[:-200])
    code, err, out = build_c3(tmp_path, capsys, f"whaleshark={coco}")
    assert code == 0 and "image file is truncated" not in err, err
    examples = manifest(out)["exclusion_examples"]["whaleshark"]["unreadable image"]
    assert examples == [cut.name] or examples[0].endswith(cut.name), examples
    assert "whaleshark: unreadable image:" in err


@pytest.mark.parametrize("case", ["not-utf8", "no-annot-species"])
def test_a_ggr_table_names_what_is_wrong_with_it(case: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "gzcd"
    (folder / "images").mkdir(parents=True)
    (folder / "images" / "g0.jpg").write_bytes(jpeg())
    if case == "not-utf8":
        body = b"image uuid,annot species,bbox x,bbox y,bbox w,bbox h,image fname\nu0,zebra_gr\xe9vys,10,10,40,30,g0.jpg\n"
        named, row, field = "ggr.csv", 2, None
    else:
        body = b"image uuid,species,bbox x,bbox y,bbox w,bbox h,image fname\nu0,zebra_grevys,10,10,40,30,g0.jpg\n"
        named, row, field = "ggr.csv", 1, "annot species"
    (folder / "ggr.csv").write_bytes(body)
    code, err, out = build_c3(tmp_path, capsys, f"gzcd={folder}")  # the folder form, as a user gives it
    assert code == 2 and named in err and f"row {row}" in err and "Traceback" not in err, err
    assert "neither" not in err
    if field:
        assert f"field '{field}'" in err
    assert not out.exists()


@pytest.mark.parametrize("case", ["image-id-list", "category-id-list", "annotation-repeated"])
def test_coco_ids_must_be_scalars_and_annotations_unique(case: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "gzcd"
    (folder / "images").mkdir(parents=True)
    images, annotations = [], []
    for k in range(3):
        (folder / "images" / f"z{k}.jpg").write_bytes(jpeg((120, 90)))
        images.append({"id": k + 1, "file_name": f"z{k}.jpg", "width": 120, "height": 90})
        annotations.append({"id": k + 1, "image_id": k + 1, "bbox": [10, 10, 40, 30], "category_id": 0,
                            "viewpoint": "left"})
    if case == "image-id-list":
        annotations[1]["image_id"] = [2]
    elif case == "category-id-list":
        annotations[1]["category_id"] = [0]
    else:
        annotations.append({**annotations[0], "id": 99})  # the same zebra listed again
    (folder / "final_metadata.json").write_text(json.dumps({
        "images": images, "annotations": annotations, "categories": [{"id": 0, "name": "zebra_grevys"}]}))
    code, err, out = build_c3(tmp_path, capsys, f"gzcd={folder}")
    if case == "annotation-repeated":
        assert code == 0, err
        reason = "an annotation given twice (same id, or same box and species)"
        assert manifest(out)["exclusion_examples"]["gzcd"][reason] == ["images/z0.jpg (rows 1, 4)"]
    else:
        field = "image_id" if case == "image-id-list" else "category_id"
        assert code == 2 and "final_metadata.json, row 2" in err and f"field '{field}'" in err, err
        assert "internal error" not in err


@pytest.mark.parametrize("source", ["waid", "depondfi"])
def test_an_empty_source_is_an_error_not_an_empty_benchmark(source: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    if source == "waid":
        folder = tmp_path / "WAID"
        (folder / "images" / "test").mkdir(parents=True)
        (folder / "classes.txt").write_text("sheep\n")
    else:
        folder = tmp_path / "depondfi"
        (folder / "Images").mkdir(parents=True)
        (folder / "Keypoints").mkdir()
    code, err, out = build_c3(tmp_path, capsys, f"{source}={folder}")
    assert code == 2 and "empty benchmark" in err and "Traceback" not in err, err
    assert not out.exists()


# ----------------------------------------------------------------------------- seeded mutations


def _mutation_sources(root: Path) -> dict[str, tuple[Path, object]]:
    """One tiny source per reader, in its native layout, with the reader that reads it."""
    from biovqa.sources.bees import read_bees
    from biovqa.sources.beetles import read_beetles
    from biovqa.sources.cub import read_cub
    from biovqa.sources.depondfi import read_depondfi
    from biovqa.sources.gzcd import read_gzcd
    from biovqa.sources.waid import read_waid

    photos = {f"p{k}.jpg": jpeg((120, 90)) for k in range(3)}
    depondfi = root / "depondfi"
    (depondfi / "Keypoints").mkdir(parents=True)
    (depondfi / "Images").mkdir()
    for k in range(2):
        (depondfi / "Images" / f"f{k}.jpg").write_bytes(jpeg())
        (depondfi / "Keypoints" / f"f{k}.txt").write_text("".join(f"{10 + j},{20 + j}\n" for j in range(9)))
    gzcd = root / "gzcd"
    (gzcd / "images").mkdir(parents=True)
    rows = ["uuid,image uuid,annot species,annot census,bbox x,bbox y,bbox w,bbox h,image fname,predicted_viewpoint"]
    for k in range(3):
        (gzcd / "images" / f"g{k}.jpg").write_bytes(jpeg())
        rows.append(f"a{k},u{k},zebra_grevys,True,10,10,40,30,g{k}.jpg,left")
    (gzcd / "ggr.csv").write_text("\n".join(rows) + "\n")
    return {
        "waid": (waid(root / "w", photos), read_waid),
        "bees": (bees(root / "b", photos), read_bees),
        "depondfi": (depondfi, read_depondfi),
        "beetles": (_beetles(root / "beetles"), read_beetles),
        "gzcd": (gzcd, read_gzcd),
        "cub": (write_cub(root / "cub", n_classes=3, images_per_class=2, seed=1, image_size=(80, 60)), read_cub),
    }


def test_mutated_annotation_files_give_named_errors_or_a_source(tmp_path: Path) -> None:
    """400 seeded mutations of the annotation files (bytes cut, flipped, or replaced by nan, inf,
    1e400, a stray quote, an invalid UTF-8 byte …): every read ends in a source or a BiovqaError."""
    import random
    import shutil

    from biovqa.errors import BiovqaError

    sources = _mutation_sources(tmp_path / "base")
    tokens = [b"nan", b"inf", b"-1e400", b"1e-300", b"\xff", b"\x00", b"", b",", b"\t", b"\r", b"\n", b'"',
              b"[1]", b"9" * 30, b"\xef\xbb\xbf", b"<", b"&"]
    rng = random.Random(20)
    unexpected = []
    for trial in range(400):
        name = sorted(sources)[trial % len(sources)]
        folder, reader = sources[name]
        work = tmp_path / "work"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(folder, work)
        texts = sorted(p for p in work.rglob("*") if p.suffix in (".txt", ".xml", ".csv") and p.stat().st_size < 200_000)
        for _ in range(rng.randrange(1, 4)):
            path = rng.choice(texts)
            data = bytearray(path.read_bytes()) or bytearray(b"x")
            at = rng.randrange(len(data))
            operation = rng.randrange(4)
            if operation == 0:
                del data[at:at + rng.randrange(1, 20)]
            elif operation == 1:
                data[at:at] = rng.choice(tokens)
            elif operation == 2:
                data[at:at + 1] = rng.choice(tokens)
            else:
                data[at] = rng.randrange(256)
            path.write_bytes(bytes(data))
        try:
            reader(work)  # type: ignore[operator]
        except BiovqaError:
            pass
        except Exception as exc:  # noqa: BLE001 - the point of the test
            unexpected.append(f"{name}: {type(exc).__name__}: {exc}")
    assert unexpected == []
