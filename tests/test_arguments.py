"""``NAME=VALUE`` arguments: one split, one set of checks, messages that name the caller's option."""

from __future__ import annotations

from pathlib import Path

import pytest

from biovqa.arguments import parse_name_values, split_name_value
from biovqa.errors import BiovqaError


def test_split_at_the_first_equals_sign_and_strip() -> None:
    assert split_name_value(" waid = /data/a=b ", option="--source") == ("waid", "/data/a=b")
    assert split_name_value("tau=", option="-O", empty_value=True) == ("tau", "")


@pytest.mark.parametrize("text", ["waid", "=/x", "  =/x", "waid=", "waid=  "])
def test_a_malformed_argument_names_the_option_and_its_form(text: str) -> None:
    with pytest.raises(BiovqaError, match=r"field '--source': expected NAME=PATH, got") as error:
        split_name_value(text, option="--source", form="NAME=PATH", hint="e.g. --source waid=/data/waid")
    assert error.value.field == "--source" and error.value.hint == "e.g. --source waid=/data/waid"


def test_names_are_normalised_checked_and_kept_in_order() -> None:
    parsed = parse_name_values(["Bees=/y", "waid=/x"], option="--source", what="C3 source",
                               names=("waid", "bees"), key=str.lower)
    assert list(parsed.items()) == [("bees", "/y"), ("waid", "/x")]
    assert parse_name_values({"WAID": Path("/x")}, option="--source", what="C3 source", key=str.lower) == {
        "waid": "/x"}  # a mapping from Python is checked the same way
    assert parse_name_values(None, option="--option", what="option") == {}
    assert parse_name_values(["max-pixels=1"], option="-O", what="option",
                             key=lambda name: name.replace("-", "_")) == {"max_pixels": "1"}


def test_an_unknown_name_gets_the_closest_known_one() -> None:
    with pytest.raises(BiovqaError, match=r"unknown C3 source 'wiad' \(did you mean 'waid'\?\)") as error:
        parse_name_values(["wiad=/x"], option="--source", what="C3 source", names=("waid", "bees"))
    assert error.value.field == "--source" and error.value.hint == "one of waid, bees"


def test_a_name_given_twice_is_an_error_after_normalising() -> None:
    with pytest.raises(BiovqaError, match=r"C4 catalog 'leopard' is given twice"):
        parse_name_values(["leopard=/a", "Leopard=/b"], option="--catalog", what="C4 catalog", key=str.lower)
    with pytest.raises(BiovqaError, match=r"option 'a_b' is given twice"):
        parse_name_values(["a_b=1", "a-b=2"], option="-O", what="option", key=lambda name: name.replace("-", "_"))
