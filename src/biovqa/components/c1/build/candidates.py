"""Catalog rows → candidate images (paper §3.1, App. A.1): the organismal group of each row, a
complete lineage phylum → species, an English common name (Backbone vernaculars, user
overrides, authorities), and what to do with a common name that is really a higher rank's name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.components.c1.build.images import (
    _name_examples,
)
from biovqa.components.c1.build.options import GROUPS, GROUPS_WITHOUT_ORDER, C1BuildOptions
from biovqa.records import TREE_RANKS
from biovqa.taxonomy.tree import BenchmarkTree, build_tree


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
