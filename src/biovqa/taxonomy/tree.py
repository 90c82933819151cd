"""The benchmark tree of metrics.md §2.3: depth, LCA, subtree sizes, information content.

Nodes are the distinct taxa in the lineages (phylum … species) of the catalog a benchmark was
built from, under one synthetic root. A node is identified by its full lineage path, so a genus
name used in two kingdoms gives two nodes. Depth is the rank index (root 0, phylum 1 … species 6)
even where a rank is missing (reptiles have no order: a reptile family hangs directly from its
class but keeps depth 4), so severity counts ranks, not edges.

Everything is held as NumPy arrays: ``ancestors[node, d]`` is the node's ancestor at depth ``d``
(itself at its own depth, -1 where that rank is absent), which makes LCA of millions of pairs a
handful of vectorised comparisons.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from biovqa.errors import InputFormatError
from biovqa.records import TREE_RANKS
from biovqa.text import normalize_c1_array

ROOT = 0
MAX_DEPTH = len(TREE_RANKS)  # species depth (6)
RANK_DEPTH = {rank: depth for depth, rank in enumerate(TREE_RANKS, start=1)}


@dataclass(frozen=True, eq=False)
class BenchmarkTree:
    """Taxa of a benchmark as arrays indexed by node id (0 is the synthetic root)."""

    names: np.ndarray  # object array of accepted names ("" for the root)
    depth: np.ndarray  # int8, rank index: root 0, phylum 1 … species 6
    parent: np.ndarray  # int32, nearest present ancestor (-1 for the root)
    ancestors: np.ndarray  # int32 [n_nodes, MAX_DEPTH + 1]
    subtree_size: np.ndarray  # int64, nodes in the subtree incl. itself; root: all non-root nodes

    @property
    def n_nodes(self) -> int:
        """N of metrics.md §2.6: the number of taxa (non-root nodes)."""
        return int(len(self.names) - 1)

    @cached_property
    def information_content(self) -> np.ndarray:
        """IC(c) = −ln(|subtree(c)| / N); IC(root) = 0 (metrics.md §2.6, Eq. 10)."""
        return -np.log(self.subtree_size / float(self.subtree_size[ROOT]))

    @cached_property
    def normalized_names(self) -> np.ndarray:
        return np.asarray(normalize_c1_array(pa.array(self.names.tolist(), pa.string())).to_pylist(),
                          dtype=object)

    @cached_property
    def name_index(self) -> dict[str, np.ndarray]:
        """Normalized name → node ids bearing it (homonyms across kingdoms give several)."""
        frame = pd.DataFrame({"name": self.normalized_names[1:], "node": np.arange(1, len(self.names))})
        return {name: group.to_numpy(np.int32) for name, group in frame.groupby("name", sort=True)["node"]}

    def lca(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Lowest common ancestor of node pairs (vectorised); -1 inputs give -1."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        valid = (a >= 0) & (b >= 0)
        anc_a = self.ancestors[np.where(valid, a, 0)]
        anc_b = self.ancestors[np.where(valid, b, 0)]
        same = (anc_a == anc_b) & (anc_a >= 0)
        # deepest depth at which both have the same present ancestor (depth 0 = root always matches)
        deepest = MAX_DEPTH - np.argmax(same[:, ::-1], axis=1)
        out = anc_a[np.arange(len(a)), deepest]
        return np.where(valid, out, -1).astype(np.int32)

    def lca_depth(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        node = self.lca(a, b)
        return np.where(node >= 0, self.depth[np.maximum(node, 0)], -1).astype(np.int8)

    def node_at_depth(self, nodes: np.ndarray, depth: int) -> np.ndarray:
        """Ancestor of each node at ``depth`` (-1 where that rank is absent or deeper)."""
        return self.ancestors[np.asarray(nodes, dtype=np.int64), depth]

    # -- persistence -------------------------------------------------------------------------
    def to_table(self) -> pa.Table:
        return pa.table(
            {
                "node": pa.array(np.arange(len(self.names), dtype=np.int32)),
                "name": pa.array(self.names.tolist(), pa.string()),
                "depth": pa.array(self.depth, pa.int8()),
                "parent": pa.array(self.parent, pa.int32()),
                "subtree_size": pa.array(self.subtree_size, pa.int64()),
            }
        )

    def save(self, path: str | Path) -> None:
        pq.write_table(self.to_table(), path, compression="zstd")

    @classmethod
    def load(cls, path: str | Path) -> "BenchmarkTree":
        table = pq.read_table(path)
        names = np.asarray(table.column("name").to_pylist(), dtype=object)
        depth = table.column("depth").to_numpy().astype(np.int8)
        parent = table.column("parent").to_numpy().astype(np.int32)
        return cls._from_parent(names, depth, parent)

    @classmethod
    def _from_parent(cls, names: np.ndarray, depth: np.ndarray, parent: np.ndarray) -> "BenchmarkTree":
        n = len(names)
        ancestors = np.full((n, MAX_DEPTH + 1), -1, dtype=np.int32)
        ancestors[:, 0] = ROOT
        current = np.arange(n, dtype=np.int64)
        for _ in range(MAX_DEPTH + 1):
            live = current >= 0
            ancestors[np.nonzero(live)[0], depth[current[live]]] = current[live]
            current = np.where(live, parent[np.maximum(current, 0)], -1)
            current[current == -1] = -1
        subtree = np.zeros(n, dtype=np.int64)
        for d in range(1, MAX_DEPTH + 1):
            present = ancestors[:, d] >= 0
            np.add.at(subtree, ancestors[present, d], 1)
        subtree[ROOT] = n - 1
        return cls(names=names, depth=depth, parent=parent, ancestors=ancestors, subtree_size=subtree)


def build_tree(lineages: pd.DataFrame) -> tuple[BenchmarkTree, np.ndarray]:
    """Build the tree from lineage rows (columns ``phylum … species``, species = binomial; null or
    empty where a rank is absent). Returns the tree and, per input row, its deepest node id."""
    missing = [rank for rank in TREE_RANKS if rank not in lineages.columns]
    if missing:
        raise InputFormatError(f"lineage table lacks rank columns {missing}")
    frame = lineages[list(TREE_RANKS)].astype(object).where(lineages[list(TREE_RANKS)].notna(), "")
    frame = frame.apply(lambda col: col.astype(str).str.strip())
    n_rows = len(frame)
    keys = np.full(n_rows, "", dtype=object)
    names: list[str] = [""]
    depths: list[int] = [0]
    parents: list[int] = [-1]
    row_node = np.zeros(n_rows, dtype=np.int64)  # deepest present node per row so far
    for depth, rank in enumerate(TREE_RANKS, start=1):
        values = frame[rank].to_numpy(dtype=object)
        present = values != ""
        keys = np.where(present, keys + "\x1f" + values, keys + "\x1f")
        if not present.any():
            continue
        codes, uniques = pd.factorize(pd.Series(keys[present]), sort=True)
        base = len(names)
        # first row of each unique key gives its name and parent
        first = np.zeros(len(uniques), dtype=np.int64)
        first[codes[::-1]] = np.arange(len(codes))[::-1]
        present_rows = np.nonzero(present)[0]
        names.extend(values[present_rows[first]].tolist())
        depths.extend([depth] * len(uniques))
        parents.extend(row_node[present_rows[first]].tolist())
        row_node[present_rows] = base + codes
    tree = BenchmarkTree._from_parent(
        np.asarray(names, dtype=object), np.asarray(depths, dtype=np.int8), np.asarray(parents, dtype=np.int32)
    )
    return tree, row_node.astype(np.int32)
