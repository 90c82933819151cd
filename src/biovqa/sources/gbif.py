"""Reader for the GBIF Backbone Taxonomy Darwin Core Archive (the taxonomy behind Bio-VQA Component 1).

The Backbone ships as ``backbone.zip`` (~926 MB, ~7.7M ``Taxon.tsv`` rows); unpacked it is a folder
with the same members. Both are read in their native layout:

* ``meta.xml`` maps column positions to Darwin Core terms for the core (``Taxon.tsv``) and each
  extension (``VernacularName.tsv`` …); columns are found by term, never by position.
* Files are UTF-8, tab-separated, with **no quote character** (fields hold stray ``"``), one
  header line, and the empty string means null.

Tables are streamed in Arrow record batches through ``pyarrow.csv.open_csv`` with quoting turned
off, so the full Backbone is read in bounded memory. A row with the wrong number of fields, a
missing member or a missing required column raises :class:`~biovqa.errors.InputFormatError`
naming the file, the row (1-based line number, header included) and the field.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from xml.etree import ElementTree

import pyarrow as pa
import pyarrow.csv as pa_csv

from biovqa.bench.paths import contained_path, lexical_escape_reason
from biovqa.errors import InputFormatError, MissingResourceError, PathEscapeError
from biovqa.sources.validate import MAX_LINE_CHARS

#: The 23 columns of the Backbone's ``Taxon.tsv``, in file order (checked against the published archive).
TAXON_COLUMNS: tuple[str, ...] = (
    "taxonID",
    "datasetID",
    "parentNameUsageID",
    "acceptedNameUsageID",
    "originalNameUsageID",
    "scientificName",
    "scientificNameAuthorship",
    "canonicalName",
    "genericName",
    "specificEpithet",
    "infraspecificEpithet",
    "taxonRank",
    "nameAccordingTo",
    "namePublishedIn",
    "taxonomicStatus",
    "nomenclaturalStatus",
    "taxonRemarks",
    "kingdom",
    "phylum",
    "class",
    "order",
    "family",
    "genus",
)
#: The 8 columns of ``VernacularName.tsv`` (the first is the core id, ``taxonID``).
VERNACULAR_COLUMNS: tuple[str, ...] = (
    "taxonID",
    "vernacularName",
    "language",
    "country",
    "countryCode",
    "sex",
    "lifeStage",
    "source",
)
#: Taxon columns the taxonomy index needs.
TAXON_INDEX_COLUMNS: tuple[str, ...] = (
    "taxonID",
    "parentNameUsageID",
    "acceptedNameUsageID",
    "canonicalName",
    "taxonRank",
    "taxonomicStatus",
    "kingdom",
    "phylum",
    "class",
    "order",
    "family",
    "genus",
)
#: Vernacular columns the taxonomy index needs.
VERNACULAR_INDEX_COLUMNS: tuple[str, ...] = ("taxonID", "vernacularName", "language")

TAXON_ROW_TYPE = "http://rs.tdwg.org/dwc/terms/Taxon"
VERNACULAR_ROW_TYPE = "http://rs.gbif.org/terms/1.0/VernacularName"
META_FILE = "meta.xml"
_DWC_TEXT_NS = "{http://rs.tdwg.org/dwc/text/}"
_BACKBONE_HINT = (
    "pass the GBIF Backbone DwC-A: backbone.zip or the folder it unpacks to "
    "(meta.xml, Taxon.tsv, VernacularName.tsv)"
)
DEFAULT_BLOCK_SIZE = 16 << 20  # bytes of text per Arrow batch (~50K Taxon rows)


@dataclass(frozen=True)
class ArchiveFile:
    """One data file of the archive as ``meta.xml`` describes it."""

    location: str  # member name, e.g. "Taxon.tsv"
    row_type: str
    columns: tuple[str, ...]  # term local name per column position ("" where meta.xml names none)
    header_lines: int
    delimiter: str
    quote: str  # "" = no quoting (the Backbone)
    encoding: str

    def column_index(self, term: str) -> int | None:
        return self.columns.index(term) if term in self.columns else None


@dataclass(frozen=True)
class BackboneArchive:
    """An opened Backbone DwC-A: where it is and what its ``meta.xml`` says."""

    path: Path  # the zip file or the folder
    is_zip: bool
    taxon: ArchiveFile
    vernacular: ArchiveFile | None

    def describe(self, member: str) -> str:
        """Path shown in messages: ``backbone.zip!Taxon.tsv`` or ``folder/Taxon.tsv``."""
        return f"{self.path}!{member}" if self.is_zip else str(self.path / member)

    @contextmanager
    def open_member(self, member: str) -> Iterator[IO[bytes]]:
        """Open a member for binary reading (streamed, never fully loaded)."""
        if self.is_zip:
            with zipfile.ZipFile(self.path) as archive:
                name = _zip_member_name(archive, member)
                if name is None:
                    raise InputFormatError(
                        f"{member} is not in the archive", file=self.path, field=member,
                        hint=_BACKBONE_HINT,
                    )
                try:
                    with archive.open(name) as handle:
                        yield handle
                except (zlib.error, zipfile.BadZipFile, EOFError) as error:
                    # corrupt deflate data or a CRC mismatch surface while the member is read
                    raise InputFormatError(f"the archive member is corrupt ({error})", file=self.describe(name),
                                           field=member, hint="the archive is damaged; re-download the Backbone"
                                           ) from None
        else:
            target = contained_path(self.path, member, file=self.path / META_FILE, field="location",
                                    what="data file")
            if not target.is_file():
                raise InputFormatError(f"{member} is missing from the Backbone folder", file=target,
                                       field=member, hint=_BACKBONE_HINT)
            with open(target, "rb") as handle:
                yield handle

    def member_size(self, member: str) -> int:
        """Uncompressed size in bytes (for progress displays)."""
        if self.is_zip:
            with zipfile.ZipFile(self.path) as archive:
                name = _zip_member_name(archive, member)
                return 0 if name is None else archive.getinfo(name).file_size
        target = contained_path(self.path, member, file=self.path / META_FILE, field="location",
                                what="data file")
        return target.stat().st_size if target.is_file() else 0


def _zip_member_name(archive: zipfile.ZipFile, member: str) -> str | None:
    """Find a member at the archive root or one folder down (some re-zips add a folder)."""
    names = archive.namelist()
    if member in names:
        return member
    nested = sorted(n for n in names if n.endswith("/" + member) and n.count("/") == 1)
    return nested[0] if nested else None


def _term_name(term: str) -> str:
    """Local name of a term URI: ``http://rs.tdwg.org/dwc/terms/taxonID`` → ``taxonID``."""
    return term.rstrip("/").rsplit("/", 1)[-1].rsplit("#", 1)[-1]


