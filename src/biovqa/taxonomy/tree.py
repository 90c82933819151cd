"""The benchmark tree of paper App. C.3: depth, LCA, subtree sizes, information content.

Nodes are the distinct taxa in the lineages (phylum … species) of the catalog a benchmark was
built from, under one synthetic root: every catalog row with a complete lineage contributes, not
only the images selected for questions (paper App. C.3; paper C.3 takes N = 900 000 nodes for
Lin). Besides the node counts (``subtree_size``, N of Lin) the tree carries ``images``, the number
of catalog images whose lineage passes through each node — the exposure c(t) of Eq. 29. A node is identified by its full lineage path, so a genus
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
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from biovqa.errors import InputFormatError
from biovqa.records import TREE_RANKS
from biovqa.text import encode_strings, normalize_c1_array

if TYPE_CHECKING:
    import pandas as pd

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
    images: np.ndarray  # int64, catalog images whose lineage passes through the node (root: all)

    @property
    def n_nodes(self) -> int:
        """N of paper App. C.3 (Eq. 10): the number of taxa (non-root nodes)."""
        return int(len(self.names) - 1)

    @cached_property
    def information_content(self) -> np.ndarray:
        """IC(c) = −ln(|subtree(c)| / N); IC(root) = 0 (paper App. C.3 (Eq. 10), Eq. 10)."""
        return -np.log(self.subtree_size / float(self.subtree_size[ROOT]))

    @cached_property
    def normalized_names(self) -> np.ndarray:
        return np.asarray(normalize_c1_array(pa.array(self.names.tolist(), pa.string())).to_pylist(),
                          dtype=object)

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
                "images": pa.array(self.images, pa.int64()),
            }
        )

    def save(self, path: str | Path) -> None:
        pq.write_table(self.to_table(), path, compression="zstd")

    @classmethod
    def load(cls, path: str | Path) -> "BenchmarkTree":
        """Read a tree written by :meth:`save`. A tree without the ``images`` column (written
        before exposure came from the catalog) is rejected: its exposures would be wrong."""
        try:
            table = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputFormatError(f"cannot read benchmark tree: {exc}", file=path,
                                   hint="rebuild the benchmark") from None
        missing = [c for c in ("name", "depth", "parent", "images") if c not in table.column_names]
        if missing:
            raise InputFormatError(f"benchmark tree lacks column(s) {missing}", file=path, field=missing[0],
                                   hint="the benchmark was built by an older biovqa; rebuild it")
        names = np.asarray(table.column("name").to_pylist(), dtype=object)
        depth = table.column("depth").to_numpy().astype(np.int8)
        parent = table.column("parent").to_numpy().astype(np.int32)
        images = table.column("images").to_numpy().astype(np.int64)
        tree = cls._from_parent(names, depth, parent, np.zeros(len(names), dtype=np.int64))
        return cls(names=tree.names, depth=tree.depth, parent=tree.parent, ancestors=tree.ancestors,
                   subtree_size=tree.subtree_size, images=images)

    @classmethod
    def _from_parent(cls, names: np.ndarray, depth: np.ndarray, parent: np.ndarray,
                     own_images: np.ndarray) -> "BenchmarkTree":
        """Tree from parent pointers; ``own_images[node]`` counts images whose deepest node it is."""
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
        images = np.zeros(n, dtype=np.int64)
        own = np.asarray(own_images, dtype=np.int64)
        for d in range(0, MAX_DEPTH + 1):
            present = ancestors[:, d] >= 0
            np.add.at(images, ancestors[present, d], own[present])
        return cls(names=names, depth=depth, parent=parent, ancestors=ancestors, subtree_size=subtree,
                   images=images)


def _rank_column(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """(per-row code into the sorted distinct names, sorted distinct names) of one rank column;
    null, empty and blank values get code -1. Arrow does the string work."""
    array = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(
        np.asarray(values, dtype=object), pa.string(), from_pandas=True)
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    array = pc.utf8_trim_whitespace(array.cast(pa.string()))
    array = pc.if_else(pc.equal(array, ""), pa.scalar(None, pa.string()), array)
    codes, names = encode_strings(array, sort=True)
    return codes, np.asarray(names.to_pylist(), dtype=object)


def build_tree(lineages: pd.DataFrame | pa.Table,
               images: np.ndarray | None = None) -> tuple[BenchmarkTree, np.ndarray]:
    """Build the tree from lineage rows (columns ``phylum … species``, species = binomial; null or
    empty where a rank is absent). ``images[i]`` is how many catalog images row ``i`` stands for
    (default 1 each: one row per image). Returns the tree and, per input row, its deepest node id
    (0, the root, for a row with no rank at all).

    Node ids are deterministic: at each depth, nodes are numbered by (parent id, name)."""
    columns = lineages.column_names if isinstance(lineages, pa.Table) else list(lineages.columns)
    missing = [rank for rank in TREE_RANKS if rank not in columns]
    if missing:
        raise InputFormatError(f"lineage table lacks rank columns {missing}")
    n_rows = len(lineages) if not isinstance(lineages, pa.Table) else lineages.num_rows
    weights = np.ones(n_rows, dtype=np.int64) if images is None else np.asarray(images, dtype=np.int64)
    if len(weights) != n_rows:
        raise ValueError(f"{len(weights)} image counts for {n_rows} lineage rows")
    names: list[Any] = [""]
    depths: list[int] = [0]
    parents: list[int] = [-1]
    row_node = np.zeros(n_rows, dtype=np.int64)  # deepest present node per row so far
    for depth, rank in enumerate(TREE_RANKS, start=1):
        codes, distinct = _rank_column(lineages.column(rank) if isinstance(lineages, pa.Table)
                                       else lineages[rank].to_numpy(dtype=object))
        present = codes >= 0
        if not present.any():
            continue
        width = max(len(distinct), 1)
        keys = row_node[present] * width + codes[present]
        unique_keys, inverse = np.unique(keys, return_inverse=True)
        base = len(names)
        names.extend(distinct[unique_keys % width].tolist())
        depths.extend([depth] * len(unique_keys))
        parents.extend((unique_keys // width).tolist())
        row_node[present] = base + inverse.ravel()
    own = np.bincount(row_node, weights=weights, minlength=len(names)).astype(np.int64)
    tree = BenchmarkTree._from_parent(
        np.asarray(names, dtype=object), np.asarray(depths, dtype=np.int8),
        np.asarray(parents, dtype=np.int32), own)
    return tree, row_node.astype(np.int32)
