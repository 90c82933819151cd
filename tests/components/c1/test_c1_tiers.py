from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biovqa.components.c1.tiers import (
    ALL_GROUPS,
    DEGENERATE,
    confusability_tiers,
    distractor_nodes,
    exposure_counts,
    log10_exposure,
    prevalence_tiers,
    rank_classes,
    unified_tier,
)
from biovqa.errors import InputFormatError
from biovqa.taxonomy.tree import build_tree

LINEAGES = pd.DataFrame(
    [
        ("Chordata", "Squamata", None, "Lacertidae", "Zootoca", "Zootoca vivipara"),
        ("Chordata", "Squamata", None, "Lacertidae", "Zootoca", "Zootoca carniolica"),
        ("Chordata", "Squamata", None, "Lacertidae", "Lacerta", "Lacerta agilis"),
        ("Chordata", "Squamata", None, "Colubridae", "Natrix", "Natrix natrix"),
        ("Tracheophyta", "Pinopsida", "Pinales", "Pinaceae", "Picea", "Picea abies"),
    ],
    columns=["phylum", "class", "order", "family", "genus", "species"],
)


@pytest.fixture(scope="module")
def tree_and_leaves():
    return build_tree(LINEAGES)


def _node(tree, name: str) -> int:
    return int(np.flatnonzero(tree.normalized_names == name.lower())[0])


# metrics.md §2.12 synthetic example: (exposure, items) per taxon, N_cell = 20, B before C by name
PREVALENCE_EXAMPLE = {
    "A": (10, 2, 0.050, "Hard"),
    "B": (50, 5, 0.225, "Hard"),
    "C": (50, 1, 0.375, "Medium"),
    "D": (1000, 4, 0.500, "Medium"),
    "E": (20000, 3, 0.675, "Easy"),
    "F": (500000, 5, 0.875, "Easy"),
}


def _example_items() -> dict[str, np.ndarray]:
    names, exposure, nodes = [], [], []
    for node, (taxon, (count, n_items, _, _)) in enumerate(sorted(PREVALENCE_EXAMPLE.items()), start=1):
        names += [taxon] * n_items
        exposure += [count] * n_items
        nodes += [node] * n_items
    order = np.random.default_rng(0).permutation(len(names))  # row order must not matter
    return {"names": np.asarray(names, dtype=object)[order], "exposure": np.asarray(exposure)[order],
            "nodes": np.asarray(nodes)[order]}


@pytest.mark.parametrize("taxon", sorted(PREVALENCE_EXAMPLE))
def test_prevalence_synthetic_example(taxon: str) -> None:
    items = _example_items()
    n = len(items["names"])
    result = prevalence_tiers(["Birds"] * n, ["genus"] * n, items["nodes"], items["exposure"], items["names"])
    rows = items["names"] == taxon
    _, _, percentile, tier = PREVALENCE_EXAMPLE[taxon]
    assert np.allclose(result.percentile[rows], percentile, atol=5e-4)
    assert set(result.tier[rows]) == {tier}
    assert set(result.reference_cell) == {"Birds / genus"}
    assert not result.escalated.any()


def test_tie_on_exposure_is_broken_by_name_not_by_node_id() -> None:
    items = _example_items()
    swapped = items["nodes"].copy()
    swapped[items["names"] == "B"], swapped[items["names"] == "C"] = 99, 0  # C now has the smallest id
    n = len(swapped)
    result = prevalence_tiers(["Birds"] * n, ["genus"] * n, swapped, items["exposure"], items["names"])
    assert np.allclose(result.percentile[items["names"] == "B"], 0.225)


def test_thin_cell_escalates_and_pooled_thin_cell_is_degenerate() -> None:
    # (Birds, class): one taxon → pooled over groups; class has 6 distinct taxa overall
    groups = ["Birds"] * 3 + ["Fish", "Fish", "Mammals", "Insects", "Reptiles", "Amphibians"]
    classes = ["Aves", "Aves", "Aves", "Actinopterygii", "Elasmobranchii", "Mammalia", "Insecta", "Squamata",
               "Amphibia"]
    nodes = [1, 1, 1, 2, 3, 4, 5, 6, 7]
    exposure = [900, 900, 900, 10, 20, 300, 5000, 40, 60]
    result = prevalence_tiers(groups, ["class"] * 9, nodes, exposure, classes)
    assert result.escalated.all()
    assert set(result.reference_cell) == {f"{ALL_GROUPS} / class"}
    # pooled cell, items sorted by exposure: Insecta(5000) last
    assert result.tier[classes.index("Insecta")] == "Easy"
    assert result.tier[classes.index("Actinopterygii")] == "Hard"
    # phylum: two distinct phyla overall → degenerate
    phyla = prevalence_tiers(["Birds", "Fish", "Angiosperms"], ["phylum"] * 3, [1, 1, 2], [5, 5, 3],
                             ["Chordata", "Chordata", "Tracheophyta"])
    assert phyla.tier.tolist() == [DEGENERATE] * 3
    assert np.isnan(phyla.percentile).all()


