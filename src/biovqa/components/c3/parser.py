"""C3 reply parsers (Table 14; prompts.md §6.4). Every parser reads at most
:data:`MAX_REPLY_CHARS` characters and uses only linear-time scans (no nested quantifiers), so a
pathological reply costs at most a few milliseconds.

Each parser returns the recovered answer (``None`` = unparsed):

* :func:`parse_integer` — first integer (thousands commas allowed) or number word (``eleven``,
  ``twenty-one``, ``a hundred and five``), whichever comes first;
* :func:`parse_centimetres` — first number; ``mm`` after it divides by 10, ``m`` (not cm/mm) →
  unparsed, ``cm`` or no unit → centimetres;
* :func:`parse_box` — the first ``[…]``/``(…)`` group with exactly four numbers, else the first
  four numbers; the convention (xywh, xyxy, yxyx × absolute, [0,1], [0,100], [0,1000]) is
  detected per model at scoring (:mod:`.score`);
* :func:`parse_letter` — ``image X`` / ``beetle X`` (the task's noun), else a reply that is a single
  letter A–D (optionally in parentheses or followed by a period);
* :func:`parse_direction` — one of the 8 directions (``upper right`` → ``top-right``, ``above`` →
  ``top``; compounds first; earliest occurrence wins);
* :func:`parse_viewpoint` — one of the 10 viewpoints (``front-left`` → ``frontleft``; compounds first);
* :func:`parse_code` — ``A`` + 11 digits after removing spaces/hyphens, else the first alphanumeric
  token of ≥ 8 characters holding a digit (upper-cased).
"""

from __future__ import annotations

import re

from biovqa.components.c3.tasks import DIRECTIONS, VIEWPOINTS
from biovqa.scoring import PARSE_MAX_CHARS

MAX_REPLY_CHARS = PARSE_MAX_CHARS

