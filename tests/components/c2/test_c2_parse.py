"""The five-step C2 parser (the paper's App. K.5, Table 14)."""

from __future__ import annotations

import difflib

import numpy as np
import pyarrow as pa
import pytest

from biovqa.components.c2 import parse
from biovqa.text import normalize_c2

RED_BLUE = ["Red", "Blue", "Green", "Yellow", "Purple"]


@pytest.mark.parametrize("text", ["Blue_Jay", "blue jay", "blue jay.", "BLUE   JAY!"])
def test_step1_normalize(text):
    assert normalize_c2(text) == "blue jay"


def test_step2_detect_format_and_options():
    question = "What is the wing color of this bird? Options: (A) blue, (B) grey, (C) bill color: black"
    assert parse.has_options(question)
    assert parse.parse_options(question) == ["blue", "grey", "bill color: black"]
    assert parse.parse_options("What is the genus of the bird?") is None


@pytest.mark.parametrize("gold", ["Blue", "(B) Blue", "(B)", "blue."])
def test_step3_gold_forms(gold):
    assert parse.parse_gold(gold, RED_BLUE) == 1


def test_step3_gold_absent():
    assert parse.parse_gold("Orange", RED_BLUE) == -1


@pytest.mark.parametrize(
    ("reply", "index", "status"),
    [
        ("(B) Blue", 1, parse.PARSED),            # the instructed form
        ("(B) Red", 1, parse.MISMATCH),           # Table 14: letter and text disagree → letter wins
        ("B", 1, parse.PARSED),                   # bare letter
        ("(b)", 1, parse.PARSED),                 # wrong case, letter only
        ("b. blue", 1, parse.PARSED),
        ("Option C: Green", 2, parse.PARSED),
        ("blue", 1, parse.PARSED),                # text only
        ("BLUE", 1, parse.PARSED),                # wrong case
        ("**(D) Yellow**", 3, parse.PARSED),      # markdown
        ("`(E) Purple`", 4, parse.PARSED),
        ("The answer is (C) Green.", 2, parse.PARSED),
        ("Answer: Yellow", 3, parse.PARSED),
        ("Sure, the answer is: (A) Red", 0, parse.PARSED),
        ("The wing of this bird is clearly yellow in colour.", 3, parse.PARSED),  # verbose sentence
        ("a yellow wing", 3, parse.PARSED),       # 'a' is the article, not letter A
        ("A yellow wing", 0, parse.MISMATCH),     # capital bare letter counts as a marker
        ("(B) Blue\nBecause the feathers are blue.", 1, parse.PARSED),  # first line only
        ("\n\n(C) Green", 2, parse.PARSED),
        ("Answer:\n(C) Green", 2, parse.PARSED),
        ("Purplle", 4, parse.FUZZY),              # near miss: ratio 12/13 ≥ 0.86
        ("Purpel", -1, parse.FAILED),             # ratio 10/12 < 0.86
        ("", -1, parse.FAILED),
        ("   ", -1, parse.FAILED),
        (None, -1, parse.FAILED),
        ("I cannot tell from this image", -1, parse.FAILED),
        ("(F) Orange", -1, parse.FAILED),         # letter beyond the options, text unknown
    ],
)
def test_step4_resolve(reply, index, status):
    assert parse.resolve_reply(reply, RED_BLUE) == (index, status)


def test_step4_prefer_text():
    assert parse.resolve_reply("(B) Red", RED_BLUE, prefer_text=True) == (0, parse.MISMATCH)
    assert parse.resolve_reply("(B) Blue", RED_BLUE, prefer_text=True) == (1, parse.PARSED)


def test_step4_longest_option_first():
    options = ["left wing", "wing", "beak"]
    assert parse.resolve_reply("it is the left wing", options) == (0, parse.PARSED)


def _ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def test_fuzzy_threshold_just_above_and_below():
    options = ["under tail color: buff", "bill color: black"]
    above = "under tail colr: buf"
    assert _ratio(above, options[0]) >= parse.FUZZY_THRESHOLD
    assert parse.resolve_reply(above, options) == (0, parse.FUZZY)
    below = "undr tl clr bf"
    assert _ratio(normalize_c2(below), options[0]) < parse.FUZZY_THRESHOLD
    assert parse.resolve_reply(below, options) == (-1, parse.FAILED)


