"""Boxes on Bees reader: per-image Pascal VOC XML next to each image."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from biovqa.errors import InputFormatError
from biovqa.sources.bees import read_bees
from biovqa.sources.waid import EXCLUDED_NO_IMAGE, EXCLUDED_OUTSIDE

XML = """<annotation>
  <folder>ML-Data</folder>
  <filename>{name}</filename>
  {size}
  <object><name>Bees</name><bndbox><xmin>10</xmin><ymin>12.5</ymin><xmax>30</xmax><ymax>40.75</ymax></bndbox></object>
  <object><name>bee</name><bndbox><xmin>50</xmin><ymin>50</ymin><xmax>{xmax}</xmax><ymax>70</ymax></bndbox></object>
  <object><name>Pollen</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object>
</annotation>
"""
SIZE = "<size><width>200</width><height>100</height><depth>3</depth></size>"


def _write(folder: Path, name: str, *, size: str = SIZE, xmax: str = "80", image: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if image:
        Image.new("RGB", (200, 100)).save(folder / name, format="JPEG")
    (folder / name.replace(".jpg", ".xml")).write_text(XML.format(name=name, size=size, xmax=xmax))


def test_counts_bee_objects_case_insensitively_with_float_coordinates(tmp_path: Path) -> None:
    folder = tmp_path / "ML-Data"
    _write(folder, "hive_1.jpg")
    _write(folder, "hive_2.jpg", xmax="205")  # a box outside the 200-px image
    _write(folder, "hive_3.jpg", image=False)
    source = read_bees(tmp_path)
    assert [im.path.name for im in source.images] == ["hive_1.jpg"]
    image = source.images[0]
    assert image.count == 2 and image.boxes[0] == (10.0, 12.5, 30.0, 40.75)
    assert source.ignored_names == {"pollen": 1}
    assert source.exclusions == {EXCLUDED_OUTSIDE: 1, EXCLUDED_NO_IMAGE: 1}


def test_a_voc_file_without_size_is_an_error_naming_the_field(tmp_path: Path) -> None:
    _write(tmp_path, "hive_1.jpg", size="")
    with pytest.raises(InputFormatError) as error:
        read_bees(tmp_path)
    assert error.value.field == "size" and error.value.file.endswith("hive_1.xml")


def test_a_non_numeric_coordinate_names_its_line(tmp_path: Path) -> None:
    _write(tmp_path, "hive_1.jpg", xmax="eighty")
    with pytest.raises(InputFormatError) as error:
        read_bees(tmp_path)
    assert error.value.field == "xmax" and error.value.row == 6