_SMALL = {"zero": 0, "no": 0, "none": 0, "one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5,
          "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
          "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1000}
#: words that may *start* a number (a/an/no only count before a scale word, e.g. "a hundred")
_STARTERS = (set(_SMALL) - {"a", "an", "no", "none"}) | set(_TENS)

_TOKEN = re.compile(r"\d{1,3}(?:,\d{3})+(?![\d,])|\d+|[a-z]+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?|\.\d+")
_UNIT = re.compile(r"\s*(cm|mm|m|centimet(?:er|re)s?|millimet(?:er|re)s?|met(?:er|re)s?)\b")
_GROUP = re.compile(r"[\[(]([^\[\]()]{0,400})[\])]")
_SIGNED = re.compile(r"-?\d+(?:\.\d+)?|-?\.\d+")
_CODE = re.compile(r"A\d{11}")
_ALNUM = re.compile(r"[A-Za-z0-9]{8,}")


def _clip(reply: str | None) -> str:
    return "" if reply is None else reply[:MAX_REPLY_CHARS]


def parse_integer(reply: str | None) -> int | None:
    text = _clip(reply).lower().replace("-", " ")
    tokens = _TOKEN.findall(text)
    for k, token in enumerate(tokens):
        if token[0].isdigit():
            return int(token.replace(",", ""))
        if token in _STARTERS or (token in ("a", "an") and k + 1 < len(tokens) and tokens[k + 1] in _SCALES):
            return _words_value(tokens, k)
    return None


def _words_value(tokens: list[str], start: int) -> int:
    total, current = 0, 0
    for token in tokens[start:start + 12]:
        if token in _SMALL:
            current += _SMALL[token]
        elif token in _TENS:
            current += _TENS[token]
        elif token in _SCALES:
            current = max(current, 1) * _SCALES[token]
            if token == "thousand":
                total, current = total + current, 0
        elif token == "and":
            continue
        else:
            break
    return total + current


def parse_centimetres(reply: str | None) -> float | None:
    text = _clip(reply).lower()
    match = _NUMBER.search(text)
    if match is None:
        return None
    value = float(match.group())
    unit = _UNIT.match(text, match.end())
    if unit is None:
        return value
    word = unit.group(1)
    if word == "mm" or word.startswith("milli"):
        return value / 10.0
    if word == "m" or word.startswith("met"):
        return None
    return value


def parse_box(reply: str | None) -> tuple[float, float, float, float] | None:
    text = _clip(reply)
    for group in _GROUP.finditer(text):
        numbers = _SIGNED.findall(group.group(1))
        if len(numbers) == 4:
            a, b, c, d = (float(v) for v in numbers)
            return a, b, c, d
    numbers = _SIGNED.findall(text)
    if len(numbers) >= 4:
        a, b, c, d = (float(v) for v in numbers[:4])
        return a, b, c, d
    return None


_LETTER_ONLY = re.compile(r"^\s*[(\[]?\s*([abcd])\s*[)\]]?\s*[.:]?\s*$")


def parse_letter(reply: str | None, noun: str) -> str | None:
    """``noun`` is ``image`` (relative counting) or ``beetle`` (relative distance)."""
    text = _clip(reply).lower()
    match = re.search(rf"\b{noun}\s*([abcd])\b", text)
    if match:
        return match.group(1).upper()
    match = _LETTER_ONLY.match(text)
    return match.group(1).upper() if match else None


_DIRECTION_SYNONYMS = (
    (r"(?:top|upper|up|above)[\s_-]*(?:and[\s_-]*)?(?:to[\s_-]*the[\s_-]*)?right|north[\s_-]*east|ne\b", "top-right"),
    (r"(?:top|upper|up|above)[\s_-]*(?:and[\s_-]*)?(?:to[\s_-]*the[\s_-]*)?left|north[\s_-]*west|nw\b", "top-left"),
    (r"(?:bottom|lower|down|below)[\s_-]*(?:and[\s_-]*)?(?:to[\s_-]*the[\s_-]*)?right|south[\s_-]*east|se\b",
     "bottom-right"),
    (r"(?:bottom|lower|down|below)[\s_-]*(?:and[\s_-]*)?(?:to[\s_-]*the[\s_-]*)?left|south[\s_-]*west|sw\b",
     "bottom-left"),
    (r"top|above|upper|north|up", "top"),
    (r"bottom|below|lower|south|down", "bottom"),
    (r"right|east", "right"),
    (r"left|west", "left"),
)
_DIRECTION_RE = re.compile("|".join(f"(?P<d{k}>\\b(?:{p}))" for k, (p, _) in enumerate(_DIRECTION_SYNONYMS)))


def parse_direction(reply: str | None) -> str | None:
    """The earliest direction named (compounds are tried before simple words at each position)."""
    match = _DIRECTION_RE.search(_clip(reply).lower())
    if match is None:
        return None
    k = int(match.lastgroup[1:])  # type: ignore[index]
    direction = _DIRECTION_SYNONYMS[k][1]
    assert direction in DIRECTIONS
    return direction


_VIEW_COMPOUND = re.compile(r"\b(front|back|rear)[\s_-]*(left|right)\b")
_VIEW_SIMPLE = re.compile(r"\b(front|back|rear|left|right|up|down|top|bottom)\b")
_VIEW_ALIASES = {"rear": "back", "top": "up", "bottom": "down"}


def parse_viewpoint(reply: str | None) -> str | None:
    text = _clip(reply).lower()
    compound = _VIEW_COMPOUND.search(text)
    simple = _VIEW_SIMPLE.search(text)
    if compound is not None and (simple is None or compound.start() <= simple.start()):
        label = _VIEW_ALIASES.get(compound.group(1), compound.group(1)) + compound.group(2)
    elif simple is not None:
        label = _VIEW_ALIASES.get(simple.group(1), simple.group(1))
    else:
        return None
    return label if label in VIEWPOINTS else None


def parse_code(reply: str | None) -> str | None:
    text = _clip(reply)
    squeezed = re.sub(r"[\s\-]", "", text)
    match = _CODE.search(squeezed.upper())
    if match:
        return match.group()
    for token in _ALNUM.finditer(text):
        if any(ch.isdigit() for ch in token.group()):
            return token.group().upper()
    return None


__all__ = ["MAX_REPLY_CHARS", "parse_box", "parse_centimetres", "parse_code", "parse_direction", "parse_integer",
           "parse_letter", "parse_viewpoint"]
