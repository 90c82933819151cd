"""C3 reply parsers: the acceptance rules of the paper's Table 14 ("Parse quality"), read
literally, with word boundaries (a digit or a word glued to letters is part of another word: ``5th``,
``x1``, ``upon``, ``upright`` name no count, coordinate or direction). Every parser reads at most
:data:`MAX_REPLY_CHARS` characters and uses only linear-time scans (no nested quantifiers), so a
pathological reply costs at most a few milliseconds.

Each parser returns the recovered answer (``None`` = unparsed, "rejected" in Table 14's words):

* :func:`parse_integer` — counting, "open integer": the first integer written in digits (thousands
  commas allowed); a reply without one is rejected ("There are many beetles").
* :func:`parse_centimetres` — absolute distance, "open number in centimetres": the first number;
  ``mm`` after it divides by 10, ``m`` rejects it, ``cm`` or anything else reads as centimetres.
* :func:`parse_box` — localization, "four integers": the first ``[…]``/``(…)`` group holding
  exactly four numbers, else the first four numbers; decimals and signs are kept, since a model
  writing [0, 1] coordinates writes fractions (Table 43's n01 rows). The convention is detected
  per model at scoring (:mod:`.score`).
* :func:`parse_letter` — relative counting / distance, "non-lettered options": ``Image X`` /
  ``Beetle X`` (the task's noun), else a reply that is a single letter A–D (optionally in
  parentheses or followed by a period); a colour word alone names no specimen.
* :func:`parse_direction` — relative position, 8 candidates: ``top-right`` / ``top right`` /
  ``upper right`` / ``above right`` → ``top-right`` (likewise the other three compounds),
  ``above`` → ``top``, ``below`` → ``bottom``; compounds before simple words at each position, the
  earliest occurrence wins.
* :func:`parse_viewpoint` — viewpoint, 10 candidates: ``front-left`` / ``front left`` →
  ``frontleft`` (likewise back/right); compounds first; the earliest occurrence wins.
* :func:`parse_code` — OCR, "code string": ``A`` + 11 digits after removing spaces/hyphens, else
  the first alphanumeric token of ≥ 8 characters holding a digit (a code-like string; upper-cased).

Table 14 does not accept more than that; what the paper does not describe is an extension, off by
default and switched on per scoring run (C3 score options, recorded in the summary):
``number_words`` (counting: ``seven``, ``twenty-one``, ``a hundred and five``, read only when the
reply holds no integer in digits), ``unit_words`` (absolute distance: ``centimetres``,
``millimetres`` ÷ 10, ``metres`` rejected, in both spellings), ``direction_synonyms`` (relative
position: ``up``/``down``, ``upper``/``lower`` alone, ``above and to the right``, compass words and
``NE``/``NW``/``SE``/``SW``) and ``viewpoint_synonyms`` (viewpoint: ``rear`` → back, ``top`` → up,
``bottom`` → down).
"""

from __future__ import annotations

import re

from biovqa.components.c3.prompts import DIRECTIONS, VIEWPOINTS
from biovqa.scoring import PARSE_MAX_CHARS

MAX_REPLY_CHARS = PARSE_MAX_CHARS

# ----------------------------------------------------------------------------- counting

