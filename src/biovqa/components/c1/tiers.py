"""C1 difficulty tiers (paper App. E, paper Supplement E): exposure, prevalence, confusability.

Tiers come from the answer key and the taxonomy only (never from predictions), are computed once per
benchmark and are taxon-deterministic: two items with the same target node in the same reference
cell share a tier. Everything here is a pure, vectorised function the C1 builder calls.

* Exposure (Eq. 29): ``c(t)`` = number of **catalog** images whose lineage passes through node
  ``t`` (E.3 "catalog images beneath it"; D.9 counts in TreeOfLife-200M) — read off the tree,
  which the builder makes from the whole catalog; ``x(t) = log10(c(t) + 1)``.
* Prevalence tier of an open-recall item (Eq. 30): within its reference cell (organismal group,
  rank class), distinct target taxa sorted by exposure ascending (ties: accepted name ascending,
  then node id) get the item-weighted mid-rank percentile ``p(t) = (cum(t) + n(t)/2) / N_cell``;
  Hard ``p < 1/3``, Medium ``1/3 ≤ p < 2/3``, Easy otherwise. A cell with fewer than 6 distinct taxa
  is re-cut within its rank class pooled over all groups; if that pool is thin too, the items are
  Degenerate. ``method="taxon_rank"`` is the unweighted D.9 variant (Eq. 28):
  ``P(t) = |{u : c(u) ≤ c(t)}| / |T_cell|``, Easy if ``P > 0.67``, Hard if ``P ≤ 0.33``
  (same cells and escalation).
* Confusability tier of a 4-way MCQ item (Eqs. 31–32): ``d_j = d(g) − d(LCA(g, j))`` for each
  distractor ``j``; ``NDD = min_j d_j``; Hard if ``NDD ≤ 1``, Medium if ``NDD = 2``, Easy if
  ``NDD ≥ 3``; continuous ``confusability = mean_j 2^(−d_j)``; the rank where the nearest distractor
  meets the answer is the rank of ``d(g) − NDD``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from biovqa.components.c1.kernels import DEPTH_RANK
from biovqa.components.c1.tasks import MCQ_TASKS
from biovqa.errors import InputFormatError
from biovqa.taxonomy.tree import BenchmarkTree

EASY, MEDIUM, HARD, DEGENERATE = "Easy", "Medium", "Hard", "Degenerate"
TIERS: tuple[str, ...] = (EASY, MEDIUM, HARD, DEGENERATE)
#: Question type → rank class of its reference cell; the three species-level wordings merge.
RANK_CLASS: dict[str, str] = {
    "phylum": "phylum",
    "class": "class",
    "order": "order",
    "family": "family",
    "genus": "genus",
    "species": "species",
    "scientific_name": "species",
    "common_name": "species",
}
#: Fewer distinct taxa than this make a reference cell thin (Supplement E.4).
MIN_DISTINCT_TAXA = 6
#: Reference-cell label of a cell pooled over all groups.
ALL_GROUPS = "all groups"
PREVALENCE_METHODS: tuple[str, ...] = ("item_weighted", "taxon_rank")


def exposure_counts(tree: BenchmarkTree, image_nodes: np.ndarray) -> np.ndarray:
    """c(t) for every node (Eq. 29): images whose lineage passes through ``t``. ``image_nodes``
    holds each image's deepest node; the root counts every image."""
    image_nodes = np.asarray(image_nodes, dtype=np.int64)
    if len(image_nodes) and (image_nodes.min() < 0 or image_nodes.max() >= len(tree.names)):
        raise ValueError("image_nodes holds ids outside the tree")
    lineage = tree.ancestors[image_nodes]
    return np.bincount(lineage[lineage >= 0], minlength=len(tree.names)).astype(np.int64)


def catalog_exposure(tree: BenchmarkTree) -> np.ndarray:
    """c(t) for every node (Eq. 29): the catalog images the tree counts beneath each node."""
    return np.asarray(tree.images, dtype=np.int64)


def log10_exposure(exposure: np.ndarray) -> np.ndarray:
    """x(t) = log10(c(t) + 1) (Eq. 29)."""
    return np.log10(np.asarray(exposure, dtype=np.float64) + 1.0)


