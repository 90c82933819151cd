"""The cached GBIF Backbone index: accepted taxa, the synonym relation and vernacular names.

``build_index`` (:mod:`.index_builder`) reads the Backbone DwC-A once (streamed, see
:mod:`biovqa.sources.gbif`) and writes a folder::

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
``synonym_rows_accepted_id_not_found``). Chains (a synonym pointing at a synonym) are followed up to :data:`~biovqa.taxonomy.index_format.MAX_SYNONYM_HOPS` hops.

All Parquet files are written in a deterministic order (taxa in Taxon.tsv order, the relation
and the vernaculars sorted) with fixed settings, so the same Backbone gives byte-identical files
(the card's timing fields are the only thing that changes between builds).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.bench.folder import read_parquet, sha256_file
from biovqa.errors import InputFormatError, MissingResourceError

# the builder lives in its own module; build_index is re-exported here, where its callers import it
from biovqa.taxonomy.index_builder import build_index
from biovqa.taxonomy.index_format import (ACCEPTED_STATUSES, ENGLISH, INDEX_CARD, INDEX_FILES, INDEX_FORMAT,
                                          INDEX_RANKS, NAMES_FILE, SYNONYM_STATUSES, TARGET_COLUMNS, TAXA_FILE,
                                          VERNACULARS_FILE)

BUILD_HINT = "build it with `biovqa taxonomy index BACKBONE --out INDEX`"


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


__all__ = ["ACCEPTED_STATUSES", "INDEX_RANKS", "SYNONYM_STATUSES", "TARGET_COLUMNS", "TaxonomyIndex", "build_index",
           "read_card"]
