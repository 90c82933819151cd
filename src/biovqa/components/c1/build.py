"""C1 — hierarchical taxonomic reasoning: build the benchmark from a TreeOfLife-200M catalog.

Pipeline (paper §3.1, App. A.1):

1. read the catalog and assign each row to one of the ten organismal groups (Table 5);
2. keep rows with a complete lineage phylum→species and a common name (reptiles: no order),
   resolving common names to English (Backbone vernaculars, user overrides);
3. per group, order candidates deterministically (sort by uuid, seeded shuffle), apply the
   per-species cap, and walk the order checking each image on disk (exists, shorter side ≥
   ``min_side``) until ``per_group`` images are taken — relaxing the cap first, then the
   resolution, where a group runs short (Gymnosperms in the paper);
4. ask each image at eight ranks plus the common-name MCQ (reptiles: no order question), with
   templates and instructions verbatim from paper App. K.1;
5. attach difficulty tiers (paper App. E) and write the benchmark folder.

Rows are excluded, never silently: every exclusion is counted per reason in the manifest.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import typer

from biovqa.errors import BiovqaError, MissingResourceError
from biovqa.bench.folder import Bench, relative_to_bench, staged_build, write_bench, write_parquet
from biovqa.records import TREE_RANKS
from biovqa.sources.treeoflife import read_catalog
from biovqa.taxonomy.tree import RANK_DEPTH, BenchmarkTree, build_tree
from biovqa.text import normalize_c1_array

GENERATOR = "biovqa.components.c1.build"
SIDE_FOLDER = "c1"
TREE_FILE = "tree.parquet"
VERNACULAR_FILE = "vernacular.parquet"
COMMON_NAMES_FILE = "common_names.parquet"

#: Table 5: organismal group → (filter rank, accepted values).
GROUPS: dict[str, tuple[str, frozenset[str]]] = {
    "Amphibians": ("class", frozenset({"Amphibia"})),
    "Angiosperms": ("class", frozenset({"Magnoliopsida", "Liliopsida"})),
    "Arachnids": ("class", frozenset({"Arachnida"})),
    "Birds": ("class", frozenset({"Aves"})),
    "Bryophytes": ("phylum", frozenset({"Bryophyta"})),
    "Fish": (
        "class",
        frozenset({"Actinopterygii", "Teleostei", "Elasmobranchii", "Holocephali", "Coelacanthi",
                   "Dipneusti"}),
    ),
    "Gymnosperms": ("class", frozenset({"Pinopsida"})),
    "Insects": ("class", frozenset({"Insecta"})),
    "Mammals": ("class", frozenset({"Mammalia"})),
    "Reptiles": ("class", frozenset({"Squamata", "Testudines", "Crocodylia", "Sphenodontia"})),
}
#: Groups whose lineage has no order rank (family hangs from class).
GROUPS_WITHOUT_ORDER = frozenset({"Reptiles"})

#: Question types in the order they are asked for one image (Table 6).
TASKS: tuple[str, ...] = (
    "phylum", "class", "order", "family", "genus", "species",
    "scientific_name", "common_name", "common_name_mcq",
)

# paper App. K.1, verbatim.
RANK_TEMPLATES: tuple[str, ...] = (
    "What is the {rank} of the {label} shown in this image?",
    "Which {rank} does the {label} in this image belong to?",
    "Identify the {rank} of the {label} shown in this image.",
    "Name the {rank} of the {label} in this image.",
    "What is the correct {rank} label for the {label} in this image?",
)
NAME_TEMPLATES: tuple[str, ...] = (
    "What is the {rank} of the {label} shown in this image?",
    "Identify the {rank} of the {label} shown in this image.",
    "Name the {rank} of the {label} shown in this image.",
)
MCQ_TEMPLATE = (
    "Among the four options, what is the common name of the {label} shown in this image? "
    "{o1}, {o2}, {o3}, {o4}"
)
#: The rank word each question type puts into ``{rank}``.
RANK_WORD: dict[str, str] = {
    "phylum": "phylum", "class": "class", "order": "order", "family": "family", "genus": "genus",
    "species": "species epithet", "scientific_name": "scientific name",
    "common_name": "common name",
}
# paper App. K.1, verbatim.
INSTRUCTIONS: dict[str, str] = {
    "phylum": "Answer with ONLY the Phylum name (e.g., Arthropoda). Do not include class, order, or any other taxonomic ranks. Do not write full sentences.",
    "class": "Answer with ONLY the Class name (e.g., Arachnida, Insecta). Do not include order, family, or any other taxonomic ranks. Do not write full sentences.",
    "order": "Answer with ONLY the Order name (e.g., Araneae). Do not include family, genus, or any other taxonomic ranks. Do not write full sentences.",
    "family": "Answer with ONLY the Family name (e.g., Araneidae). Do not include genus, species, or any other taxonomic ranks. Do not write full sentences.",
    "genus": "Answer with ONLY the Genus name (capitalized, e.g., Argiope). Do not include the species epithet or family name. Do not write full sentences.",
    "species": "Answer with ONLY the species epithet (the single, lowercase second word of the scientific name, e.g., aurantia). Absolutely DO NOT include the capitalized Genus name. Do not write full sentences.",
    "scientific_name": "Answer with ONLY the full binomial scientific name (Genus and species, e.g., Argiope aurantia). Do not include the common name or higher taxonomic ranks. Do not write full sentences.",
    "common_name_mcq": "Answer with ONLY the exact correct option from the four choices provided in the question. Absolutely DO NOT write full sentences, and do not provide any extra context or scientific names.",
    "common_name": "Answer with ONLY the everyday English common name (e.g., Orb weavers). Absolutely DO NOT provide the Latin scientific name. Do not write full sentences.",
}
KINGDOM_LABEL = {"Animalia": "animal", "Plantae": "plant"}

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".tif", ".tiff", ".bmp", ".gif")


@dataclass(frozen=True, slots=True)
class C1BuildOptions:
    """Creation parameters of a C1 build (recorded in the manifest)."""

    per_group: int = 10_000
    seed: int = 42
    min_side: int = 224
    species_cap: int = 50
    groups: tuple[str, ...] = tuple(GROUPS)
    workers: int = 8
    #: stage-2 common-name authorities, ``(name, path)`` in order of preference; today
    #: ``("inaturalist", "inaturalist-taxonomy.dwca.zip")`` (paper §3.1). A mapping is
    #: accepted and turned into pairs.
    authorities: tuple[tuple[str, str], ...] = ()
    #: what to do with a catalog common name that is really a higher rank's name
    #: (:data:`~biovqa.taxonomy.english.HIGHER_RANK_POLICIES`); ``keep`` reproduces the paper
    higher_rank_names: str = "keep"

    def __post_init__(self) -> None:
        pairs = self.authorities.items() if isinstance(self.authorities, dict) else self.authorities
        object.__setattr__(self, "authorities", tuple((str(n), str(p)) for n, p in pairs))

    def as_manifest(self) -> dict[str, Any]:
        return {
            "per_group": self.per_group,
            "seed": self.seed,
            "min_side": self.min_side,
            "species_cap": self.species_cap,
            "groups": list(self.groups),
            "authorities": [name for name, _ in self.authorities],
            "higher_rank_names": self.higher_rank_names,
        }


# --------------------------------------------------------------------------------------------
# candidates


def assign_groups(frame: pd.DataFrame) -> pd.Series:
    """Organismal group of each catalog row by the Table 5 filters (None when in no group)."""
    group = pd.Series(None, index=frame.index, dtype=object)
    for name, (rank, values) in GROUPS.items():
        hit = frame[rank].isin(values) & group.isna()
        group[hit] = name
    return group


def _candidates(
    catalog: pa.Table, options: C1BuildOptions
) -> tuple[pd.DataFrame, dict[str, dict[str, int]], BenchmarkTree, dict[str, int]]:
    """Candidate rows of the selected groups, the exclusion counts, and the benchmark tree.

    The tree (paper App. C.3) is built from **every** catalog row with a complete lineage —
    all groups, rows in no group, before any sampling — so a reply naming a catalog taxon that
    was not selected still resolves, N of Lin is the catalog's node count and each node carries
    its catalog image count (exposure, Eq. 29). Each candidate row keeps its tree leaf."""
    columns = ["uuid", "kingdom", *TREE_RANKS, "scientific_name", "common_name"]
    table = catalog.select(columns)
    epithet = pc.struct_field(pc.extract_regex(pc.fill_null(table.column("species"), ""),
                                               r"^\S+\s+(?P<epithet>\S+)"), "epithet")
    frame = table.to_pandas()
    frame["epithet"] = epithet.to_pandas()
    frame["group"] = assign_groups(frame)
    exclusions: dict[str, dict[str, int]] = {}

    def exclude(mask: pd.Series, reason: str) -> None:
        counts = frame.loc[mask, "group"].fillna("(no group)").value_counts()
        for group, n in counts.items():
            exclusions.setdefault(reason, {})[str(group)] = int(n)

    # Reptiles have no order in the Backbone (Reptilia is a pro-parte synonym of four classes).
    no_order = frame["group"].isin(GROUPS_WITHOUT_ORDER)
    frame.loc[no_order, "order"] = None
    required = ["kingdom", "phylum", "class", "order", "family", "genus", "species"]
    needs = frame[required].notna()
    needs["order"] |= no_order
    complete = needs.all(axis=1) & frame["epithet"].notna()
    in_tree = np.flatnonzero(complete.to_numpy())
    tree, leaves = build_tree(frame.iloc[in_tree][list(TREE_RANKS)])
    leaf = np.full(len(frame), -1, dtype=np.int64)
    leaf[in_tree] = leaves
    frame["leaf"] = leaf
    tree_card = {"nodes": tree.n_nodes, "images": int(tree.images[0]), "catalog_rows": int(len(frame))}

    in_group = frame["group"].isin(options.groups)
    exclude(~in_group & frame["group"].notna(), "group_not_selected")
    exclude(in_group & ~complete, "incomplete_lineage")
    frame = frame[in_group & complete].copy()
    frame["scientific_name"] = frame["species"]
    return frame, exclusions, tree, tree_card


def resolve_common_names(
    frame: pd.DataFrame, index: Any | None, overrides: Path | None, authorities: tuple[Any, ...] = ()
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """English common name per row (paper §3.1): the catalog name if stage-1 triage
    accepts it, else the first stage-2 authority's clean candidate (iNaturalist when given, then
    the Backbone's English vernaculars), an override CSV winning over all. Also returns, per
    stage, how many distinct (species, catalog name) pairs it settled."""
    from biovqa.taxonomy.english import english_common_names_detailed

    pairs = frame[["species", "common_name"]].drop_duplicates().sort_values(["species", "common_name"], na_position="last")
    result = english_common_names_detailed(
        pairs["common_name"].tolist(), pairs["species"].tolist(), index, overrides, authorities
    )
    pairs = pairs.assign(common_name_en=result.names, common_name_source=result.sources)
    merged = frame.merge(pairs, on=["species", "common_name"], how="left", sort=False)
    merged.index = frame.index
    settled = pd.Series(result.sources, dtype=object)
    triage = pd.Series(result.triage, dtype=object)
    stages = {
        "pairs": int(len(pairs)),
        "override": int((settled == "override").sum()),
        "triage_en_tag": int((triage == "en_tag").sum()),
        "triage_word_list": int((triage == "word_list").sum()),
        **{f"authority_{a.name}": int((settled == a.name).sum()) for a in authorities},
        "authority_gbif_en": int((settled == "gbif_en").sum()),
        "unresolved": int((settled == "unresolved").sum()),
        "triage_rejected": {str(k): int(v) for k, v in triage[
            triage.notna() & ~triage.isin(["en_tag", "word_list"])].value_counts().sort_index().items()},
    }
    return merged, stages


def apply_higher_rank_names(
    frame: pd.DataFrame, index: Any | None, policy: str, exclusions: dict[str, dict[str, int]],
    examples: dict[str, list[str]],
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Find the catalog common names that are really a higher rank's name
    (:func:`biovqa.taxonomy.english.higher_rank_names`) and apply ``policy``: ``keep`` them
    (counted only), ``replace`` them with the species' own English vernacular in the Backbone
    (source ``gbif_en``; an image whose species has none is excluded as
    ``higher_rank_common_name_without_species_name``), or ``exclude`` the images
    (``higher_rank_common_name``). Only names the catalog supplied are examined: an override or an
    authority's name is the species' own. Adds the column ``higher_rank`` (the reason, or None)."""
    from biovqa.taxonomy.english import higher_rank_names

    lineage_columns = ["kingdom", "phylum", "class", "order", "family", "genus", "species"]
    frame = frame.assign(higher_rank=None)
    from_catalog = frame["common_name_source"] == "catalog"
    pairs = (frame.loc[from_catalog, [*lineage_columns, "common_name_en"]]
             .drop_duplicates().sort_values([*lineage_columns, "common_name_en"], na_position="last"))
    lineages = [{k: (None if pd.isna(v) else str(v)) for k, v in row.items()}
                for row in pairs[lineage_columns].to_dict("records")]
    found = higher_rank_names(lineages, pairs["common_name_en"].tolist(), index)
    verdicts = pairs.assign(reason=found.reasons, species_name=found.species_names)
    verdicts = verdicts[verdicts["reason"].notna()]
    keyed = frame[[*lineage_columns, "common_name_en"]].reset_index().merge(
        verdicts, on=[*lineage_columns, "common_name_en"], how="left", sort=False).set_index("index")
    flagged = keyed["reason"].notna()
    frame.loc[flagged.index[flagged], "higher_rank"] = keyed.loc[flagged, "reason"]
    card: dict[str, Any] = {
        "policy": policy,
        "images": int(flagged.sum()),
        "pairs": int(len(verdicts)),
        "by_reason": {str(k): int(v) for k, v in keyed.loc[flagged, "reason"].value_counts().sort_index().items()},
        "examples": [f"{row.species} ({row.family}): {row.common_name_en!r} [{row.reason}]"
                     for row in verdicts.head(20).itertuples()],
    }

    def drop(mask: pd.Series, reason: str) -> pd.DataFrame:
        counts = frame.loc[mask, "group"].value_counts()
        if len(counts):
            exclusions[reason] = {str(g): int(n) for g, n in counts.sort_index().items()}
            _name_examples(examples, reason, frame.loc[mask, "uuid"].tolist())
        return frame[~mask]

    if policy == "exclude":
        frame = drop(flagged, "higher_rank_common_name")
        card["excluded"] = int(flagged.sum())
    elif policy == "replace":
        own = keyed["species_name"].where(flagged)
        replaceable = own.notna()
        frame.loc[replaceable.index[replaceable], "common_name_en"] = own[replaceable]
        frame.loc[replaceable.index[replaceable], "common_name_source"] = "gbif_en"
        card["replaced"] = int(replaceable.sum())
        without = flagged & ~replaceable
        card["excluded"] = int(without.sum())
        frame = drop(without, "higher_rank_common_name_without_species_name")
    return frame, card


