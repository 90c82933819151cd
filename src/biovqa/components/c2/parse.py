"""The C2 parser: five steps shared by the graded (cags) and the exact-match evaluator
(paper App. K.5; paper K.5), so both partition the items identically.

1. normalize (paper App. K.5, :func:`biovqa.text.normalize_c2`);
2. detect the format: the literal ``Options:`` in the question → multiple choice, with an ordered
   letter → option-text map; otherwise open-ended;
3. parse the gold (``(A) text`` or a bare value) to an option;
4. resolve the reply: (a) strip scaffolding, keep the first line; (b) letter markers — the first
   one within the item's option range counts, so a pronoun "I" before "(B)" is skipped;
   (c) verbatim option text (longest option first); (d) reconcile — on disagreement record a
   *mismatch* and take the letter (or the text with ``prefer_text``); (e) fuzzy match at
   ``difflib`` ratio ≥ 0.86; (f) otherwise a parse failure (score 0);
5. route to a family by the template phrases.

Resolution statuses: ``parsed`` (letter and/or text agree, or only one present), ``mismatch``
(letter and text disagree), ``fuzzy`` (step e), ``failed`` (step f or an empty reply); the scorer
adds ``missing`` for items without a reply.

The scalar functions here are the reference; :mod:`biovqa.components.c2.cags` runs them once per
distinct reply and resolves the common cases for all items with array operations.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.scoring import PARSE_MAX_CHARS
from biovqa.text import encode_strings, normalize_c2

FUZZY_THRESHOLD = 0.86
OPTIONS_TOKEN = "Options:"
LETTERS = "ABCDEFGHIJ"
#: [DEFAULT] option regex on the question text (paper App. K.5 step 2).
OPTION_RE = re.compile(r"\(([A-Z])\)\s*(.*?)(?=,\s*\([A-Z]\)|$)")

PARSED, MISMATCH, FUZZY, FAILED, MISSING = "parsed", "mismatch", "fuzzy", "failed", "missing"
PARSE_STATUSES: tuple[str, ...] = (PARSED, MISMATCH, FUZZY, FAILED, MISSING)
#: Statuses under which the parser recovered an answer (the parse rate's numerator).
RECOVERED = frozenset({PARSED, MISMATCH, FUZZY})

SIDE_LABELS = ("left", "right", "both", "none")

#: Family routing phrases in priority order (step 5; the naming phrases are [DEFAULT]).
ROUTES: tuple[tuple[str, str], ...] = (
    ("marked with the", "marker_localization"),
    ("most prominently visible", "attr_group_value"),
    ("are visible in this image", "visibility"),
    ("what type of bird", "category_mcq"),
    ("common name of the bird", "open_common_name"),
    ("scientific name of the bird", "open_scientific_name"),
    ("genus of the bird", "open_genus"),
    ("what kind of", "open_kind_of"),
)

# Step 4a [DEFAULT]: markdown emphasis/code marks and leading bullets are dropped, then the
# conversational openers below, repeatedly ("Sure, the answer is: (B) Blue").
_MARKDOWN_RE = re.compile(r"\*\*|__|`+")
_BULLET_RE = re.compile(r"^\s*(?:[#>]+|[-*•]\s)\s*")
_SCAFFOLD_RE = re.compile(
    r"\s*(?:final\s+answer\s*:?|the\s+(?:correct\s+|final\s+)?answer\s+is\s*:?|answer\s*:|"
    r"sure\s*[,!.:]|sure\b|option\s*(?=\(?[a-j]\b)|option\s*:)\s*",
    re.IGNORECASE,
)
#: Replies are parsed from their first MAX_PARSE_CHARS characters: the one cap of every parser
#: (:data:`biovqa.scoring.PARSE_MAX_CHARS`), far beyond any answer under the C2 token budget
#: (48). The raw reply is kept as it is; :func:`reply_truncated` says whether the cap applied.
MAX_PARSE_CHARS = PARSE_MAX_CHARS
# Step 4b [DEFAULT]: a letter at the start — "(B)", "B)", "B.", "B:", "B" alone, or "B " + text
# (a lower-case "a " is read as the article, not a letter) — or "(B)" anywhere.
_LEADING_LETTER_RE = re.compile(r"^(\()?([A-Ja-j])(\))?(?=[\s.:)]|$)")
_ANY_LETTER_RE = re.compile(r"\(([A-Ja-j])\)")


@dataclass(frozen=True, slots=True)
class ReplyParts:
    """A reply after step 4a–b: the normalized first answer line, the first letter marker it
    holds (0-based, -1 if none) with the normalized text left once that marker is removed, and
    the first marker of each letter in reading order as (letter, remainder) pairs. Which marker counts
    depends on the item: only a letter within its option range (:meth:`for_options`), so the
    pronoun in "I think the answer is (B)" is skipped for a five-option item."""

    text: str
    letter: int
    remainder: str
    markers: tuple[tuple[int, str], ...] = ()

    def for_options(self, n_options: int) -> tuple[int, str]:
        """(letter, remainder) of the first marker naming one of ``n_options`` options; (-1, the
        whole normalized line) when none does."""
        for letter, remainder in self.markers:
            if 0 <= letter < n_options:
                return letter, remainder
        return -1, self.text.lstrip(":- ").strip()


EMPTY_REPLY = ReplyParts(text="", letter=-1, remainder="")


def strip_scaffolding(line: str) -> str:
    """Step 4a on one line: drop markdown marks, bullets and conversational openers."""
    out = _BULLET_RE.sub("", _MARKDOWN_RE.sub("", line)).strip()
    # the openers are matched in place, advancing a position (one pass: linear in the line)
    position = 0
    while (match := _SCAFFOLD_RE.match(out, position)) is not None and match.end() > position:
        position = match.end()
    return out[position:].strip() if position else out


def reply_truncated(reply: str | None) -> bool:
    """True when only the first :data:`MAX_PARSE_CHARS` characters of ``reply`` are parsed."""
    return reply is not None and len(reply) > MAX_PARSE_CHARS


def count_truncated(responses: pa.Array | pa.ChunkedArray) -> int:
    """How many replies of a response column (plain or dictionary-encoded) are longer than
    :data:`MAX_PARSE_CHARS`, i.e. were parsed from their opening only (the summary's
    ``format.n_replies_truncated``)."""
    codes, dictionary = encode_strings(responses)
    if not len(dictionary):
        return 0
    long = np.asarray(pc.fill_null(pc.greater(pc.utf8_length(dictionary), MAX_PARSE_CHARS), False)
                      .to_numpy(zero_copy_only=False), dtype=bool)
    return int(long[codes[codes >= 0]].sum())


def _parse_window(reply: str) -> str:
    return reply[:MAX_PARSE_CHARS]


def first_answer_line(reply: str | None) -> str:
    """Step 4a: the first line that still holds text once scaffolding is stripped."""
    if not reply:
        return ""
    for line in _parse_window(reply).splitlines():
        cleaned = strip_scaffolding(line)
        if normalize_c2(cleaned):
            return cleaned
    return ""


def _find_letters(line: str) -> list[tuple[int, int, int]]:
    """Step 4b: the letter markers as (letter index, span start, span end), in reading order:
    the leading marker ("(B)", "B)", "B.", "B:", "B" alone or "B " + text; a lower-case "a " is
    the article), then each "(B)" further on — the first occurrence of each letter only (at most
    ten markers, since :meth:`ReplyParts.for_options` takes the first within range)."""
    found: list[tuple[int, int, int]] = []
    match = _LEADING_LETTER_RE.match(line)
    if match:
        opened, letter, closed = match.group(1), match.group(2), match.group(3)
        rest = line[match.end():]
        article = (not opened and not closed and letter == "a" and rest[:1].isspace()
                   and bool(rest.strip()))
        if not article:
            found.append((LETTERS.index(letter.upper()), match.start(), match.end()))
    seen = {letter for letter, _, _ in found}
    for match in _ANY_LETTER_RE.finditer(line):
        if found and match.start() < found[0][2]:
            continue  # the leading "(B)" itself
        letter_index = LETTERS.index(match.group(1).upper())
        if letter_index in seen:
            continue  # a later repeat of a letter is never the first in any option range
        seen.add(letter_index)
        found.append((letter_index, match.start(), match.end()))
    return found


def _find_letter(line: str) -> tuple[int, int, int]:
    """The first letter marker of :func:`_find_letters`, or (-1, 0, 0)."""
    found = _find_letters(line)
    return found[0] if found else (-1, 0, 0)


def _remainder(line: str, start: int, end: int) -> str:
    text = normalize_c2(line[:start] + " " + line[end:])
    # a leftover "." or ":" after the marker ("B. blue") is stripped by normalization; a leading
    # ":" is not, so drop it here
    return text.lstrip(":- ").strip()


def analyze_reply(reply: str | None) -> ReplyParts:
    """Steps 4a–4b of one reply (independent of the item, so run once per distinct reply)."""
    line = first_answer_line(reply)
    if not line:
        return EMPTY_REPLY
    markers = tuple((letter, _remainder(line, start, end)) for letter, start, end in _find_letters(line))
    text = normalize_c2(line)
    letter, remainder = markers[0] if markers else (-1, text.lstrip(":- ").strip())
    return ReplyParts(text=text, letter=letter, remainder=remainder, markers=markers)


def contains_phrase(text: str, phrase: str) -> bool:
    """True when the normalized ``phrase`` occurs in the normalized ``text`` as a run of whole
    words [DEFAULT: word-boundary containment, so "red" is not found in "reddish"]."""
    return bool(phrase) and f" {phrase} " in f" {text} "


def word_ngrams(text: str, longest: int) -> list[str]:
    """Every run of 1..``longest`` consecutive words of a normalized text: the phrases
    :func:`contains_phrase` can find in it."""
    words = text.split()
    return [" ".join(words[i:i + n]) for n in range(1, longest + 1) for i in range(len(words) - n + 1)]


def find_option_text(parts: ReplyParts, options: Sequence[str]) -> int:
    """Step 4c: index of the option whose normalized text equals the remainder or, failing
    that, the longest option contained in the reply (ties: the earlier letter); -1 if none."""
    for index, option in enumerate(options):
        if option and option == parts.remainder:
            return index
    best, best_len = -1, 0
    for index, option in enumerate(options):
        if len(option) > best_len and contains_phrase(parts.text, option):
            best, best_len = index, len(option)
    return best


def bounded_ratio(text: str, option: str, threshold: float = FUZZY_THRESHOLD) -> float:
    """``difflib.SequenceMatcher(None, text, option).ratio()``, or -1 when its length or
    character-count upper bound (difflib's real_quick_ratio / quick_ratio) is below threshold."""
    total = len(text) + len(option)
    if not total or 2.0 * min(len(text), len(option)) / total < threshold:
        return -1.0
    if 2.0 * sum((_char_counts(text) & _char_counts(option)).values()) / total < threshold:
        return -1.0
    return sequence_ratio(text, option)


#: difflib turns on its "popular element" heuristic (autojunk) for second sequences this long;
#: :func:`sequence_ratio` leaves those to difflib itself.
_AUTOJUNK_LENGTH = 200


def sequence_ratio(a: str, b: str) -> float:
    """``difflib.SequenceMatcher(None, a, b).ratio()``, bit for bit, for the short strings the
    kernels compare: the same longest-match recursion (same tie-breaking: the earliest match in
    ``a``, then in ``b``) summed without difflib's per-call objects, and the position index of
    ``b`` built once per distinct ``b``. This is the hot loop of open-item scoring and the fuzzy
    option fallback (one call per distinct pair, tens of thousands on a full benchmark)."""
    total = len(a) + len(b)
    if not total:
        return 1.0
    if len(b) >= _AUTOJUNK_LENGTH:
        return difflib.SequenceMatcher(None, a, b).ratio()
    positions = _positions(b)
    matches = 0
    pending = [(0, len(a), 0, len(b))]
    while pending:
        alo, ahi, blo, bhi = pending.pop()
        best_i, best_j, best_size = alo, blo, 0
        run_ending_at: dict[int, int] = {}
        for i in range(alo, ahi):
            runs: dict[int, int] = {}
            for j in positions.get(a[i], ()):
                if j < blo:
                    continue
                if j >= bhi:
                    break
                k = runs[j] = run_ending_at.get(j - 1, 0) + 1
                if k > best_size:
                    best_i, best_j, best_size = i - k + 1, j - k + 1, k
            run_ending_at = runs
        if best_size:
            matches += best_size
            if alo < best_i and blo < best_j:
                pending.append((alo, best_i, blo, best_j))
            if best_i + best_size < ahi and best_j + best_size < bhi:
                pending.append((best_i + best_size, ahi, best_j + best_size, bhi))
    return 2.0 * matches / total


@lru_cache(maxsize=1 << 14)
def _positions(text: str) -> dict[str, tuple[int, ...]]:
    found: dict[str, list[int]] = {}
    for j, char in enumerate(text):
        found.setdefault(char, []).append(j)
    return {char: tuple(js) for char, js in found.items()}


@lru_cache(maxsize=1 << 16)
def _char_counts(text: str) -> Counter[str]:
    return Counter(text)


def fuzzy_option(text: str, options: Sequence[str], threshold: float = FUZZY_THRESHOLD) -> int:
    """Step 4e: the option with the highest ``difflib`` ratio to the reply if ≥ threshold
    (ties: the earlier letter)."""
    best, best_ratio = -1, threshold
    for index, option in enumerate(options):
        ratio = bounded_ratio(text, option, threshold)
        if ratio > best_ratio or (ratio == best_ratio and best < 0):
            best, best_ratio = index, ratio
    return best


def resolve_parts(parts: ReplyParts, options: Sequence[str], *, prefer_text: bool = False
                  ) -> tuple[int, str]:
    """Steps 4c–4f for an analyzed reply against normalized option texts in letter order.
    Returns (option index or -1, status)."""
    if not parts.text:
        return -1, FAILED
    letter, remainder = parts.for_options(len(options))
    text = find_option_text(ReplyParts(parts.text, letter, remainder), options)
    if letter >= 0 and text >= 0:
        if letter == text:
            return letter, PARSED
        return (text if prefer_text else letter), MISMATCH
    if letter >= 0:
        return letter, PARSED
    if text >= 0:
        return text, PARSED
    fuzzy = fuzzy_option(parts.text, options)
    if fuzzy >= 0:
        return fuzzy, FUZZY
    return -1, FAILED


def resolve_reply(reply: str | None, options: Sequence[str], *, prefer_text: bool = False
                  ) -> tuple[int, str]:
    """Step 4 for one MCQ reply; ``options`` are the option texts in letter order (normalized
    here). Returns (0-based option index or -1, status)."""
    normalized = [normalize_c2(o) for o in options]
    return resolve_parts(analyze_reply(reply), normalized, prefer_text=prefer_text)


def clean_open_reply(reply: str | None) -> str:
    """Open-ended items: the step-4a-cleaned, normalized first line is the prediction."""
    return normalize_c2(first_answer_line(reply))


def has_options(question: str) -> bool:
    """Step 2: the literal ``Options:`` token routes to the multiple-choice branch."""
    return OPTIONS_TOKEN in question


def parse_options(question: str) -> list[str] | None:
    """Step 2: the option texts in letter order from ``Options: (A) v1, (B) v2, …``; None for an
    open question."""
    if not has_options(question):
        return None
    tail = question.split(OPTIONS_TOKEN, 1)[1].strip()
    return [match.group(2).strip() for match in OPTION_RE.finditer(tail)]


def parse_gold(answer: str, options: Sequence[str]) -> int:
    """Step 3: the gold as ``(A) text`` or a bare value → its 0-based option index (-1 if absent)."""
    normalized = [normalize_c2(o) for o in options]
    text = (answer or "").strip()
    match = re.match(r"^\(([A-J])\)\s*(.*)$", text)
    if match:
        index = LETTERS.index(match.group(1))
        if index < len(options) and (not match.group(2) or
                                     normalize_c2(match.group(2)) == normalized[index]):
            return index
        text = match.group(2)
    key = normalize_c2(text)
    return normalized.index(key) if key in normalized else -1


def question_stem(question: str) -> str:
    """The question without its ``Options:`` list (the template part that routing reads and the
    floor groups by), trailing space removed."""
    return question.split(OPTIONS_TOKEN, 1)[0].rstrip()


def route_family(question: str, options: Sequence[str] | None) -> str | None:
    """Step 5: the family named by the template phrases of the question stem (the text before
    ``Options:``) in priority order; None if none matches."""
    position = _route_index(question)
    if position < len(ROUTES):
        family = ROUTES[position][1]
        if family == "visibility":
            labels = sorted(normalize_c2(o) for o in (options or ()))
            return "visibility_side" if labels == sorted(SIDE_LABELS) else "visibility_partset"
        return family
    if options:
        return "attr_bare_value"
    return None


#: Every routing phrase of the Table 69 templates ends within the first 70 characters
#: ("…parts of the bird are visible in this image?" is the longest reach, 67).
ROUTE_PREFIX_CHARS = 70


def route_families(questions: pa.Array | pa.ChunkedArray, is_side_option_set: np.ndarray,
                   has_option_list: np.ndarray) -> np.ndarray:
    """Vectorised :func:`route_family`: an object array of family names (None where no route).
    ``is_side_option_set`` flags rows whose options are exactly Left/Right/Both/None."""
    return route_and_detect(questions, is_side_option_set, has_option_list)[0]


#: What :func:`route_codes` codes stand for: the ROUTES families, the three families decided by the
#: options (side set / part set / bare value), and None (no route).
ROUTE_TARGETS: tuple[str | None, ...] = (
    *(family for _, family in ROUTES), "visibility_side", "visibility_partset", "attr_bare_value", None)


def route_and_detect(questions: pa.Array | pa.ChunkedArray, is_side_option_set: np.ndarray,
                     has_option_list: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Steps 2 and 5 over a question column: (family per row, ``Options:`` present per row)."""
    codes, has_token = route_codes(questions, is_side_option_set, has_option_list)
    return np.array(ROUTE_TARGETS, dtype=object)[codes], has_token


def route_codes(questions: pa.Array | pa.ChunkedArray, is_side_option_set: np.ndarray,
                has_option_list: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`route_and_detect` as integer codes into :data:`ROUTE_TARGETS` (so a caller can
    check a million rows without comparing strings). Phrases are looked up once per distinct
    question opening (the first ROUTE_PREFIX_CHARS bytes, cut at ``Options:``); stems longer
    than that are read in full."""
    array = questions.combine_chunks() if isinstance(questions, pa.ChunkedArray) else questions
    token_at = pc.find_substring(array, OPTIONS_TOKEN).to_numpy(zero_copy_only=False)
    token_at = np.asarray(np.nan_to_num(np.asarray(token_at, dtype=float), nan=-1), dtype=np.int64)
    has_token = token_at >= 0
    raw = array.cast(pa.binary())
    stem_bytes = np.where(has_token, token_at,
                          np.asarray(pc.fill_null(pc.binary_length(raw), 0).to_numpy(zero_copy_only=False)))
    encoded = pc.dictionary_encode(pc.binary_slice(raw, 0, ROUTE_PREFIX_CHARS))
    index = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    n_routes = len(ROUTES)
    no_route = len(ROUTE_TARGETS) - 1
    openings = [b.decode("utf-8", errors="ignore") if b is not None else None
                for b in encoded.dictionary.to_pylist()]
    route_of = np.array([_route_index(q) for q in openings] + [n_routes], dtype=np.int64)
    route = route_of[index]  # a null question (index -1) takes the trailing "no route"
    for row in np.flatnonzero((stem_bytes > ROUTE_PREFIX_CHARS) & (route == n_routes)):
        route[row] = _route_index(array[int(row)].as_py())
    visibility = route == ROUTE_TARGETS.index("visibility")
    codes = np.where(route == n_routes, no_route, route)
    codes[visibility & is_side_option_set] = ROUTE_TARGETS.index("visibility_side")
    codes[visibility & ~is_side_option_set] = ROUTE_TARGETS.index("visibility_partset")
    codes[(route == n_routes) & has_option_list] = ROUTE_TARGETS.index("attr_bare_value")
    return codes, has_token


def _route_index(question: str | None) -> int:
    """Position in ROUTES of the first phrase found in the question stem (len(ROUTES) if none)."""
    lowered = question_stem(question or "").lower()
    for position, (phrase, _family) in enumerate(ROUTES):
        if phrase in lowered:
            return position
    return len(ROUTES)
