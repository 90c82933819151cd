"""The vernacular index of metrics.md §2.12: one species → that node; several → their LCA."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.taxonomy.tree import BenchmarkTree, build_tree
from biovqa.taxonomy.vernacular import VernacularIndex, build_vernacular_index

LINEAGES = pd.DataFrame(
    [
        ["Arthropoda", "Arachnida", "Araneae", "Araneidae", "Argiope", "Argiope aurantia"],
        ["Arthropoda", "Arachnida", "Araneae", "Araneidae", "Araneus", "Araneus diadematus"],
        ["Arthropoda", "Arachnida", "Araneae", "Araneidae", "Araneus", "Araneus marmoreus"],
        ["Arthropoda", "Arachnida", "Araneae", "Salticidae", "Phidippus", "Phidippus audax"],
        ["Chordata", "Amphibia", "Anura", "Hylidae", "Dryophytes", "Dryophytes cinereus"],
        ["Chordata", "Squamata", None, "Lacertidae", "Zootoca", "Zootoca vivipara"],
        ["Chordata", "Squamata", None, "Lacertidae", "Lacerta", "Lacerta agilis"],
        ["Chordata", "Squamata", None, "Scincidae", "Scincus", "Scincus scincus"],
    ],
    columns=["phylum", "class", "order", "family", "genus", "species"],
)


@pytest.fixture(scope="module")
def tree_and_leaves() -> tuple[BenchmarkTree, np.ndarray]:
    return build_tree(LINEAGES)


def node_named(tree: BenchmarkTree, name: str) -> int:
    return int(np.flatnonzero(tree.names == name)[0])


CORPUS = [
    ("Green Treefrog", 4),
    ("green tree-frog", 4),  # normalizes to "green tree frog": a different name
    ("Orb weavers", 0),
    ("orb-weavers", 1),  # "orb weavers" after normalization
    ("Orb Weavers", 2),
    ("spiders", 0),
    ("spiders", 3),  # two families → order Araneae
    ("lizard", 5),
    ("Lizard", 6),  # same family Lacertidae (no order: skip edge)
    ("reptile", 5),
    ("reptile", 7),  # two families of Squamata, no order → class Squamata
    ("animal", 0),
    ("animal", 4),  # two phyla → the synthetic root
    ("European marbled orbweaver", 2),
    ("European marbled orbweaver", 2),  # repeated pair = one species
]


@pytest.fixture(scope="module")
def index(tree_and_leaves: tuple[BenchmarkTree, np.ndarray]) -> VernacularIndex:
    tree, leaves = tree_and_leaves
    names = [n for n, _ in CORPUS] + [None, "", "unplaced"]
    nodes = np.r_[[leaves[i] for _, i in CORPUS], leaves[0], leaves[0], -1]
    return build_vernacular_index(names, nodes, tree)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("green treefrog", "Dryophytes cinereus"),  # single species
        ("european marbled orbweaver", "Araneus marmoreus"),
        ("orb weavers", "Araneidae"),  # three species of one family (paper: "Orb weavers")
        ("spiders", "Araneae"),
        ("lizard", "Lacertidae"),
        ("reptile", "Squamata"),
        ("animal", ""),  # root
    ],
)
def test_lookup_resolves_to_species_or_lca(index: VernacularIndex, tree_and_leaves, query: str,
                                           expected: str) -> None:
    tree, _ = tree_and_leaves
    node = int(index.lookup([query])[0])
    assert tree.names[node] == expected
    if expected:
        assert node == node_named(tree, expected)
    else:
        assert node == 0


def test_absent_names_and_ignored_inputs(index: VernacularIndex) -> None:
    assert index.lookup(["nothing", "", "unplaced", "Orb weavers"]).tolist() == [-1, -1, -1, -1]
    assert index.lookup(pa.array(["spiders", None])).dtype == np.int32
    assert "" not in set(index.names.tolist())


def test_names_are_sorted_unique(index: VernacularIndex) -> None:
    names = index.names.tolist()
    assert names == sorted(set(names))
    assert len(index) == 8  # "green tree frog" and "green treefrog" are distinct


def test_save_load_roundtrip(tmp_path: Path, index: VernacularIndex) -> None:
    index.save(tmp_path / "vernacular.parquet")
    loaded = VernacularIndex.load(tmp_path / "vernacular.parquet")
    assert loaded.names.tolist() == index.names.tolist()
    assert np.array_equal(loaded.nodes, index.nodes) and loaded.nodes.dtype == np.int32
    index.save(tmp_path / "again.parquet")
    assert (tmp_path / "again.parquet").read_bytes() == (tmp_path / "vernacular.parquet").read_bytes()


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(MissingResourceError):
        VernacularIndex.load(tmp_path / "missing.parquet")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"name": ["x"]}), tmp_path / "bad.parquet")
    with pytest.raises(InputFormatError, match="node"):
        VernacularIndex.load(tmp_path / "bad.parquet")


def test_empty_corpus(tree_and_leaves) -> None:
    tree, _ = tree_and_leaves
    empty = build_vernacular_index([None], np.array([3]), tree)
    assert len(empty) == 0
    assert empty.lookup(["x"]).tolist() == [-1]


def test_length_mismatch(tree_and_leaves) -> None:
    tree, leaves = tree_and_leaves
    with pytest.raises(ValueError):
        build_vernacular_index(["a", "b"], leaves[:1], tree)


def test_matches_a_pairwise_lca_reference(tree_and_leaves) -> None:
    """The vectorised group LCA equals folding BenchmarkTree.lca over each name's species."""
    tree, leaves = tree_and_leaves
    rng = np.random.default_rng(7)
    names = [f"name {i}" for i in rng.integers(0, 12, size=200)]
    nodes = leaves[rng.integers(0, len(leaves), size=200)]
    index = build_vernacular_index(names, nodes, tree)
    for name in sorted(set(names)):
        members = sorted({int(n) for n, m in zip(nodes, names) if m == name})
        expected = members[0]
        for other in members[1:]:
            expected = int(tree.lca(np.array([expected]), np.array([other]))[0])
        assert int(index.lookup([name])[0]) == expected, name
