"""English common names for C1 (paper §3.1: stage 1 and the GBIF stage of stage 2).

The catalog's common names come from GBIF vernaculars in any language ("gran" for *Picea abies*,
"åkergroda" for *Rana arvalis*). Each (catalog name, species) pair leaves at the first step that
settles it:

0. **override** — a user CSV (``scientific_name,common_name``) of curated names wins over all
   (stage 3, manual curation);
1. **catalog** — offline triage of the catalog name (stage 1), rejections first: any non-ASCII
   letter → reject; the Backbone lists the name for this taxon only under languages other than
   ``en`` → reject; the Backbone lists it with language ``en`` → accept (``en_tag``); otherwise
   accept when at least half of its tokens are English vocabulary (``word_list``;
   :data:`ENGLISH_WORD_SHARE`, [DEFAULT] 0.5). A word list is not a language detector: the
   vocabulary is the bundled general list **plus every token of every ``en``-tagged Backbone
   vernacular** (English vocabulary for organism names: Gharial, Capybara, Axolotl, Tuatara …);
2. authorities (stage 2), the first clean candidate wins: **inaturalist** — the iNaturalist
   taxonomy export's English names of the species or of its accepted name
   (:mod:`biovqa.taxonomy.inaturalist`), when given; then **gbif_en** — the Backbone's English
   vernacular of the accepted species (synonyms followed to the accepted name), best first by
   :meth:`TaxonomyIndex.english_vernacular_candidates`. Every candidate passes the gate (no rank
   words or taxonomic qualifiers, not an echo of the scientific name). Wikipedia, the paper's last
   resort, needs the network and is not consulted;
3. **unresolved** — nothing settled it (the caller decides; C1 drops such images).

:func:`english_common_names_detailed` also says, per pair, which test settled or rejected it;
the C1 builder counts these in its manifest.

A catalog name may also be English and still not the species' name: TreeOfLife-200M takes its
common names from TaxonoPy, which fills a species without a name of its own with a higher rank's
(the moth *Laelia rosea* is "Underwing, Tiger, Tussock, And Allied Moths", the orchid *Laelia
rosea* "Orchid"). :func:`higher_rank_names` finds them (an ancestor's Backbone vernacular, the
"… and allied …" form) and offers the species' own English vernacular; the C1 build counts them
and keeps, replaces or excludes them (:data:`HIGHER_RANK_POLICIES`).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.text import normalize_c1, normalize_c1_array

if TYPE_CHECKING:
    from biovqa.taxonomy.index import TaxonomyIndex

#: Accept a catalog name when at least this share of its tokens are English words [DEFAULT].
ENGLISH_WORD_SHARE = 0.5
SOURCES: tuple[str, ...] = ("catalog", "inaturalist", "gbif_en", "override", "unresolved")
#: Stage-1 outcomes (``TriageResult.triage``): two acceptances, then the rejection reasons.
TRIAGE_OUTCOMES: tuple[str, ...] = ("en_tag", "word_list", "empty", "non_ascii", "other_language",
                                    "not_english")
OVERRIDE_COLUMNS: tuple[str, ...] = ("scientific_name", "common_name")
WORD_LIST_RESOURCE = "english_words.txt.gz"

#: Candidate gate: tokens that mark a rank or a taxonomic qualifier, not a common name.
_GATE_TOKENS = frozenset({
    "kingdom", "phylum", "class", "order", "family", "subfamily", "tribe", "genus", "subgenus",
    "species", "subspecies", "variety", "form", "sp", "spp", "ssp", "subsp", "var", "cf", "aff",
    "nr", "indet", "sensu", "lato", "stricto", "incertae", "sedis",
})
_TOKEN_RE = re.compile(r"[a-z]+")
_POSSESSIVE_RE = re.compile(r"['\u2019]s\b")


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """The bundled English word list (SCOWL size 50, American + British; see
    ``biovqa/data/taxonomy/README.md``)."""
    resource = resources.files("biovqa").joinpath("data", "taxonomy", WORD_LIST_RESOURCE)
    try:
        with resource.open("rb") as raw, gzip.open(raw, "rt", encoding="ascii") as handle:
            return frozenset(line.strip() for line in handle if line.strip())
    except FileNotFoundError:
        raise MissingResourceError("bundled English word list is missing", file=str(resource),
                                   hint="reinstall biovqa (package data biovqa/data/taxonomy)") from None


def _tokens(name: str) -> list[str]:
    return _TOKEN_RE.findall(_POSSESSIVE_RE.sub("", name.lower()))


def _is_word(token: str, words: frozenset[str]) -> bool:
    """A listed word, or a plural of one (the list lacks some plurals of rarer nouns)."""
    if token in words:
        return True
    return (token.endswith("s") and token[:-1] in words) or (token.endswith("es") and token[:-2] in words)


def english_word_share(name: str, vocabulary: frozenset[str] | None = None) -> float:
    """Share of the name's ASCII-letter tokens that are English words (0.0 for no tokens);
    ``vocabulary`` defaults to the bundled general list."""
    tokens = _tokens(name)
    if not tokens:
        return 0.0
    words = english_words() if vocabulary is None else vocabulary
    return sum(_is_word(t, words) for t in tokens) / len(tokens)


def backbone_english_tokens(index: TaxonomyIndex) -> frozenset[str]:
    """Every token of every ``en``-tagged vernacular in the Backbone (tokenized like the triage:
    lower-case ASCII letter runs, possessive ``'s`` dropped)."""
    import pyarrow.compute as pc

    table = index.vernaculars
    english = table.filter(pc.equal(table.column("language"), "en")).column("vernacular")
    if len(english) == 0:
        return frozenset()
    text = pc.utf8_lower(pc.unique(english.combine_chunks()))
    text = pc.replace_substring_regex(text, pattern=r"['\x{2019}]s\b", replacement="")
    tokens = pc.list_flatten(pc.split_pattern_regex(text, pattern=r"[^a-z]+"))
    tokens = pc.unique(tokens.filter(pc.not_equal(tokens, "")))
    return frozenset(tokens.to_pylist())


def english_vocabulary(index: TaxonomyIndex | None) -> frozenset[str]:
    """The triage vocabulary: the bundled general word list plus the Backbone's English tokens."""
    words = english_words()
    return words if index is None else words | backbone_english_tokens(index)


def has_non_ascii_letter(name: str) -> bool:
    return any(ord(ch) > 127 and ch.isalpha() for ch in name)


def triage_common_name(name: str | None, languages: frozenset[str] = frozenset(),
                       vocabulary: frozenset[str] | None = None) -> str:
    """Offline triage of one common name (stage 1), rejections first: ``"empty"``,
    ``"non_ascii"``, ``"other_language"`` (the Backbone lists it for this taxon only under other
    languages), then the acceptances ``"en_tag"`` and ``"word_list"``, else ``"not_english"``.
    ``languages``: the Backbone's language tags of this name for this taxon; ``vocabulary``
    defaults to the bundled general word list (see :func:`english_vocabulary`)."""
    if name is None or not name.strip():
        return "empty"
    if has_non_ascii_letter(name):
        return "non_ascii"
    if languages and "en" not in languages:
        return "other_language"
    if "en" in languages:
        return "en_tag"
    return "word_list" if english_word_share(name, vocabulary) >= ENGLISH_WORD_SHARE else "not_english"


def is_accepted(triage: str) -> bool:
    """Whether a :func:`triage_common_name` outcome accepts the name."""
    return triage in ("en_tag", "word_list")


def passes_gate(candidate: str, scientific_names: Sequence[str]) -> bool:
    """The candidate gate of stage 2: not empty, no rank word or taxonomic qualifier, not an
    echo of the scientific name (the binomial or its epithet)."""
    normalized = normalize_c1(candidate)
    if not normalized:
        return False
    if any(token in _GATE_TOKENS for token in normalized.split()):
        return False
    for scientific in scientific_names:
        echo = normalize_c1(scientific)
        if echo and (normalized == echo or normalized == echo.split()[-1]):
            return False
    return True


def read_overrides(path: str | Path) -> dict[str, str]:
    """Read a curated-names CSV (columns ``scientific_name,common_name``; others are allowed,
    e.g. a cited ``source``) into normalized scientific name → common name."""
    path = Path(path)
    if not path.is_file():
        raise MissingResourceError("common-name overrides file not found", file=path,
                                   hint="pass a CSV with columns scientific_name,common_name")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputFormatError(f"not UTF-8 text (byte {error.start})", file=path,
                               hint="save the CSV as UTF-8") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        return _read_override_records(reader, path)
    except csv.Error as error:  # e.g. an unterminated quote (strict mode)
        raise InputFormatError(f"malformed CSV ({error})", file=path, row=reader.line_num,
                               hint="close every opening quote; quote values that contain commas") from None


def _read_override_records(reader: Any, path: Path) -> dict[str, str]:
    overrides: dict[str, str] = {}
    first_row: dict[str, int] = {}
    header = next(reader, None)
    if header is None:
        raise InputFormatError("empty file; expected a header scientific_name,common_name",
                               file=path, row=1)
    header = [h.strip() for h in header]
    for column in OVERRIDE_COLUMNS:
        if column not in header:
            raise InputFormatError(f"missing column {column!r} (header: {header})", file=path,
                                   row=1, field=column,
                                   hint="the header must name scientific_name and common_name")
    science_at, common_at = header.index("scientific_name"), header.index("common_name")
    for record in reader:
        row = reader.line_num
        if not any(cell.strip() for cell in record):
            continue  # blank line
        if len(record) != len(header):
            raise InputFormatError(f"expected {len(header)} fields, found {len(record)}",
                                   file=path, row=row,
                                   hint="quote values that contain commas")
        scientific, common = record[science_at].strip(), record[common_at].strip()
        for field, value in (("scientific_name", scientific), ("common_name", common)):
            if not value:
                raise InputFormatError("empty value", file=path, row=row, field=field)
            if any(ch in value for ch in "\r\n"):
                raise InputFormatError("value spans several lines", file=path, row=row, field=field,
                                       hint="a quote is probably not closed")
        key = normalize_c1(scientific)
        if key in overrides and overrides[key] != common:
            raise InputFormatError(
                f"{scientific!r} has a second, different common name {common!r} "
                f"(row {first_row[key]} gives {overrides[key]!r})",
                file=path, row=row, field="common_name", hint="keep one name per species")
        overrides[key] = common
        first_row.setdefault(key, row)
    return overrides


def _clean(value: Any) -> str | None:
    """None for missing values (None, NaN, empty); otherwise the stripped string."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    return text or None


def _accepted_species(index: TaxonomyIndex, names: list[str]) -> dict[str, list[str]]:
    """Normalized scientific name → accepted canonical names (as written) it resolves to,
    species-rank targets first, sorted."""
    normalized = sorted({n for n in names if n})
    if not normalized:
        return {}
    targets = index.accepted_targets(pa.array(normalized, pa.string()))
    resolved: dict[str, list[tuple[int, str]]] = {}
    for name, accepted_name, rank in zip(*(targets.column(c).to_pylist()
                                           for c in ("name", "accepted_name", "rank"))):
        resolved.setdefault(name, []).append((0 if rank == "species" else 1, accepted_name))
    return {name: [n for _, n in sorted(set(pairs))] for name, pairs in resolved.items()}


@dataclass(frozen=True)
class EnglishNames:
    """Per (catalog name, species) pair: the English name (None when unresolved), the stage that
    settled it (:data:`SOURCES`) and the stage-1 triage outcome (:data:`TRIAGE_OUTCOMES`; None
    for overrides, which skip triage)."""

    names: list[str | None]
    sources: list[str]
    triage: list[str | None]


def english_common_names(
    catalog_names: Sequence[str | None],
    accepted_species_names: Sequence[str | None],
    index: TaxonomyIndex | None,
    overrides: Path | None,
    authorities: Sequence[Any] = (),
) -> tuple[list[str | None], list[str]]:
    """English common name and its source ("catalog", "inaturalist", "gbif_en", "override",
    "unresolved") for each (catalog common name, species scientific name) pair; see the module
    docstring."""
    result = english_common_names_detailed(catalog_names, accepted_species_names, index, overrides,
                                           authorities)
    return result.names, result.sources


def english_common_names_detailed(
    catalog_names: Sequence[str | None],
    accepted_species_names: Sequence[str | None],
    index: TaxonomyIndex | None,
    overrides: Path | None,
    authorities: Sequence[Any] = (),
) -> EnglishNames:
    """:func:`english_common_names` with the stage-1 outcome of every pair. ``authorities``:
    opened stage-2 authorities (e.g. :class:`~biovqa.taxonomy.inaturalist.INaturalistNames`), in
    order; each offers ``name`` and ``candidates(normalized scientific names)``."""
    if len(catalog_names) != len(accepted_species_names):
        raise ValueError(f"{len(catalog_names)} catalog names but {len(accepted_species_names)} "
                         "species names")
    catalog = [_clean(v) for v in catalog_names]
    species = [_clean(v) for v in accepted_species_names]
    curated = read_overrides(overrides) if overrides is not None else {}
    species_key = normalize_c1_array(pa.array(species, pa.string())).to_pylist()
    vocabulary = english_vocabulary(index)

    accepted: dict[str, list[str]] = _accepted_species(index, species_key) if index is not None else {}
    languages: list[frozenset[str]] = [frozenset()] * len(catalog)
    candidates: dict[str, list[str]] = {}
    if index is not None:
        first_accepted = [(accepted.get(k) or [s or ""])[0] for k, s in zip(species_key, species)]
        languages = index.vernacular_languages(first_accepted, [normalize_c1(c) for c in catalog])
        wanted = sorted({n for names in accepted.values() for n in names})
        candidates = index.english_vernacular_candidates(wanted)

    names: list[str | None] = []
    sources: list[str] = []
    triages: list[str | None] = []
    for i, (common, scientific, key) in enumerate(zip(catalog, species, species_key)):
        accepted_names = accepted.get(key, [])
        curated_key = next((k for k in (key, *map(normalize_c1, accepted_names))
                            if k and k in curated), None)
        if curated_key is not None:
            names.append(curated[curated_key])
            sources.append("override")
            triages.append(None)
            continue
        verdict = triage_common_name(common, languages[i], vocabulary)
        triages.append(verdict)
        if is_accepted(verdict):
            names.append(common)
            sources.append("catalog")
            continue
        echoes = [scientific or "", *accepted_names]
        chosen: tuple[str, str] | None = None
        lookup_keys = [k for k in (key, *map(normalize_c1, accepted_names)) if k]
        for authority in authorities:
            for candidate in authority.candidates(lookup_keys):
                if passes_gate(candidate, echoes):
                    chosen = (candidate, authority.name)
                    break
            if chosen is not None:
                break
        if chosen is None:
            for accepted_name in accepted_names:
                for candidate in candidates.get(accepted_name, []):
                    if passes_gate(candidate, echoes):
                        chosen = (candidate, "gbif_en")
                        break
                if chosen is not None:
                    break
        if chosen is not None:
            names.append(chosen[0])
            sources.append(chosen[1])
        else:
            names.append(None)
            sources.append("unresolved")
    return EnglishNames(names=names, sources=sources, triage=triages)


# --------------------------------------------------------------------------------------------
# catalog names that are a higher rank's name

#: What a build does with a catalog common name that is really a higher rank's name: ``keep``
#: it (the paper's items, which took the catalog's names as they are; App. E.7 resolves such a
#: name to the taxon it denotes through the vernacular index), ``replace`` it with the species'
#: own English vernacular in the Backbone, or ``exclude`` the image.
HIGHER_RANK_POLICIES: tuple[str, ...] = ("keep", "replace", "exclude")
#: Ancestor ranks whose vernaculars a catalog name is compared with, lowest first.
ANCESTOR_RANKS: tuple[str, ...] = ("genus", "family", "order", "class", "phylum", "kingdom")
#: The "… And Allied …" phrasing of a group name (GBIF's name of a family or superfamily, e.g.
#: Erebidae's "Underwing, Tiger, Tussock, And Allied Moths"), never a species' own name.
ALLIED_PATTERN = re.compile(r"\band\s+allied\b", re.IGNORECASE)
ALLIED_REASON = "and_allied"


@dataclass(frozen=True)
class HigherRankNames:
    """Per (lineage, common name) pair: why the name is a higher rank's name (None: it is not;
    an ancestor rank of :data:`ANCESTOR_RANKS` whose Backbone vernacular it is; or
    :data:`ALLIED_REASON`), and the species' own English vernacular in the Backbone (None when
    the Backbone has none that passes the gate and is not itself a higher rank's name; only
    looked up for flagged pairs)."""

    reasons: list[str | None]
    species_names: list[str | None]


def _name_key(normalized: str) -> str:
    """A normalized name with a plural ``s`` of its last word dropped ("orchids" = "orchid")."""
    return normalized[:-1] if len(normalized) > 3 and normalized.endswith("s") else normalized


def higher_rank_names(lineages: Sequence[dict[str, str | None]], names: Sequence[str | None],
                      index: TaxonomyIndex | None) -> HigherRankNames:
    """Which catalog common names are really a higher rank's name.

    TreeOfLife-200M's common names come from TaxonoPy, which fills a species without a name of
    its own with the name of a higher rank: the moth *Laelia rosea* gets Erebidae's
    "Underwing, Tiger, Tussock, And Allied Moths", the orchid *Laelia rosea* gets "Orchid". A
    name counts as a higher rank's when it is not among the species' own vernaculars (any
    language) in the Backbone and either equals (plural ``s`` aside) a vernacular of one of its
    ancestors (the catalog lineage's genus … kingdom, located in the Backbone by name, rank and
    agreeing lineage, so homonyms stay apart) or has the "… and allied …" form.

    ``lineages`` are the catalog's ranks per pair (``kingdom`` … ``genus``, ``species`` the
    binomial); without an index only the "… and allied …" form is recognised."""
    if len(lineages) != len(names):
        raise ValueError(f"{len(lineages)} lineages but {len(names)} names")
    keys = [_name_key(normalize_c1(n)) if _clean(n) else "" for n in names]
    allied = [bool(n) and ALLIED_PATTERN.search(str(n)) is not None for n in names]
    if index is None:
        return HigherRankNames(reasons=[ALLIED_REASON if a else None for a in allied],
                               species_names=[None] * len(names))
    species_ids = _species_taxa(index, lineages)
    ancestor_ids = _ancestor_taxa(index, lineages)
    wanted = {i for ids in species_ids for i in ids} | {i for per in ancestor_ids for ids in per.values() for i in ids}
    vernacular_keys = _vernacular_keys(index, wanted)

    reasons: list[str | None] = []
    for i, key in enumerate(keys):
        own = set().union(*(vernacular_keys.get(t, set()) for t in species_ids[i]))
        reason: str | None = None
        if key and key not in own:
            reason = next((rank for rank in ANCESTOR_RANKS if any(
                key in vernacular_keys.get(t, ()) for t in ancestor_ids[i].get(rank, ()))), None)
            if reason is None and allied[i]:
                reason = ALLIED_REASON
        reasons.append(reason)

    flagged = [i for i, r in enumerate(reasons) if r is not None]
    candidates = index.english_vernacular_candidates_by_id(sorted({t for i in flagged for t in species_ids[i]}))
    species_names: list[str | None] = [None] * len(names)
    for i in flagged:
        higher = set().union(*(vernacular_keys.get(t, set()) for ids in ancestor_ids[i].values() for t in ids))
        for taxon in species_ids[i]:
            chosen = next((c for c in candidates.get(taxon, []) if passes_gate(c, [lineages[i].get("species") or ""])
                           and _name_key(normalize_c1(c)) not in higher and not ALLIED_PATTERN.search(c)), None)
            if chosen is not None:
                species_names[i] = chosen
                break
    return HigherRankNames(reasons=reasons, species_names=species_names)


def _agreement(taxon: dict[str, Any], lineage: dict[str, str | None], above: Sequence[str]) -> int | None:
    """How many of the ranks ``above`` a Backbone taxon shares with a catalog lineage; None when
    the kingdoms differ (another taxon of the same name) or any shared rank disagrees."""
    if lineage.get("kingdom") and taxon.get("kingdom") and lineage["kingdom"] != taxon["kingdom"]:
        return None
    agree = 0
    for rank in above:
        mine, theirs = lineage.get(rank), taxon.get(rank)
        if mine and theirs:
            if mine != theirs:
                return None
            agree += 1
    return agree


def _best(rows: list[dict[str, Any]], lineage: dict[str, str | None], above: Sequence[str]) -> list[int]:
    """Ids of the taxa among ``rows`` that agree best with ``lineage`` (sorted)."""
    scored = [(score, int(r["taxon_id"])) for r in rows
              if (score := _agreement(r, lineage, above)) is not None]
    if not scored:
        return []
    top = max(score for score, _ in scored)
    return sorted(taxon for score, taxon in scored if score == top)


def _species_taxa(index: TaxonomyIndex, lineages: Sequence[dict[str, str | None]]) -> list[list[int]]:
    """Per lineage, the accepted Backbone species its binomial names (synonyms followed) that
    agree best with its higher ranks."""
    import pyarrow.compute as pc

    from biovqa.taxonomy.index_format import LINEAGE_RANKS

    keys = [normalize_c1(s) if _clean(s := lin.get("species")) else "" for lin in lineages]
    relation = index.names
    hits = relation.filter(pc.and_(pc.is_in(relation.column("name"), value_set=pa.array(sorted(set(keys) - {""}),
                                                                                    pa.string())),
                                   pc.equal(relation.column("rank"), "species")))
    taxa = index.taxa
    found = taxa.filter(pc.is_in(taxa.column("taxon_id"), value_set=pc.unique(hits.column("accepted_id"))))
    lineage_of = {int(r["taxon_id"]): r for r in found.select(["taxon_id", *LINEAGE_RANKS]).to_pylist()}
    by_name: dict[str, list[dict[str, Any]]] = {}
    for name, accepted_id in zip(hits.column("name").to_pylist(), hits.column("accepted_id").to_pylist()):
        if int(accepted_id) in lineage_of:
            by_name.setdefault(name, []).append(lineage_of[int(accepted_id)])
    return [_best(by_name.get(key, []), lin, LINEAGE_RANKS[1:]) if key else []
            for key, lin in zip(keys, lineages)]


def _ancestor_taxa(index: TaxonomyIndex, lineages: Sequence[dict[str, str | None]]) -> list[dict[str, list[int]]]:
    """Per lineage, rank → the Backbone taxa of that rank and name that agree best with the ranks
    above it."""
    import pyarrow.compute as pc

    from biovqa.taxonomy.index_format import LINEAGE_RANKS

    wanted = sorted({v for lin in lineages for r in ANCESTOR_RANKS if (v := _clean(lin.get(r)))})
    taxa = index.taxa
    rows = taxa.filter(pc.and_(pc.is_in(taxa.column("name"), value_set=pa.array(wanted, pa.string())),
                               pc.is_in(taxa.column("rank"), value_set=pa.array(ANCESTOR_RANKS)))).select(
        ["taxon_id", "name", "rank", *LINEAGE_RANKS]).to_pylist()
    by_key: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        by_key.setdefault((row["rank"], row["name"]), []).append(row)
    out: list[dict[str, list[int]]] = []
    for lin in lineages:
        per: dict[str, list[int]] = {}
        for rank in ANCESTOR_RANKS:
            name = _clean(lin.get(rank))
            if name:
                above = LINEAGE_RANKS[1:LINEAGE_RANKS.index(rank)] if rank in LINEAGE_RANKS else ()
                per[rank] = _best(by_key.get((rank, name), []), lin, above)
        out.append(per)
    return out


def _vernacular_keys(index: TaxonomyIndex, taxon_ids: set[int]) -> dict[int, set[str]]:
    """Backbone taxon id → the :func:`_name_key` of each of its vernaculars (all languages)."""
    import pyarrow.compute as pc

    table = index.vernaculars
    rows = table.filter(pc.is_in(table.column("accepted_id"), value_set=pa.array(sorted(taxon_ids), pa.int64())))
    keys: dict[int, set[str]] = {}
    for taxon, normalized in zip(rows.column("accepted_id").to_pylist(), rows.column("normalized").to_pylist()):
        keys.setdefault(int(taxon), set()).add(_name_key(normalized))
    return keys
