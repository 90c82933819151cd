"""The cached GBIF Backbone index: accepted taxa, the synonym relation and vernacular names.

``build_index`` reads the Backbone DwC-A once (streamed, see :mod:`biovqa.sources.gbif`) and
writes a folder::

    INDEX/
      taxa.parquet        accepted/doubtful taxa of rank kingdom … species: taxon_id, name
                          (canonicalName), normalized, rank, status, parent_id, kingdom … genus
                          (in Taxon.tsv row order)
      names.parquet       the synonym relation S of paper App. C.2 (Eqs. 6–7) (Eqs. 6–7): one row per
                          (normalized name, accepted taxon) pair
      vernaculars.parquet vernacular names (all languages) keyed by accepted taxon
      index.json          card: source files and sha256, row counts, rows/s, biovqa version,
                          and the sha256 of each part above (checked by TaxonomyIndex.verify)

The folder is written beside ``INDEX`` and renamed into place whole (docs/reliability.md).

The synonym relation ``S(ŷ)`` maps a normalized name (:func:`biovqa.text.normalize_c1`) to the
**set** of accepted taxa it resolves to:

* a name borne by an accepted or doubtful taxon resolves to that taxon only (itself; several
  taxa when the name is a homonym across kingdoms) — synonym usages of the same name are ignored;
* otherwise a synonym name (``taxonomicStatus`` in :data:`SYNONYM_STATUSES`, with an
  ``acceptedNameUsageID``) resolves to its accepted taxon; a ``misapplied`` name is *not* a
  synonym (paper C.2: a synonym is an older name for the same taxon, a misapplication is the name
  of another taxon used in error) and earns no soft credit; such rows are counted in the card
  (``counts.rows_not_synonym_by_status``) and the statuses used are recorded
  (``accepted_statuses``, ``synonym_statuses``); a pro-parte synonym occurs as several
  rows with the same canonicalName and different ``acceptedNameUsageID`` and so resolves to all
  of them (``reptilia`` → {squamata, testudines, crocodylia, sphenodontia});
* the relation is one-way: nothing maps an accepted name to its synonyms.

Only accepted/doubtful taxa of rank kingdom … species are targets; a synonym whose accepted
taxon is of another rank (subspecies, unranked …) or names no Taxon row at all is left out of the
relation and counted in the card (``synonym_rows_unresolved``; the second kind also in
``synonym_rows_accepted_id_not_found``). Chains (a synonym pointing at a synonym) are followed up to :data:`MAX_SYNONYM_HOPS` hops.

All Parquet files are written in a deterministic order (taxa in Taxon.tsv order, the relation
and the vernaculars sorted) with fixed settings, so the same Backbone gives byte-identical files
(the card's timing fields are the only thing that changes between builds).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa._version import __version__
from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.bench.folder import read_parquet, sha256_file, write_json, write_parquet
from biovqa.sources import gbif
from biovqa.text import _C1_PREFIX, normalize_c1_array

INDEX_CARD = "index.json"
TAXA_FILE = "taxa.parquet"
NAMES_FILE = "names.parquet"
VERNACULARS_FILE = "vernaculars.parquet"
#: The parts whose SHA-256 the card records (checked by :meth:`TaxonomyIndex.verify`).
INDEX_FILES = (TAXA_FILE, NAMES_FILE, VERNACULARS_FILE)
INDEX_FORMAT = 2  # 2: misapplied names are no longer synonyms

#: Ranks kept as accepted targets, top to bottom.
INDEX_RANKS: tuple[str, ...] = ("kingdom", "phylum", "class", "order", "family", "genus", "species")
#: Lineage columns carried per taxon (the Backbone's classification columns).
LINEAGE_RANKS: tuple[str, ...] = INDEX_RANKS[:-1]
#: taxonomicStatus values of taxa that resolve to themselves.
ACCEPTED_STATUSES: tuple[str, ...] = ("accepted", "doubtful")
#: taxonomicStatus values of names that enter S(ŷ) as synonyms (GBIF TaxonomicStatus vocabulary).
#: ``misapplied`` is deliberately absent.
SYNONYM_STATUSES: tuple[str, ...] = ("synonym", "heterotypic synonym", "homotypic synonym", "proparte synonym")
MAX_SYNONYM_HOPS = 4
ENGLISH = "en"

BUILD_HINT = "build it with `biovqa taxonomy index BACKBONE --out INDEX`"

#: Columns of :meth:`TaxonomyIndex.accepted_targets`.
TARGET_COLUMNS: tuple[str, ...] = ("name", "accepted", "accepted_name", "rank", "status")


# --------------------------------------------------------------------------------------------
# building


def _parse_ids(column: pa.Array, *, file: str, field: str, first_line: int,
               required: bool) -> pa.Array:
    """Cast an id column (strings) to int64; a non-integer (or a missing required id) raises
    naming its line."""
    if required and column.null_count:
        position = pc.index(pc.is_null(column), True).as_py()
        raise InputFormatError("empty id (an empty line or a row without an id?)", file=file,
                               row=first_line + position, field=field,
                               hint="every Taxon.tsv row needs an integer taxonID")
    try:
        return pc.cast(column, pa.int64())  # fast path; on failure find the offending row
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    valid = pc.match_substring_regex(column, r"^\s*[+-]?\d{1,18}\s*$")
    bad = pc.and_(pc.invert(pc.fill_null(valid, True)), pc.is_valid(column))
    if pc.any(bad).as_py():
        position = pc.index(bad, True).as_py()
        raise InputFormatError(f"expected an integer id, found {column[position].as_py()!r}",
                               file=file, row=first_line + position, field=field,
                               hint="GBIF Backbone ids are integers")
    return pc.cast(pc.utf8_trim_whitespace(column), pa.int64())


def _read_taxon_rows(archive: gbif.BackboneArchive, progress: Any) -> pa.Table:
    """Stream Taxon.tsv into one table of the index columns (ids as int64, text dictionary
    encoded to bound memory)."""
    shown = archive.describe(archive.taxon.location)
    task = progress.add_task("Taxon.tsv", total=archive.member_size(archive.taxon.location) or None)
    batches: list[pa.RecordBatch] = []
    rows_seen = 0
    for batch in gbif.iter_taxon_batches(archive, progress=lambda n: progress.advance(task, n)):
        first_line = gbif.data_line(rows_seen, archive.taxon)
        columns: dict[str, pa.Array] = {
            "taxon_id": _parse_ids(batch.column("taxonID"), file=shown, field="taxonID",
                                   first_line=first_line, required=True),
            "parent_id": _parse_ids(batch.column("parentNameUsageID"), file=shown,
                                    field="parentNameUsageID", first_line=first_line, required=False),
            "accepted_id": _parse_ids(batch.column("acceptedNameUsageID"), file=shown,
                                      field="acceptedNameUsageID", first_line=first_line,
                                      required=False),
            "name": batch.column("canonicalName"),
            "rank": pc.utf8_lower(batch.column("taxonRank")).dictionary_encode(),
            "status": pc.utf8_lower(batch.column("taxonomicStatus")).dictionary_encode(),
        }
        for rank in LINEAGE_RANKS:
            columns[rank] = batch.column(rank).dictionary_encode()
        rows_seen += batch.num_rows
        batches.append(pa.RecordBatch.from_pydict(columns))
    if not batches:
        raise InputFormatError("Taxon.tsv has no data rows", file=shown, row=2,
                               hint="the archive is truncated; re-download the Backbone")
    table = pa.Table.from_batches(batches).unify_dictionaries().combine_chunks()
    _check_unique_ids(table.column("taxon_id"), file=shown, described=archive.taxon)
    _check_parents(table, file=shown, described=archive.taxon)
    return table


def _check_parents(table: pa.Table, *, file: str, described: gbif.ArchiveFile) -> None:
    """A parentNameUsageID must name a row of Taxon.tsv: a dangling parent would cut the lineage
    the hierarchy metrics walk, silently."""
    parents = table.column("parent_id")
    dangling = pc.and_(pc.is_valid(parents), pc.invert(pc.is_in(parents, value_set=table.column("taxon_id"))))
    if not pc.any(dangling).as_py():
        return
    position = int(np.flatnonzero(dangling.to_numpy(zero_copy_only=False))[0])
    raise InputFormatError(
        f"parentNameUsageID {parents[position].as_py()} names no row of Taxon.tsv",
        file=file, row=gbif.data_line(position, described), field="parentNameUsageID",
        hint="the archive is truncated or a slice of the Backbone; use the complete Taxon.tsv")


def _check_unique_ids(ids: pa.ChunkedArray, *, file: str, described: gbif.ArchiveFile) -> None:
    """taxonID is the key of every relation: a repeated id is an error naming the line that
    repeats it and the line it first appeared on."""
    if pc.count_distinct(ids).as_py() == len(ids):
        return
    values = ids.to_numpy()
    order = np.argsort(values, kind="stable")
    repeats = np.flatnonzero(values[order][1:] == values[order][:-1]) + 1
    second = int(order[repeats].min())
    first = int(np.flatnonzero(values == values[second])[0])
    raise InputFormatError(
        f"taxonID {int(values[second])} repeats line {gbif.data_line(first, described)}",
        file=file, row=gbif.data_line(second, described), field="taxonID",
        hint="taxonIDs must be unique; the archive is damaged or two files were concatenated")


def _decode(table: pa.Table) -> pa.Table:
    """Dictionary columns back to plain strings (for stable Parquet bytes and simple joins)."""
    columns = []
    for column in table.columns:
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        columns.append(column)
    return pa.table(columns, names=table.column_names)


# Strings of ASCII letters in single-space-separated words normalize to their lower-case form
# unless they open with one of normalize_c1's boilerplate words; most Backbone names are such.
_PLAIN_NAME = r"^[A-Za-z]+(?: [A-Za-z]+)*$"


def _normalize(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """:func:`~biovqa.text.normalize_c1_array` over a large column, computed once per distinct
    value, with a fast path (ASCII lower-casing) for plain names that gives the same result."""
    encoded = pc.dictionary_encode(values)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    dictionary = encoded.dictionary
    lowered = pc.ascii_lower(dictionary)
    plain = pc.and_(pc.match_substring_regex(dictionary, _PLAIN_NAME),
                    pc.invert(pc.match_substring_regex(lowered, _C1_PREFIX)))
    plain = pc.fill_null(plain, False)
    hard = pc.invert(plain)
    if pc.any(hard).as_py():
        lowered = pc.replace_with_mask(lowered, hard, normalize_c1_array(dictionary.filter(hard)))
    return pc.fill_null(pc.take(lowered, encoded.indices), "")


def _resolve_targets(rows: pa.Table, target_ids: pa.Array) -> tuple[pa.Array, int]:
    """For each synonym row, the id of the accepted target taxon it points to, following
    synonym chains; null where it reaches no target. Returns (ids, rows left unresolved)."""
    pointer = rows.column("accepted_id").combine_chunks()
    all_ids = rows.column("taxon_id").combine_chunks()
    all_accepted = rows.column("accepted_id").combine_chunks()
    for _ in range(MAX_SYNONYM_HOPS):
        is_target = pc.fill_null(pc.is_in(pointer, value_set=target_ids), False)
        if pc.all(pc.or_(is_target, pc.is_null(pointer))).as_py():
            break
        position = pc.index_in(pointer, value_set=all_ids)
        next_pointer = pc.take(all_accepted, position)
        pointer = pc.if_else(is_target, pointer, next_pointer)
    is_target = pc.fill_null(pc.is_in(pointer, value_set=target_ids), False)
    unresolved = int(len(pointer) - pc.sum(is_target).as_py()) if len(pointer) else 0
    return pc.if_else(is_target, pointer, pa.scalar(None, pa.int64())), unresolved


def _sort(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    return table.take(pc.sort_indices(table, sort_keys=[(k, "ascending") for k in keys]))


def _build_tables(rows: pa.Table) -> tuple[pa.Table, pa.Table, pa.Table, dict[str, int]]:
    """From Taxon rows: the taxa table, the synonym relation and the id→accepted map used to key
    vernacular names."""
    status = rows.column("status").cast(pa.string())
    rank = rows.column("rank").cast(pa.string())
    named = pc.is_valid(rows.column("name"))
    is_accepted = pc.fill_null(pc.is_in(status, value_set=pa.array(ACCEPTED_STATUSES)), False)
    in_ranks = pc.fill_null(pc.is_in(rank, value_set=pa.array(INDEX_RANKS)), False)
    target_mask = pc.and_(pc.and_(is_accepted, in_ranks), named)
    is_synonym = pc.fill_null(pc.is_in(status, value_set=pa.array(SYNONYM_STATUSES)), False)
    synonym_mask = pc.and_(is_synonym, pc.is_valid(rows.column("accepted_id")))
    other_status = pc.and_(pc.invert(pc.or_(is_accepted, is_synonym)), pc.is_valid(status))
    not_synonym = int(pc.sum(other_status).as_py() or 0) if rows.num_rows else 0

    taxa = _decode(rows.filter(target_mask))
    taxa = taxa.append_column("normalized", _normalize(taxa.column("name")))
    taxa = taxa.filter(pc.not_equal(taxa.column("normalized"), ""))
    taxa = taxa.select(["taxon_id", "name", "normalized", "rank", "status", "parent_id",
                        *LINEAGE_RANKS])
    # taxa keep the Backbone's row order: deterministic, and a 7M-row string sort saved
    target_ids = taxa.column("taxon_id").combine_chunks()

    synonyms = _decode(rows.filter(pc.and_(synonym_mask, named)).select(
        ["taxon_id", "accepted_id", "name", "status"]))
    resolved, unresolved = _resolve_targets(synonyms, target_ids)
    # of those, rows whose acceptedNameUsageID names no row of Taxon.tsv at all
    dangling = (int(pc.sum(pc.invert(pc.is_in(synonyms.column("accepted_id"),
                                                 value_set=rows.column("taxon_id").combine_chunks()))).as_py() or 0)
                if synonyms.num_rows else 0)
    synonyms = synonyms.set_column(1, "accepted_id", resolved).filter(pc.is_valid(resolved))
    synonyms = synonyms.append_column("normalized", _normalize(synonyms.column("name")))

    accepted_names = pc.unique(taxa.column("normalized"))
    synonym_only = pc.invert(pc.is_in(synonyms.column("normalized"), value_set=accepted_names))
    shadowed = int(len(synonyms) - pc.sum(synonym_only).as_py()) if len(synonyms) else 0
    synonyms = synonyms.filter(pc.and_(synonym_only, pc.not_equal(synonyms.column("normalized"), "")))

    # one row per (name, accepted taxon); the linking status is the smallest one (deterministic)
    target_lookup = taxa.select(["taxon_id", "normalized", "name", "rank"]).rename_columns(
        ["accepted_id", "accepted", "accepted_name", "rank"])
    synonym_pairs = (
        synonyms.select(["normalized", "accepted_id", "status"])
        .group_by(["normalized", "accepted_id"]).aggregate([("status", "min")])
        .rename_columns(["name", "accepted_id", "status"])
        .join(target_lookup, keys="accepted_id", join_type="inner")
    )
    self_pairs = pa.table({
        "name": taxa.column("normalized"),
        "accepted_id": taxa.column("taxon_id"),
        "status": taxa.column("status"),
        "accepted": taxa.column("normalized"),
        "accepted_name": taxa.column("name"),
        "rank": taxa.column("rank"),
    })
    order = ["name", "accepted", "accepted_name", "rank", "status", "accepted_id"]
    names = pa.concat_tables([self_pairs.select(order), synonym_pairs.select(order)])
    # sorted by the query output's columns first: a filtered slice is then already in output
    # order, with equal output rows adjacent (see TaxonomyIndex.accepted_targets)
    names = _sort(names, [*TARGET_COLUMNS, "accepted_id"])

    # vernacular names are keyed by any taxonID; map each to its accepted target taxon
    id_to_accepted = pa.concat_tables([
        pa.table({"taxon_id": target_ids, "accepted_id": target_ids}),
        synonyms.select(["taxon_id", "accepted_id"]),
    ])
    counts = {
        "taxon_rows": rows.num_rows,
        "accepted_taxa": taxa.num_rows,
        "synonym_rows_used": synonyms.num_rows,
        "synonym_rows_unresolved": unresolved,
        "synonym_rows_accepted_id_not_found": dangling,
        "synonym_rows_shadowed_by_accepted_name": shadowed,
        "rows_not_synonym_by_status": not_synonym,
        "names": _count_runs(names.column("name")),
        "name_target_pairs": names.num_rows,
    }
    return taxa, names, id_to_accepted, counts


def _read_vernaculars(archive: gbif.BackboneArchive, id_to_accepted: pa.Table, taxa: pa.Table,
                      progress: Any) -> tuple[pa.Table, dict[str, int]]:
    schema = pa.schema([("accepted_id", pa.int64()), ("accepted_name", pa.string()),
                        ("vernacular", pa.string()), ("normalized", pa.string()),
                        ("language", pa.string())])
    if archive.vernacular is None:
        return schema.empty_table(), {"vernacular_rows": 0, "vernacular_rows_unmatched": 0}
    shown = archive.describe(archive.vernacular.location)
    task = progress.add_task("VernacularName.tsv",
                             total=archive.member_size(archive.vernacular.location) or None)
    parts: list[pa.Table] = []
    rows_seen = 0
    for batch in gbif.iter_vernacular_batches(archive, progress=lambda n: progress.advance(task, n)):
        first_line = gbif.data_line(rows_seen, archive.vernacular)
        rows_seen += batch.num_rows
        parts.append(pa.table({
            "taxon_id": _parse_ids(batch.column("taxonID"), file=shown, field="taxonID",
                                   first_line=first_line, required=True),
            "vernacular": pc.utf8_trim_whitespace(batch.column("vernacularName")),
            "language": pc.utf8_lower(pc.utf8_trim_whitespace(batch.column("language"))),
        }))
    if not parts:
        return schema.empty_table(), {"vernacular_rows": 0, "vernacular_rows_unmatched": 0}
    table = pa.concat_tables(parts).filter(pc.is_valid(pc.field("vernacular")))
    total = rows_seen
    joined = table.join(id_to_accepted, keys="taxon_id", join_type="inner")
    joined = joined.join(taxa.select(["taxon_id", "name"]).rename_columns(["accepted_id", "accepted_name"]),
                         keys="accepted_id", join_type="inner")
    joined = joined.append_column("normalized", _normalize(joined.column("vernacular")))
    joined = joined.filter(pc.not_equal(joined.column("normalized"), ""))
    joined = joined.select(schema.names).cast(schema)
    joined = _sort(joined, ["accepted_id", "language", "normalized", "vernacular"])
    return joined, {"vernacular_rows": total, "vernacular_rows_kept": joined.num_rows,
                    "vernacular_rows_unmatched": total - joined.num_rows,
                    "english_vernacular_rows": int(pc.sum(pc.equal(joined.column("language"), ENGLISH)).as_py() or 0)}


def _source_files(archive: gbif.BackboneArchive) -> dict[str, dict[str, Any]]:
    """Name, size and sha256 of what the index was built from (the zip, or each used member)."""
    if archive.is_zip:
        return {archive.path.name: {"bytes": archive.path.stat().st_size,
                                    "sha256": sha256_file(archive.path)}}
    members = [gbif.META_FILE, archive.taxon.location]
    if archive.vernacular is not None and (archive.path / archive.vernacular.location).is_file():
        members.append(archive.vernacular.location)
    return {m: {"bytes": (archive.path / m).stat().st_size, "sha256": sha256_file(archive.path / m)}
            for m in members}


def _combined_sha256(files: dict[str, dict[str, Any]]) -> str:
    if len(files) == 1:
        return next(iter(files.values()))["sha256"]
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0{files[name]['sha256']}\n".encode())
    return digest.hexdigest()


def build_index(backbone: str | Path, out: str | Path, *, console: Any = None) -> dict[str, Any]:
    """Build the taxonomy index folder ``out`` from a Backbone DwC-A (zip or folder) and return
    its card (also written to ``out/index.json``, with the SHA-256 of every part). The folder is
    written beside ``out`` and renamed into place whole, so an interrupted build leaves the
    previous index (or none), never new parts beside an old card."""
    archive = gbif.open_backbone(backbone)
    out = Path(out)
    _check_out(out)
    started = time.perf_counter()
    from biovqa.progress import stage_sequence

    with stage_sequence(unit="bytes", console=console) as progress:
        rows = _read_taxon_rows(archive, progress)
        read_seconds = time.perf_counter() - started
        taxa, names, id_to_accepted, counts = _build_tables(rows)
        del rows
        vernaculars, vernacular_counts = _read_vernaculars(archive, id_to_accepted, taxa, progress)
    stage = out.parent / f".{out.name}.partial-{os.getpid()}"
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    try:
        write_parquet(taxa, stage / TAXA_FILE)
        write_parquet(names, stage / NAMES_FILE)
        write_parquet(vernaculars, stage / VERNACULARS_FILE)
        card = _card(archive, counts | vernacular_counts, stage, started, read_seconds)
        write_json(stage / INDEX_CARD, card)
        _swap_into_place(stage, out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return card


def _check_out(out: Path) -> None:
    """``out`` must be absent, empty or an index folder (it is replaced as a whole)."""
    if out.exists() and not out.is_dir():
        raise InputFormatError("the output path is a file, not a folder", file=out,
                               hint="give a folder with --out")
    if out.is_dir() and any(out.iterdir()) and not (out / INDEX_CARD).is_file():
        raise InputFormatError("the output folder holds files but no taxonomy index", file=out,
                               hint="the index folder is replaced as a whole; give a new or empty folder")


def _swap_into_place(stage: Path, out: Path) -> None:
    """Rename the finished ``stage`` folder to ``out``; an existing ``out`` is moved aside first
    and removed after, so a reader sees the old index, the new one or none — never a mix."""
    out.parent.mkdir(parents=True, exist_ok=True)
    aside = out.parent / f".{out.name}.old-{os.getpid()}"
    if aside.exists():
        shutil.rmtree(aside)
    if out.exists():
        os.replace(out, aside)
    os.replace(stage, out)
    shutil.rmtree(aside, ignore_errors=True)


def _card(archive: gbif.BackboneArchive, counts: dict[str, Any], folder: Path, started: float,
          read_seconds: float) -> dict[str, Any]:
    seconds = time.perf_counter() - started
    files = _source_files(archive)
    card: dict[str, Any] = {
        "format": INDEX_FORMAT,
        "biovqa_version": __version__,
        "source": str(archive.path.resolve()),
        "sources": files,
        "source_sha256": _combined_sha256(files),
        "rows": counts["taxon_rows"],
        "accepted_statuses": list(ACCEPTED_STATUSES),
        "synonym_statuses": list(SYNONYM_STATUSES),
        "counts": counts,
        "files": {f: sha256_file(folder / f) for f in INDEX_FILES},
        "timing": {
            "seconds": round(seconds, 3),
            "taxon_read_seconds": round(read_seconds, 3),
            "rows_per_second": round(counts["taxon_rows"] / seconds, 1) if seconds > 0 else None,
        },
    }
    return card


# --------------------------------------------------------------------------------------------
# reading


class TaxonomyIndex:
    """A built taxonomy index folder. ``open`` reads only the card; the Parquet parts are loaded
    on first use."""

    def __init__(self, root: Path, card: dict[str, Any]) -> None:
        self.root = root
        self.card = card

    @classmethod
    def open(cls, path: str | Path) -> TaxonomyIndex:
        root = Path(path)
        card_path = root / INDEX_CARD
        if not card_path.is_file():
            raise MissingResourceError("taxonomy index not found", file=card_path, hint=BUILD_HINT)
        try:
            card = json.loads(card_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputFormatError(f"index card is not valid JSON: {exc.msg}", file=card_path,
                                   row=exc.lineno, hint=BUILD_HINT) from None
        if card.get("format") != INDEX_FORMAT:
            raise InputFormatError(f"index format {card.get('format')!r}, expected {INDEX_FORMAT}",
                                   file=card_path, field="format",
                                   hint="the index was built by another biovqa version; " + BUILD_HINT)
        return cls(root, card)

    def __repr__(self) -> str:
        return f"TaxonomyIndex({str(self.root)!r})"

    def verify(self) -> None:
        """Check every part against the SHA-256 its card records (a part changed, swapped or cut
        after the build is refused)."""
        recorded = self.card.get("files")
        if not isinstance(recorded, dict):
            raise InputFormatError("the index card records no file hashes", file=self.root / INDEX_CARD,
                                   field="files", hint=BUILD_HINT)
        for name in INDEX_FILES:
            path = self.root / name
            if not path.is_file():
                raise MissingResourceError(f"taxonomy index part {name} is missing", file=path, hint=BUILD_HINT)
            if sha256_file(path) != recorded.get(name):
                raise InputFormatError("taxonomy index part does not match the SHA-256 in its card", file=path,
                                       field=f"files.{name}", hint=BUILD_HINT)

    def _read(self, name: str) -> pa.Table:
        return read_parquet(self.root / name, what=f"taxonomy index part {name}")

    @cached_property
    def taxa(self) -> pa.Table:
        """Accepted/doubtful taxa of rank kingdom … species (see the module docstring)."""
        return self._read(TAXA_FILE)

    @cached_property
    def names(self) -> pa.Table:
        """The synonym relation: name, accepted, accepted_name, rank, status, accepted_id."""
        return self._read(NAMES_FILE)

    @cached_property
    def vernaculars(self) -> pa.Table:
        """accepted_id, accepted_name, vernacular, normalized, language (all languages)."""
        return self._read(VERNACULARS_FILE)

    def accepted_targets(self, names: Sequence[str] | pa.Array | pa.ChunkedArray) -> pa.Table:
        """S(name) for each query name (paper App. C.2 (Eqs. 6–7), Eqs. 6–7): one row per (name, accepted
        taxon) pair, columns name, accepted, accepted_name, rank, status; sorted by
        (name, accepted). ``names`` must already be :func:`~biovqa.text.normalize_c1`-normalized;
        names unknown to the Backbone give no rows."""
        query = names if isinstance(names, (pa.Array, pa.ChunkedArray)) else pa.array(list(names), pa.string())
        query = pc.unique(query.cast(pa.string()))
        query = query.filter(pc.is_valid(query))
        relation = self.names
        hits = relation.filter(pc.is_in(relation.column("name"), value_set=query))
        return _drop_adjacent_duplicates(hits.select(list(TARGET_COLUMNS)))

    def english_vernacular(self, accepted_names: Sequence[str]) -> dict[str, str]:
        """One English vernacular per accepted canonical name (as written): the first of
        :meth:`english_vernacular_candidates`. Names without an English vernacular are absent."""
        return {name: ranked[0] for name, ranked in self.english_vernacular_candidates(accepted_names).items()}

    def english_vernacular_candidates(self, accepted_names: Sequence[str]) -> dict[str, list[str]]:
        """All English vernaculars of each accepted canonical name, best first.

        [DEFAULT] rule: among the taxon's ``language == "en"`` rows, names (compared normalized)
        given by more rows (sources) come first; ties go to the shorter normalized form, then the
        smaller in Unicode order (so "green treefrog" beats "American green treefrog"). Each name
        is spelled as its most frequent written form, ties broken by the smaller string.
        Homonymous accepted names pool their rows."""
        wanted = pa.array(sorted({n for n in accepted_names if n}), pa.string())
        table = self.vernaculars
        english = table.filter(pc.and_(pc.equal(table.column("language"), ENGLISH),
                                       pc.is_in(table.column("accepted_name"), value_set=wanted)))
        return _ranked_english(english, "accepted_name")

    def english_vernacular_candidates_by_id(self, accepted_ids: Sequence[int]) -> dict[int, list[str]]:
        """:meth:`english_vernacular_candidates` of single taxa (Backbone ids), so that homonyms
        stay apart: the moth *Laelia rosea* (Erebidae) and the orchid *Laelia rosea* share a
        name but not their vernaculars."""
        wanted = pa.array(sorted({int(i) for i in accepted_ids}), pa.int64())
        table = self.vernaculars
        english = table.filter(pc.and_(pc.equal(table.column("language"), ENGLISH),
                                       pc.is_in(table.column("accepted_id"), value_set=wanted)))
        return _ranked_english(english, "accepted_id")

    def vernacular_languages(self, accepted_names: Sequence[str],
                             normalized_vernaculars: Sequence[str]) -> list[frozenset[str]]:
        """For each (accepted name, normalized vernacular) pair, the languages the Backbone tags
        that vernacular with for that taxon (empty when the Backbone does not list it)."""
        query = pa.table({"accepted_name": pa.array(list(accepted_names), pa.string()),
                          "normalized": pa.array(list(normalized_vernaculars), pa.string())})
        table = self.vernaculars
        candidates = table.filter(pc.is_in(table.column("accepted_name"),
                                           value_set=pc.unique(query.column("accepted_name"))))
        joined = candidates.select(["accepted_name", "normalized", "language"]).join(
            query.group_by(["accepted_name", "normalized"]).aggregate([]),
            keys=["accepted_name", "normalized"], join_type="inner")
        found: dict[tuple[str, str], set[str]] = {}
        for name, normalized, language in zip(joined.column("accepted_name").to_pylist(),
                                              joined.column("normalized").to_pylist(),
                                              joined.column("language").to_pylist()):
            found.setdefault((name, normalized), set()).add(language or "")
        return [frozenset(found.get((a, v), ())) for a, v in zip(accepted_names, normalized_vernaculars)]


def _ranked_english(english: pa.Table, key: str) -> dict[Any, list[str]]:
    """English vernaculars of ``english`` (rows of the vernaculars part) per ``key`` value, best
    first (the rule of :meth:`TaxonomyIndex.english_vernacular_candidates`)."""
    if english.num_rows == 0:
        return {}
    keys = [key, "normalized"]
    by_name = english.group_by(keys).aggregate([("vernacular", "count")])
    by_name = by_name.rename_columns([*keys, "sources"])
    by_name = by_name.append_column("length", pc.utf8_length(by_name.column("normalized")))
    spellings = english.group_by([*keys, "vernacular"]).aggregate([("language", "count")])
    spellings = spellings.rename_columns([*keys, "vernacular", "n"])
    spellings = spellings.take(pc.sort_indices(spellings, sort_keys=[
        (key, "ascending"), ("normalized", "ascending"), ("n", "descending"), ("vernacular", "ascending")]))
    spelling: dict[tuple[Any, str], str] = {}
    for name, normalized, vernacular in zip(*(spellings.column(c).to_pylist() for c in (*keys, "vernacular"))):
        spelling.setdefault((name, normalized), vernacular)
    by_name = by_name.take(pc.sort_indices(by_name, sort_keys=[
        (key, "ascending"), ("sources", "descending"), ("length", "ascending"), ("normalized", "ascending")]))
    ranked: dict[Any, list[str]] = {}
    for name, normalized in zip(*(by_name.column(c).to_pylist() for c in keys)):
        ranked.setdefault(name, []).append(spelling[(name, normalized)])
    return ranked


def _count_runs(sorted_values: pa.ChunkedArray | pa.Array) -> int:
    """Number of distinct values in a sorted column (cheaper than hashing them all)."""
    values = sorted_values.combine_chunks() if isinstance(sorted_values, pa.ChunkedArray) else sorted_values
    if len(values) == 0:
        return 0
    return 1 + int(pc.sum(pc.not_equal(values[1:], values[:-1])).as_py() or 0)


def _drop_adjacent_duplicates(table: pa.Table) -> pa.Table:
    """Drop rows equal to the row before them (the table is sorted, so this leaves distinct
    rows): homonymous accepted taxa of the same rank and status give one output row."""
    if table.num_rows < 2:
        return table
    table = table.combine_chunks()
    differs = pa.array(np.zeros(table.num_rows - 1, dtype=bool))
    for column in table.columns:
        values = column.chunk(0) if column.num_chunks else column
        differs = pc.or_(differs, pc.fill_null(pc.not_equal(values[1:], values[:-1]), True))
    keep = pa.concat_arrays([pa.array([True]), differs])
    return table.filter(keep)


def read_card(path: str | Path) -> dict[str, Any]:
    """The ``index.json`` card of an index folder."""
    return TaxonomyIndex.open(path).card


__all__ = ["ACCEPTED_STATUSES", "SYNONYM_STATUSES", "INDEX_RANKS", "TARGET_COLUMNS", "TaxonomyIndex", "build_index", "read_card"]
