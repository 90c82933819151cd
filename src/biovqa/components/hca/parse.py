"""biovqa's strict parsers of hierarchical-VQA replies (the HCA paper gives no rule; the authors' code
takes the first A–D anywhere): the 4-way letter, the final answer of a chain-of-thought reply
(App. C.1.2), the Yes/No of a binary statement and the rule that turns a level's four statements
into one outcome (App. C.1.4)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from biovqa.components.hca.prompts import LETTERS
from biovqa.scoring import PARSE_MAX_CHARS, STATED_LETTER

_MARKUP = "*_`\"'[](){}<> \t\r\n"
_LEADING = re.compile(r"^\(?([A-D])(?:\)|\.|\s*\))(?:\s|$)|^\(([A-D])\)")
# "answer is X": the words in any case, the letter as :data:`~biovqa.scoring.STATED_LETTER` (never
# the article of "The answer is a raven")
_PHRASE = re.compile(r"^(?:the\s+)?answer\s+is\s*:?\s*\(?" + STATED_LETTER, re.IGNORECASE | re.MULTILINE)


def parse_choice(output: str | None, options: Sequence[str]) -> str | None:
    """The letter a reply chose, or None (biovqa's strict rule; the authors' code takes the first A–D anywhere):

    1. after stripping whitespace and markup, exactly one letter among the offered ones;
    2. else a leading ``(X)``, ``X.`` or ``X)`` or a leading "answer is X";
    3. else the whole reply equal (case/whitespace-insensitively) to exactly one option's text;
    4. else None — the level is wrong and stays in place on the path.
    Never the first A–D substring anywhere (the reference code's weakness: "B. Anseriformes" is B),
    and never an article: "The answer is a raven" is not A.
    Only the first :data:`~biovqa.scoring.PARSE_MAX_CHARS` characters are read.
    """
    if output is None:
        return None
    output = output[:PARSE_MAX_CHARS]
    offered = LETTERS[: len(options)]
    text = output.strip().strip(_MARKUP).rstrip(".").strip()
    if len(text) == 1 and text.upper() in offered:
        return text.upper()
    stripped = output.strip().lstrip("*_`\"' ")
    match = _LEADING.match(stripped) or _PHRASE.match(stripped)
    if match:
        letter = next(g for g in match.groups() if g).upper()
        return letter if letter in offered else None
    folded = " ".join(text.split()).casefold()
    hits = [i for i, option in enumerate(options) if " ".join(option.split()).casefold() == folded]
    return LETTERS[hits[0]] if len(hits) == 1 else None


# "answer is X", "answer: X", "answer is: X" anywhere in the reply (bold and brackets allowed)
_LAST_PHRASE = re.compile(r"answer(?:\s+is)?\s*:?\s*\**\s*\(?" + STATED_LETTER, re.IGNORECASE | re.MULTILINE)


def parse_cot_choice(output: str | None, options: Sequence[str]) -> str | None:
    """The final stated answer of a chain-of-thought reply (the paper gives no rule; biovqa's):
    whichever comes last of

    * the last "answer is X" / "Answer: X" / "answer is: X" phrase in the reply, and
    * the last non-empty line, when the strict parser (:func:`parse_choice`) reads a letter in it;

    None when neither gives one, or the final one is not among the offered letters. A letter
    inside a word never counts, nor an article ("…the answer is a raven.\nC" is C).
    The final answer closes the reasoning, so a reply over
    :data:`~biovqa.scoring.PARSE_MAX_CHARS` characters is read from its last that many.
    """
    if output is None:
        return None
    output = output[-PARSE_MAX_CHARS:]
    offered = LETTERS[: len(options)]
    stated: list[tuple[int, str]] = [(m.start(), m.group(1).upper()) for m in _LAST_PHRASE.finditer(output)]
    stripped = output.rstrip()
    last_line = stripped[stripped.rfind("\n") + 1:]
    if last_line.strip():
        letter = parse_choice(last_line, options)
        if letter is not None:
            stated.append((len(stripped) - len(last_line), letter))
    if not stated:
        return None
    letter = max(stated)[1]
    return letter if letter in offered else None


_YES_NO = re.compile(r"^(yes|no)\b", re.IGNORECASE)


def parse_yes_no(output: str | None) -> str | None:
    """"Yes", "No" or None: the reply's first word after stripping whitespace and markup
    (case-insensitive); anything else is unparseable (and so never a "Yes")."""
    if output is None:
        return None
    match = _YES_NO.match(output[:PARSE_MAX_CHARS].strip().lstrip(_MARKUP))
    return None if match is None else match.group(1).capitalize()


def binary_level_correct(answers: Sequence[str | None], gold: int) -> bool:
    """App. C.1.4's rule for one level asked as 4 statements: right only if exactly one statement got
    "Yes" and it is the true one (``gold`` = its index); zero or several "Yes" ⇒ wrong."""
    yes = [i for i, answer in enumerate(answers) if answer == "Yes"]
    return yes == [gold]


__all__ = ["binary_level_correct", "parse_choice", "parse_cot_choice", "parse_yes_no"]
