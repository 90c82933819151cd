"""The vernacular index of paper App. E (Supplement E, target resolution step 2).

Built from the benchmark's own (common-name answer, species node) pairs: a normalized common name
seen with one species resolves to that species' node; a name seen with several species resolves
to their lowest common ancestor in the :class:`~biovqa.taxonomy.tree.BenchmarkTree` (so "orb
weavers", the answer for many *Araneidae* species, resolves to the family node). The index is
two sorted parallel arrays, name → node, looked up vectorised.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.errors import InputFormatError
from biovqa.bench.folder import read_parquet, write_parquet
from biovqa.text import normalize_c1_array
from biovqa.taxonomy.tree import MAX_DEPTH, BenchmarkTree


@dataclass(frozen=True, eq=False)
class VernacularIndex:
    """Normalized common name → benchmark-tree node (``names`` sorted, unique)."""

    names: np.ndarray  # object array of normalized names, sorted ascending (Unicode order)
    nodes: np.ndarray  # int32 node ids, parallel to names

    def __len__(self) -> int:
        return len(self.names)

    def lookup(self, normalized_names: Sequence[str] | pa.Array | np.ndarray) -> np.ndarray:
        """Node id per query name (already :func:`~biovqa.text.normalize_c1`-normalized); -1
        where the name is not in the index."""
        if isinstance(normalized_names, (pa.Array, pa.ChunkedArray)):
            query = normalized_names.cast(pa.string())
        else:
            query = pa.array([None if v is None else str(v) for v in normalized_names], pa.string())
        position = pc.index_in(query, value_set=pa.array(self.names.tolist(), pa.string()))
        position = pc.fill_null(position, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        found = position >= 0
        if len(self.nodes) == 0:
            return np.full(len(position), -1, dtype=np.int32)
        safe = np.where(found, position, 0)
        return np.where(found, self.nodes[safe], -1).astype(np.int32)

    def to_table(self) -> pa.Table:
        return pa.table({"name": pa.array(self.names.tolist(), pa.string()),
                         "node": pa.array(self.nodes, pa.int32())})

    def save(self, path: str | Path) -> None:
        write_parquet(self.to_table(), path)

    @classmethod
    def load(cls, path: str | Path) -> VernacularIndex:
        table = read_parquet(path, what="vernacular index")
        missing = [c for c in ("name", "node") if c not in table.column_names]
        if missing:
            raise InputFormatError(f"vernacular index lacks column(s) {missing}", file=path,
                                   field=missing[0], hint="rebuild the benchmark")
        return cls(names=np.asarray(table.column("name").to_pylist(), dtype=object),
                   nodes=table.column("node").to_numpy().astype(np.int32))


def _group_lca(ancestors: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """LCA of each group of consecutive rows of ``ancestors`` (rows = nodes, columns = depths):
    the ancestor at the deepest depth where every member of the group has the same present
    ancestor. Depth 0 (the root) is always shared."""
    shared = np.zeros((len(starts), MAX_DEPTH + 1), dtype=bool)
    for depth in range(MAX_DEPTH + 1):
        column = ancestors[:, depth]
        low = np.minimum.reduceat(column, starts)
        high = np.maximum.reduceat(column, starts)
        shared[:, depth] = (low == high) & (low >= 0)
    deepest = MAX_DEPTH - np.argmax(shared[:, ::-1], axis=1)
    return ancestors[starts, deepest]


def build_vernacular_index(
    common_names: Sequence[str | None],
    species_nodes: np.ndarray,
    tree: BenchmarkTree,
) -> VernacularIndex:
    """Build the index from corpus pairs (paper App. E, "Vernacular index").

    ``common_names[i]`` was given for species node ``species_nodes[i]``. Names are normalized
    with :func:`~biovqa.text.normalize_c1`; empty names and negative nodes are ignored. A name
    with one distinct node maps to it; with several, to ``LCA(nodes)``.
    """
    nodes = np.asarray(species_nodes, dtype=np.int64)
    if len(common_names) != len(nodes):
        raise ValueError(f"{len(common_names)} common names but {len(nodes)} species nodes")
    normalized = np.asarray(
        normalize_c1_array(pa.array([None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
                  for v in common_names],
                                    pa.string())).to_pylist(), dtype=object)
    keep = (normalized != "") & (nodes >= 0)
    if not keep.any():
        return VernacularIndex(names=np.array([], dtype=object), nodes=np.array([], dtype=np.int32))
    pairs = pa.table({"name": pa.array(normalized[keep].tolist(), pa.string()),
                      "node": pa.array(nodes[keep], pa.int64())})
    pairs = pairs.group_by(["name", "node"]).aggregate([])
    pairs = pairs.take(pc.sort_indices(pairs, sort_keys=[("name", "ascending"), ("node", "ascending")]))
    names = np.asarray(pairs.column("name").to_pylist(), dtype=object)
    pair_nodes = pairs.column("node").to_numpy()
    starts = np.flatnonzero(np.r_[True, names[1:] != names[:-1]])
    lca = _group_lca(tree.ancestors[pair_nodes], starts)
    return VernacularIndex(names=names[starts], nodes=lca.astype(np.int32))
