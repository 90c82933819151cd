"""The one estimate record of the score schema and the one reader of a float out of a summary
entry (an estimate ``{value, lo, hi, n}`` or a plain number)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from biovqa.scoring.schema import Estimate, estimate, estimate_value, is_estimate


def test_an_estimate_writes_the_schema_form_with_nan_as_null() -> None:
    written = estimate(0.5, math.nan, 0.7, n=12)
    assert written == {"value": 0.5, "lo": None, "hi": 0.7, "n": 12} and is_estimate(written)
    assert Estimate.of(math.nan, n=0).as_dict() == {"value": None, "lo": None, "hi": None, "n": 0}
    with pytest.raises(dataclasses.FrozenInstanceError):
        Estimate(0.1).value = 0.2  # type: ignore[misc]


def test_read_takes_an_estimate_or_a_number_and_nothing_else() -> None:
    assert Estimate.read({"value": 0.25, "lo": 0.2, "hi": None, "n": 8}) == Estimate(0.25, 0.2, None, 8)
    assert Estimate.read(0.75) == Estimate(0.75)
    assert Estimate.read({"value": None, "lo": None, "hi": None, "n": 0}) == Estimate(None)
    assert Estimate.read("label") is None and Estimate.read(None) is None and Estimate.read(True) is None


@pytest.mark.parametrize(("entry", "part", "expected"), [
    ({"value": 0.4, "lo": 0.3, "hi": 0.5, "n": 3}, "value", 0.4),
    ({"value": 0.4, "lo": 0.3, "hi": 0.5, "n": 3}, "lo", 0.3),
    ({"value": 0.4, "lo": None, "hi": None, "n": 3}, "hi", math.nan),
    (0.9, "value", 0.9),
    (3, "value", 3.0),
    (None, "value", math.nan),
    ({}, "value", math.nan),
    ("n/a", "value", math.nan),
    (float("inf"), "value", math.nan),
])
def test_estimate_value_reads_a_float_or_nan(entry: object, part: str, expected: float) -> None:
    got = estimate_value(entry, part)
    assert (math.isnan(got) and math.isnan(expected)) or got == expected
