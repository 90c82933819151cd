"""biovqa.stats.codes: the one factorisation and the cluster codes the bootstraps draw over."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biovqa.stats.codes import cluster_codes, dense_codes


def test_cluster_codes_follow_sorted_labels() -> None:
    codes, n = cluster_codes(np.array(["b", "a", "b", "c"], dtype=object))
    assert n == 3 and codes.tolist() == [1, 0, 1, 2]
    assert cluster_codes(np.array([30, 10, 30]))[0].tolist() == [1, 0, 1]
    for missing in (np.array(["a", None], dtype=object), np.array([1.0, np.nan])):
        with pytest.raises(ValueError, match="must not be missing"):
            cluster_codes(missing)


def test_dense_codes_number_values_sorted_or_as_they_first_appear() -> None:
    nan_payload = np.frombuffer((0x7FF8000000000001).to_bytes(8, "little"), dtype=np.float64)[0]
    values = np.array([2.0, np.nan, -0.0, 0.0, nan_payload, 1.5, 2.0])
    codes, distinct = dense_codes(values)
    assert codes.tolist() == [2, 3, 0, 0, 3, 1, 2]  # one zero; every NaN one value, sorted last
    assert distinct[:3].tolist() == [0.0, 1.5, 2.0] and np.isnan(distinct[3])
    codes, distinct = dense_codes(np.array(["b", "a", "b", "c"], dtype=object), sort=False)
    assert codes.tolist() == [0, 1, 0, 2] and distinct.tolist() == ["b", "a", "c"]
    assert dense_codes(np.array([], dtype=np.int64))[0].tolist() == []
    assert dense_codes(np.array([[3, 1], [1, 3]]))[0].tolist() == [1, 0, 0, 1]  # flattened
    assert dense_codes(np.array([True, False]))[0].tolist() == [1, 0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.integers(-3, 3).map(float), st.just(math.nan), st.just(-0.0)), max_size=40),
       st.lists(st.sampled_from(["x", "y", "ab", "a", ""]), max_size=40))
def test_dense_codes_agree_with_pandas_factorize(numbers: list[float], texts: list[str]) -> None:
    """The reference the stats used before: pandas' factorize (NaN a value, sorted last)."""
    import pandas as pd

    expected, uniques = pd.factorize(np.array(numbers), sort=True, use_na_sentinel=False)
    codes, distinct = dense_codes(np.array(numbers))
    assert codes.tolist() == expected.tolist() and len(distinct) == len(uniques)
    for sort in (True, False):
        expected, uniques = pd.factorize(pd.Series(texts, dtype=object), sort=sort)
        codes, distinct = dense_codes(np.array(texts, dtype=object), sort=sort)
        assert codes.tolist() == expected.tolist() and distinct.tolist() == list(uniques)
