"""2018-NEON-beetles reader: BeetleMeasurements.csv (current and older column names) + group_images/."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from biovqa.components.c3.demo import write_beetles
from biovqa.errors import InputFormatError
from biovqa.sources.beetles import (EXCLUDED_NO_SCALEBAR, EXCLUDED_OTHER_ANNOTATOR, EXCLUDED_TRANSPOSED,
                                    read_beetles)


def test_dist_cm_and_coordinates_mapped_to_the_full_resolution_photo(tmp_path: Path) -> None:
    write_beetles(tmp_path, {"A00000032929.jpg": [(1.404, 0.5), (1.0, None)]}, cm_pix=40.0)
    source = read_beetles(tmp_path)
    (plate,) = source.plates
    assert plate.code == "A00000032929" and plate.complete
    length = plate.individuals()[1]["length"]
    assert length.dist_cm == pytest.approx(1.404)
    # annotated on the half-size frame: endpoints and scale bar are doubled on the photo on disk
    assert length.line_px == pytest.approx(2 * 1.404 * 40.0)
    assert length.scalebar_px == pytest.approx(80.0)
    assert length.line_px / length.scalebar_px == pytest.approx(length.dist_cm)
    assert set(plate.individuals()[2]) == {"length"}


def test_older_column_names_are_accepted(tmp_path: Path) -> None:
    write_beetles(tmp_path, {"A00000000001.jpg": [(1.2, 0.4)]}, old_names=True)
    header = (tmp_path / "BeetleMeasurements.csv").read_text().splitlines()[0]
    assert "PictureID" in header and "scale_dist_pix" in header
    assert read_beetles(tmp_path).plates[0].individuals()[1]["width"].dist_cm == pytest.approx(0.4)


def test_duplicate_annotators_transposed_rows_and_missing_scale_bars_are_counted(tmp_path: Path) -> None:
    write_beetles(tmp_path, {"A00000000001.jpg": [(1.2, 0.4), (0.3, 0.9), (1.0, 0.5)]}, extra_annotator=True)
    path = tmp_path / "BeetleMeasurements.csv"
    rows = list(csv.reader(path.open()))
    rows[-1][1] = ""  # scalebar
    rows[-1][2] = ""  # cm_pix
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    source = read_beetles(tmp_path)
    assert source.exclusions == {EXCLUDED_OTHER_ANNOTATOR: 2, EXCLUDED_TRANSPOSED: 2, EXCLUDED_NO_SCALEBAR: 1}
    individuals = source.plates[0].individuals()
    assert sorted(individuals) == [1, 3] and set(individuals[3]) == {"length"}
    assert not source.plates[0].complete  # individual 2 is gone


def test_malformed_json_endpoints_name_row_and_field(tmp_path: Path) -> None:
    write_beetles(tmp_path, {"A00000000001.jpg": [(1.2, 0.4)]})
    path = tmp_path / "BeetleMeasurements.csv"
    rows = list(csv.reader(path.open()))
    rows[2][6] = '{"x1": 1, "y1": 2'
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    with pytest.raises(InputFormatError) as error:
        read_beetles(tmp_path)
    assert error.value.row == 3 and error.value.field == "coords_pix"
