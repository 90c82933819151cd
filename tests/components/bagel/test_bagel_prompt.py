"""The BAGEL prompt (bagel.md §5.1) and the strict letter parser (§5.2)."""

from __future__ import annotations

import pytest

from biovqa.components.bagel.parse import parse_letter
from biovqa.components.bagel.prompts import render_prompt

OPTIONS = ("Galliformes", "Anseriformes", "Passeriformes", "Strigiformes")


def test_canonical_prompt_is_the_papers_text_one_option_per_line() -> None:
    assert render_prompt("Q?", ("w", "x", "y", "z")) == (
        "You are answering a multiple-choice closed-book benchmark question for testing animal expertise. "
        "Choose exactly one answer.\nOutput exactly one capital letter: A, B, C, or D.\n"
        "Do not output any explanation, words, punctuation, or extra text.\n\nQuestion: Q?\nOptions:\n"
        "A. w\nB. x\nC. y\nD. z\nAnswer:")


def test_inline_prompt_is_the_printed_one_line_string() -> None:
    printed = ("You are answering a multiple-choice closed-book benchmark question for testing animal expertise. "
               "Choose exactly one answer.\\n Output exactly one capital letter: A, B, C, or D.\\n Do not output "
               "any explanation, words, punctuation, or extra text.\\n\\n Question: {question}\\n Options: A. "
               "{option_a} B. {option_b} C. {option_c} D. {option_d} Answer:")
    expected = printed.replace("\\n", "\n").format(question="Q?", option_a="w", option_b="x", option_c="y",
                                                   option_d="z")
    assert render_prompt("Q?", ("w", "x", "y", "z"), "inline") == expected


@pytest.mark.parametrize(("reply", "letter"), [
    ("B", "B"), ("b", "B"), (" C\n", "C"), ("**D**", "D"), ("(A)", "A"), ("'B'", "B"), ("[C].", "C"),
    ("B. Anseriformes", "B"), ("B) Anseriformes", "B"), ("(B) Anseriformes", "B"), ("C: Passeriformes", "C"),
    ("The answer is D", "D"), ("Answer: A", "A"), ("answer is c because", "C"),
    ("Anseriformes", "B"), ("  passeriformes ", "C"),
    ("Anseriformes are ducks", None),   # a capital A inside a word never counts
    ("Answering needs care", None), ("ABCD", None), ("E", None), ("", None), (None, None),
    ("I think Strigiformes", None),
    ("Answer: a parasite", None), ("The answer is a raven", None),  # the article is never option A
    ("Answer: a", "A"),
])
def test_parser_cases(reply: str | None, letter: str | None) -> None:
    assert parse_letter(reply, OPTIONS) == letter