#: an integer in digits as a whole word; a thousands group only where every group has 3 digits
_INTEGER = re.compile(r"\b\d{1,3}(?:,\d{3})+\b|\b\d+\b")
_SMALL = {"zero": 0, "no": 0, "none": 0, "one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5,
          "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
          "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1000}
#: words that may *start* a number (a/an only count before a scale word, e.g. "a hundred")
_STARTERS = (set(_SMALL) - {"a", "an", "no", "none"}) | set(_TENS)
#: whole words only: a word glued to letters or digits ("someone", "one2") is no number word
_WORD = re.compile(r"(?<![^\W_])[a-z]+(?![^\W_])")


def _clip(reply: str | None) -> str:
    return "" if reply is None else reply[:MAX_REPLY_CHARS]


def parse_integer(reply: str | None, *, number_words: bool = False) -> int | None:
    """The first integer in digits; with ``number_words``, a reply without one may spell it."""
    text = _clip(reply)
    match = _INTEGER.search(text)
    if match is not None:
        return int(match.group().replace(",", ""))
    if not number_words:
        return None
    tokens = _WORD.findall(text.lower().replace("-", " "))
    for k, token in enumerate(tokens):
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


# ----------------------------------------------------------------------------- numbers, boxes

#: a number not glued to a letter before it (``x1``, ``A0…`` name things; ``0.87cm`` is a number)
_NUMBER = re.compile(r"(?<![A-Za-z_])(?:\d+(?:\.\d+)?|\.\d+)")
_SIGNED = re.compile(r"(?<![A-Za-z_])-?(?:\d+(?:\.\d+)?|\.\d+)")
_UNIT = re.compile(r"\s*(cm|mm|m)\b")
_UNIT_WORDS = re.compile(r"\s*(cm|mm|m|centimet(?:er|re)s?|millimet(?:er|re)s?|met(?:er|re)s?)\b")
_GROUP = re.compile(r"[\[(]([^\[\]()]{0,400})[\])]")


def parse_centimetres(reply: str | None, *, unit_words: bool = False) -> float | None:
    """The first number in centimetres: ``mm`` after it ÷ 10, ``m`` after it → rejected, else cm;
    with ``unit_words`` the spelled-out units count too (``12 millimetres`` → 1.2)."""
    text = _clip(reply).lower()
    match = _NUMBER.search(text)
    if match is None:
        return None
    value = float(match.group())
    unit = (_UNIT_WORDS if unit_words else _UNIT).match(text, match.end())
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


# ----------------------------------------------------------------------------- named options

_LETTER_ONLY = re.compile(r"^\s*[(\[]?\s*([abcd])\s*[)\]]?\s*[.:]?\s*$")


def parse_letter(reply: str | None, noun: str) -> str | None:
    """``noun`` is ``image`` (relative counting) or ``beetle`` (relative distance)."""
    text = _clip(reply).lower()
    match = re.search(rf"\b{noun}\s*([abcd])\b", text)
    if match:
        return match.group(1).upper()
    match = _LETTER_ONLY.match(text)
    return match.group(1).upper() if match else None


_SEP = r"[\s_-]*"
_AND_TO_THE = r"[\s_-]+(?:and[\s_-]+)?(?:to[\s_-]+the[\s_-]+)?"


def _corners(top: str, bottom: str, joiner: str, *, compass: bool = False) -> tuple[tuple[str, str], ...]:
    """The rules of the four corners (top-right, top-left, bottom-right, bottom-left): one of the
    ``top`` (``bottom``) words, ``joiner``, the side; ``compass`` adds north-east and ne, …"""
    rules = []
    for vertical, words, pole in (("top", top, "north"), ("bottom", bottom, "south")):
        for side, meridian in (("right", "east"), ("left", "west")):
            pattern = rf"(?:{words}){joiner}{side}"
            if compass:
                pattern += rf"|{pole}{_SEP}{meridian}|{pole[0]}{meridian[0]}"
            rules.append((pattern, f"{vertical}-{side}"))
    return tuple(rules)


#: (pattern, direction), compounds first; each pattern is matched as whole words
_DIRECTIONS = (
    *_corners("top|upper|above", "bottom|lower|below", _SEP),
    (r"top|above", "top"),
    (r"bottom|below", "bottom"),
    (r"right", "right"),
    (r"left", "left"),
)
_DIRECTION_SYNONYMS = (
    *_corners("top|upper|up|above", "bottom|lower|down|below", _AND_TO_THE, compass=True),
    *_DIRECTIONS[:4],
    (r"top|above|upper|north|up", "top"),
    (r"bottom|below|lower|south|down", "bottom"),
    (r"right|east", "right"),
    (r"left|west", "left"),
)


def _alternation(rules: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    return re.compile("|".join(rf"(?P<d{k}>\b(?:{p})\b)" for k, (p, _) in enumerate(rules)))


_DIRECTION_RE = _alternation(_DIRECTIONS)
_DIRECTION_SYNONYMS_RE = _alternation(_DIRECTION_SYNONYMS)


def parse_direction(reply: str | None, *, synonyms: bool = False) -> str | None:
    """The earliest direction named (compounds are tried before simple words at each position);
    ``synonyms`` adds up/down, upper/lower alone, "above and to the right" and compass words."""
    rules, pattern = (_DIRECTION_SYNONYMS, _DIRECTION_SYNONYMS_RE) if synonyms else (_DIRECTIONS, _DIRECTION_RE)
    match = pattern.search(_clip(reply).lower())
    if match is None:
        return None
    direction = rules[int(match.lastgroup[1:])][1]  # type: ignore[index]
    assert direction in DIRECTIONS
    return direction


_VIEW_COMPOUND = re.compile(r"\b(front|back)[\s_-]*(left|right)\b")
_VIEW_SIMPLE = re.compile(r"\b(front|back|left|right|up|down)\b")
_VIEW_COMPOUND_SYNONYMS = re.compile(r"\b(front|back|rear)[\s_-]*(left|right)\b")
_VIEW_SIMPLE_SYNONYMS = re.compile(r"\b(front|back|rear|left|right|up|down|top|bottom)\b")
_VIEW_ALIASES = {"rear": "back", "top": "up", "bottom": "down"}


def parse_viewpoint(reply: str | None, *, synonyms: bool = False) -> str | None:
    """The earliest of the ten labels named (compounds first); ``synonyms`` reads rear as back,
    top as up and bottom as down."""
    text = _clip(reply).lower()
    compound = (_VIEW_COMPOUND_SYNONYMS if synonyms else _VIEW_COMPOUND).search(text)
    simple = (_VIEW_SIMPLE_SYNONYMS if synonyms else _VIEW_SIMPLE).search(text)
    if compound is not None and (simple is None or compound.start() <= simple.start()):
        label = _VIEW_ALIASES.get(compound.group(1), compound.group(1)) + compound.group(2)
    elif simple is not None:
        label = _VIEW_ALIASES.get(simple.group(1), simple.group(1))
    else:
        return None
    return label if label in VIEWPOINTS else None


_CODE = re.compile(r"A\d{11}")
_ALNUM = re.compile(r"[A-Za-z0-9]{8,}")


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
