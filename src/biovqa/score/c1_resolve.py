"""Resolution of C1 replies to benchmark-tree nodes and the per-item C1 metrics (metrics.md §2.1–2.8).

Pure and vectorised: string work is done once per *distinct* reply, node work with NumPy over all
items. :func:`score_replies` is the whole per-item computation; :mod:`biovqa.score.c1` adds I/O and
aggregation.

Per item, after the species-epithet last-word quirk (prompts.md §2.5) and normalization (§1.1):

* ``em`` (Eq. 5): normalized reply == normalized gold. MCQ: the option chosen (normalized equality
  with an option, else the unique option contained in the reply, else none) is the gold option.
* ``em_soft`` (Eqs. 6–7): ``em`` or gold ∈ S(reply), S from the synonym index. For the species
  (epithet) question the comparison is on binomials: a one-word reply is read as
  ``<gold genus> <reply>`` and the gold is the gold binomial ([DEFAULT]). MCQ: ``em_soft = em``.
* Resolution of the reply to any node, first step that succeeds: ``em_soft`` → the gold node
  (``exact`` / ``synonym``); species item with a one-word reply → the node named
  ``<gold genus> <reply>`` (``epithet``); a tree name (``exact``); S(reply) ∩ tree names
  (``synonym``); the vernacular index (``vernacular``); MCQ: the chosen option's node (``option``);
  else ``unresolved``. Several candidate nodes (homonyms, pro-parte synonyms): prefer a node on the
  gold's lineage, then one at the asked rank, then the smallest node id. Missing or failed
  predictions are ``missing`` / ``failed``: never resolved, ``em = 0``.
* With ℓ = LCA(resolved, gold): ``severity = d(gold) − d(ℓ)`` (Eq. 8) for wrong (``em_soft = 0``)
  and resolved items, else null; ``wup = 2·d(ℓ)/(d(ŷ)+d(y))`` (Eq. 9); ``lin = 2·IC(ℓ)/(IC(ŷ)+IC(y))``
  (Eq. 10); both are 1 when the reply resolves to the gold node and 0 when unresolved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from ..build.c1_tiers import ASKED_DEPTH, DEPTH_RANK, MCQ_TASKS
from ..taxonomy.tree import BenchmarkTree
from ..text import normalize_c1_array

SPECIES_TASK = "species"
#: Resolution labels of the per-item ``resolution`` column.
RESOLUTIONS: tuple[str, ...] = ("exact", "synonym", "epithet", "vernacular", "option", "unresolved",
                                "missing", "failed")


class SynonymIndex(Protocol):
    """What the scorer needs from :class:`biovqa.taxonomy.index.TaxonomyIndex`."""

    def accepted_targets(self, names: Sequence[str] | pa.Array) -> pa.Table:
        """Rows (name, accepted, accepted_name, rank, status) per (normalized query, accepted taxon)."""
        ...


class VernacularLookup(Protocol):
    """What the scorer needs from :class:`biovqa.taxonomy.vernacular.VernacularIndex`."""

    def lookup(self, names: Sequence[str]) -> np.ndarray:
        """Tree node per normalized common name, -1 where absent."""
        ...


def wu_palmer(lca_depth: np.ndarray, predicted_depth: np.ndarray, gold_depth: np.ndarray) -> np.ndarray:
    """Wu–Palmer similarity (Eqs. 1, 9): ``2·d(ℓ) / (d(ŷ) + d(y))``."""
    lca_depth = np.asarray(lca_depth, dtype=np.float64)
    total = np.asarray(predicted_depth, dtype=np.float64) + np.asarray(gold_depth, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, 2.0 * lca_depth / np.where(total > 0, total, 1.0), 0.0)


def lin_similarity(lca_ic: np.ndarray, predicted_ic: np.ndarray, gold_ic: np.ndarray) -> np.ndarray:
    """Lin similarity (Eq. 10): ``2·IC(ℓ) / (IC(ŷ) + IC(y))`` with ``IC(c) = −ln(|subtree(c)|/N)``."""
    lca_ic = np.asarray(lca_ic, dtype=np.float64)
    total = np.asarray(predicted_ic, dtype=np.float64) + np.asarray(gold_ic, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, 2.0 * lca_ic / np.where(total > 0, total, 1.0), 0.0)


def information_content(subtree_sizes: np.ndarray, n_nodes: int) -> np.ndarray:
    """IC(c) = −ln(|subtree(c)| / N) (Eq. 10)."""
    return -np.log(np.asarray(subtree_sizes, dtype=np.float64) / float(n_nodes))


def severity_of(gold_depth: np.ndarray, lca_depth: np.ndarray) -> np.ndarray:
    """Mistake severity of one wrong, resolved reply (Eq. 8): ``d(y) − d(LCA(ŷ, y))``."""
    return np.asarray(gold_depth, dtype=np.float64) - np.asarray(lca_depth, dtype=np.float64)


def last_word(replies: Sequence[str]) -> list[str]:
    """The species-epithet quirk: ``reply.strip().split()[-1]``; an empty reply stays empty."""
    out = []
    for reply in replies:
        words = reply.split()
        out.append(words[-1] if words else "")
    return out


def normalize_unique(values: np.ndarray) -> np.ndarray:
    """normalize_c1 of an object array, computed once per distinct value."""
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
    if len(uniques) == 0:
        return np.asarray([], dtype=object)
    cleaned = [u if isinstance(u, str) else None for u in uniques]
    normalized = np.asarray(normalize_c1_array(pa.array(cleaned, pa.string())).to_pylist(), dtype=object)
    return normalized[codes]


@dataclass(frozen=True)
class _NameTable:
    """Sorted distinct keys with the node ids each names (CSR)."""

    keys: pd.Index
    starts: np.ndarray
    counts: np.ndarray
    nodes: np.ndarray

    @classmethod
    def from_pairs(cls, keys: np.ndarray, nodes: np.ndarray) -> "_NameTable":
        frame = pd.DataFrame({"key": keys, "node": np.asarray(nodes, dtype=np.int64)})
        frame = frame.drop_duplicates().sort_values(["key", "node"], kind="stable")
        counts = frame.groupby("key", sort=True).size()
        starts = np.concatenate([[0], np.cumsum(counts.to_numpy())[:-1]]).astype(np.int64)
        return cls(pd.Index(counts.index), starts, counts.to_numpy(np.int64), frame["node"].to_numpy(np.int64))

    def expand(self, rows: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Long-format (row, candidate node) pairs for the rows whose query is a key."""
        position = self.keys.get_indexer(pd.Index(queries, dtype=object)) if len(queries) else np.empty(0, np.int64)
        hit = position >= 0
        rows, position = rows[hit], position[hit]
        counts = self.counts[position]
        total = int(counts.sum())
        offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        return np.repeat(rows, counts), self.nodes[np.repeat(self.starts[position], counts) + offsets]


