"""The C4 prompt (K.4, verbatim) and the yes/no parser's rules, each its parse status (appendix H.1)."""

from __future__ import annotations

import pytest

from biovqa.components.c4.parse import parse_reply
from biovqa.components.c4.prompts import C4_PROMPT

PAPER_PROMPT = """This image shows two images placed side by side. Is the main subject in the left image the very same individual animal as the main subject in the right image?
- The image shows two photographs placed side by side.
- Each photograph may contain more than one animal - consider only the main subject in the foreground.
- Judge only from what is visible in the two photographs.
- Answer with one word: Yes or No. Do not explain."""


def test_prompt_is_verbatim() -> None:
    assert C4_PROMPT == PAPER_PROMPT


@pytest.mark.parametrize(("reply", "answer", "tier"), [
    ("Yes", "yes", "strict"), ("no", "no", "strict"), ("**Yes.**", "yes", "strict"), ('"No"', "no", "strict"),
    ("  YES!  ", "yes", "strict"),
    ("Yes, they are the same individual.", "yes", "loose"), ("No, they are not the same", "no", "loose"),
    ("I think no", "no", "loose"),
    ("I'm not sure", None, "refusal"), ("I cannot determine this", None, "refusal"),
    ("It is not possible to tell. No.", None, "refusal"),
    ("Yes or no: yes", None, "unparsed"),  # both words, echo guard blocks the prefix tier
    ("yes no", "yes", "prefix"),
    ("They are different individuals.", "no", "negated"), ("Not the same animal", "no", "negated"),
    ("The same individual", "yes", "negated"),
    ("Maybe", None, "unparsed"), ("", None, "unparsed"), (None, None, "missing"),
    ("nope", None, "unparsed"), ("yesterday", None, "unparsed"),
])
def test_parse_status(reply: str | None, answer: str | None, tier: str) -> None:
    assert parse_reply(reply) == (answer, tier)
