"""The validation layer every source reader reads through: text, numbers, ids, the exclusion summary."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from biovqa.errors import InputFormatError
from biovqa.sources import validate


def test_lines_accept_bom_and_crlf_and_name_the_first_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "classes.txt"
    path.write_bytes(b"\xef\xbb\xbfsheep\r\ncattle\r\n")
    assert validate.read_lines(path) == ["sheep", "cattle"]
    path.write_bytes(b"sheep\ncat\xe9le\n")
    with pytest.raises(InputFormatError) as error:
        validate.read_lines(path)
    assert error.value.row == 2 and "not UTF-8" in error.value.message


def test_a_line_over_the_bound_is_refused_before_it_is_held(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"ok\n" + b"x" * 5000 + b"\n")
    with pytest.raises(InputFormatError) as error:
        validate.read_lines(path, max_line=1000)
    assert error.value.row == 2 and "longer than 1,000 bytes" in error.value.message


def test_csv_records_number_lines_and_bound_fields(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b'\xef\xbb\xbfa,b\r\n1,"two\nlines"\r\n3,4\r\n')
    assert list(validate.csv_records(path)) == [(1, ["a", "b"]), (3, ["1", "two\nlines"]), (4, ["3", "4"])]
    path.write_text("a,b\n1,2\n3," + "y" * (validate.MAX_FIELD_CHARS + 10) + "\n")
    with pytest.raises(InputFormatError) as error:
        list(validate.csv_records(path))
    assert error.value.row == 3 and "131,072" in error.value.message


def test_xml_is_decoded_in_its_declared_encoding(tmp_path: Path) -> None:
    path = tmp_path / "a.xml"
    path.write_bytes('<?xml version="1.0" encoding="ISO-8859-1"?>\n<a>Bär</a>\n'.encode("latin-1"))
    assert validate.read_xml(path)[1].endswith("<a>Bär</a>\n")
    path.write_bytes("<a>\nBär</a>\n".encode("latin-1"))
    with pytest.raises(InputFormatError) as error:
        validate.read_xml(path)
    assert error.value.row == 2 and "not utf-8" in error.value.message


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e400", "x", None])
def test_numbers_must_be_finite(text: str | None) -> None:
    with pytest.raises(InputFormatError) as error:
        validate.number(text, file="f.csv", row=7, field="cm_pix")
    assert (error.value.file, error.value.row, error.value.field) == ("f.csv", 7, "cm_pix")


def test_numbers_in_range_and_integral() -> None:
    assert validate.integer("3.0", file="f", row=1, field="individual") == 3
    assert math.isclose(validate.number("1e-3", file="f", row=1, field="x", low=0.0), 1e-3)
    with pytest.raises(InputFormatError, match="whole number"):
        validate.integer("2.5", file="f", row=1, field="individual")
    with pytest.raises(InputFormatError, match="outside"):
        validate.number("1e-300", file="f", row=1, field="cm_pix", low=1.0)
    with pytest.raises(InputFormatError, match="positive"):
        validate.number("0", file="f", row=1, field="width", positive=True)


def test_first_duplicate_and_relative_names(tmp_path: Path) -> None:
    assert validate.first_duplicate(["a", "b", "a", "b"]) == ("a", 0, 2)
    assert validate.first_duplicate(["a", "b"]) is None
    assert validate.relative_name(tmp_path / "images" / "x.jpg", tmp_path) == "images/x.jpg"
    assert validate.relative_name(Path("/elsewhere/x.jpg"), tmp_path) == "x.jpg"


def test_the_summary_reads_every_manifest_shape() -> None:
    manifest = {
        "exclusions": {"waid": {"unreadable image": 2, "box outside the image": 0},  # C3: per source
                       "missing_image": {"Birds": 1, "Fish": 2}},  # C1: per group
        "exclusion_examples": {"waid": {"unreadable image": ["images/a.jpg", "images/b.jpg"]},
                               "missing_image": ["uuid 1", "uuid 2", "uuid 3"]},
        "datasets": {"whaleshark": {"exclusions": {"no viewpoint": 1}, "exclusion_examples": {}}},  # C4
    }
    assert validate.summarize_exclusions(manifest, shown=2) == [
        "missing_image: 3 (uuid 1, uuid 2, …)",
        "waid: unreadable image: 2 (images/a.jpg, images/b.jpg)",
        "whaleshark: no viewpoint: 1",
    ]
    assert validate.summarize_exclusions({"exclusions": {"image_missing_on_disk": 1}}) == ["image_missing_on_disk: 1"]
