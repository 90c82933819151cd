"""Naming kernels of the open C2 families (paper App. C.5 (Eqs. 19–21); paper Eqs. 19–21).

* token F1 (Eq. 19): ``F1(p, g) = 2·|T(p) ∩ T(g)| / (|T(p)| + |T(g)|)`` over whitespace tokens;
* common name (Eq. 20): ``common = 0.6·F1 + 0.4·1[head(p) = head(g)]``, lifted to at least 0.75
  when p is a CUB common name of the same genus as g;
* scientific name (Eq. 21): ``sci = 0.5·a_genus + 0.5·a_epithet`` with ``a_x = 1`` on agreement,
  else ``0.3·ratio(x_p, x_g)`` (``difflib.SequenceMatcher`` ratio); ``genus = a_genus``.

All inputs are normalized with :func:`biovqa.text.normalize_c2` first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from biovqa.components.c2.kernels import normalize_c2  # memoized biovqa.text.normalize_c2
from biovqa.components.c2.parse import sequence_ratio  # difflib's ratio, without its overhead

COMMON_F1_WEIGHT = 0.6
COMMON_HEAD_WEIGHT = 0.4
GENUS_LIFT = 0.75
NEAR_MISS_WEIGHT = 0.3


@lru_cache(maxsize=1 << 16)
def tokens(text: str) -> tuple[str, ...]:
    """T(·): the whitespace tokens of the normalized text."""
    return tuple(normalize_c2(text).split())


def token_f1(prediction: str, gold: str) -> float:
    """Eq. 19: harmonic mean of token precision and recall on the token sets; 0 if either is empty."""
    p, g = set(tokens(prediction)), set(tokens(gold))
    if not p or not g:
        return 0.0
    return 2.0 * len(p & g) / (len(p) + len(g))


def head_noun(name: str) -> str:
    """Last token of a common name ("fox sparrow" → "sparrow"); "" for an empty name."""
    words = tokens(name)
    return words[-1] if words else ""


@dataclass(frozen=True)
class GenusIndex:
    """CUB common name → genus (normalized), for the genus lift of the common-name kernel."""

    genus_of: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str | None, str | None]]) -> GenusIndex:
        mapping: dict[str, str] = {}
        for common, genus in pairs:
            if common and genus:
                mapping[normalize_c2(common)] = normalize_c2(genus)
        return cls(genus_of=dict(sorted(mapping.items())))

    def same_genus(self, prediction: str, gold: str) -> bool:
        """True when the prediction is one of the CUB common names [DEFAULT] and its genus is
        the gold's genus."""
        p = self.genus_of.get(normalize_c2(prediction))
        g = self.genus_of.get(normalize_c2(gold))
        return p is not None and p == g


EMPTY_GENUS_INDEX = GenusIndex()


def common_name_similarity(prediction: str, gold: str,
                           genus_index: GenusIndex = EMPTY_GENUS_INDEX) -> float:
    """Eq. 20: ``0.6·F1 + 0.4·1[head(p) = head(g)]``, then ``max(·, 0.75)`` for same-genus
    CUB names."""
    if not tokens(prediction):
        return 0.0
    score = COMMON_F1_WEIGHT * token_f1(prediction, gold)
    if head_noun(prediction) == head_noun(gold):
        score += COMMON_HEAD_WEIGHT
    if genus_index.same_genus(prediction, gold):
        score = max(score, GENUS_LIFT)
    return score


@lru_cache(maxsize=1 << 18)
def name_part_agreement(predicted: str, gold: str) -> float:
    """a_x of Eq. 21: 1 if equal (lower-cased), else ``0.3·ratio`` (0 when either is empty)."""
    p, g = predicted.lower(), gold.lower()
    if p == g:
        return 1.0 if p else 0.0
    if not p or not g:
        return 0.0
    return NEAR_MISS_WEIGHT * sequence_ratio(p, g)


def _binomial_parts(name: str) -> tuple[str, str]:
    words = tokens(name)
    return (words[0] if words else "", words[1] if len(words) > 1 else "")


def scientific_name_similarity(prediction: str, gold: str) -> float:
    """Eq. 21: ``0.5·a_genus + 0.5·a_epithet`` (genus = 1st token, epithet = 2nd; a missing
    token is the empty string and scores 0 [DEFAULT])."""
    p_genus, p_epithet = _binomial_parts(prediction)
    g_genus, g_epithet = _binomial_parts(gold)
    return 0.5 * name_part_agreement(p_genus, g_genus) + 0.5 * name_part_agreement(p_epithet, g_epithet)


def genus_similarity(prediction: str, gold: str) -> float:
    """``genus(p, g) = a_genus`` on the first tokens."""
    return name_part_agreement(_binomial_parts(prediction)[0], _binomial_parts(gold)[0])


def complete_kind_of(prediction: str, category: str | None) -> str:
    """open_kind_of [DEFAULT]: the reply names the modifier ("california"); append the category
    word ("gull") unless the reply already ends with it, so it can be compared with the full
    CUB common name."""
    text = normalize_c2(prediction)
    word = normalize_c2(category or "")
    if not text or not word or text == word or text.endswith(" " + word):
        return text
    return f"{text} {word}"
