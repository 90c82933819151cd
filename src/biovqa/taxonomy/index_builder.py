"""Building the cached GBIF Backbone index (its folder and the synonym relation: :mod:`.index`):
``build_index`` reads the Backbone DwC-A once (streamed, see :mod:`biovqa.sources.gbif`), checks
its ids and parents, resolves every synonym to its accepted taxa and writes the parts and the
card into a sibling folder that is renamed into place whole (docs/reliability.md)."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa._version import __version__
from biovqa.bench.folder import sha256_file, write_json, write_parquet
from biovqa.errors import InputFormatError
from biovqa.sources import gbif
from biovqa.taxonomy.index_format import (ACCEPTED_STATUSES, ENGLISH, INDEX_CARD, INDEX_FILES, INDEX_FORMAT,
                                          INDEX_RANKS, LINEAGE_RANKS, MAX_SYNONYM_HOPS, NAMES_FILE, SYNONYM_STATUSES,
                                          TARGET_COLUMNS, TAXA_FILE, VERNACULARS_FILE)
from biovqa.text import _C1_PREFIX, normalize_c1_array


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


def _count_runs(sorted_values: pa.ChunkedArray | pa.Array) -> int:
    """Number of distinct values in a sorted column (cheaper than hashing them all)."""
    values = sorted_values.combine_chunks() if isinstance(sorted_values, pa.ChunkedArray) else sorted_values
    if len(values) == 0:
        return 0
    return 1 + int(pc.sum(pc.not_equal(values[1:], values[:-1])).as_py() or 0)


__all__ = ["build_index"]
