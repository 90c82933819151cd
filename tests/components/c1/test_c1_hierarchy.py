from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from biovqa.components.c1.hierarchy import (
    acc_leaf,
    hca,
    hca_at_depth,
    hierarchical_per_image,
    hierarchical_summary,
    per_level_accuracy,
    por,
    scaled_hca,
    spor,
    spor_prefix,
    tor,
)

# hierarchy.md §6.1: Black-footed Albatross, levels order / family / genus / species
ALBATROSS = {
    "A": ([1, 1, 1, 1], {"hca": 1, "acc_leaf": 1, "por": 1.00, "spor": 1.00, "spor_prefix": 1.00, "tor": 1.00}),
    "B": ([1, 0, 1, 1], {"hca": 0, "acc_leaf": 1, "por": 0.75, "spor": 0.50, "spor_prefix": 0.25, "tor": 0.333}),
    "C": ([1, 1, 1, 0], {"hca": 0, "acc_leaf": 0, "por": 0.75, "spor": 0.75, "spor_prefix": 0.75, "tor": 0.667}),
}
ALBATROSS_MEANS = {"hca": 0.333, "acc_leaf": 0.667, "por": 0.833, "spor": 0.750, "spor_prefix": 0.667, "tor": 0.667}


@pytest.mark.parametrize("image", sorted(ALBATROSS))
def test_albatross_per_image(image: str) -> None:
    vector, expected = ALBATROSS[image]
    got = hierarchical_per_image(np.array([vector], dtype=bool))
    for name, value in expected.items():
        assert got[name][0] == pytest.approx(value, abs=5e-4), name


@pytest.mark.parametrize("metric", sorted(ALBATROSS_MEANS))
def test_albatross_means(metric: str) -> None:
    matrix = np.array([ALBATROSS[k][0] for k in "ABC"], dtype=bool)
    assert hierarchical_summary(matrix)[metric] == pytest.approx(ALBATROSS_MEANS[metric], abs=5e-4)


@pytest.mark.parametrize(("metric", "expected"), [
    (por, 0.833), (spor, 0.833), (spor_prefix, 0.0), (tor, 0.8), (hca, 0.0),
])
def test_six_levels_wrong_top_only(metric, expected: float) -> None:
    assert metric(np.array([[0, 1, 1, 1, 1, 1]], dtype=bool))[0] == pytest.approx(expected, abs=5e-4)


def test_absent_level_is_skipped_not_wrong() -> None:
    # a reptile: phylum, class, (no order), family, genus, species
    correct = np.array([[1, 1, 0, 1, 1, 1], [1, 1, 0, 0, 1, 1]], dtype=bool)
    present = np.array([[1, 1, 0, 1, 1, 1], [1, 1, 0, 1, 1, 1]], dtype=bool)
    assert hca(correct, present).tolist() == [1.0, 0.0]
    assert por(correct, present).tolist() == [1.0, 0.8]
    assert spor(correct, present).tolist() == [1.0, 0.4]  # runs of 2 and 2 over 5 levels
    assert spor_prefix(correct, present).tolist() == [1.0, 0.4]
    assert tor(correct, present).tolist() == pytest.approx([1.0, 0.5])  # pairs (p,c) (c,f) (f,g) (g,s)
    assert acc_leaf(correct, present).tolist() == [1.0, 1.0]
    assert per_level_accuracy(correct, present)[2] != per_level_accuracy(correct, present)[2]  # NaN


def test_single_level_and_depth_truncation() -> None:
    assert tor(np.array([[True], [False]])).tolist() == [1.0, 0.0]  # [DEFAULT] TOR_i = c_i1
    assert hca(np.array([[True], [False]])).tolist() == acc_leaf(np.array([[True], [False]])).tolist()
    matrix = np.array([[1, 1, 0, 1]], dtype=bool)
    assert hca_at_depth(matrix, depth=2)[0] == 1.0
    assert hca_at_depth(matrix, depth=3)[0] == 0.0
    assert per_level_accuracy(np.array([[1, 0], [1, 1]], dtype=bool)).tolist() == [1.0, 0.5]


def test_bad_shapes_raise() -> None:
    with pytest.raises(ValueError):
        hca(np.array([True, False]))
    with pytest.raises(ValueError):
        hca(np.array([[True]]), np.array([[False]]))
    with pytest.raises(ValueError):
        hca_at_depth(np.array([[True]]), depth=2)


@settings(max_examples=100, deadline=None)
@given(arrays(bool, st.tuples(st.integers(1, 12), st.integers(1, 7))),
       st.data())
def test_invariants(correct: np.ndarray, data: st.DataObject) -> None:
    present = data.draw(arrays(bool, correct.shape))
    present[:, -1] = True  # every image keeps at least one level
    m = hierarchical_per_image(correct, present)
    eps = 1e-12
    assert (m["hca"] <= m["acc_leaf"] + eps).all()
    assert (m["hca"] <= m["spor_prefix"] + eps).all()
    assert (m["spor_prefix"] <= m["spor"] + eps).all()
    assert (m["spor"] <= m["por"] + eps).all()
    assert (m["hca"] <= m["tor"] + eps).all()
    for values in m.values():
        assert ((values >= 0) & (values <= 1)).all()
    perfect = hierarchical_per_image(np.ones_like(correct), present)
    assert all((v == 1).all() for v in perfect.values())


def test_scaled_hca_worked_example() -> None:
    # hierarchy.md §6: Qwen2.5-VL-7B on iNat21-Animal, HCA 19.73, Acc_leaf 41.66 → 47.4 %
    assert round(scaled_hca(19.73, 41.66) * 100, 1) == 47.4
    matrix = np.array([ALBATROSS[k][0] for k in "ABC"], dtype=bool)
    means = hierarchical_summary(matrix)
    assert scaled_hca(means["hca"], means["acc_leaf"]) == pytest.approx(0.5)  # A of {A, B} leaf-correct
    assert np.isnan(scaled_hca(0.0, 0.0))
