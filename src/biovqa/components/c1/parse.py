"""Resolution of C1 replies to benchmark-tree nodes and the per-item C1 metrics (paper App. C.1).

Pure and vectorised: string work is done once per *distinct* reply, node work with NumPy over all
items. :func:`score_replies` is the whole per-item computation; :mod:`biovqa.components.c1.score` adds I/O and
aggregation.

Per item, after the species-epithet last-word quirk (paper App. K.1) and normalization (§1.1):

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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.components.c1.kernels import lin_similarity, severity_of, wu_palmer
from biovqa.components.c1.tasks import ASKED_DEPTH, MCQ_TASKS, SPECIES_TASK
from biovqa.taxonomy.tree import BenchmarkTree
from biovqa.text import Vocabulary, encode_strings, normalize_c1_array

#: How each reply was read (the per-item ``parse_status`` column): the step that resolved it to a
#: tree node, ``unresolved`` when none did, ``missing`` / ``failed`` when no reply came.
PARSE_STATUSES: tuple[str, ...] = ("exact", "synonym", "epithet", "vernacular", "option", "unresolved",
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


def last_word(replies: Sequence[str]) -> list[str]:
    """The species-epithet quirk: ``reply.strip().split()[-1]``; an empty reply stays empty."""
    out = []
    for reply in replies:
        words = reply.split()
        out.append(words[-1] if words else "")
    return out


@dataclass(frozen=True)
class _NameTable:
    """Vocabulary ids with the tree nodes each names (CSR over sorted ids)."""

    keys: np.ndarray
    starts: np.ndarray
    counts: np.ndarray
    nodes: np.ndarray

    @classmethod
    def from_pairs(cls, keys: np.ndarray, nodes: np.ndarray) -> _NameTable:
        pairs = np.unique(np.stack([np.asarray(keys, np.int64), np.asarray(nodes, np.int64)], axis=1), axis=0)
        unique_keys, starts, counts = np.unique(pairs[:, 0], return_index=True, return_counts=True)
        return cls(unique_keys, starts.astype(np.int64), counts.astype(np.int64), pairs[:, 1])

    def expand(self, rows: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Long-format (row, candidate node) pairs for the rows whose query id is a key."""
        if len(self.keys) == 0 or len(rows) == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        position = np.minimum(np.searchsorted(self.keys, queries), len(self.keys) - 1)
        hit = self.keys[position] == queries
        rows, position = rows[hit], position[hit]
        counts = self.counts[position]
        offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        return np.repeat(rows, counts), self.nodes[np.repeat(self.starts[position], counts) + offsets]


