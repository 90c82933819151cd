"""C3 parsers (Table 14, prompts.md §6.4): forms accepted, rejections, and linear time."""

from __future__ import annotations

import time

import pytest

from biovqa.components.c3 import parser as P


@pytest.mark.parametrize(("reply", "value"), [
    ("7", 7), ("There are 11 beetles.", 11), ("eleven", 11), ("Twenty-one bees", 21), ("a hundred and five", 105),
    ("1,234 fish", 1234), ("There are many beetles", None), ("", None), (None, None)])
def test_integers_and_number_words(reply: str | None, value: int | None) -> None:
    assert P.parse_integer(reply) == value


@pytest.mark.parametrize(("reply", "value"), [
    ("0.87 cm", 0.87), ("5 mm", 0.5), ("about 1.2cm", 1.2), (".5", 0.5), ("0.5 m", None), ("no idea", None),
    ("12 millimetres", 1.2)])
def test_centimetres(reply: str, value: float | None) -> None:
    assert P.parse_centimetres(reply) == (pytest.approx(value) if value is not None else None)


def test_boxes_letters_directions_viewpoints_codes() -> None:
    assert P.parse_box("[214, 273, 752, 774]") == (214, 273, 752, 774)
    assert P.parse_box("box (0.1, 0.2, 0.5, 0.6) at 3") == (0.1, 0.2, 0.5, 0.6)
    assert P.parse_box("x 1 y 2 w 3 h 4 extra") == (1, 2, 3, 4)
    assert P.parse_box("The zebra is in the center") is None
    assert P.parse_letter("Image B", "image") == "B"
    assert P.parse_letter("(c).", "image") == "C"
    assert P.parse_letter("Beetle D has the largest", "beetle") == "D"
    assert P.parse_letter("the red one", "beetle") is None  # colour words alone do not parse
    assert P.parse_direction("upper right") == "top-right"
    assert P.parse_direction("It is above") == "top"
    assert P.parse_direction("bottom left") == "bottom-left"
    assert P.parse_direction("nowhere") is None
    assert P.parse_viewpoint("front-left") == "frontleft"
    assert P.parse_viewpoint("The animal faces back left") == "backleft"
    assert P.parse_viewpoint("sideways") is None
    assert P.parse_code("A00000 012435") == "A00000012435"
    assert P.parse_code("A-0000-0012345") == "A00000012345"
    assert P.parse_code("unreadable") is None


def test_parsers_are_linear_in_time_on_long_adversarial_replies() -> None:
    nasty = ["[" + "1, " * 200_000, "(" * 100_000 + "1 2 3", "a " * 200_000, "top " * 100_000 + "x",
             "1." * 100_000, "A0" * 100_000]
    for reply in nasty:
        start = time.perf_counter()
        for fn in (P.parse_integer, P.parse_centimetres, P.parse_box, P.parse_direction, P.parse_viewpoint,
                   P.parse_code):
            fn(reply)
        P.parse_letter(reply, "image")
        assert time.perf_counter() - start < 0.5