# --------------------------------------------------------------------------------------------
# images


def index_images(images: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Map uuid → file name for ``<uuid>.<ext>`` files in the image folder, and the uuids present
    as several files (``x.png`` and ``x.jpg``: which one the catalog row means is unknown, so
    neither is used) → their file names, sorted."""
    if not images.is_dir():
        raise MissingResourceError("image folder not found", file=images)
    found: dict[str, list[str]] = {}
    with os.scandir(images) as entries:
        for entry in entries:
            stem, dot, ext = entry.name.rpartition(".")
            if dot and ("." + ext.lower()) in IMAGE_SUFFIXES and entry.is_file():
                found.setdefault(stem, []).append(entry.name)
    unique = {stem: names[0] for stem, names in found.items() if len(names) == 1}
    return unique, {stem: sorted(names) for stem, names in sorted(found.items()) if len(names) > 1}


_PROBE_CHUNK = 256


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) read from the header of a PNG, JPEG, GIF or WebP file; None for other
    formats (:func:`biovqa.sources.images.header_size`). Reading a few header bytes is ~20× faster
    than opening the file with PIL, which matters when 100K images are checked
    (benchmarks/build_c1.py)."""
    from biovqa.sources.images import header_size

    return header_size(data)


def _inspect_images(paths: list[str]) -> list[tuple[int, int, str] | str]:
    """(width, height, sha256) of each file, or the reason it is refused (a file that cannot be
    read, is incomplete or breaks the limits of :mod:`biovqa.sources.images`). One read per file
    serves both; whole chunks go to a worker so thread hand-off costs little."""
    import hashlib

    from biovqa.sources.images import MAX_IMAGE_BYTES, OVER_BYTES, UNREADABLE, inspect_image

    out: list[tuple[int, int, str] | str] = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                if os.fstat(handle.fileno()).st_size > MAX_IMAGE_BYTES:
                    out.append(OVER_BYTES)
                    continue
                data = handle.read()
        except OSError:
            out.append(UNREADABLE)
            continue
        size = inspect_image(data)
        if isinstance(size, str):
            out.append(size)
            continue
        out.append((size[0], size[1], hashlib.sha256(data).hexdigest()))
    return out


def _select(
    frame: pd.DataFrame, images: Path, options: C1BuildOptions, exclusions: dict[str, dict[str, int]],
    advance: Any = None, examples: dict[str, list[str]] | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    files, ambiguous = index_images(images)
    rng = np.random.default_rng(options.seed)
    frame = frame.sort_values("uuid", kind="stable").reset_index(drop=True)
    frame = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
    frame["species_rank"] = frame.groupby(["group", "species"], sort=False).cumcount()
    frame["file"] = frame["uuid"].map(files)
    chosen: list[pd.DataFrame] = []
    relaxed: dict[str, Any] = {}
    with ThreadPoolExecutor(max_workers=options.workers) as pool:
        for group in sorted(frame["group"].unique()):
            rows = frame[frame["group"] == group]
            twice = rows["uuid"].isin(ambiguous).to_numpy()
            if twice.any():
                exclusions.setdefault("duplicate_image_file", {})[group] = int(twice.sum())
                _name_examples(examples, "duplicate_image_file",
                               (" and ".join(ambiguous[u]) for u in rows.loc[twice, "uuid"]))
                rows = rows[~twice]
            missing = rows["file"].isna()
            if missing.any():
                exclusions.setdefault("missing_image", {})[group] = int(missing.sum())
                _name_examples(examples, "missing_image", (f"uuid {u}" for u in rows.loc[missing, "uuid"]))
            rows = rows[~missing]
            within_cap = (rows["species_rank"] < options.species_cap).to_numpy()
            ordered = pd.concat([rows[within_cap], rows[~within_cap]]).reset_index(drop=True)
            over_cap_flags = np.concatenate([np.zeros(within_cap.sum(), bool), np.ones((~within_cap).sum(), bool)])
            taken, low_res, broken = _take(ordered["file"].to_numpy(dtype=object), images, options, pool,
                                           advance, examples)
            for reason, count in sorted(broken.items()):
                exclusions.setdefault(reason, {})[group] = count
            if len(taken) < options.per_group and low_res:
                # relax the resolution threshold last (paper §3.1, App. A.1)
                extra = low_res[: options.per_group - len(taken)]
                relaxed.setdefault("resolution_relaxed", {})[group] = len(extra)
                taken.extend(extra)
                low_res = low_res[len(extra):]
            if low_res:
                exclusions.setdefault("low_resolution", {})[group] = len(low_res)
            positions = np.array([p for p, _ in taken], dtype=np.int64)
            over_cap = int(over_cap_flags[positions].sum()) if len(positions) else 0
            if over_cap:
                relaxed.setdefault("species_cap_relaxed", {})[group] = over_cap
            chosen.append(ordered.iloc[positions].assign(
                width=[info[0] for _, info in taken], height=[info[1] for _, info in taken],
                image_sha256=[info[2] for _, info in taken]))
            if len(taken) < options.per_group:
                relaxed.setdefault("short_groups", {})[group] = len(taken)
    selected = pd.concat(chosen) if chosen else frame.iloc[:0].assign(width=[], height=[], image_sha256=[])
    return selected.sort_values(["group", "uuid"], kind="stable").reset_index(drop=True), relaxed


def _take(
    files: np.ndarray, images: Path, options: C1BuildOptions, pool: ThreadPoolExecutor,
    advance: Any = None, examples: dict[str, list[str]] | None = None,
) -> tuple[list[tuple[int, tuple[int, int, str]]], list[tuple[int, tuple[int, int, str]]], dict[str, int]]:
    """Walk ``files`` in order, inspecting images in parallel chunks, until ``per_group`` pass;
    refused files are counted per reason."""
    taken: list[tuple[int, tuple[int, int, str]]] = []
    low_res: list[tuple[int, tuple[int, int, str]]] = []
    broken: dict[str, int] = {}
    position = 0
    root = str(images)
    while len(taken) < options.per_group and position < len(files):
        need = options.per_group - len(taken)
        stop = min(len(files), position + max(_PROBE_CHUNK, int(need * 1.1)))
        paths = [os.path.join(root, f) for f in files[position:stop]]
        chunks = [paths[i:i + _PROBE_CHUNK] for i in range(0, len(paths), _PROBE_CHUNK)]
        infos = [info for part in pool.map(_inspect_images, chunks) for info in part]
        for offset, info in enumerate(infos):
            if len(taken) >= options.per_group:
                break
            if isinstance(info, str):
                broken[info] = broken.get(info, 0) + 1
                _name_examples(examples, info, [str(files[position + offset])])
            elif min(info[0], info[1]) < options.min_side:
                low_res.append((position + offset, info))
            else:
                taken.append((position + offset, info))
        if advance is not None:
            advance(min(len(taken), options.per_group) - (options.per_group - need))
        position = stop
    return taken, low_res, broken


def _name_examples(examples: dict[str, list[str]] | None, reason: str, names: Any) -> None:
    """Keep the first files (or catalog rows) of an exclusion reason for the manifest (the counts
    are kept per group in ``exclusions``)."""
    if examples is None:
        return
    from biovqa.sources.validate import MAX_EXAMPLES

    named = examples.setdefault(reason, [])
    named.extend(str(name) for name, _ in zip(names, range(max(0, MAX_EXAMPLES - len(named)))))


# --------------------------------------------------------------------------------------------
# questions


def _label(kingdoms: np.ndarray) -> np.ndarray:
    return np.array([KINGDOM_LABEL.get(k, "organism") for k in kingdoms], dtype=object)


def _mcq_options(
    selected: pd.DataFrame, rng: np.random.Generator, draws: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """Gold + three distractor common names per image, drawn uniformly from the species of the
    target's class (paper §3.1), no two options equal after normalization, shuffled.

    Vectorised: ``draws`` uniform candidates per image, the first three acceptable kept; the few
    images left short (tiny classes, name collisions) fall back to a full permutation of the
    class, then of all species. Returns (n, 4) arrays of option names and option species."""
    species_table = (
        selected[["class", "species", "common_name_en"]]
        .drop_duplicates("species").sort_values("species").reset_index(drop=True)
    )
    pool_species = species_table["species"].to_numpy(dtype=object)
    pool_names = species_table["common_name_en"].to_numpy(dtype=object)
    norm = normalize_c1_array(pa.array(pool_names.tolist(), pa.string())).to_pylist()
    name_id = pd.factorize(pd.Series(norm, dtype=object))[0].astype(np.int64)
    species_id = {s: i for i, s in enumerate(pool_species)}
    class_codes, class_names = pd.factorize(species_table["class"], sort=True)
    order = np.argsort(class_codes, kind="stable")
    class_start = np.searchsorted(class_codes[order], np.arange(len(class_names)))
    class_size = np.bincount(class_codes, minlength=len(class_names))

    gold = np.array([species_id[s] for s in selected["species"]], dtype=np.int64)
    gold_name = name_id[gold]
    klass = class_codes[gold]
    n = len(gold)
    candidates = order[class_start[klass][:, None] + (rng.random((n, draws)) * class_size[klass][:, None]).astype(np.int64)]
    picks = np.full((n, 3), -1, dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)
    for k in range(draws):
        candidate = candidates[:, k]
        name = name_id[candidate]
        fresh = (name != gold_name) & (count < 3)
        for j in range(3):
            fresh &= ~((picks[:, j] >= 0) & (name_id[np.maximum(picks[:, j], 0)] == name))
        rows = np.flatnonzero(fresh)
        picks[rows, count[rows]] = candidate[rows]
        count[rows] += 1
    for row in np.flatnonzero(count < 3):
        members = order[class_start[klass[row]]:class_start[klass[row]] + class_size[klass[row]]]
        used = {gold_name[row], *(name_id[p] for p in picks[row] if p >= 0)}
        for pool in (members, np.arange(len(pool_species))):
            for candidate in rng.permutation(pool):
                if count[row] == 3:
                    break
                if name_id[candidate] not in used:
                    picks[row, count[row]] = candidate
                    count[row] += 1
                    used.add(name_id[candidate])
        if count[row] < 3:
            raise BiovqaError(
                f"cannot draw three distinct distractor common names for {pool_species[gold[row]]!r}",
                hint="the selection holds fewer than four species with distinct English common names",
            )
    option_ids = np.concatenate([gold[:, None], picks], axis=1)
    option_ids = np.take_along_axis(option_ids, rng.permuted(np.tile(np.arange(4), (n, 1)), axis=1), axis=1)
    gold_names = selected["common_name_en"].to_numpy(dtype=object)
    names = pool_names[option_ids]
    # the gold option carries this image's own common-name spelling
    names[option_ids == gold[:, None]] = gold_names
    return names, pool_species[option_ids]


@dataclass(frozen=True)
class ItemColumns:
    """Item columns as arrays (one entry per question) plus the per-image context the tier
    computation needs. Kept out of pandas on purpose: 890K-row string frames cost seconds."""

    columns: dict[str, pa.Array]
    context: dict[str, np.ndarray]  # per-question object arrays the tier code reads
    task_index: np.ndarray  # question → position in TASKS
    image_index: np.ndarray  # question → row of ``selected``
    option_nodes: np.ndarray  # (n_images, 4) tree nodes of the MCQ options
    gold_position: np.ndarray  # (n_images,) which option is the gold


def _list_column(per_image: np.ndarray, image_index: np.ndarray, present: np.ndarray, value_type: pa.DataType) -> pa.Array:
    """A list<value_type> column holding ``per_image[image_index]`` where ``present``, else null."""
    rows = np.flatnonzero(present)
    width = per_image.shape[1]
    lengths = np.where(present, width, 0)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = pa.array(per_image[image_index[rows]].ravel().tolist(), value_type)
    return pa.ListArray.from_arrays(pa.array(offsets), values, mask=pa.array(~present))


def make_items(selected: pd.DataFrame, tree: BenchmarkTree, leaf_nodes: np.ndarray, vernacular: Any,
               seed: int) -> ItemColumns:
    """One row per question, image-grouped (tasks in Table 6 order)."""
    n = len(selected)
    has_order = ~selected["group"].isin(GROUPS_WITHOUT_ORDER).to_numpy()
    asked = np.ones((n, len(TASKS)), dtype=bool)
    asked[:, TASKS.index("order")] = has_order
    image_index, task_index = np.nonzero(asked)
    tasks = np.array(TASKS, dtype=object)[task_index]
    per_image = {c: selected[c].to_numpy(dtype=object) for c in (
        "uuid", "kingdom", *TREE_RANKS, "epithet", "common_name_en", "common_name_source", "group",
        "file", "image_sha256")}
    labels = _label(per_image["kingdom"])[image_index]

    template_rng = np.random.default_rng(seed)
    rank_pick = template_rng.integers(0, len(RANK_TEMPLATES), size=len(tasks))
    name_pick = template_rng.integers(0, len(NAME_TEMPLATES), size=len(tasks))
    options, option_species = _mcq_options(selected, np.random.default_rng(seed))
    species_leaf = dict(zip(per_image["species"].tolist(), leaf_nodes.tolist()))
    option_leaves = np.vectorize(species_leaf.__getitem__, otypes=[np.int64])(option_species)
    # options resolve like any common name (paper App. E: "MCQ distractors resolve through
    # the same index"), falling back to the species they were drawn from
    resolved = vernacular.lookup(normalize_c1_array(pa.array(options.ravel().tolist(), pa.string())))
    option_nodes = np.where(resolved >= 0, resolved, option_leaves.ravel()).reshape(options.shape)
    gold_position = np.argmax(option_species == per_image["species"][:, None], axis=1)

    gold_source = {
        "phylum": "phylum", "class": "class", "order": "order", "family": "family", "genus": "genus",
        "species": "epithet", "scientific_name": "species", "common_name": "common_name_en",
        "common_name_mcq": "common_name_en",
    }
    questions = np.empty(len(tasks), dtype=object)
    answers = np.empty(len(tasks), dtype=object)
    for task in TASKS:
        where = np.flatnonzero(task_index == TASKS.index(task))
        if not len(where):
            continue
        images_of = image_index[where]
        answers[where] = per_image[gold_source[task]][images_of]
        if task == "common_name_mcq":
            questions[where] = [
                MCQ_TEMPLATE.format(label=lab, o1=o[0], o2=o[1], o3=o[2], o4=o[3])
                for lab, o in zip(labels[where].tolist(), options[images_of].tolist())
            ]
            continue
        templates = NAME_TEMPLATES if task in ("scientific_name", "common_name") else RANK_TEMPLATES
        picks = name_pick[where] if templates is NAME_TEMPLATES else rank_pick[where]
        formatted = [t.format(rank=RANK_WORD[task], label=lab) for t in templates for lab in ("animal", "plant", "organism")]
        label_code = np.searchsorted(np.array(["animal", "organism", "plant"]), labels[where].astype(str))
        label_slot = np.array([0, 2, 1])[label_code]  # sorted order → formatted order
        questions[where] = np.asarray(formatted, dtype=object)[picks * 3 + label_slot]

    is_mcq = tasks == "common_name_mcq"
    instruction_of = pa.array([INSTRUCTIONS[t] for t in TASKS], pa.string())
    take_image = pa.array(image_index)

    def from_image(column: str) -> pa.Array:  # Arrow's take beats object-array conversion
        return pa.array(per_image[column], pa.string(), from_pandas=True).take(take_image)

    columns: dict[str, Any] = {
        "item_id": pc.binary_join_element_wise("c1", from_image("uuid"),
                                               pa.array(tasks, pa.string()), ":"),
        "component": pa.array(np.full(len(tasks), "c1", dtype=object), pa.string()),
        "task": pa.array(tasks, pa.string()),
        "question": pa.array(questions, pa.string()),
        "instruction": instruction_of.take(pa.array(task_index)),
        "options": _list_column(options, image_index, is_mcq, pa.string()),
        "answer": pa.array(answers, pa.string(), from_pandas=True),
        "image": from_image("file"),
        "image_sha256": from_image("image_sha256"),
        "source_id": from_image("uuid"),
        "group": from_image("group"),
        "kingdom": from_image("kingdom"),
        **{rank: from_image(rank) for rank in TREE_RANKS},
        "epithet": from_image("epithet"),
        "scientific_name": from_image("species"),
        "common_name": from_image("common_name_en"),
        "common_name_source": from_image("common_name_source"),
        "width": pa.array(selected["width"].to_numpy(np.int32)[image_index]),
        "height": pa.array(selected["height"].to_numpy(np.int32)[image_index]),
    }
    context = {"group": per_image["group"][image_index],
               "common_name": per_image["common_name_en"][image_index]}
    return ItemColumns(columns, context, task_index, image_index, option_nodes, gold_position)


def _attach_tiers(built: ItemColumns, tree: BenchmarkTree, image_leaves: np.ndarray,
                  vernacular: Any, prevalence_method: str) -> pa.Table:
    """Resolve each item's target node (Table 29: exact → vernacular → lineage → anchor) and
    attach the 13 difficulty columns of paper §3.1 (paper App. E)."""
    from biovqa.components.c1 import tiers as c1_tiers

    columns = built.columns
    code = built.task_index
    tasks = np.asarray(TASKS, dtype=object)[code]
    leaf = image_leaves[built.image_index].astype(np.int64)
    target = leaf.copy()
    method = np.full(len(tasks), "exact", dtype=object)
    for rank in ("phylum", "class", "order", "family", "genus"):
        rows = code == TASKS.index(rank)
        target[rows] = tree.node_at_depth(leaf[rows], RANK_DEPTH[rank])
    method[code == TASKS.index("species")] = "lineage"  # the epithet is read off the lineage
    is_mcq = code == TASKS.index("common_name_mcq")
    named_rows = np.flatnonzero(is_mcq | (code == TASKS.index("common_name")))
    common = normalize_c1_array(columns["common_name"].take(pa.array(named_rows)))
    found = vernacular.lookup(common)
    target[named_rows] = np.where(found >= 0, found, leaf[named_rows])
    method[named_rows] = np.where(found >= 0, "vernacular", "lineage")
    anchor = target < 0  # a rank the lineage lacks: fall back to the lowest lineage node
    target[anchor] = leaf[anchor]
    method[anchor] = "anchor"

    # exposure c(t) counts catalog images beneath t (Eq. 29, E.3), not selected images
    item_exposure = c1_tiers.catalog_exposure(tree)[target]
    prevalence = c1_tiers.prevalence_tiers(
        built.context["group"], tasks, target, item_exposure, tree.names[target], method=prevalence_method)

    n = len(tasks)
    mcq_rows = np.flatnonzero(is_mcq)
    images_of = built.image_index[mcq_rows]
    tiers = c1_tiers.confusability_tiers(
        tree, target[mcq_rows],
        c1_tiers.distractor_nodes(built.option_nodes[images_of], built.gold_position[images_of]))
    ndd = np.zeros(n, dtype=np.int8)
    ndd[mcq_rows] = tiers.ndd
    meet = np.full(n, None, dtype=object)
    meet[mcq_rows] = tiers.meet_rank
    confusability = np.full(n, np.nan)
    confusability[mcq_rows] = tiers.confusability
    mcq_tier = np.full(n, None, dtype=object)
    mcq_tier[mcq_rows] = tiers.tier
    unified = c1_tiers.unified_tier(tasks, prevalence.tier, mcq_tier)
    arrays = dict(columns) | {
        "target_node": pa.array(target.astype(np.int32)),
        "target_rank": pa.array(np.asarray(c1_tiers.DEPTH_RANK, dtype=object)[tree.depth[target]], pa.string()),
        "reference_cell": pa.array(np.where(is_mcq, np.array(None, dtype=object), prevalence.reference_cell), pa.string()),
        "resolution_method": pa.array(method, pa.string()),
        "exposure": pa.array(item_exposure.astype(np.int64)),
        "log10_exposure": pa.array(c1_tiers.log10_exposure(item_exposure)),
        "prevalence_percentile": pa.array(prevalence.percentile, from_pandas=True),
        "prevalence_tier": pa.array(prevalence.tier, pa.string()),
        "ndd": pa.array(ndd, mask=~is_mcq),
        "ndd_rank": pa.array(meet, pa.string()),
        "confusability": pa.array(confusability, from_pandas=True),
        "mcq_tier": pa.array(mcq_tier, pa.string()),
        "tier": pa.array(unified, pa.string()),
        "tier_method": pa.array(np.where(is_mcq, "confusability", "prevalence"), pa.string()),
        "option_nodes": _list_column(built.option_nodes.astype(np.int32), built.image_index, is_mcq, pa.int32()),
    }
    return pa.table(arrays)


# --------------------------------------------------------------------------------------------
# entry points


@staged_build
def build_c1(
    catalog: str | Path,
    backbone: str | Path,
    images: str | Path,
    out: str | Path,
    *,
    options: C1BuildOptions = C1BuildOptions(),
    common_name_overrides: str | Path | None = None,
    prevalence_method: str = "item_weighted",
    console: Any | None = None,
) -> Bench:
    """Build a C1 benchmark folder; see the module docstring."""
    from biovqa.taxonomy.index import TaxonomyIndex
    from biovqa.taxonomy.vernacular import build_vernacular_index

    catalog, backbone, images, out = Path(catalog), Path(backbone), Path(images), Path(out)
    from biovqa.taxonomy.english import HIGHER_RANK_POLICIES

    if options.higher_rank_names not in HIGHER_RANK_POLICIES:
        raise BiovqaError(f"unknown --higher-rank-names {options.higher_rank_names!r}", field="higher_rank_names",
                          hint=f"choose from {', '.join(HIGHER_RANK_POLICIES)}")
    unknown_groups = [g for g in options.groups if g not in GROUPS]
    if unknown_groups:
        raise BiovqaError(f"unknown organismal group(s) {unknown_groups}", field="groups",
                          hint=f"choose from {', '.join(GROUPS)}")
    overrides = Path(common_name_overrides) if common_name_overrides else None
    index = TaxonomyIndex.open(backbone)
    index.verify()  # every part matches the SHA-256 its card records
    say = console.print if console is not None else (lambda *a, **k: None)

    say(f"reading catalog {catalog}")
    table = read_catalog(catalog)
    frame, exclusions, tree, tree_card = _candidates(table, options)
    from biovqa.taxonomy.inaturalist import open_authority

    authorities = tuple(open_authority(name, path) for name, path in options.authorities)
    frame, stages = resolve_common_names(frame, index, overrides, authorities)
    unresolved = frame["common_name_source"] == "unresolved"
    if unresolved.any():
        counts = frame.loc[unresolved, "group"].value_counts()
        exclusions["no_english_common_name"] = {str(g): int(n) for g, n in counts.items()}
        frame = frame[~unresolved]
    examples: dict[str, list[str]] = {}  # per reason, the first image files excluded
    frame, higher_rank = apply_higher_rank_names(frame, index, options.higher_rank_names, exclusions, examples)
    say(f"{len(frame):,} candidate images; checking image files in {images}")
    from biovqa.progress import stage

    with stage("C1: images accepted", total=options.per_group * frame["group"].nunique(),
               unit="images", console=console) as accepted:
        selected, relaxed = _select(frame, images, options, exclusions, advance=accepted.advance,
                                    examples=examples)
    if selected.empty:
        raise BiovqaError("no catalog row passed the filters", file=catalog,
                          hint="check the image folder and the --per-group/--min-side options")
    leaf_nodes = selected["leaf"].to_numpy(np.int32)
    vernacular = build_vernacular_index(selected["common_name_en"].tolist(), leaf_nodes, tree)
    item_table = _attach_tiers(make_items(selected, tree, leaf_nodes, vernacular, options.seed), tree,
                               leaf_nodes, vernacular, prevalence_method)

    side = out / SIDE_FOLDER
    side.mkdir(parents=True, exist_ok=True)
    tree.save(side / TREE_FILE)
    vernacular.save(side / VERNACULAR_FILE)
    replaced = selected[(selected["common_name_source"] != "catalog") | selected["higher_rank"].notna()][
        ["uuid", "species", "common_name", "common_name_en", "common_name_source", "higher_rank"]
    ].rename(columns={"common_name": "catalog_common_name"})
    write_parquet(pa.Table.from_pandas(replaced.reset_index(drop=True), preserve_index=False),
                  side / COMMON_NAMES_FILE)

    parameters = options.as_manifest() | {"prevalence_method": prevalence_method}
    bench = write_bench(
        out,
        item_table,
        component="c1",
        generator=GENERATOR,
        seed=options.seed,
        sources={"catalog": catalog, "common_name_overrides": overrides} if overrides else {"catalog": catalog},
        parameters=parameters,
        extra={
            # relative to the benchmark folder: no builder path, and a benchmark moved together
            # with its photos and index still finds them (Bench.images_root, the C1 scorer)
            "images_root": relative_to_bench(images, out),
            "taxonomy_index": relative_to_bench(backbone, out),
            "taxonomy_index_card": _index_card(backbone),
            "images": int(len(selected)),
            "exclusions": exclusions,
            "exclusion_examples": {reason: examples[reason] for reason in sorted(examples)},
            "relaxations": relaxed,
            "common_names": {
                "replaced": int((selected["common_name_source"] != "catalog").sum()),
                "by_source": {str(k): int(v) for k, v in selected["common_name_source"].value_counts().sort_index().items()},
                "file": f"{SIDE_FOLDER}/{COMMON_NAMES_FILE}",
                # distinct (species, catalog name) pairs settled by each stage, in stage order
                "stages": stages,
                "authorities": {a.name: a.card() for a in authorities},
                # catalog names that are really a higher rank's name (candidates, before the
                # image checks) and what the build did with them
                "higher_rank": higher_rank,
            },
            # the tree is the catalog's (every row with a complete lineage, all groups, before
            # sampling): taxa (= N of Lin) and the catalog images it holds (= c(root))
            "tree": {"file": f"{SIDE_FOLDER}/{TREE_FILE}", **tree_card},
        },
    )
    return bench


def _index_card(index_dir: Path) -> dict[str, Any]:
    import json

    card = index_dir / "index.json"
    if not card.exists():
        return {}
    data = json.loads(card.read_text(encoding="utf-8"))
    keep = ("sources", "rows", "biovqa_version", "source_sha256", "counts", "accepted_statuses",
            "synonym_statuses")
    return {k: v for k, v in data.items() if k in keep}


def build_command(
    catalog: Annotated[Path, typer.Option(help="TreeOfLife-200M catalog (.parquet or .csv)")],
    backbone: Annotated[Path, typer.Option(help="taxonomy index from `biovqa taxonomy index`")],
    images: Annotated[Path, typer.Option(help="folder of <uuid>.<ext> images")],
    out: Annotated[Path, typer.Option(help="benchmark folder to write")],
    per_group: Annotated[int, typer.Option(help="images per organismal group")] = 10_000,
    seed: Annotated[int, typer.Option(help="sampling, template and distractor seed")] = 42,
    min_side: Annotated[int, typer.Option(help="minimum shorter image side in pixels")] = 224,
    species_cap: Annotated[int, typer.Option(help="images per species per group before relaxing")] = 50,
    group: Annotated[Optional[list[str]], typer.Option(help="restrict to these groups (repeatable)")] = None,
    common_names: Annotated[Optional[Path], typer.Option(help="CSV scientific_name,common_name of overrides")] = None,
    prevalence_method: Annotated[str, typer.Option(help="item_weighted (E.3) or taxon_rank (D.9)")] = "item_weighted",
    authority: Annotated[Optional[list[str]], typer.Option(
        help="stage-2 common-name authority as NAME=PATH, repeatable, in order of preference; "
             "inaturalist=inaturalist-taxonomy.dwca.zip (zip or unpacked folder)")] = None,
    higher_rank_names: Annotated[str, typer.Option(
        help="catalog common names that are really a higher rank's name (an ancestor's vernacular, "
             "'... And Allied ...'): keep (the paper), replace with the species' own English "
             "vernacular in the Backbone, or exclude the images; counted in the manifest either way")] = "keep",
) -> None:
    """Build C1 (hierarchical taxonomic reasoning) from a TreeOfLife-200M catalog."""
    from biovqa.progress import stderr_console

    console = stderr_console()
    pairs: list[tuple[str, str]] = []
    for spec in authority or []:
        name, sep, path = spec.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise BiovqaError(f"--authority {spec!r} is not NAME=PATH", field="authority",
                              hint="e.g. --authority inaturalist=inaturalist-taxonomy.dwca.zip")
        pairs.append((name.strip(), path.strip()))
    options = C1BuildOptions(per_group=per_group, seed=seed, min_side=min_side,
                             species_cap=species_cap, groups=tuple(group) if group else tuple(GROUPS),
                             authorities=tuple(pairs), higher_rank_names=higher_rank_names)
    bench = build_c1(catalog, backbone, images, out, options=options,
                     common_name_overrides=common_names, prevalence_method=prevalence_method,
                     console=console)
    counts = bench.manifest["counts"]
    console.print(f"[green]built C1[/green]: {counts['total']:,} items over {bench.manifest['images']:,} images → {bench.root}")


# --------------------------------------------------------------------------------------------
# floor and audit hooks (registered in biovqa.components.registry)


def floor_responses(items: pa.Table) -> pa.Array:
    """Image-blind floor (Table 3): the most frequent taxon at each rank for every item; for the
    MCQ, the option naming the most frequent common name (ties: first option)."""
    from biovqa.components.c1.floor import floor_answers, mcq_floor_choice

    answers = floor_answers(items)
    tasks = items.column("task")
    replies = np.asarray([answers.get(t) for t in tasks.to_pylist()], dtype=object)
    mcq_rows = np.flatnonzero(pc.equal(tasks, "common_name_mcq").to_numpy(zero_copy_only=False))
    if len(mcq_rows):
        take = pa.array(mcq_rows)
        options = items.column("options").take(take).combine_chunks()
        flat = options.flatten()
        choice = mcq_floor_choice(items.column("answer").take(take), flat)
        width = len(flat) // len(mcq_rows)
        replies[mcq_rows] = flat.take(pa.array(np.arange(len(mcq_rows)) * width + choice)).to_pylist()
    return pa.array(replies.tolist(), pa.string())


def audit_items(bench: Bench) -> list[str]:
    """C1 part of the verification contract: every rank an item's image needs is present."""
    table = bench.items
    frame = table.select(["item_id", "task", "group", "kingdom", *TREE_RANKS, "epithet",
                          "scientific_name", "common_name"]).to_pandas()
    violations: list[str] = []
    required = ["kingdom", "phylum", "class", "order", "family", "genus", "species", "epithet",
                "scientific_name", "common_name"]
    for column in required:
        values = frame[column]
        bad = values.isna() | (values.astype(str).str.strip() == "")
        if column == "order":
            bad &= ~frame["group"].isin(GROUPS_WITHOUT_ORDER)
        for item_id in frame.loc[bad, "item_id"].head(20):
            violations.append(f"{item_id}: required rank '{column}' is null or empty")
        if bad.sum() > 20:
            violations.append(f"… {int(bad.sum()) - 20} more items with empty '{column}'")
    reptile_order = frame["group"].isin(GROUPS_WITHOUT_ORDER) & (frame["task"] == "order")
    for item_id in frame.loc[reptile_order, "item_id"].head(20):
        violations.append(f"{item_id}: reptiles have no order, but an order question exists")
    side = bench.root / SIDE_FOLDER
    for name in (TREE_FILE, VERNACULAR_FILE):
        if not (side / name).exists():
            violations.append(f"{SIDE_FOLDER}/{name}: missing (scoring needs it)")
    return violations