def rank_classes(tasks: np.ndarray | list[str]) -> np.ndarray:
    """Rank class per item (object array; None for MCQ items, which take a confusability tier)."""
    tasks = np.asarray(tasks, dtype=object)
    unknown = sorted({t for t in set(tasks.tolist()) if t not in RANK_CLASS and t not in MCQ_TASKS})
    if unknown:
        raise ValueError(f"unknown C1 tasks {unknown}")
    return np.asarray([RANK_CLASS.get(t) for t in tasks.tolist()], dtype=object)


@dataclass(frozen=True, slots=True)
class PrevalenceTiers:
    """Per item: percentile (NaN if Degenerate or not an open item), tier (None for MCQ items),
    reference cell actually used (``"<group> / <rank class>"`` or ``"all groups / <rank class>"``)
    and whether the cell was escalated."""

    percentile: np.ndarray
    tier: np.ndarray
    reference_cell: np.ndarray
    escalated: np.ndarray


def _percentiles(taxa: pd.DataFrame, method: str) -> pd.DataFrame:
    """Percentile and tier of each distinct taxon within its ``cell`` (columns cell, node,
    exposure, name, n)."""
    taxa = taxa.sort_values(["cell", "exposure", "name", "node"], kind="stable").reset_index(drop=True)
    by_cell = taxa.groupby("cell", sort=False)
    n = taxa["n"].to_numpy(np.int64)
    if method == "item_weighted":
        cum = by_cell["n"].cumsum().to_numpy(np.int64) - n
        total = by_cell["n"].transform("sum").to_numpy(np.int64)
        twice = 2 * cum + n  # p = twice / (2·N); compare in integers so the cuts are exact
        taxa["percentile"] = twice / (2.0 * total)
        taxa["tier"] = np.where(3 * twice < 2 * total, HARD, np.where(3 * twice < 4 * total, MEDIUM, EASY))
    else:
        at_most = by_cell["exposure"].rank(method="max").to_numpy(np.float64)
        size = by_cell["node"].transform("size").to_numpy(np.float64)
        share = at_most / size
        taxa["percentile"] = share
        taxa["tier"] = np.where(share > 0.67, EASY, np.where(share <= 0.33, HARD, MEDIUM))
    return taxa


def prevalence_tiers(groups: np.ndarray | list[str], tasks: np.ndarray | list[str],
                     target_nodes: np.ndarray, exposure: np.ndarray, taxon_names: np.ndarray | list[str],
                     *, method: str = "item_weighted", min_taxa: int = MIN_DISTINCT_TAXA) -> PrevalenceTiers:
    """Prevalence tier per item (Eq. 30, E.3–E.4). ``exposure`` and ``taxon_names`` are per item
    (the target's c(t) and accepted name); MCQ items get no prevalence tier."""
    if method not in PREVALENCE_METHODS:
        raise ValueError(f"unknown prevalence method {method!r}; use one of {PREVALENCE_METHODS}")
    classes = rank_classes(tasks)
    n_items = len(classes)
    frame = pd.DataFrame({
        "group": np.asarray(groups, dtype=object),
        "rank_class": classes,
        "node": np.asarray(target_nodes, dtype=np.int64),
        "exposure": np.asarray(exposure, dtype=np.int64),
        "name": np.asarray(taxon_names, dtype=object),
    })
    if len(frame) != n_items:
        raise ValueError("all per-item inputs must have the same length")
    percentile = np.full(n_items, np.nan)
    tier = np.full(n_items, None, dtype=object)
    cell_label = np.full(n_items, None, dtype=object)
    escalated = np.zeros(n_items, dtype=bool)
    open_rows = np.flatnonzero([c is not None for c in classes.tolist()])
    if len(open_rows) == 0:
        return PrevalenceTiers(percentile, tier, cell_label, escalated)
    items = frame.iloc[open_rows]
    items = items.assign(cell=items["group"].astype(str) + " / " + items["rank_class"].astype(str))
    distinct = items.groupby("cell")["node"].nunique()
    thin = items["cell"].map(distinct).to_numpy() < min_taxa
    items = items.assign(pooled_cell=ALL_GROUPS + " / " + items["rank_class"].astype(str))
    pooled_distinct = items.groupby("pooled_cell")["node"].nunique()
    degenerate = thin & (items["pooled_cell"].map(pooled_distinct).to_numpy() < min_taxa)
    used_cell = np.where(thin, items["pooled_cell"].to_numpy(object), items["cell"].to_numpy(object))

    # group cells are cut over their own items; pooled cells over every item of the rank class
    own = items.assign(cell=items["cell"])
    pooled = items.assign(cell=items["pooled_cell"])
    needed_pools = pd.unique(used_cell[thin & ~degenerate])
    population = pd.concat([own[~thin], pooled[pooled["cell"].isin(needed_pools)]], ignore_index=True)
    taxa = (population.groupby(["cell", "node"], sort=True)
            .agg(exposure=("exposure", "first"), name=("name", "first"), n=("node", "size"))
            .reset_index())
    if (population.groupby(["cell", "node"])["exposure"].nunique() > 1).any():
        raise ValueError("a target node has two different exposure counts")
    ranked = _percentiles(taxa, method).set_index(["cell", "node"])
    key = pd.MultiIndex.from_arrays([used_cell, items["node"].to_numpy()])
    found = ranked.reindex(key)
    live = ~degenerate
    percentile[open_rows[live]] = found["percentile"].to_numpy()[live]
    tier[open_rows[live]] = found["tier"].to_numpy()[live]
    tier[open_rows[degenerate]] = DEGENERATE
    cell_label[open_rows] = used_cell
    escalated[open_rows] = thin
    return PrevalenceTiers(percentile, tier, cell_label, escalated)