def _unescape(value: str) -> str:
    return value.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")


def _parse_file_element(element: ElementTree.Element, meta_path: str) -> ArchiveFile:
    location_element = element.find(f"{_DWC_TEXT_NS}files/{_DWC_TEXT_NS}location")
    if location_element is None or not (location_element.text or "").strip():
        raise InputFormatError("a <core>/<extension> has no <files><location>", file=meta_path,
                               field="location")
    location = location_element.text.strip()  # type: ignore[union-attr]
    escape = lexical_escape_reason(location)
    if escape is not None:  # the data file must lie inside the archive (or its folder)
        raise PathEscapeError(f"the data file {location!r} leaves the archive: {escape}", file=meta_path,
                              field="location", hint=_BACKBONE_HINT)
    by_index: dict[int, str] = {}
    for tag in ("id", "coreid"):
        id_element = element.find(f"{_DWC_TEXT_NS}{tag}")
        if id_element is not None and id_element.get("index") is not None:
            by_index[int(id_element.get("index", "0"))] = "taxonID"
    for field in element.findall(f"{_DWC_TEXT_NS}field"):
        index, term = field.get("index"), field.get("term")
        if index is None or term is None:
            continue  # a constant-valued field (default=…) has no column
        try:
            by_index[int(index)] = _term_name(term)
        except ValueError:
            raise InputFormatError(f"field index {index!r} is not an integer", file=meta_path,
                                   field="index") from None
    width = max(by_index) + 1 if by_index else 0
    columns = tuple(by_index.get(i, "") for i in range(width))
    return ArchiveFile(
        location=location,
        row_type=element.get("rowType", ""),
        columns=columns,
        header_lines=int(element.get("ignoreHeaderLines", "0") or 0),
        delimiter=_unescape(element.get("fieldsTerminatedBy", "\\t")),
        quote=element.get("fieldsEnclosedBy", ""),
        encoding=element.get("encoding", "UTF-8"),
    )


