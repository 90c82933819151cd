"""CUB-200-2011 reader: native layout, the six-token label lines, and every bad-input case."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.sources.cub import EXCLUSION_MISSING_ON_DISK, class_display_name, read_cub
from fixtures.cub import write_cub


@pytest.fixture
def cub(tmp_path: Path) -> Path:
    return write_cub(tmp_path, n_classes=3, images_per_class=2, seed=3)


def _replace_line(path: Path, line_no: int, text: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[line_no - 1] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_reads_native_layout(cub: Path) -> None:
    data = read_cub(cub)
    assert data.n_images == 6
    assert data.image_ids.tolist() == [1, 2, 3, 4, 5, 6]
    assert data.image_class_ids.tolist() == [59, 59, 60, 60, 1, 1]
    assert len(data.class_folders) == 200
    assert data.class_name(59) == "California Gull"
    assert data.class_name(200) == "Common Yellowthroat"  # classes.txt line 200 has a trailing space
    assert len(data.part_names) == 15 and data.part_names[6] == "left_eye"
    assert len(data.attribute_names) == 312
    assert data.attribute_groups[0] == "has_bill_shape"
    assert data.attribute_values[0] == "curved_(up_or_down)"
    assert data.certainty_names == {1: "not visible", 2: "guessing", 3: "probably", 4: "definitely"}
    assert data.is_present.shape == (6, 312) and data.certainty.min() >= 1
    assert data.part_xy.shape == (6, 15, 2)
    # invisible parts sit at 0, 0 as in the real file
    assert np.all(data.part_xy[~data.part_visible] == 0)
    assert data.exclusions == {}
    assert data.files["attributes"] == cub.parent / "attributes.txt"


def test_matches_the_label_file_line_by_line(cub: Path) -> None:
    data = read_cub(cub)
    lines = (cub / "attributes" / "image_attribute_labels.txt").read_text().splitlines()
    for line in lines[::37]:
        image_id, attribute_id, present, certainty = (int(t) for t in line.split()[:4])
        assert data.is_present[image_id - 1, attribute_id - 1] == bool(present)
        assert data.certainty[image_id - 1, attribute_id - 1] == certainty


def test_six_token_lines_are_tolerated(cub: Path) -> None:
    lines = (cub / "attributes" / "image_attribute_labels.txt").read_text().splitlines()
    assert any(len(line.split()) == 6 for line in lines)
    six = next(line for line in lines if len(line.split()) == 6)
    image_id, attribute_id, present, certainty = (int(t) for t in six.split()[:4])
    data = read_cub(cub)
    assert data.is_present[image_id - 1, attribute_id - 1] == bool(present)
    assert data.certainty[image_id - 1, attribute_id - 1] == certainty


def test_attributes_file_inside_the_archive(tmp_path: Path) -> None:
    cub = write_cub(tmp_path, n_classes=1, images_per_class=1, attributes_at_root=False)
    assert read_cub(cub).files["attributes"] == cub / "attributes" / "attributes.txt"
    shutil.move(cub / "attributes" / "attributes.txt", cub / "attributes.txt")
    assert read_cub(cub).files["attributes"] == cub / "attributes.txt"


@pytest.mark.parametrize(
    "relative",
    ["images.txt", "classes.txt", "image_class_labels.txt", "bounding_boxes.txt", "parts/parts.txt",
     "parts/part_locs.txt", "attributes/image_attribute_labels.txt", "attributes/certainties.txt"],
)
def test_missing_file_is_named(cub: Path, relative: str) -> None:
    (cub / relative).unlink()
    with pytest.raises(MissingResourceError) as info:
        read_cub(cub)
    assert info.value.file == str(cub / relative)
    assert info.value.hint


def test_missing_attribute_vocabulary(cub: Path) -> None:
    (cub.parent / "attributes.txt").unlink()
    with pytest.raises(MissingResourceError, match="attributes.txt"):
        read_cub(cub)


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(MissingResourceError):
        read_cub(tmp_path / "nowhere")


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("3 7 12.0", "y"),  # truncated line
        ("3 7 12.0 abc 1", "y"),  # not a number
        ("3 7 12.5 4.0 2", "visible"),  # visibility flag out of range
        ("3 16 12.0 4.0 1", "part_id"),  # part id out of range
        ("3 7.5 12.0 4.0 1", "part_id"),  # not an integer
        ("99 7 12.0 4.0 1", "image_id"),  # unknown image
    ],
)
def test_malformed_part_locs_line(cub: Path, text: str, field: str) -> None:
    path = cub / "parts" / "part_locs.txt"
    _replace_line(path, 40, text)
    with pytest.raises(InputFormatError) as info:
        read_cub(cub)
    assert info.value.file == str(path)
    assert info.value.row == 40
    assert info.value.field == field


def test_part_locs_extra_field(cub: Path) -> None:
    path = cub / "parts" / "part_locs.txt"
    _replace_line(path, 17, "2 2 10.0 10.0 1 5.0")
    with pytest.raises(InputFormatError) as info:
        read_cub(cub)
    assert (info.value.file, info.value.row) == (str(path), 17)
    assert "too many fields" in info.value.message


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("1 5 1", "certainty_id"),  # truncated
        ("1 5 x 3 1.0", "is_present"),
        ("1 5 2 3 1.0", "is_present"),
        ("1 5 1 9 1.0", "certainty_id"),
        ("1 313 1 3 1.0", "attribute_id"),  # attribute id out of range
        ("1 0 1 3 1.0", "attribute_id"),
    ],
)
def test_malformed_attribute_label_line(cub: Path, text: str, field: str) -> None:
    path = cub / "attributes" / "image_attribute_labels.txt"
    _replace_line(path, 5, text)
    with pytest.raises(InputFormatError) as info:
        read_cub(cub)
    assert info.value.file == str(path)
    assert info.value.row == 5
    assert info.value.field == field


def test_attribute_label_seven_tokens(cub: Path) -> None:
    path = cub / "attributes" / "image_attribute_labels.txt"
    _replace_line(path, 8, "1 8 0 3 0 0 1.0")
    with pytest.raises(InputFormatError) as info:
        read_cub(cub)
    assert (info.value.file, info.value.row) == (str(path), 8)


def test_duplicate_and_missing_label_lines(cub: Path) -> None:
    path = cub / "attributes" / "image_attribute_labels.txt"
    _replace_line(path, 9, "1 8 0 3 1.0")  # line 8 already holds image 1, attribute 8
    with pytest.raises(InputFormatError) as info:
        read_cub(cub)
    assert info.value.row == 9 and "duplicate" in info.value.message


def test_truncated_label_file(cub: Path) -> None:
    path = cub / "attributes" / "image_attribute_labels.txt"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(InputFormatError, match="no line for image id 6, attribute id 312"):
        read_cub(cub)


def test_bad_small_files(cub: Path) -> None:
    _replace_line(cub / "images.txt", 2, "2")
    with pytest.raises(InputFormatError) as info:
        read_cub(cub)
    assert (info.value.row, info.value.field) == (2, "image_name")


def test_class_label_out_of_range(cub: Path) -> None:
    _replace_line(cub / "image_class_labels.txt", 3, "3 201")
    with pytest.raises(InputFormatError) as info:
        read_cub(cub)
    assert (info.value.row, info.value.field) == (3, "class_id")


def test_image_missing_on_disk_is_excluded_and_counted(cub: Path) -> None:
    listed = (cub / "images.txt").read_text().splitlines()
    (cub / "images" / listed[2].split()[1]).unlink()
    data = read_cub(cub)
    assert data.n_images == 5
    assert 3 not in data.image_ids.tolist()
    assert data.exclusions == {EXCLUSION_MISSING_ON_DISK: 1}
    full = read_cub(cub, check_images=False)
    np.testing.assert_array_equal(full.is_present[[0, 1, 3, 4, 5]], data.is_present)


def test_class_display_name() -> None:
    assert class_display_name("001.Black_footed_Albatross") == "Black footed Albatross"
    assert class_display_name("200.Common_Yellowthroat ") == "Common Yellowthroat"