def _choose(tree: BenchmarkTree, rows: np.ndarray, nodes: np.ndarray, gold: np.ndarray,
            asked_depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One node per row among its candidates: on the gold's lineage (an ancestor or a descendant of
    the gold) first, then at the asked rank, then the smallest id."""
    if len(rows) == 0:
        return rows, nodes
    node_depth = tree.depth[nodes].astype(np.int64)
    gold_rows = gold[rows]
    on_lineage = ((tree.ancestors[gold_rows, node_depth] == nodes)
                  | (tree.ancestors[nodes, tree.depth[gold_rows].astype(np.int64)] == gold_rows))
    at_rank = node_depth == asked_depth[rows]
    order = np.lexsort((nodes, ~at_rank, ~on_lineage, rows))
    rows, nodes = rows[order], nodes[order]
    first = np.concatenate([[True], rows[1:] != rows[:-1]])
    return rows[first], nodes[first]


def mcq_choice(reply_ids: np.ndarray, option_ids: np.ndarray, vocabulary: Vocabulary) -> np.ndarray:
    """Index of the option each normalized reply chooses (−1: none): normalized equality with an
    option, else the unique option contained in the reply ([DEFAULT], paper App. C.1 (Eq. 5)).
    ``reply_ids`` (n,) and ``option_ids`` (n, k) are vocabulary ids."""
    if len(reply_ids) == 0:
        return np.empty(0, dtype=np.int64)
    equal = (option_ids == reply_ids[:, None]) & (reply_ids[:, None] != 0)
    choice = np.where(equal.any(axis=1), equal.argmax(axis=1), -1).astype(np.int64)
    strings = vocabulary.texts
    for row in np.flatnonzero((choice < 0) & (reply_ids != 0)):
        reply = strings[reply_ids[row]]
        contained = [j for j, key in enumerate(option_ids[row]) if key and strings[key] in reply]
        if len(contained) == 1:
            choice[row] = contained[0]
    return choice


@dataclass(frozen=True, slots=True)
class ReplyScores:
    """Per-item results of :func:`score_replies` (arrays of the items' length)."""

    parsed: pa.Array  # normalized reply after the quirk ("" when missing)
    em: np.ndarray  # int8
    em_soft: np.ndarray  # int8
    mcq_choice: np.ndarray  # int64, −1 where none / not MCQ
    parse_status: np.ndarray  # int8 codes into PARSE_STATUSES
    resolved_node: np.ndarray  # int64, −1 unresolved
    lca_node: np.ndarray  # int64, −1 unresolved
    lca_depth: np.ndarray  # int64, −1 unresolved
    severity: np.ndarray  # float64, NaN unless wrong and resolved
    wup: np.ndarray  # float64
    lin: np.ndarray  # float64


def score_replies(*, task_index: np.ndarray, task_names: Sequence[str], answers: pa.Array, genera: pa.Array,
                  binomials: pa.Array, target_nodes: np.ndarray, replies: pa.Array, answered: np.ndarray,
                  failed: np.ndarray, mcq_options: pa.Array, mcq_option_nodes: np.ndarray, tree: BenchmarkTree,
                  synonyms: SynonymIndex, vernacular: VernacularLookup,
                  epithet_last_word: bool = True) -> ReplyScores:
    """Score every reply against its item (see the module docstring).

    Per item: ``task_index`` (into ``task_names``), ``answers`` (gold strings), ``genera`` and
    ``binomials`` (gold genus and species, for the species question), ``target_nodes`` (gold
    nodes), ``replies`` (null where none), ``answered`` (status ok and a reply) and ``failed``. For
    the MCQ items, in row order: ``mcq_options`` (flattened, n_mcq·k strings) and
    ``mcq_option_nodes`` (n_mcq × k tree nodes, −1 where unknown)."""
    task_index = np.asarray(task_index, dtype=np.int64)
    n = len(task_index)
    gold = np.asarray(target_nodes, dtype=np.int64)
    answered = np.asarray(answered, dtype=bool)
    names = list(task_names)
    is_species = task_index == (names.index(SPECIES_TASK) if SPECIES_TASK in names else -2)
    is_mcq = np.isin(task_index, [names.index(t) for t in MCQ_TASKS if t in names])
    asked_depth = np.asarray([ASKED_DEPTH.get(t, -1) for t in names], dtype=np.int64)[task_index]
    vocabulary = Vocabulary()

    # replies → vocabulary ids, with the species-epithet last-word quirk (paper App. K.1)
    reply_codes, reply_dictionary = encode_strings(replies)
    plain = vocabulary.ids(normalize_c1_array(reply_dictionary))
    per_code = np.stack([plain, plain]) if len(plain) else np.zeros((2, 0), np.int64)
    if epithet_last_word and is_species.any() and len(plain):
        in_species = np.zeros(len(plain), dtype=bool)
        in_species[reply_codes[is_species & (reply_codes >= 0)]] = True
        used = np.flatnonzero(in_species)
        words = last_word(reply_dictionary.take(pa.array(used, pa.int64())).to_pylist())
        per_code[1, used] = vocabulary.ids(normalize_c1_array(pa.array(words, pa.string())))
    quirk = (is_species & epithet_last_word).astype(np.int64)
    valid_reply = answered & (reply_codes >= 0)
    parsed = np.zeros(n, dtype=np.int64)
    parsed[valid_reply] = per_code[quirk[valid_reply], reply_codes[valid_reply]]
    gold_id = vocabulary.mapped_ids(answers, normalize_c1_array)

    em = answered & (parsed == gold_id) & ~is_mcq
    choice = np.full(n, -1, dtype=np.int64)
    mcq_rows = np.flatnonzero(is_mcq)
    if len(mcq_rows):
        if mcq_option_nodes.shape[0] != len(mcq_rows) or len(mcq_options) != mcq_option_nodes.size:
            raise ValueError("mcq_options and mcq_option_nodes need one row per MCQ item")
        option_ids = vocabulary.mapped_ids(mcq_options, normalize_c1_array).reshape(mcq_option_nodes.shape)
        choice[mcq_rows] = mcq_choice(parsed[mcq_rows], option_ids, vocabulary)
        gold_choice = mcq_choice(gold_id[mcq_rows], option_ids, vocabulary)
        em[mcq_rows] = (choice[mcq_rows] >= 0) & (choice[mcq_rows] == gold_choice)

    # species items with a one-word reply are read as "<gold genus> <reply>"
    candidate = parsed.copy()
    one_word = np.zeros(n, dtype=bool)
    gold_key = gold_id.copy()
    species_rows = np.flatnonzero(is_species)
    if len(species_rows):
        has_space = pc.match_substring(vocabulary.array, " ").to_numpy(zero_copy_only=False)
        reply_ids = parsed[species_rows]
        rows = species_rows[(reply_ids != 0) & ~has_space[reply_ids] & answered[species_rows]]
        one_word[rows] = True
        genus_id = vocabulary.mapped_ids(genera.take(pa.array(rows, pa.int64())), normalize_c1_array)
        pair_keys, inverse = np.unique((genus_id << 32) | parsed[rows], return_inverse=True)
        texts = pc.binary_join_element_wise(vocabulary.text(pair_keys >> 32),
                                            vocabulary.text(pair_keys & 0xFFFFFFFF), " ")
        candidate[rows] = vocabulary.ids(texts)[inverse.ravel()]
        gold_key[species_rows] = vocabulary.mapped_ids(binomials.take(pa.array(species_rows, pa.int64())), normalize_c1_array)

    # the synonym relation S of every name looked up
    wanted = np.zeros(len(vocabulary), dtype=bool)
    wanted[candidate[answered]] = True
    wanted[parsed[answered]] = True
    wanted[0] = False
    lookup = np.flatnonzero(wanted)
    relation = synonyms.accepted_targets(vocabulary.text(lookup))
    relation_name = vocabulary.ids(relation.column("name"))  # the normalized queries
    relation_accepted = vocabulary.mapped_ids(relation.column("accepted_name"), normalize_c1_array)
    relation_keys = np.unique((relation_name << 32) | relation_accepted)

    open_rows = np.flatnonzero(answered & ~is_mcq)
    em_soft = em.copy()
    if len(relation_keys) and len(open_rows):
        keys = (candidate[open_rows] << 32) | gold_key[open_rows]
        position = np.minimum(np.searchsorted(relation_keys, keys), len(relation_keys) - 1)
        em_soft[open_rows] |= relation_keys[position] == keys

    status = np.full(n, PARSE_STATUSES.index("unresolved"), dtype=np.int8)
    status[~answered] = PARSE_STATUSES.index("missing")
    status[~answered & np.asarray(failed, dtype=bool)] = PARSE_STATUSES.index("failed")
    resolved = np.full(n, -1, dtype=np.int64)
    resolved[em_soft] = gold[em_soft]
    status[em_soft & em] = PARSE_STATUSES.index("exact")
    status[em_soft & ~em] = PARSE_STATUSES.index("synonym")
    pending = answered & ~em_soft & (parsed != 0)

    tree_name_ids = vocabulary.ids(tree.normalized_names[1:].tolist())
    tree_names = _NameTable.from_pairs(tree_name_ids, np.arange(1, len(tree.names)))

    def settle(rows: np.ndarray, queries: np.ndarray, table: _NameTable, label: str) -> None:
        cand_rows, cand_nodes = table.expand(rows, queries)
        chosen_rows, chosen_nodes = _choose(tree, cand_rows, cand_nodes, gold, asked_depth)
        resolved[chosen_rows] = chosen_nodes
        status[chosen_rows] = PARSE_STATUSES.index(label)
        pending[chosen_rows] = False

    if len(mcq_rows):  # the chosen option's node
        chose = choice[mcq_rows]
        option_node = np.where(chose >= 0, mcq_option_nodes[np.arange(len(mcq_rows)), np.maximum(chose, 0)], -1)
        take = pending[mcq_rows] & (option_node >= 0)
        resolved[mcq_rows[take]] = option_node[take]
        status[mcq_rows[take]] = PARSE_STATUSES.index("option")
        pending[mcq_rows[take]] = False
    rows = np.flatnonzero(pending & one_word)
    settle(rows, candidate[rows], tree_names, "epithet")
    rows = np.flatnonzero(pending)
    settle(rows, parsed[rows], tree_names, "exact")
    if len(relation_keys):
        pair_rows, pair_nodes = tree_names.expand(np.arange(len(relation_accepted)), relation_accepted)
        synonym_table = _NameTable.from_pairs(relation_name[pair_rows], pair_nodes)
        rows = np.flatnonzero(pending & one_word)
        settle(rows, candidate[rows], synonym_table, "epithet")
        rows = np.flatnonzero(pending)
        settle(rows, parsed[rows], synonym_table, "synonym")
    rows = np.flatnonzero(pending)
    if len(rows):
        asked = np.zeros(len(vocabulary), dtype=bool)
        asked[parsed[rows]] = True
        distinct = np.flatnonzero(asked)
        node_of = np.full(len(vocabulary), -1, dtype=np.int64)
        node_of[distinct] = np.asarray(vernacular.lookup(vocabulary.text(distinct)), dtype=np.int64)
        found = node_of[parsed[rows]]
        hit = found >= 0
        resolved[rows[hit]] = found[hit]
        status[rows[hit]] = PARSE_STATUSES.index("vernacular")

    is_resolved = resolved >= 0
    lca = np.where(is_resolved, resolved, -1).astype(np.int64)
    elsewhere = np.flatnonzero(is_resolved & (resolved != gold))
    lca[elsewhere] = tree.lca(resolved[elsewhere], gold[elsewhere])
    lca_depth = np.where(is_resolved, tree.depth[np.maximum(lca, 0)], -1).astype(np.int64)
    safe_lca, safe_resolved = np.maximum(lca, 0), np.maximum(resolved, 0)
    gold_depth = tree.depth[gold].astype(np.int64)
    ic = tree.information_content
    same = is_resolved & (resolved == gold)
    wup = np.where(is_resolved, wu_palmer(np.maximum(lca_depth, 0), tree.depth[safe_resolved], gold_depth), 0.0)
    lin = np.where(is_resolved, lin_similarity(ic[safe_lca], ic[safe_resolved], ic[gold]), 0.0)
    wup = np.where(same, 1.0, wup)
    lin = np.where(same, 1.0, lin)
    severity = np.where(is_resolved & ~em_soft, severity_of(gold_depth, lca_depth), np.nan)
    return ReplyScores(parsed=vocabulary.as_arrow(parsed), em=em.astype(np.int8), em_soft=em_soft.astype(np.int8),
                       mcq_choice=choice, parse_status=status, resolved_node=resolved, lca_node=lca,
                       lca_depth=lca_depth, severity=severity, wup=wup, lin=lin)
