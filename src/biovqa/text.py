"""Text normalization shared by every stage (metrics.md §1).

Each normalizer has a scalar form (the reference, used for single strings) and a vectorised form
over Arrow arrays that gives the same result on every string; the tests pin their agreement.
"""

from __future__ import annotations

import re
import unicodedata

import pyarrow as pa
import pyarrow.compute as pc

# Words a reply may open with before the answer itself (metrics.md §1.1, step 4). Longer
# alternatives come first so that "answer is" wins over "answer".
_C1_PREFIX_WORDS = (
    "answer is",
    "answer",
    "it is",
    "this is",
    "its",
    "the",
    "an",
    "a",
    "kingdom",
    "phylum",
    "class",
    "order",
    "family",
    "genus",
    "species epithet",
    "species",
    "scientific name",
    "common name",
)
_C1_PREFIX = r"^(?:(?:" + "|".join(w.replace(" ", r"\s+") for w in _C1_PREFIX_WORDS) + r")(?:\s+is)?\s+)+"
_C1_PREFIX_RE = re.compile(_C1_PREFIX)
# Punctuation is *removed* (metrics.md §1.1 step 3; paper C.1 "removes punctuation", and the C2
# parser of K.5 likewise strips it): every mark is deleted, so "Red-tailed Hawk" and "Redtailed
# Hawk" compare equal and "Red tailed Hawk" does not (docs/c1-build.md, "Punctuation"). The one
# exception is the underscore, a word separator in model output ("Blue_Jay"), which becomes a
# space as in the C2 normalizer.
_APOSTROPHES = "'\u2019\u02bc`"
_APOSTROPHE_RE = re.compile("[" + re.escape(_APOSTROPHES) + "]")
_PUNCT_PY = re.compile(r"[^\w\s]")
_SPACE_RE = re.compile(r"\s+")
# Python's \s (str.isspace) spelled for RE2, whose \s is ASCII-only
_RE2_SPACE = r"\s\p{Z}\x{0b}\x{1c}-\x{1f}\x{85}"


def normalize_c1(text: str | None) -> str:
    """Normalize a C1 reply or gold name: fold case and diacritics, drop punctuation and
    leading boilerplate such as "The phylum is" (metrics.md §1.1).

    >>> normalize_c1("The phylum is Chordata.")
    'chordata'
    """
    if text is None:
        return ""
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(ch for ch in folded if not unicodedata.category(ch).startswith("M"))
    folded = folded.lower().replace("ß", "ss")
    folded = _APOSTROPHE_RE.sub("", folded)  # U+02BC is a letter to the regex engines
    folded = folded.replace("_", " ")
    folded = _PUNCT_PY.sub("", folded)
    folded = _SPACE_RE.sub(" ", folded).strip()
    return _C1_PREFIX_RE.sub("", folded, count=1).strip()


def normalize_c1_array(values: pa.Array | pa.ChunkedArray | list[str | None]) -> pa.Array:
    """Vectorised :func:`normalize_c1` over an Arrow string array (nulls become "")."""
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, pa.string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    arr = pc.fill_null(arr.cast(pa.string()), "")
    arr = pc.utf8_normalize(arr, form="NFKD")
    arr = pc.replace_substring_regex(arr, pattern=r"\p{M}", replacement="")
    arr = pc.utf8_lower(arr)
    arr = pc.replace_substring(arr, pattern="ß", replacement="ss")
    arr = pc.replace_substring_regex(arr, pattern="[" + re.escape(_APOSTROPHES) + "]", replacement="")
    arr = pc.replace_substring(arr, pattern="_", replacement=" ")
    arr = pc.replace_substring_regex(arr, pattern=r"[^\p{L}\p{N}\p{M}" + _RE2_SPACE + "]", replacement="")
    arr = pc.replace_substring_regex(arr, pattern="[" + _RE2_SPACE + "]+", replacement=" ")
    arr = pc.utf8_trim_whitespace(arr)
    arr = pc.replace_substring_regex(arr, pattern=_C1_PREFIX, replacement="", max_replacements=1)
    return pc.utf8_trim_whitespace(arr)


_C2_PUNCT_RE = re.compile(r"[^\w\s:\-()]|_")


def normalize_c2(text: str | None) -> str:
    """Step 1 of the C2 parser (metrics.md §1.2): lower-case, ``_`` to space, gray→grey, strip
    punctuation except ``: - ( )``, collapse whitespace.

    >>> normalize_c2("Blue_Jay.")
    'blue jay'
    """
    if text is None:
        return ""
    out = text.lower().replace("_", " ")
    out = re.sub(r"\bgray\b", "grey", out)
    out = _C2_PUNCT_RE.sub("", out)
    return _SPACE_RE.sub(" ", out).strip()
