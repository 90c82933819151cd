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
