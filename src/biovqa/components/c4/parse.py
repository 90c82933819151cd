"""The C4 yes/no reply parser (paper appendix H.1).

Rules, tried in order; the one that resolved a reply is its parse status (the score table's
``parse_status`` column):

1. ``refusal`` — a refusal phrase (``i am not sure``, ``cannot determine``, …) → unparsed, checked
   first so that "not" never reads as No;
2. ``strict`` — after stripping markdown, quotes and trailing punctuation the reply is exactly
   ``yes`` or ``no`` (case-insensitive);
3. ``loose`` — exactly one of the two words occurs as an isolated token ("Yes, they are the same");
4. ``prefix`` — the reply starts with a ``yes``/``no`` token; never used when the reply contains
   ``yes or no`` (prompt-echo guard);
5. ``negated`` — ``not the same`` / ``different individual(s)`` → No, ``same individual`` → Yes;
6. otherwise ``unparsed``. An empty reply is ``unparsed``; an item without a reply is ``missing``
   (``failed`` when its request failed: the scorer sets both from the reply's status).
"""

from __future__ import annotations

import re

from biovqa.scoring import PARSE_MAX_CHARS

YES, NO = "yes", "no"
#: Every parse status, in the order the summary counts them.
PARSE_STATUSES: tuple[str, ...] = ("strict", "loose", "prefix", "negated", "refusal", "unparsed", "failed",
                                   "missing")
#: The statuses of a reply that gave an answer.
PARSED_STATUSES: frozenset[str] = frozenset({"strict", "loose", "prefix", "negated"})

REFUSALS: tuple[str, ...] = (
    "i am not sure", "i'm not sure", "im not sure", "cannot determine", "can't determine",
    "can't tell", "cannot tell", "unable to", "not possible to", "impossible to tell",
)
#: Characters dropped from the start / the end of a reply before the strict rule (with whitespace).
_LEAD_MARKS = "*_`\"'“”‘’>#"
_TRAIL_MARKS = "*_`\"'“”‘’.!?,;:"
#: Replies are parsed from their first MAX_PARSE_CHARS characters, the one cap of every parser
#: (:data:`biovqa.scoring.PARSE_MAX_CHARS`; the C4 budget is 8 new tokens); every step below
#: is a single linear scan.
MAX_PARSE_CHARS = PARSE_MAX_CHARS
_TOKENS = re.compile(r"[a-z]+")
_NEGATED_NO = re.compile(r"\bnot\s+the\s+(very\s+)?same\b|\bdifferent\s+(individual|animal)s?\b")
_NEGATED_YES = re.compile(r"\bsame\s+individual\b")


def _strip_marks(text: str) -> str:
    """Drop leading whitespace/markdown/quotes and trailing whitespace/quotes/punctuation."""
    start, end = 0, len(text)
    while start < end and (text[start].isspace() or text[start] in _LEAD_MARKS):
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] in _TRAIL_MARKS):
        end -= 1
    return text[start:end]


def parse_reply(reply: str | None) -> tuple[str | None, str]:
    """``(answer, parse status)``: answer ``"yes"``/``"no"``, or ``None`` (status ``refusal``/``unparsed``,
    ``missing`` for no reply)."""
    if reply is None:
        return None, "missing"
    text = reply[:MAX_PARSE_CHARS].strip().lower().replace("’", "'")
    if not text:
        return None, "unparsed"
    if any(phrase in text for phrase in REFUSALS):
        return None, "refusal"
    bare = _strip_marks(text)
    if bare in (YES, NO):
        return bare, "strict"
    tokens = _TOKENS.findall(text)
    has_yes, has_no = YES in tokens, NO in tokens
    if has_yes != has_no:
        return (YES if has_yes else NO), "loose"
    if "yes or no" not in text and tokens and tokens[0] in (YES, NO) and bare.startswith(tokens[0]):
        return tokens[0], "prefix"
    if _NEGATED_NO.search(text):
        return NO, "negated"
    if _NEGATED_YES.search(text):
        return YES, "negated"
    return None, "unparsed"


#: A reply that carries its decision variable (the MegaDescriptor specialist's): the thresholded
#: answer, then the cosine similarity it was decided from. It parses as Yes/No like any reply; when
#: every reply of a run has this form the scorer also computes the AUC of the similarity.
SIMILARITY_REPLY = re.compile(r"^(Yes|No) \(cosine similarity (-?\d+\.\d+)\)$")


def similarity_reply(said_yes: bool, similarity: float) -> str:
    """``"Yes (cosine similarity 0.734512)"``: a reply in the :data:`SIMILARITY_REPLY` form."""
    return f"{'Yes' if said_yes else 'No'} (cosine similarity {similarity:.6f})"


def reply_similarity(reply: str | None) -> float | None:
    """The similarity a :data:`SIMILARITY_REPLY` reply carries; None for any other reply."""
    match = SIMILARITY_REPLY.match(reply or "")
    return float(match.group(2)) if match else None


__all__ = ["PARSED_STATUSES", "PARSE_STATUSES", "SIMILARITY_REPLY", "parse_reply",
           "reply_similarity", "similarity_reply"]