def parse_meta_xml(text: str | bytes, *, file: str) -> tuple[ArchiveFile, ArchiveFile | None]:
    """Read a DwC-A ``meta.xml``: the core (must be the Taxon row type) and the VernacularName
    extension if the archive has one."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise InputFormatError(f"meta.xml is not valid XML: {exc}", file=file,
                               row=exc.position[0], hint=_BACKBONE_HINT) from None
    core_element = root.find(f"{_DWC_TEXT_NS}core")
    if core_element is None:
        raise InputFormatError("meta.xml has no <core> element", file=file, field="core",
                               hint=_BACKBONE_HINT)
    core = _parse_file_element(core_element, file)
    if core.row_type != TAXON_ROW_TYPE:
        raise InputFormatError(f"core rowType is {core.row_type!r}, expected {TAXON_ROW_TYPE!r}",
                               file=file, field="rowType", hint=_BACKBONE_HINT)
    vernacular = None
    for element in root.findall(f"{_DWC_TEXT_NS}extension"):
        if element.get("rowType") == VERNACULAR_ROW_TYPE:
            vernacular = _parse_file_element(element, file)
    for described in (core, vernacular):
        if described is None:
            continue
        if described.quote not in ("",):
            raise InputFormatError(
                f"{described.location}: fieldsEnclosedBy={described.quote!r}; the Backbone has no "
                "quote character", file=file, field="fieldsEnclosedBy", hint=_BACKBONE_HINT)
        if len(described.delimiter) != 1:
            raise InputFormatError(
                f"{described.location}: fieldsTerminatedBy={described.delimiter!r} is not one "
                "character", file=file, field="fieldsTerminatedBy")
    return core, vernacular


def open_backbone(path: str | Path) -> BackboneArchive:
    """Open a Backbone DwC-A (``backbone.zip`` or its folder) and read its ``meta.xml``."""
    path = Path(path)
    if not path.exists():
        raise MissingResourceError("GBIF Backbone not found", file=path, hint=_BACKBONE_HINT)
    is_zip = path.is_file()
    if is_zip and not zipfile.is_zipfile(path):
        raise InputFormatError("not a zip archive", file=path, hint=_BACKBONE_HINT)
    placeholder = ArchiveFile("Taxon.tsv", TAXON_ROW_TYPE, TAXON_COLUMNS, 1, "\t", "", "UTF-8")
    probe = BackboneArchive(path=path, is_zip=is_zip, taxon=placeholder, vernacular=None)
    with probe.open_member(META_FILE) as handle:
        meta_text = handle.read()
    taxon, vernacular = parse_meta_xml(meta_text, file=probe.describe(META_FILE))
    return BackboneArchive(path=path, is_zip=is_zip, taxon=taxon, vernacular=vernacular)


class _CountingReader(io.RawIOBase):
    """Wraps a binary stream and reports bytes read to a callback (progress display)."""

    def __init__(self, raw: IO[bytes], on_read: Any) -> None:
        self._raw = raw
        self._on_read = on_read

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(len(buffer))
        count = len(data)
        buffer[:count] = data
        if count:
            self._on_read(count)
        return count


def _find_bad_line(archive: BackboneArchive, described: ArchiveFile) -> tuple[int, int]:
    """Slow path after a parse error: the first line whose field count differs from the header's,
    each line read with a bound (a line longer than :data:`MAX_LINE_CHARS` is reported, with -1
    fields, before it is held in memory). Returns (1-based line number, number of fields found)."""
    expected = len(described.columns)
    delimiter = described.delimiter.encode()
    with archive.open_member(described.location) as handle:
        number = 0
        while True:
            line = handle.readline(MAX_LINE_CHARS + 1)
            if not line:
                break
            number += 1
            if len(line) > MAX_LINE_CHARS and not line.endswith(b"\n"):
                return number, -1
            if number <= described.header_lines:
                continue
            fields = line.rstrip(b"\r\n").count(delimiter) + 1
            if fields != expected:
                return number, fields
    return 0, expected


def _line_too_long(shown: str, number: int) -> InputFormatError:
    return InputFormatError(f"line longer than {MAX_LINE_CHARS:,} bytes: not a Backbone table (a Taxon or "
                            "VernacularName line is a few hundred bytes)", file=shown, row=number or None,
                            hint=_BACKBONE_HINT)


def _check_header(archive: BackboneArchive, described: ArchiveFile, handle: IO[bytes]) -> bytes:
    """Read the header line(s); the header must have as many fields as meta.xml describes."""
    header = b""
    for number in range(1, described.header_lines + 1):
        header = handle.readline(MAX_LINE_CHARS + 1)  # bounded: a 400 MB "line" is refused, not read
        if len(header) > MAX_LINE_CHARS and not header.endswith(b"\n"):
            raise _line_too_long(archive.describe(described.location), number)
        found = header.rstrip(b"\r\n").count(described.delimiter.encode()) + 1
        if number == 1 and found != len(described.columns):
            raise InputFormatError(
                f"header has {found} fields, meta.xml describes {len(described.columns)}",
                file=archive.describe(described.location), row=number,
                field=(described.columns[found] if found < len(described.columns)
                       else f"column {len(described.columns) + 1}") or None,
                hint="the file and meta.xml do not belong together; re-download the archive",
            )
    return header


def iter_batches(
    archive: BackboneArchive,
    described: ArchiveFile,
    columns: Sequence[str],
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
    progress: Any = None,
) -> Iterator[pa.RecordBatch]:
    """Stream ``columns`` (term names, all read as strings; empty → null) of one archive file in
    record batches. ``progress(n_bytes)`` is called as bytes are read.

    Line numbers are implicit: data row ``k`` (0-based over the whole stream) is line
    ``k + 1 + header_lines`` (see :func:`data_line`), because empty lines are kept as rows and a
    value cannot span lines when there is no quote character.
    """
    shown = archive.describe(described.location)
    missing = [c for c in columns if described.column_index(c) is None]
    if missing:
        raise InputFormatError(
            f"required column(s) {missing} are not described in meta.xml for {described.location}",
            file=archive.describe(META_FILE), field=missing[0], hint=_BACKBONE_HINT)
    # Column names come from meta.xml (positions), not the header line, so a renamed header
    # cannot shift the mapping; unnamed positions get placeholder names.
    names = [c if c else f"_column{i}" for i, c in enumerate(described.columns)]
    bad_rows: list[Any] = []

    def on_invalid(row: Any) -> str:
        bad_rows.append(row)
        return "error"

    read_options = pa_csv.ReadOptions(
        column_names=names, skip_rows=0, block_size=block_size, use_threads=True,
        encoding="utf8" if described.encoding.lower().replace("-", "") == "utf8" else described.encoding,
    )
    parse_options = pa_csv.ParseOptions(
        delimiter=described.delimiter, quote_char=False, double_quote=False, escape_char=False,
        newlines_in_values=False, ignore_empty_lines=False, invalid_row_handler=on_invalid,
    )
    convert_options = pa_csv.ConvertOptions(
        column_types={c: pa.string() for c in columns}, include_columns=list(columns),
        null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=True,
    )
    with archive.open_member(described.location) as raw:
        source: Any = raw if progress is None else _CountingReader(raw, progress)
        stream = io.BufferedReader(source, buffer_size=1 << 20)
        _check_header(archive, described, stream)
        if not stream.peek(1):  # type: ignore[attr-defined]
            return  # a header and no data rows
        try:
            reader = pa_csv.open_csv(stream, read_options=read_options,
                                     parse_options=parse_options, convert_options=convert_options)
            yield from reader
        except pa.ArrowInvalid as exc:
            if bad_rows or "straddl" in str(exc):  # "straddles two block boundaries": a huge line
                line, found = _find_bad_line(archive, described)
                if found < 0:
                    raise _line_too_long(shown, line) from None
                expected = len(described.columns)
                # the first missing field, or the first field beyond the described ones
                field = described.columns[found] if found < expected else f"column {expected + 1}"
                raise InputFormatError(
                    f"expected {expected} tab-separated fields, found {found}",
                    file=shown, row=line or None, field=field or f"column {found + 1}",
                    hint="a field contains a tab or the line is truncated; the Backbone has no "
                    "quoting, so every line must have exactly one field per meta.xml column",
                ) from None
            raise InputFormatError(f"cannot parse: {exc}", file=shown,
                                   hint="the file is not UTF-8 tab-separated text") from None


def data_line(row_in_stream: int, described: ArchiveFile) -> int:
    """1-based line number (header counted) of the ``row_in_stream``-th data row (0-based)."""
    return row_in_stream + 1 + described.header_lines


def iter_taxon_batches(
    archive: BackboneArchive,
    columns: Sequence[str] = TAXON_INDEX_COLUMNS,
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
    progress: Any = None,
) -> Iterator[pa.RecordBatch]:
    """Stream ``Taxon.tsv`` (see :func:`iter_batches`)."""
    return iter_batches(archive, archive.taxon, columns, block_size=block_size, progress=progress)


def iter_vernacular_batches(
    archive: BackboneArchive,
    columns: Sequence[str] = VERNACULAR_INDEX_COLUMNS,
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
    progress: Any = None,
) -> Iterator[pa.RecordBatch]:
    """Stream ``VernacularName.tsv``; yields nothing when the archive has no such extension."""
    if archive.vernacular is None:
        return iter(())
    return iter_batches(archive, archive.vernacular, columns, block_size=block_size,
                        progress=progress)


def read_taxa(path: str | Path, columns: Sequence[str] = TAXON_COLUMNS) -> pa.Table:
    """Read a whole ``Taxon.tsv`` into one table (small archives and tests; the index builder
    streams instead)."""
    archive = open_backbone(path)
    batches = list(iter_taxon_batches(archive, columns))
    schema = pa.schema([(c, pa.string()) for c in columns])
    return pa.Table.from_batches(batches, schema=schema)


def read_vernaculars(path: str | Path, columns: Sequence[str] = VERNACULAR_COLUMNS) -> pa.Table:
    """Read a whole ``VernacularName.tsv`` (empty table when the archive has none)."""
    archive = open_backbone(path)
    schema = pa.schema([(c, pa.string()) for c in columns])
    return pa.Table.from_batches(list(iter_vernacular_batches(archive, columns)), schema=schema)
