"""Text normalization shared by every stage (paper App. C.1).

Each normalizer has a scalar form (the reference, used for single strings) and a vectorised form
over Arrow arrays that gives the same result on every string; the tests pin their agreement.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
import unicodedata

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.scoring import PARSE_MAX_CHARS

# Words a reply may open with before the answer itself (paper App. C.1, step 4). Longer
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
# Punctuation is *removed* (paper App. C.1 step 3; paper C.1 "removes punctuation", and the C2
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


#: Only the first C1_MAX_CHARS characters of a text are normalized [DEFAULT]: far beyond any
#: taxon name or C1 reply (15 new tokens), and a bound on the work of a hostile reply (NFKD
#: expands some characters 18-fold). Both forms below apply the same cut.
C1_MAX_CHARS = PARSE_MAX_CHARS


def normalize_c1(text: str | None) -> str:
    """Normalize a C1 reply or gold name: fold case and diacritics, drop punctuation and
    leading boilerplate such as "The phylum is" (paper App. C.1).

    >>> normalize_c1("The phylum is Chordata.")
    'chordata'
    """
    if text is None:
        return ""
    folded = unicodedata.normalize("NFKD", text[:C1_MAX_CHARS])
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
    arr = pc.utf8_slice_codeunits(arr, 0, C1_MAX_CHARS)
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
    """Step 1 of the C2 parser (paper App. K.5): lower-case, ``_`` to space, gray→grey, strip
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


# --------------------------------------------------------------------------------------------------
# string columns as integer codes: the one encoder every component uses


def encode_strings(values: pa.Array | pa.ChunkedArray, *, sort: bool = False) -> tuple[np.ndarray, pa.Array]:
    """Dictionary-encode a text column: per-row codes (−1 where null) and the distinct values as a
    string array (a column read as a dictionary from Parquet is used as it is). With ``sort`` the
    distinct values are sorted and the codes follow that order, so results never depend on the
    order rows arrive in. String work on a column then happens once per distinct value."""
    if isinstance(values, pa.ChunkedArray):
        if pa.types.is_dictionary(values.type) and values.num_chunks > 1:
            values = values.unify_dictionaries()
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if pa.types.is_dictionary(values.type):
        encoded = values
    else:
        encoded = values.cast(pa.string()).dictionary_encode()
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    dictionary = encoded.dictionary.cast(pa.string())
    if sort and len(dictionary):
        order = pc.array_sort_indices(dictionary).to_numpy()
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        codes = np.where(codes >= 0, rank[np.maximum(codes, 0)], -1)
        dictionary = dictionary.take(pa.array(order))
    return codes, dictionary


def codes_in(values: pa.Array | pa.ChunkedArray, names: Sequence[str]) -> np.ndarray:
    """Per-row index of the value in ``names`` (−1 for null or a value not in ``names``)."""
    codes, dictionary = encode_strings(values)
    position = {name: i for i, name in enumerate(names)}
    lookup = np.array([position.get(v, -1) for v in dictionary.to_pylist()] or [-1], dtype=np.int64)
    return np.where(codes >= 0, lookup[np.maximum(codes, 0)], -1)


class Vocabulary:
    """Strings ↔ dense integer ids, so that per-item string comparisons become integer
    comparisons and string work happens once per distinct value. With ``reserve_empty`` id 0 is
    the empty string (and null maps to it); otherwise ids start at the first string added and
    :meth:`get` of an unknown string is −1."""

    def __init__(self, *, reserve_empty: bool = True) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}
        self._array: pa.Array | None = None
        if reserve_empty:
            self.add("")

    def __len__(self) -> int:
        return len(self.texts)

    def add(self, text: str) -> int:
        """The id of ``text``, adding it if new."""
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.texts)
            self.texts.append(text)
        return found

    def get(self, text: str) -> int:
        """The id of ``text``, or −1 when it was never added."""
        return self._index.get(text, -1)

    @property
    def array(self) -> pa.Array:
        """Every string, in id order, as one Arrow array."""
        if self._array is None or len(self._array) != len(self.texts):
            self._array = pa.array(self.texts, pa.string())
        return self._array

    def ids(self, strings: Sequence[str | None] | pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Id of each string, adding new ones (null → "")."""
        values = strings if isinstance(strings, (pa.Array, pa.ChunkedArray)) else pa.array(list(strings), pa.string())
        return self.mapped_ids(values, None)

    def mapped_ids(self, values: pa.Array | pa.ChunkedArray,
                   transform: Callable[[pa.Array], pa.Array] | None) -> np.ndarray:
        """Per-row id of ``transform(value)`` (the value itself without one), computed once per
        distinct value; null → "" (id 0 with ``reserve_empty``)."""
        if len(values) == 0:
            return np.empty(0, dtype=np.int64)
        codes, dictionary = encode_strings(values)
        distinct = dictionary if transform is None else transform(dictionary)
        distinct = pc.fill_null(distinct.cast(pa.string()), "")
        found = pc.index_in(distinct, value_set=self.array)
        if found.null_count:  # new strings: appended in bulk (Arrow does the hashing, dict.update the rest)
            new = pc.unique(distinct.filter(pc.is_null(found))).to_pylist()
            start = len(self.texts)
            self.texts.extend(new)
            self._index.update(zip(new, range(start, start + len(new))))
            found = pc.index_in(distinct, value_set=self.array)
        ids = found.to_numpy(zero_copy_only=False).astype(np.int64) if len(distinct) else np.zeros(1, np.int64)
        empty = self.add("") if len(codes) and codes.min() < 0 else 0
        return np.where(codes >= 0, ids[np.maximum(codes, 0)], empty)

    def text(self, ids: np.ndarray) -> pa.Array:
        return self.array.take(pa.array(np.asarray(ids, dtype=np.int64), pa.int64()))

    def as_arrow(self, ids: np.ndarray) -> pa.Array:
        """Per-row strings as a dictionary array over the vocabulary (no string copies)."""
        return pa.DictionaryArray.from_arrays(pa.array(np.asarray(ids, dtype=np.int32), pa.int32()), self.array)
