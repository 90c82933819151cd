from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biovqa.text import normalize_c1, normalize_c1_array, normalize_c2


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("The phylum is Chordata.", "chordata"),
        ("Chordata", "chordata"),
        ("Answer: Puma concolor", "puma concolor"),
        ("the answer is the Order Anura", "anura"),
        ("Order", "order"),
        ("Åkergroda", "akergroda"),
        # punctuation is removed, not turned into a space (metrics.md §1.1, paper C.1)
        ("Black-footed Albatross", "blackfooted albatross"),
        ("Blue_Jay", "blue jay"),
        ("Cooper's Hawk", "coopers hawk"),
        ("  Species epithet: cinereus ", "cinereus"),
        (None, ""),
    ],
)
def test_c1_normalizer(raw: str | None, expected: str) -> None:
    assert normalize_c1(raw) == expected
    assert normalize_c1_array([raw]).to_pylist() == [expected]


def test_hyphenated_names_match_the_closed_spelling_only() -> None:
    """Deliberate (paper C.1 "removes punctuation"): the hyphen is deleted, so the closed spelling
    matches and the spaced one does not."""
    assert normalize_c1("Red-tailed Hawk") == normalize_c1("Redtailed Hawk") == "redtailed hawk"
    assert normalize_c1("Red tailed Hawk") != normalize_c1("Red-tailed Hawk")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "Zs", "Mn", "S")), max_size=30), max_size=20))
def test_vectorised_equals_scalar(values: list[str]) -> None:
    assert normalize_c1_array(pa.array(values, pa.string())).to_pylist() == [normalize_c1(v) for v in values]


@pytest.mark.parametrize("raw", ["Blue_Jay", "blue jay", "blue jay."])
def test_c2_normalizer(raw: str) -> None:
    assert normalize_c2(raw) == "blue jay"


def test_c2_normalizer_keeps_structure_marks_and_unifies_grey() -> None:
    assert normalize_c2("(A) Gray: upper-tail!") == "(a) grey: upper-tail"


# --- the one string encoder ---------------------------------------------------------------------


def test_encode_strings_sorted_nulls_and_dictionary_chunks() -> None:
    import numpy as np

    from biovqa.text import encode_strings

    chunked = pa.chunked_array([pa.array(["b", None, "a"]).dictionary_encode(),
                                pa.array(["c", "b"]).dictionary_encode()])
    codes, labels = encode_strings(chunked, sort=True)
    assert labels.to_pylist() == ["a", "b", "c"]
    assert codes.tolist() == [1, -1, 0, 2, 1]
    plain_codes, plain = encode_strings(pa.array(["x", "y", "x"]))
    assert np.asarray(plain.to_pylist())[plain_codes].tolist() == ["x", "y", "x"]


def test_vocabulary_maps_distinct_values_once_and_merges_equal_results() -> None:
    from biovqa.text import Vocabulary, codes_in, normalize_c1_array

    vocabulary = Vocabulary()
    ids = vocabulary.mapped_ids(pa.array(["Blue Jay", "blue  jay", None, "Robin"]), normalize_c1_array)
    assert ids[0] == ids[1] != ids[3] and ids[2] == 0  # null → "" → id 0
    assert vocabulary.texts[ids[0]] == "blue jay" and vocabulary.get("robin") == ids[3]
    assert vocabulary.ids(["robin", "wren"]).tolist() == [ids[3], len(vocabulary) - 1]
    assert vocabulary.text(ids).to_pylist() == ["blue jay", "blue jay", "", "robin"]
    interner = Vocabulary(reserve_empty=False)
    assert interner.get("") == -1 and interner.add("a") == 0
    assert codes_in(pa.array(["ok", "missing", None, "odd"]), ("ok", "failed", "missing")).tolist() == [0, 2, -1, -1]
