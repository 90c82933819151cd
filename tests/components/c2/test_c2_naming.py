"""Naming kernels: Table 17 of the paper (App. C.5, Eqs. 19–21) and properties."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biovqa.components.c2 import naming


@pytest.mark.parametrize(
    ("kernel", "prediction", "gold", "expected"),
    [
        ("common", "song sparrow", "fox sparrow", 0.700),
        ("common", "american crow", "fox sparrow", 0.000),
        ("sci", "Melospiza georgiana", "Melospiza melodia", 0.575),
        ("sci", "Corvus brachyrhynchos", "Melospiza melodia", 0.054),
    ],
)
def test_table_17(kernel, prediction, gold, expected):
    if kernel == "common":
        value = naming.common_name_similarity(prediction, gold)
    else:
        value = naming.scientific_name_similarity(prediction, gold)
    assert value == pytest.approx(expected, abs=5e-4)


def test_table_17_full_precision():
    expected = 0.5 * 0.3 * difflib.SequenceMatcher(None, "corvus", "melospiza").ratio() \
        + 0.5 * 0.3 * difflib.SequenceMatcher(None, "brachyrhynchos", "melodia").ratio()
    assert naming.scientific_name_similarity("Corvus brachyrhynchos", "Melospiza melodia") == pytest.approx(expected)
    assert expected == pytest.approx(0.054286, abs=1e-6)


def test_token_f1_and_head():
    assert naming.token_f1("song sparrow", "fox sparrow") == 0.5
    assert naming.token_f1("", "fox sparrow") == 0.0
    assert naming.head_noun("Black_footed Albatross") == "albatross"


def test_genus_lift_needs_a_cub_name_of_the_same_genus():
    index = naming.GenusIndex.from_pairs([("Fox Sparrow", "Passerella"), ("Song Sparrow", "Melospiza"),
                                          ("Lincoln Sparrow", "Melospiza"), ("Swamp Sparrow", "Melospiza")])
    # same genus: lifted to 0.75 (plain score 0.6·0.5 + 0.4 = 0.7)
    assert naming.common_name_similarity("Lincoln Sparrow", "Song Sparrow", index) == pytest.approx(0.75)
    # different genus: no lift
    assert naming.common_name_similarity("Fox Sparrow", "Song Sparrow", index) == pytest.approx(0.7)
    # not a CUB name: no lift
    assert naming.common_name_similarity("Melospiza sparrow", "Song Sparrow", index) == pytest.approx(0.6 * 0.5 + 0.4)


def test_genus_kernel_and_missing_epithet():
    assert naming.genus_similarity("Larus", "Larus") == 1.0
    assert naming.genus_similarity("larus californicus", "Larus") == 1.0
    assert naming.genus_similarity("Lars", "Larus") == pytest.approx(0.3 * difflib.SequenceMatcher(None, "lars", "larus").ratio())
    assert naming.scientific_name_similarity("Larus", "Larus californicus") == pytest.approx(0.5)
    assert naming.scientific_name_similarity("", "Larus californicus") == 0.0


@pytest.mark.parametrize(
    ("reply", "category", "completed"),
    [("California", "Gull", "california gull"), ("california gull", "Gull", "california gull"),
     ("Gull", "Gull", "gull"), ("", "Gull", "")],
)
def test_complete_kind_of(reply, category, completed):
    assert naming.complete_kind_of(reply, category) == completed


names = st.lists(st.sampled_from(["fox", "song", "sparrow", "gull", "california", "black", "tern"]),
                 min_size=1, max_size=3).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(names, names)
def test_naming_range_symmetry_identity(a, b):
    for kernel in (naming.common_name_similarity, naming.scientific_name_similarity, naming.genus_similarity):
        value = kernel(a, b)
        assert 0.0 <= value <= 1.0
        if kernel is naming.common_name_similarity:  # difflib's ratio is not symmetric
            assert value == pytest.approx(kernel(b, a))
        assert kernel(a, a) == 1.0 or (kernel is naming.scientific_name_similarity and len(a.split()) < 2)
