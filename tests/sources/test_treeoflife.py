from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from biovqa.errors import InputFormatError
from biovqa.sources.treeoflife import CATALOG_COLUMNS, read_catalog

ROW = {
    "uuid": "4d166a61-b6e5-4709-91ba-b623111014e9", "kingdom": "Animalia", "phylum": "Arthropoda",
    "class": "Insecta", "order": "Hymenoptera", "family": "Apidae", "genus": "Apis",
    "species": "Apis mellifera", "scientific_name": "Apis mellifera", "common_name": "Western Honey Bee",
}


def write_csv(path: Path, rows: list[dict[str, str]], columns: tuple[str, ...] = CATALOG_COLUMNS) -> Path:
    lines = [",".join(columns)] + [",".join(r.get(c, "") for c in columns) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_reads_csv_and_parquet_alike(tmp_path: Path) -> None:
    csv_path = write_csv(tmp_path / "catalog.csv", [ROW, ROW | {"uuid": "b", "order": ""}])
    from_csv = read_catalog(csv_path)
    pq.write_table(pa.Table.from_pylist([ROW, ROW | {"uuid": "b", "order": None}]), tmp_path / "c.parquet")
    from_parquet = read_catalog(tmp_path / "c.parquet")
    assert from_csv.select(CATALOG_COLUMNS).to_pylist() == from_parquet.select(CATALOG_COLUMNS).to_pylist()
    assert from_csv.column("order").to_pylist() == ["Hymenoptera", None]


def test_missing_column_names_file_and_field(tmp_path: Path) -> None:
    columns = tuple(c for c in CATALOG_COLUMNS if c != "family")
    path = write_csv(tmp_path / "catalog.csv", [ROW], columns)
    with pytest.raises(InputFormatError) as info:
        read_catalog(path)
    message = info.value.render()
    assert "catalog.csv" in message and "field 'family'" in message


def test_unknown_kingdom_names_row(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "catalog.csv", [ROW, ROW | {"uuid": "x", "kingdom": "Animalis"}])
    with pytest.raises(InputFormatError) as info:
        read_catalog(path)
    assert info.value.row == 3 and info.value.field == "kingdom"
    assert "Animalis" in info.value.render()


def test_metazoa_is_animalia(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "catalog.csv", [ROW | {"kingdom": "Metazoa"}])
    assert read_catalog(path).column("kingdom").to_pylist() == ["Animalia"]


def test_truncated_parquet_is_a_clear_error(tmp_path: Path) -> None:
    pq.write_table(pa.Table.from_pylist([ROW] * 50), tmp_path / "c.parquet")
    data = (tmp_path / "c.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputFormatError) as info:
        read_catalog(tmp_path / "cut.parquet")
    assert "cut.parquet" in info.value.render() and "truncated" in info.value.render()


def test_duplicate_uuid_names_both_rows(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "catalog.csv", [ROW, ROW])
    with pytest.raises(InputFormatError) as info:
        read_catalog(path)
    assert info.value.row == 3 and "row 2" in info.value.render()
