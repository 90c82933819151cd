"""The cached GBIF Backbone index's format, shared by its builder (:mod:`.index_builder`) and its
reader (:mod:`.index`): the part files, the format number, and the ranks and statuses it keeps."""

from __future__ import annotations

INDEX_CARD = "index.json"
TAXA_FILE = "taxa.parquet"
NAMES_FILE = "names.parquet"
VERNACULARS_FILE = "vernaculars.parquet"
#: The parts whose SHA-256 the card records (checked by :meth:`~biovqa.taxonomy.index.TaxonomyIndex.verify`).
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

#: Columns of :meth:`~biovqa.taxonomy.index.TaxonomyIndex.accepted_targets`.
TARGET_COLUMNS: tuple[str, ...] = ("name", "accepted", "accepted_name", "rank", "status")


__all__ = ["ACCEPTED_STATUSES", "ENGLISH", "INDEX_CARD", "INDEX_FILES", "INDEX_FORMAT", "INDEX_RANKS", "LINEAGE_RANKS",
           "MAX_SYNONYM_HOPS", "NAMES_FILE", "SYNONYM_STATUSES", "TARGET_COLUMNS", "TAXA_FILE", "VERNACULARS_FILE"]