def test_species_level_wordings_share_a_cell() -> None:
    tasks = ["species", "scientific_name", "common_name", "common_name_mcq"]
    assert rank_classes(tasks).tolist() == ["species", "species", "species", None]
    with pytest.raises(ValueError):
        rank_classes(["kingdom"])


def test_taxon_rank_variant() -> None:
    items = _example_items()
    n = len(items["names"])
    result = prevalence_tiers(["Birds"] * n, ["genus"] * n, items["nodes"], items["exposure"], items["names"],
                              method="taxon_rank")
    # P(t) = |{u: c(u) ≤ c(t)}| / 6: A 1/6, B = C 3/6, D 4/6, E 5/6, F 1
    expected = {"A": "Hard", "B": "Medium", "C": "Medium", "D": "Medium", "E": "Easy", "F": "Easy"}
    for taxon, tier in expected.items():
        assert set(result.tier[items["names"] == taxon]) == {tier}
    with pytest.raises(ValueError):
        prevalence_tiers(["Birds"], ["genus"], [1], [1], ["A"], method="nope")


def test_exposure_counts_images_through_each_node(tree_and_leaves) -> None:
    tree, leaves = tree_and_leaves
    images = np.concatenate([np.repeat(leaves[0], 3), np.repeat(leaves[2], 2), [leaves[4]]])
    counts = exposure_counts(tree, images)
    assert counts[0] == 6
    assert counts[_node(tree, "Lacertidae")] == 5
    assert counts[_node(tree, "Zootoca")] == 3
    assert counts[_node(tree, "Zootoca carniolica")] == 0
    assert counts[_node(tree, "Pinopsida")] == 1
    assert log10_exposure(np.array([0, 9, 99])).tolist() == pytest.approx([0.0, 1.0, 2.0])


CONFUSABILITY_CASES = [
    # Table 28: same family, same class, other phylum
    (("Lacerta agilis", "Natrix natrix", "Picea abies"), 2, "family", 0.109375, "Medium"),
    # first distractor replaced by a congener
    (("Zootoca carniolica", "Natrix natrix", "Picea abies"), 1, "genus", 0.192708, "Hard"),
    (("Picea abies", "Picea abies", "Picea abies"), 6, "root", 0.015625, "Easy"),
]


@pytest.mark.parametrize(("distractors", "ndd", "meet", "score", "tier"), CONFUSABILITY_CASES)
def test_confusability_table_28(tree_and_leaves, distractors, ndd, meet, score, tier) -> None:
    tree, _ = tree_and_leaves
    gold = np.array([_node(tree, "Zootoca vivipara")])
    others = np.array([[_node(tree, d) for d in distractors]])
    result = confusability_tiers(tree, gold, others)
    assert result.ndd[0] == ndd
    assert result.meet_rank[0] == meet
    assert result.confusability[0] == pytest.approx(score, abs=5e-7)
    assert result.tier[0] == tier


def test_confusability_rejects_unresolved_options(tree_and_leaves) -> None:
    tree, _ = tree_and_leaves
    with pytest.raises(InputFormatError) as error:
        confusability_tiers(tree, np.array([1, 2]), np.array([[3, 4, 5], [3, -1, 5]]))
    assert error.value.row == 3 and error.value.field == "option_nodes"


def test_distractor_nodes_and_unified_tier() -> None:
    options = np.array([[10, 11, 12, 13], [20, 21, 22, 23]])
    assert distractor_nodes(options, np.array([2, 0])).tolist() == [[10, 11, 13], [21, 22, 23]]
    tiers = unified_tier(["genus", "common_name_mcq"], np.array(["Easy", None], dtype=object),
                         np.array([None, "Hard"], dtype=object))
    assert tiers.tolist() == ["Easy", "Hard"]
