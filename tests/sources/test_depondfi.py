"""DePondFi'24 reader: Images/ + Keypoints/ with nine x,y lines per fish."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from biovqa.errors import InputFormatError
from biovqa.sources.depondfi import EXCLUDED_PARTIAL, read_depondfi
from biovqa.sources.waid import EXCLUDED_NO_LABELS

FISH = ["10,20", "12,18", "15,15", "20,20", "20,25", "28,20", "32,15", "33,20", "32,25"]


def _write(root: Path, name: str, lines: list[str] | None) -> None:
    (root / "Images").mkdir(parents=True, exist_ok=True)
    (root / "Keypoints").mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (64, 64)).save(root / "Images" / f"{name}.jpg", format="JPEG")
    if lines is not None:
        (root / "Keypoints" / f"{name}.txt").write_text("\n".join(lines) + "\n")


def test_count_is_lines_over_nine_and_boxes_are_point_extents(tmp_path: Path) -> None:
    _write(tmp_path, "a", FISH + [f"{int(x) + 20},{int(y) + 30}" for x, y in (p.split(",") for p in FISH)])
    _write(tmp_path, "b", FISH + FISH[:1])  # 10 lines: not a multiple of 9
    _write(tmp_path, "c", None)
    source = read_depondfi(tmp_path)
    assert [im.path.stem for im in source.images] == ["a"]
    assert source.images[0].count == 2
    assert source.images[0].boxes[0] == (10.0, 15.0, 33.0, 25.0)
    assert source.exclusions == {EXCLUDED_PARTIAL: 1, EXCLUDED_NO_LABELS: 1}


def test_a_malformed_line_names_file_line_and_field(tmp_path: Path) -> None:
    _write(tmp_path, "a", FISH[:3] + ["10;x"] + FISH[4:])
    with pytest.raises(InputFormatError) as error:
        read_depondfi(tmp_path)
    assert error.value.row == 4 and error.value.field == "y" and error.value.file.endswith("a.txt")
