"""C3 parsers (the paper's Table 14): forms accepted, rejections, word boundaries, the extensions
behind score options, and linear time; the misreads through ``biovqa score`` on a bench."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures.c3_benches import cli_score, write_items_bench, write_predictions

from biovqa.components.c3 import parse as P


@pytest.mark.parametrize(("reply", "value"), [
    ("7", 7), ("There are 11 beetles.", 11), ("1,234 fish", 1234), ("12,5 fish", 12),
    ("Of the two photographs, the left one has 5 zebras.", 5),  # a number word is not an integer
    ("Zebra2 and zebra3 overlap; 4 in all", 4), ("The 3rd bee from the left; 6 bees", 6),  # glued digits
    ("eleven", None), ("There are many beetles", None), ("", None), (None, None)])
def test_integers_in_digits_as_whole_words(reply: str | None, value: int | None) -> None:
    assert P.parse_integer(reply) == value


@pytest.mark.parametrize(("reply", "value"), [
    ("eleven", 11), ("Twenty-one bees", 21), ("a hundred and five", 105),
    ("Of the two photographs, the left one has 5 zebras.", 5),  # digits first, even with the option
    ("pen2 holds seven cattle", 7),  # "pen2" is no integer; "seven" is read
    ("someone counted none", None), ("alone", None), ("There are many beetles", None)])
def test_number_words_only_with_the_option_and_never_inside_other_words(reply: str, value: int | None) -> None:
    assert P.parse_integer(reply, number_words=True) == value


@pytest.mark.parametrize(("reply", "value", "with_words"), [
    ("0.87 cm", 0.87, 0.87), ("5 mm", 0.5, 0.5), ("about 1.2cm", 1.2, 1.2), (".5", 0.5, 0.5),
    ("0.5 m", None, None), ("no idea", None, None), ("0.9 mins", 0.9, 0.9),
    ("12 millimetres", 12.0, 1.2), ("1.5 centimeters", 1.5, 1.5), ("2 metres", 2.0, None),
    ("x2: 0.87 cm", 0.87, 0.87)])  # a digit glued to a letter names, not measures
def test_centimetres(reply: str, value: float | None, with_words: float | None) -> None:
    for got, expected in ((P.parse_centimetres(reply), value), (P.parse_centimetres(reply, unit_words=True), with_words)):
        assert got == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize(("reply", "direction", "with_synonyms"), [
    ("top-right", "top-right", "top-right"), ("upper right", "top-right", "top-right"),
    ("top right", "top-right", "top-right"), ("above-left", "top-left", "top-left"),
    ("lower left", "bottom-left", "bottom-left"), ("It is above", "top", "top"), ("below", "bottom", "bottom"),
    ("Based upon the two boxes, left", "left", "left"),  # "upon" is not "up"
    ("The beetle is upright; the red one lies to the left", "left", "left"),  # "upright" is not up + right
    ("up and to the right", "right", "top-right"), ("north-east", None, "top-right"), ("NE", None, "top-right"),
    ("down", None, "bottom"), ("upper", None, "top"), ("nowhere", None, None), ("leftover", None, None)])
def test_directions(reply: str, direction: str | None, with_synonyms: str | None) -> None:
    assert P.parse_direction(reply) == direction
    assert P.parse_direction(reply, synonyms=True) == with_synonyms


@pytest.mark.parametrize(("reply", "label", "with_synonyms"), [
    ("front-left", "frontleft", "frontleft"), ("The animal faces back left", "backleft", "backleft"),
    ("frontright", "frontright", "frontright"), ("up", "up", "up"), ("rear", None, "back"),
    ("rear left", "left", "backleft"), ("top", None, "up"), ("bottom", None, "down"),
    ("sideways", None, None), ("upfront", None, None)])
def test_viewpoints(reply: str, label: str | None, with_synonyms: str | None) -> None:
    assert P.parse_viewpoint(reply) == label
    assert P.parse_viewpoint(reply, synonyms=True) == with_synonyms


def test_boxes_letters_codes() -> None:
    assert P.parse_box("[214, 273, 752, 774]") == (214, 273, 752, 774)
    assert P.parse_box("box (0.1, 0.2, 0.5, 0.6) at 3") == (0.1, 0.2, 0.5, 0.6)
    assert P.parse_box("x 1 y 2 w 3 h 4 extra") == (1, 2, 3, 4)
    # coordinate names are not coordinates: the group of names holds no number
    assert P.parse_box("[x1, y1, x2, y2] = [10, 20, 30, 40]") == (10, 20, 30, 40)
    assert P.parse_box("x1=10, y1=20, x2=30, y2=40") == (10, 20, 30, 40)
    assert P.parse_box("The zebra is in the center") is None
    assert P.parse_letter("Image B", "image") == "B"
    assert P.parse_letter("(c).", "image") == "C"
    assert P.parse_letter("Beetle D has the largest", "beetle") == "D"
    assert P.parse_letter("the red one", "beetle") is None  # colour words alone do not parse
    assert P.parse_code("A00000 012435") == "A00000012435"
    assert P.parse_code("A-0000-0012345") == "A00000012345"
    assert P.parse_code("unreadable") is None


def test_parsers_are_linear_in_time_on_long_adversarial_replies() -> None:
    nasty = ["[" + "1, " * 200_000, "(" * 100_000 + "1 2 3", "a " * 200_000, "top " * 100_000 + "x",
             "1." * 100_000, "A0" * 100_000, "up" + " " * 200_000 + "x", "a" * 200_000 + "2", "1," * 200_000]
    for reply in nasty:
        start = time.perf_counter()
        for fn in (P.parse_integer, P.parse_centimetres, P.parse_box, P.parse_direction, P.parse_viewpoint,
                   P.parse_code):
            fn(reply)
        P.parse_integer(reply, number_words=True)
        P.parse_centimetres(reply, unit_words=True)
        P.parse_direction(reply, synonyms=True)
        P.parse_viewpoint(reply, synonyms=True)
        P.parse_letter(reply, "image")
        assert time.perf_counter() - start < 0.5


# ----------------------------------------------------------------------------- through biovqa score

COUNT = {"task": "counting", "subset": "waid-zebra", "dataset": "waid", "tier": "medium"}
MISREADS = [  # (row, reply, parsed by default, parsed with the extensions)
    ({**COUNT, "answer": "5", "gold_number": 5.0}, "Of the two photographs, the left one has 5 zebras.", "5", "5"),
    ({**COUNT, "answer": "4", "gold_number": 4.0}, "Zebra2 and zebra3 overlap; 4 in all", "4", "4"),
    ({**COUNT, "answer": "7", "gold_number": 7.0}, "pen2 holds seven cattle", None, "7"),
    ({"task": "absolute_distance", "answer": "1.200", "gold_number": 1.2, "measure": "length"},
     "12 millimetres", "12", "1.2"),
    ({"task": "relative_position", "answer": "left", "options": ["left", "top", "right", "bottom-left"]},
     "Based upon the two boxes, left", "left", "left"),
    ({"task": "relative_position", "answer": "left", "options": ["left", "top-right", "right", "bottom"]},
     "The beetle is upright; the red one lies to the left", "left", "left"),
    ({"task": "relative_position", "answer": "top-right", "options": ["left", "top-right", "right", "bottom"]},
     "up and to the right", "right", "top-right"),
    ({"task": "viewpoint", "answer": "back", "tier": "red_box"}, "rear", None, "back"),
    ({"task": "viewpoint", "answer": "up", "tier": "red_box"}, "top", None, "up"),
]
EXTENSIONS = ["number_words=true", "unit_words=true", "direction_synonyms=true", "viewpoint_synonyms=true"]


def test_misread_replies_through_biovqa_score(tmp_path: Path) -> None:
    bench = write_items_bench(tmp_path / "bench", [row for row, *_ in MISREADS])
    ids = [f"c3-{row['task']}-{k:04d}" for k, (row, *_) in enumerate(MISREADS)]
    predictions = write_predictions(tmp_path / "p.parquet", {i: reply for i, (_, reply, *_) in zip(ids, MISREADS)})
    for name, options, column in (("strict", (), 2), ("extended", EXTENSIONS, 3)):
        summary = cli_score(bench, predictions, tmp_path / name, *options)
        items = pq.read_table(tmp_path / name / "items.parquet").to_pydict()
        got = dict(zip(items["item_id"], items["parsed"]))
        expected = [case[column] for case in MISREADS]
        assert [got[i] for i in ids] == expected, name
        recorded = {k: summary["options"][k] for k in ("number_words", "unit_words", "direction_synonyms",
                                                        "viewpoint_synonyms")}
        assert set(recorded.values()) == {bool(options)}
        statuses = dict(zip(items["item_id"], items["parse_status"]))
        assert [statuses[i] for i in ids] == ["parsed" if v is not None else "unparsed" for v in expected]