def _choose(tree: BenchmarkTree, rows: np.ndarray, nodes: np.ndarray, gold: np.ndarray,
            asked_depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One node per row among its candidates: on the gold's lineage (an ancestor or a descendant of
    the gold) first, then at the asked rank, then the smallest id."""
    if len(rows) == 0:
        return rows, nodes
    node_depth = tree.depth[nodes].astype(np.int64)
    gold_rows = gold[rows]
    # on the gold's lineage: an ancestor of the gold, or a node below it
    on_lineage = ((tree.ancestors[gold_rows, node_depth] == nodes)
                  | (tree.ancestors[nodes, tree.depth[gold_rows].astype(np.int64)] == gold_rows))
    at_rank = node_depth == asked_depth[rows]
    order = np.lexsort((nodes, ~at_rank, ~on_lineage, rows))
    rows, nodes = rows[order], nodes[order]
    first = np.concatenate([[True], rows[1:] != rows[:-1]])
    return rows[first], nodes[first]


def mcq_choice(replies: np.ndarray, option_keys: np.ndarray) -> np.ndarray:
    """Index of the option each normalized reply chooses (−1: none): normalized equality with an
    option, else the unique option contained in the reply ([DEFAULT], metrics.md §2.1).
    ``option_keys`` is the (n, k) object array of normalized options."""
    replies = np.asarray(replies, dtype=object)
    if len(replies) == 0:
        return np.empty(0, dtype=np.int64)
    equal = option_keys == replies[:, None]
    choice = np.where(equal.any(axis=1), equal.argmax(axis=1), -1).astype(np.int64)
    for row in np.flatnonzero((choice < 0) & (replies != "")):
        reply = replies[row]
        contained = [j for j, key in enumerate(option_keys[row]) if key and key in reply]
        if len(contained) == 1:
            choice[row] = contained[0]
    return choice


@dataclass(frozen=True, slots=True)
class ReplyScores:
    """Per-item results of :func:`score_replies` (arrays of the items' length)."""

    parsed: np.ndarray  # object: normalized reply after the quirk ("" when missing)
    em: np.ndarray  # int8
    em_soft: np.ndarray  # int8
    mcq_choice: np.ndarray  # int64, −1 where none / not MCQ
    resolution: np.ndarray  # object, one of RESOLUTIONS
    resolved_node: np.ndarray  # int64, −1 unresolved
    lca_node: np.ndarray  # int64, −1 unresolved
    lca_rank: np.ndarray  # object, None unresolved
    severity: np.ndarray  # float64, NaN unless wrong and resolved
    wup: np.ndarray  # float64
    lin: np.ndarray  # float64


def _depths_of(tasks: np.ndarray) -> np.ndarray:
    return pd.Series(tasks, dtype=object).map(ASKED_DEPTH).fillna(-1).to_numpy(np.int64)


def score_replies(*, tasks: np.ndarray, answers: np.ndarray, target_nodes: np.ndarray,
                  genera: np.ndarray, binomials: np.ndarray, mcq_options: np.ndarray,
                  mcq_option_nodes: np.ndarray, replies: np.ndarray, statuses: np.ndarray,
                  tree: BenchmarkTree, synonyms: SynonymIndex, vernacular: VernacularLookup,
                  epithet_last_word: bool = True) -> ReplyScores:
    """Score every reply against its item (see the module docstring).

    Per item (object arrays, None where null): ``tasks``, ``answers`` (gold strings), ``genera``
    and ``binomials`` (gold genus and species, used by the species question), ``replies`` and
    ``statuses`` (ok / failed / missing); ``target_nodes`` the gold nodes. For the MCQ items, in
    row order: ``mcq_options`` (n_mcq × k option strings) and ``mcq_option_nodes`` (their tree
    nodes, −1 where unknown)."""
    n = len(tasks)
    tasks = np.asarray(tasks, dtype=object)
    statuses = np.asarray(statuses, dtype=object)
    replies = np.asarray(replies, dtype=object)
    gold = np.asarray(target_nodes, dtype=np.int64)
    answered = (statuses == "ok") & pd.notna(replies)
    text = np.where(answered, replies, "").astype(object)
    is_species = tasks == SPECIES_TASK
    is_mcq = np.isin(tasks, list(MCQ_TASKS))
    is_open = ~is_mcq
    if epithet_last_word and is_species.any():
        codes, uniques = pd.factorize(pd.Series(text[is_species], dtype=object))
        text[is_species] = np.asarray(last_word(list(uniques)), dtype=object)[codes]
    parsed = normalize_unique(text)
    norm_gold = normalize_unique(np.asarray(answers, dtype=object))
    asked_depth = _depths_of(tasks)

    em = (parsed == norm_gold) & answered & is_open
    choice = np.full(n, -1, dtype=np.int64)
    mcq_rows = np.flatnonzero(is_mcq)
    option_keys = np.empty((0, 0), dtype=object)
    if len(mcq_rows):
        if mcq_options.shape[0] != len(mcq_rows) or mcq_option_nodes.shape != mcq_options.shape:
            raise ValueError("mcq_options and mcq_option_nodes need one row per MCQ item")
        option_keys = normalize_unique(mcq_options.ravel()).reshape(mcq_options.shape)
        choice[mcq_rows] = mcq_choice(np.where(answered[mcq_rows], parsed[mcq_rows], ""), option_keys)
        gold_choice = mcq_choice(norm_gold[mcq_rows], option_keys)
        em[mcq_rows] = (choice[mcq_rows] >= 0) & (choice[mcq_rows] == gold_choice)

    # names to look up: species items with a one-word reply are read as "<gold genus> <reply>"
    candidate = parsed.copy()
    one_word = np.zeros(n, dtype=bool)
    species_rows = np.flatnonzero(is_species & answered)
    if len(species_rows):
        words = parsed[species_rows]
        single = np.asarray([bool(w) and " " not in w for w in words], dtype=bool)
        rows = species_rows[single]
        one_word[rows] = True
        candidate[rows] = normalize_unique(np.asarray(genera, dtype=object)[rows]) + " " + parsed[rows]
    gold_key = norm_gold.copy()
    if is_species.any():
        gold_key[is_species] = normalize_unique(np.asarray(binomials, dtype=object)[is_species])

    lookup_rows = np.flatnonzero(answered & (parsed != ""))
    query = pd.unique(np.concatenate([candidate[lookup_rows], parsed[lookup_rows]]))
    relation = synonyms.accepted_targets(pa.array(query, pa.string()))
    syn_names = relation.column("name").to_numpy(zero_copy_only=False).astype(object)
    syn_accepted = normalize_unique(relation.column("accepted_name").to_numpy(zero_copy_only=False))

    em_soft = em.copy()
    open_rows = lookup_rows[is_open[lookup_rows]]
    if len(syn_names) and len(open_rows):
        vocabulary = pd.Index(pd.unique(np.concatenate([syn_names, syn_accepted])))
        size = np.int64(len(vocabulary))
        pair_keys = np.unique(vocabulary.get_indexer(syn_names).astype(np.int64) * size
                              + vocabulary.get_indexer(syn_accepted))
        cand_code = vocabulary.get_indexer(candidate[open_rows]).astype(np.int64)
        gold_code = vocabulary.get_indexer(gold_key[open_rows]).astype(np.int64)
        item_keys = cand_code * size + gold_code
        position = np.minimum(np.searchsorted(pair_keys, item_keys), len(pair_keys) - 1)
        soft = (cand_code >= 0) & (gold_code >= 0) & (pair_keys[position] == item_keys)
        em_soft[open_rows] |= soft
    em_soft[mcq_rows] = em[mcq_rows]

    resolution = np.full(n, "unresolved", dtype=object)
    resolution[~answered] = np.where(statuses[~answered] == "failed", "failed", "missing")
    resolved = np.full(n, -1, dtype=np.int64)
    resolved[em_soft] = gold[em_soft]
    resolution[em_soft & em] = "exact"
    resolution[em_soft & ~em] = "synonym"
    pending = answered & ~em_soft & (parsed != "")

    tree_names = _NameTable.from_pairs(tree.normalized_names[1:], np.arange(1, len(tree.names)))

    def settle(rows: np.ndarray, queries: np.ndarray, table: _NameTable, label: str) -> None:
        cand_rows, cand_nodes = table.expand(rows, queries)
        chosen_rows, chosen_nodes = _choose(tree, cand_rows, cand_nodes, gold, asked_depth)
        resolved[chosen_rows] = chosen_nodes
        resolution[chosen_rows] = label
        pending[chosen_rows] = False

    if len(mcq_rows):  # the chosen option's node
        chose = choice[mcq_rows]
        option_node = np.where(chose >= 0, mcq_option_nodes[np.arange(len(mcq_rows)), np.maximum(chose, 0)], -1)
        take = pending[mcq_rows] & (option_node >= 0)
        resolved[mcq_rows[take]] = option_node[take]
        resolution[mcq_rows[take]] = "option"
        pending[mcq_rows[take]] = False
    rows = np.flatnonzero(pending & one_word)
    settle(rows, candidate[rows], tree_names, "epithet")
    rows = np.flatnonzero(pending)
    settle(rows, parsed[rows], tree_names, "exact")
    if len(syn_names):
        keep = tree_names.keys.get_indexer(pd.Index(syn_accepted, dtype=object)) >= 0
        pair_rows, pair_nodes = tree_names.expand(np.flatnonzero(keep), syn_accepted[keep])
        synonym_table = _NameTable.from_pairs(syn_names[pair_rows], pair_nodes)
        rows = np.flatnonzero(pending & one_word)
        settle(rows, candidate[rows], synonym_table, "epithet")
        rows = np.flatnonzero(pending)
        settle(rows, parsed[rows], synonym_table, "synonym")
    rows = np.flatnonzero(pending)
    if len(rows):
        codes, uniques = pd.factorize(pd.Series(parsed[rows], dtype=object))
        found = np.asarray(vernacular.lookup(list(uniques)), dtype=np.int64)[codes]
        hit = found >= 0
        resolved[rows[hit]] = found[hit]
        resolution[rows[hit]] = "vernacular"
        pending[rows[hit]] = False

    is_resolved = resolved >= 0
    lca = np.where(is_resolved, tree.lca(resolved, gold), -1).astype(np.int64)
    safe_lca = np.maximum(lca, 0)
    safe_resolved = np.maximum(resolved, 0)
    lca_depth = tree.depth[safe_lca].astype(np.int64)
    gold_depth = tree.depth[gold].astype(np.int64)
    ic = tree.information_content
    same = is_resolved & (resolved == gold)
    wup = np.where(is_resolved, wu_palmer(lca_depth, tree.depth[safe_resolved], gold_depth), 0.0)
    lin = np.where(is_resolved, lin_similarity(ic[safe_lca], ic[safe_resolved], ic[gold]), 0.0)
    wup = np.where(same, 1.0, wup)
    lin = np.where(same, 1.0, lin)
    wrong_resolved = is_resolved & ~em_soft
    severity = np.where(wrong_resolved, severity_of(gold_depth, lca_depth), np.nan)
    lca_rank = np.where(is_resolved, np.asarray(DEPTH_RANK, dtype=object)[lca_depth], None)
    return ReplyScores(parsed=parsed, em=em.astype(np.int8), em_soft=em_soft.astype(np.int8),
                       mcq_choice=choice, resolution=resolution, resolved_node=resolved, lca_node=lca,
                       lca_rank=lca_rank, severity=severity, wup=wup, lin=lin)
