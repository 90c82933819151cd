"""biovqa's strict letter parser of BAGEL replies (the BAGEL paper fixes only the output format,
"exactly one capital letter", its Appendix A.1.2)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from biovqa.scoring import PARSE_MAX_CHARS, STATED_LETTER

_MARKUP = "*_`\"'“”‘’[](){}<> \t\r\n"
_TOKEN = re.compile(r"\(?([A-D])[\).:]?$")
# the words in any case, the letter as STATED_LETTER: "Answer: a parasite" is not A
_PHRASE = re.compile(r"\banswer(?:\s+is|\s*:)\s*\(?" + STATED_LETTER, re.IGNORECASE | re.MULTILINE)


def _strip(text: str) -> str:
    previous = None
    while previous != text:
        previous = text
        text = text.strip(_MARKUP)
        text = text.rstrip(".)").strip(_MARKUP)
    return text


def parse_letter(output: str | None, options: Sequence[str]) -> str | None:
    """The letter a reply chose, or None when unparseable (biovqa's rule; the prompt asks for one capital letter):

    1. strip whitespace and surrounding markup (``*``, quotes, brackets, trailing ``.``/``)``);
    2. exactly one of A–D (any case) → that letter;
    3. else the first standalone token ``(?X[).:]?`` (capital A–D, followed by whitespace or the
       end) or the phrase "answer is X" / "Answer: X", whichever comes first;
    4. else the whole reply equal (case and whitespace-insensitively) to exactly one option's text;
    5. else None. A capital letter inside a word (the "A" of "Anseriformes") never counts, nor an
       article after the phrase ("The answer is a raven", "Answer: a parasite").
    Only the first :data:`~biovqa.scoring.PARSE_MAX_CHARS` characters are read.
    """
    if output is None:
        return None
    text = _strip(output[:PARSE_MAX_CHARS])
    if len(text) == 1 and text.upper() in "ABCD":
        return text.upper()
    found: list[tuple[int, str]] = []
    for match in re.finditer(r"\S+", text):
        token = _TOKEN.match(match.group())
        if token:
            found.append((match.start(), token.group(1)))
            break
    phrase = _PHRASE.search(text)
    if phrase:
        found.append((phrase.start(), phrase.group(1).upper()))
    if found:
        return min(found)[1]
    folded = " ".join(text.split()).casefold()
    matches = [i for i, option in enumerate(options) if " ".join(option.split()).casefold() == folded]
    if len(matches) == 1:
        return "ABCD"[matches[0]]
    return None


__all__ = ["parse_letter"]