@dataclass(frozen=True, slots=True)
class ConfusabilityTiers:
    """Per MCQ item: NDD (edges, i.e. ranks), the rank where the nearest distractor meets the
    answer, the continuous confusability score and the Hard/Medium/Easy tier."""

    ndd: np.ndarray
    meet_rank: np.ndarray
    confusability: np.ndarray
    tier: np.ndarray


def distractor_nodes(option_nodes: np.ndarray, gold_position: np.ndarray) -> np.ndarray:
    """The option nodes other than the gold one: ``(n, k)`` options and the gold's column → ``(n, k−1)``."""
    option_nodes = np.asarray(option_nodes, dtype=np.int64)
    gold_position = np.asarray(gold_position, dtype=np.int64)
    keep = np.arange(option_nodes.shape[1])[None, :] != gold_position[:, None]
    return option_nodes[keep].reshape(len(option_nodes), option_nodes.shape[1] - 1)


def confusability_tiers(tree: BenchmarkTree, gold_nodes: np.ndarray,
                        distractors: np.ndarray) -> ConfusabilityTiers:
    """NDD tier and continuous confusability (Eqs. 31–32) of items with gold node ``gold_nodes``
    (n,) and distractor nodes ``distractors`` (n, |D|)."""
    gold = np.asarray(gold_nodes, dtype=np.int64)
    others = np.asarray(distractors, dtype=np.int64)
    if others.ndim != 2 or len(others) != len(gold):
        raise ValueError("distractors must be an (n_items, n_distractors) array")
    bad = np.flatnonzero((gold < 0) | (others < 0).any(axis=1))
    if len(bad):
        raise InputFormatError("an MCQ option does not resolve to a tree node", row=int(bad[0]) + 2,
                               field="option_nodes",
                               hint="every MCQ option must resolve (exact name or vernacular index)")
    gold_depth = tree.depth[gold].astype(np.int64)
    meet_depth = tree.lca_depth(np.repeat(gold, others.shape[1]), others.ravel()).reshape(others.shape)
    distance = gold_depth[:, None] - meet_depth.astype(np.int64)
    ndd = distance.min(axis=1)
    confusability = np.exp2(-distance.astype(np.float64)).mean(axis=1)
    tier = np.where(ndd <= 1, HARD, np.where(ndd == 2, MEDIUM, EASY)).astype(object)
    meet_rank = np.asarray(DEPTH_RANK, dtype=object)[gold_depth - ndd]
    return ConfusabilityTiers(ndd=ndd.astype(np.int8), meet_rank=meet_rank, confusability=confusability,
                              tier=tier)


def unified_tier(tasks: np.ndarray | list[str], prevalence_tier: np.ndarray, mcq_tier: np.ndarray) -> np.ndarray:
    """The one difficulty column: MCQ tier for choice items, prevalence tier for open items."""
    is_mcq = np.isin(np.asarray(tasks, dtype=object), list(MCQ_TASKS))
    return np.where(is_mcq, np.asarray(mcq_tier, dtype=object), np.asarray(prevalence_tier, dtype=object))
