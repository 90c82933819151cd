"""WAID reader on tiny fixtures in the exact native layout."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from biovqa.errors import InputFormatError
from biovqa.sources.waid import EXCLUDED_NO_LABELS, EXCLUDED_OUTSIDE, read_waid


def _image(path: Path, size: tuple[int, int] = (100, 50)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, (90, 90, 90)).save(path, format="JPEG")


def _waid(tmp_path: Path, labels: dict[str, str], images: tuple[str, ...] | None = None) -> Path:
    root = tmp_path / "WAID"
    root.mkdir()
    (root / "classes.txt").write_text("sheep\ncattle\nseal\ncamelus\nkiang\nzebra\n")
    for stem in images if images is not None else tuple(labels):
        _image(root / "images" / "test" / f"{stem}.jpg")
    for stem, text in labels.items():
        (root / "labels" / "test").mkdir(parents=True, exist_ok=True)
        (root / "labels" / "test" / f"{stem}.txt").write_text(text)
    return root


def test_counts_lines_and_maps_boxes_to_pixels(tmp_path: Path) -> None:
    root = _waid(tmp_path, {"a_jpg.rf.1": "1 0.5 0.5 0.2 0.4\n1 0.1 0.2 0.1 0.1\n", "b_jpg.rf.2": "5 0.5 0.5 1 1\n"},
                 images=("a_jpg.rf.1", "b_jpg.rf.2", "c_no_labels"))
    source = read_waid(tmp_path)  # the folder above WAID/ works too
    assert [im.path.name for im in source.images] == ["a_jpg.rf.1.jpg", "b_jpg.rf.2.jpg"]
    a = source.images[0]
    assert a.count == 2 and a.split == "test" and a.labels == ("cattle", "cattle")
    assert a.boxes[0] == pytest.approx((40.0, 15.0, 60.0, 35.0))
    assert source.images[1].labels == ("zebra",)
    assert source.exclusions == {EXCLUDED_NO_LABELS: 1}
    assert read_waid(root).images[0].count == 2


def test_a_yolo_line_with_four_numbers_is_an_error_naming_file_and_line(tmp_path: Path) -> None:
    _waid(tmp_path, {"a": "1 0.5 0.5 0.2 0.2\n1 0.5 0.5 0.2\n"})
    with pytest.raises(InputFormatError) as error:
        read_waid(tmp_path)
    assert error.value.row == 2 and error.value.file.endswith("a.txt") and "5 fields" in str(error.value)


def test_bad_number_and_unknown_class_are_errors(tmp_path: Path) -> None:
    _waid(tmp_path, {"a": "1 0.5 x 0.2 0.2\n"})
    with pytest.raises(InputFormatError) as error:
        read_waid(tmp_path)
    assert error.value.field == "cy"
    (tmp_path / "WAID" / "labels" / "test" / "a.txt").write_text("9 0.5 0.5 0.2 0.2\n")
    with pytest.raises(InputFormatError) as error:
        read_waid(tmp_path)
    assert error.value.field == "class"


def test_a_box_outside_the_image_excludes_the_image(tmp_path: Path) -> None:
    source = read_waid(_waid(tmp_path, {"a": "1 0.95 0.5 0.2 0.2\n", "b": "1 0.5 0.5 0.2 0.2\n"}))
    assert [im.path.stem for im in source.images] == ["b"]
    assert source.exclusions == {EXCLUDED_OUTSIDE: 1}