@pytest.mark.parametrize(
    ("text", "option", "expected"),
    [("x" * 50, "x" * 44 + "y" * 6, True),    # ratio 0.88, just above
     ("x" * 50, "x" * 42 + "y" * 8, False),   # ratio 0.84, just below
     ("grey wing", "grey wings", True),        # ratio 18/19
     ("gry", "grey", False)],                  # ratio 6/7 = 0.857
)
def test_fuzzy_boundary(text, option, expected):
    ratio = _ratio(text, option)
    assert (ratio >= parse.FUZZY_THRESHOLD) == expected
    assert (parse.fuzzy_option(text, [option]) == 0) == expected


def test_fuzzy_exactly_at_threshold_counts():
    # 43 matching characters, 100 in all → ratio 0.86 exactly
    a, b = "x" * 50, "x" * 43 + "y" * 7
    assert _ratio(a, b) == pytest.approx(0.86)
    assert parse.fuzzy_option(a, [b]) == 0


def test_open_reply_cleaning():
    assert parse.clean_open_reply("**Larus californicus**\nIt is a gull.") == "larus californicus"
    assert parse.clean_open_reply("The answer is: Larus.") == "larus"
    assert parse.clean_open_reply(None) == ""


@pytest.mark.parametrize(
    ("question", "options", "family"),
    [
        ("What is the body part of this bird marked with the red dot? Options: (A) beak", ["beak"], "marker_localization"),
        ("Which of the following is the most prominently visible physical trait of the bird in this image? Options: (A) wing color: blue",
         ["wing color: blue"], "attr_group_value"),
        ("Which of the eyes of the bird are visible in this image? Options: (A) Left, (B) Right, (C) Both, (D) None",
         ["Left", "Right", "Both", "None"], "visibility_side"),
        ("Which of the following parts of the bird are visible in this image? Options: (A) beak, (B) tail, (C) nape, (D) None, (E) All three",
         ["beak", "tail", "nape", "None", "All three"], "visibility_partset"),
        ("What type of bird is this in the image? Options: (A) Gull", ["Gull"], "category_mcq"),
        ("What is the common name of the bird?", None, "open_common_name"),
        ("What is the scientific name of the bird?", None, "open_scientific_name"),
        ("What is the genus of the bird?", None, "open_genus"),
        ("What kind of gull is the bird in this image?", None, "open_kind_of"),
        ("What is the wing color of this bird? Options: (A) blue", ["blue"], "attr_bare_value"),
        ("What is this?", None, None),
    ],
)
def test_step5_routing(question, options, family):
    assert parse.route_family(question, options) == family
    is_side = np.array([sorted(normalize_c2(o) for o in (options or [])) == sorted(parse.SIDE_LABELS)])
    routed = parse.route_families(pa.array([question]), is_side, np.array([bool(options)]))
    assert routed[0] == family


def test_sequence_ratio_is_difflibs_ratio_bit_for_bit():
    """The kernels' ratio must equal difflib's exactly (same float), including tie-breaking
    between equally long matches, empty strings and the autojunk length difflib handles itself."""
    rng = np.random.default_rng(3)
    pairs = [("", ""), ("a", ""), ("", "a"), ("corvus", "melospiza"), ("lars", "larus"),
             ("abcabc", "cbacba"), ("x" * 300, "x" * 250), ("ab c" * 60, "c ab" * 55)]
    for alphabet in ("ab", "abc", "abcdefgh", "abcdefghijklmnopqrstuvwxyz "):
        letters = np.array(list(alphabet))
        for _ in range(3000):
            a, b = ("".join(rng.choice(letters, size=int(rng.integers(0, 20)))) for _ in range(2))
            pairs.append((a, b))
    for a, b in pairs:
        assert parse.sequence_ratio(a, b) == difflib.SequenceMatcher(None, a, b).ratio(), (a, b)
