"""TreeOfLife-200M catalog reader (the image source of Bio-VQA Component 1).

The catalog is Parquet (``dataset/catalog.parquet``) or CSV with one row per image: ``uuid``, the
lineage ``kingdom … genus``, ``species`` (the binomial), ``scientific_name`` and ``common_name``
(multilingual, no language tag). Extra columns are kept. Any rank may be null.

The common names are TaxonoPy's: where a species has no name of its own, TaxonoPy fills in the
name of a higher rank ("Orchid" for the orchid *Laelia rosea*, Erebidae's "Underwing, Tiger,
Tussock, And Allied Moths" for the moth *Laelia rosea*), so an English name here is not always the
species' name; the C1 build counts such names (:func:`biovqa.taxonomy.english.higher_rank_names`).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.bench.folder import read_parquet
from biovqa.records import LINEAGE_COLUMNS

CATALOG_COLUMNS: tuple[str, ...] = ("uuid", *LINEAGE_COLUMNS, "scientific_name", "common_name")

#: Kingdom spellings seen in raw data, mapped to the Backbone's kingdom names.
KINGDOM_ALIASES: dict[str, str] = {
    "Animalia": "Animalia",
    "Metazoa": "Animalia",
    "Plantae": "Plantae",
    "Viridiplantae": "Plantae",
    "Fungi": "Fungi",
    "Chromista": "Chromista",
    "Protozoa": "Protozoa",
    "Bacteria": "Bacteria",
    "Archaea": "Archaea",
    "Viruses": "Viruses",
}


def read_catalog(path: str | Path) -> pa.Table:
    """Read a catalog file, check its columns and kingdom values, and return it as strings.

    Raises :class:`InputFormatError` naming the file, and the row and field where one value is
    wrong (rows are 1-based data rows; for CSV the header is line 1, so data row r is line r+1).
    """
    path = Path(path)
    if not path.exists():
        raise MissingResourceError("catalog not found", file=path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        table = read_parquet(path, what="catalog")
        header_offset = 0
    elif suffix in {".csv", ".tsv"}:
        try:
            table = pacsv.read_csv(
                path,
                parse_options=pacsv.ParseOptions(delimiter="\t" if suffix == ".tsv" else ","),
                convert_options=pacsv.ConvertOptions(
                    column_types={c: pa.string() for c in CATALOG_COLUMNS},
                    strings_can_be_null=True,
                ),
            )
        except pa.ArrowInvalid as exc:
            raise InputFormatError(f"cannot parse catalog: {exc}", file=path) from None
        header_offset = 1
    else:
        raise InputFormatError(
            f"unsupported catalog format {suffix!r}", file=path, hint="use .parquet or .csv"
        )
    missing = [c for c in CATALOG_COLUMNS if c not in table.column_names]
    if missing:
        raise InputFormatError(
            f"catalog lacks required column(s) {', '.join(missing)}",
            file=path,
            field=missing[0],
            hint=f"a TreeOfLife-200M catalog has columns {', '.join(CATALOG_COLUMNS)}",
        )
    columns = {}
    for name in table.column_names:
        column = table.column(name)
        if name in CATALOG_COLUMNS:
            if not pa.types.is_string(column.type) and not pa.types.is_large_string(column.type):
                if pa.types.is_null(column.type):
                    column = column.cast(pa.string())
                else:
                    raise InputFormatError(
                        f"column must hold text, found {column.type}", file=path, field=name
                    )
            column = pc.utf8_trim_whitespace(column.cast(pa.string()))
            column = pc.if_else(pc.equal(column, ""), pa.scalar(None, pa.string()), column)
        columns[name] = column
    table = pa.table(columns)
    _check_uuids(table, path, header_offset)
    return _normalize_kingdoms(table, path, header_offset)


def _check_uuids(table: pa.Table, path: Path, header_offset: int) -> None:
    uuids = table.column("uuid")
    nulls = pc.is_null(uuids)
    if pc.any(nulls).as_py():
        row = pc.index(nulls, True).as_py() + 1 + header_offset
        raise InputFormatError("uuid is empty", file=path, row=row, field="uuid")
    if pc.count_distinct(uuids).as_py() != table.num_rows:
        values = uuids.to_pylist()
        seen: dict[str, int] = {}
        for i, value in enumerate(values):
            if value in seen:
                raise InputFormatError(
                    f"duplicate uuid {value!r} (first at row {seen[value] + 1 + header_offset})",
                    file=path, row=i + 1 + header_offset, field="uuid",
                )
            seen[value] = i


def _normalize_kingdoms(table: pa.Table, path: Path, header_offset: int) -> pa.Table:
    kingdoms = table.column("kingdom")
    known = pa.array(sorted(KINGDOM_ALIASES))
    unknown = pc.and_(pc.is_valid(kingdoms), pc.invert(pc.is_in(kingdoms, known)))
    if pc.any(unknown).as_py():
        row = pc.index(unknown, True).as_py()
        value = kingdoms[row].as_py()
        raise InputFormatError(
            f"unknown kingdom value {value!r}",
            file=path, row=row + 1 + header_offset, field="kingdom",
            hint=f"expected one of {', '.join(sorted(set(KINGDOM_ALIASES.values())))} (or Metazoa/Viridiplantae)",
        )
    mapped = pc.if_else(pc.equal(kingdoms, "Metazoa").fill_null(False), "Animalia", kingdoms)
    mapped = pc.if_else(pc.equal(mapped, "Viridiplantae").fill_null(False), "Plantae", mapped)
    return table.set_column(table.column_names.index("kingdom"), "kingdom", mapped)
