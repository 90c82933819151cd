"""One score option (:class:`biovqa.components.options.Option`): parsing what a user types,
the errors it gives, and the one help line it describes itself with."""

from __future__ import annotations

from pathlib import Path

import pytest

from biovqa.components.options import COMMON_SCORE_OPTIONS, Option
from biovqa.errors import BiovqaError


def test_booleans_numbers_paths_and_lists_parse_from_text() -> None:
    assert [Option("x", bool, False, "").parse(text) for text in ("yes", "ON", "0", "false")] == [True, True, False, False]
    assert Option("n", int, 1, "").parse("7") == 7 and Option("f", float, 1.0, "").parse("0.25") == 0.25
    assert Option("p", Path, None, "").parse("a/b") == Path("a/b")
    assert Option("w", list[float], (1.0,), "").parse(" 1, 0.5 ,0") == (1.0, 0.5, 0.0)
    assert Option("p", Path, None, "").parse(None) is None  # no default: stays unset
    assert Option("n", int, 3, "").parse(None) == 3  # unset: the default


@pytest.mark.parametrize(("option", "value", "says"), [
    (Option("n", int, 1, ""), "2.5", "option 'n' takes a whole number, got '2.5'"),
    (Option("n", int, 1, ""), True, "option 'n' takes a whole number"),
    (Option("x", bool, False, ""), "maybe", "option 'x' takes true or false"),
    (Option("k", str, "a", "", choices=("a", "b")), "c", "option 'k' takes one of a, b, got 'c'"),
    (Option("w", list[float], (), "", length=2), "1,2,3", "takes 2 comma-separated numbers, got 3"),
    (Option("w", list[float], (), "", low=0, high=1), "0.5,2", r"must lie in \[0, 1\] \(each number\)"),
    (Option("e", int, 2, "", check=lambda v: "must be even" if v % 2 else None), "3", "option 'e': must be even"),
])
def test_a_bad_value_names_the_option_and_what_it_takes(option: Option, value: object, says: str) -> None:
    with pytest.raises(BiovqaError, match=says) as raised:
        option.parse(value)
    assert raised.value.field == option.name


def test_a_percentage_for_a_share_gets_the_fraction_as_a_hint() -> None:
    confidence = next(option for option in COMMON_SCORE_OPTIONS if option.name == "confidence")
    with pytest.raises(BiovqaError) as raised:
        confidence.parse("90")
    assert raised.value.hint == "a fraction: 0.9 for 90%"


def test_describe_is_one_help_line_with_type_and_default() -> None:
    assert Option("tau", float, 20.0, "ΔE scale").describe() == "tau=<a number> (default 20.0): ΔE scale"
    assert (Option("w", list[float], (1.0, 0.25), "weights", length=2).describe()
            == "w=<2 comma-separated numbers> (default 1,0.25): weights")
    assert Option("on", bool, True, "switch").describe() == "on=<true or false> (default true): switch"
    assert Option("k", str, None, "kind", choices=("a", "b")).describe() == "k=<a|b> (default none): kind"
