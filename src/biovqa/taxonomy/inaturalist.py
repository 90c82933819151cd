"""iNaturalist's open taxonomy export as a common-name authority (paper §3.1, stage 2).

The export (``inaturalist-taxonomy.dwca.zip``, or that archive unpacked into a folder) is a Darwin
Core Archive of comma-separated, quoted CSV files with one header line. Two members are read:

* ``taxa.csv`` — one row per taxon; used columns ``id`` (iNaturalist taxon id) and
  ``scientificName`` (canonical name, no authorship); ``taxonRank`` is read when present.
  The export's other columns (``taxonID``, ``identifier``, ``parentNameUsageID``, ``kingdom`` …
  ``genus``, ``specificEpithet``, ``infraspecificEpithet``, ``modified``, ``references``) are ignored.
* ``VernacularNames-english.csv`` — one row per English common name; used columns ``id`` (the
  taxon id, joining ``taxa.csv``) and ``vernacularName``; ``language`` is read when present and
  rows tagged with a language other than ``en`` are skipped. The export's other columns
  (``locality``, ``countryCode``, ``source``, ``lexicon``, ``contributor``, ``created``) are ignored.

Assumptions (documented in docs/taxonomy.md): the column layout above is the export's as observed
in public code that reads it; the **first** English row of a taxon in file order is its preferred
common name (the export lists a taxon's names in iNaturalist's preference order), later rows are
fallbacks. Names are matched to species by the normalized scientific name
(:func:`biovqa.text.normalize_c1`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.text import normalize_c1

TAXA_MEMBER = "taxa.csv"
ENGLISH_MEMBER = "VernacularNames-english.csv"
TAXA_COLUMNS: tuple[str, ...] = ("id", "scientificName")
VERNACULAR_COLUMNS: tuple[str, ...] = ("id", "vernacularName")
HINT = ("pass the iNaturalist taxonomy export (inaturalist-taxonomy.dwca.zip, or its folder) holding "
        f"{TAXA_MEMBER} and {ENGLISH_MEMBER}")


def _member_name(names: list[str], wanted: str) -> str | None:
    """The archive member called ``wanted`` (case-insensitive, in any sub-folder)."""
    for name in sorted(names):
        if name.rsplit("/", 1)[-1].lower() == wanted.lower():
            return name
    return None


@contextmanager
def _open_member(path: Path, member: str) -> Iterator[tuple[IO[str], str]]:
    """Text handle on ``member`` of the export and the name to report in errors."""
    if path.is_dir():
        found = _member_name([p.name for p in path.iterdir()], member)
        if found is None:
            raise MissingResourceError(f"iNaturalist export lacks {member}", file=path, hint=HINT)
        with open(path / found, newline="", encoding="utf-8-sig") as handle:
            yield handle, str(path / found)
        return
    if not zipfile.is_zipfile(path):
        raise InputFormatError("not a zip archive or a folder", file=path, hint=HINT)
    with zipfile.ZipFile(path) as archive:
        found = _member_name(archive.namelist(), member)
        if found is None:
            raise MissingResourceError(f"iNaturalist export lacks {member}", file=path, hint=HINT)
        with archive.open(found) as raw:
            yield io.TextIOWrapper(raw, encoding="utf-8-sig", newline=""), f"{path}:{found}"


def _rows(handle: IO[str], shown: str, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    reader = csv.reader(handle)
    header = next(reader, None)
    if header is None:
        raise InputFormatError("empty file; expected a header line", file=shown, row=1)
    header = [h.strip() for h in header]
    for column in required:
        if column not in header:
            raise InputFormatError(f"missing column {column!r} (header: {header})", file=shown, row=1,
                                   field=column, hint=HINT)
    for record in reader:
        row = reader.line_num
        if not any(cell.strip() for cell in record):
            continue
        if len(record) != len(header):
            raise InputFormatError(f"expected {len(header)} fields, found {len(record)}", file=shown,
                                   row=row, hint="quote values that contain commas")
        yield row, {name: value.strip() for name, value in zip(header, record)}


class INaturalistNames:
    """English common names from an iNaturalist taxonomy export, by scientific name."""

    name = "inaturalist"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise MissingResourceError("iNaturalist export not found", file=self.path, hint=HINT)
        scientific: dict[str, str] = {}
        with _open_member(self.path, TAXA_MEMBER) as (handle, shown):
            for row, record in _rows(handle, shown, TAXA_COLUMNS):
                taxon_id, name = record["id"], record["scientificName"]
                if not taxon_id:
                    raise InputFormatError("empty taxon id", file=shown, row=row, field="id")
                if name:
                    scientific[taxon_id] = normalize_c1(name)
        names: dict[str, list[str]] = {}
        with _open_member(self.path, ENGLISH_MEMBER) as (handle, shown):
            for row, record in _rows(handle, shown, VERNACULAR_COLUMNS):
                taxon_id, vernacular = record["id"], record["vernacularName"]
                if not taxon_id:
                    raise InputFormatError("empty taxon id", file=shown, row=row, field="id")
                language = record.get("language", "").lower()
                if not vernacular or (language and language not in ("en", "eng", "english")):
                    continue
                key = scientific.get(taxon_id)
                if key is None:
                    continue  # a name of a taxon the export does not list: nothing to match it by
                listed = names.setdefault(key, [])
                if vernacular not in listed:
                    listed.append(vernacular)
        self._names = names

    def __len__(self) -> int:
        return len(self._names)

    def candidates(self, scientific_names: list[str]) -> list[str]:
        """English names of the first of ``scientific_names`` (normalized) the export lists,
        preferred name first."""
        for key in scientific_names:
            if key in self._names:
                return list(self._names[key])
        return []

    def card(self) -> dict[str, Any]:
        """Name, sha256 and size of what was read (for the benchmark manifest: the file or folder
        name only, never the builder's path)."""
        files = [self.path] if self.path.is_file() else sorted(
            p for p in self.path.iterdir() if p.name.lower() in (TAXA_MEMBER.lower(), ENGLISH_MEMBER.lower()))
        digest = hashlib.sha256()
        size = 0
        for file in files:
            with open(file, "rb") as handle:
                digest.update(hashlib.file_digest(handle, "sha256").digest())
            size += file.stat().st_size
        return {"file": self.path.name, "sha256": digest.hexdigest(), "bytes": size,
                "taxa_with_english_names": len(self._names)}


#: Stage-2 authorities this build can consult, in the paper's order of preference (Wikipedia's
#: lead sentence, the paper's last resort, needs the network and is not offered).
AUTHORITIES: tuple[str, ...] = ("inaturalist",)


def open_authority(name: str, path: str | Path) -> INaturalistNames:
    """Open a named stage-2 authority."""
    if name == "inaturalist":
        return INaturalistNames(path)
    from biovqa.errors import BiovqaError

    raise BiovqaError(f"unknown common-name authority {name!r}", field="authority",
                      hint=f"choose from {', '.join(AUTHORITIES)} (as NAME=PATH)")
