"""C4 pair construction from embedding neighbours (paper §3.4, "C4: Individual re-identification";
appendix H.7 and H.9).

Per dataset × condition (easy, random, hard), within viewpoint groups:

* **anchors**: annotations with ≥ 1 other annotation of the same (known) identity in their viewpoint
  group, in one seeded uniform order per dataset × condition; each anchor gives at most one same-ID
  pair and at most one different-ID pair;
* **same-ID pairs first** (the scarce resource): easy = the anchor's most similar same-ID partner,
  random = a uniform same-ID partner, hard = the least similar same-ID partner;
* **different-ID pairs**: easy = the least similar different-ID annotation, random = a uniform
  other individual then a uniform annotation of it, hard = the nearest different-ID neighbour;
* **easy and hard pairs are always the anchor's rule partner** (its most or least similar candidate
  of that kind; a candidate tied with it counts as the same rule partner). When that unordered pair
  is already taken in the condition (mutual nearest neighbours, burst frames), the anchor gives no
  pair of that kind and later anchors fill the quota: walking on down the similarity list would
  hand the hard condition an anchor's near-duplicate frame, and the easy condition its furthest
  image. Skipped anchors are counted (:attr:`PairResult.skipped_partner_taken`);
* random pairs: another uniform draw among the anchor's free candidates (the draw ignores
  appearance either way);
* balance: ``min(target, same found, different found)`` of each kind (recorded when short);
* left/right placement drawn per pair (seeded).

Similarity is the cosine of L2-normalised embeddings (a dot product), computed for a block of
anchors against the whole dataset in one matrix product, so a 10 000-annotation catalog takes
well under a second or two (``benchmarks/c4_pairs.py``).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from biovqa.components.c4.tasks import CONDITIONS

#: Anchors whose similarity rows are computed in one matrix product.
ANCHOR_BLOCK = 512


@dataclass(frozen=True, slots=True)
class Pair:
    """One pair: annotation rows (indices into the dataset's arrays) as shown left and right."""

    condition: str
    same: bool
    anchor: int
    partner: int
    left: int
    right: int
    similarity: float
    #: the anchor's lowest / highest similarity over its candidate pool of this kind
    pool_min: float
    pool_max: float


@dataclass(frozen=True, slots=True)
class PairResult:
    pairs: list[Pair]
    requested: int
    eligible_anchors: int
    same_found: int
    different_found: int
    #: anchors that gave no pair of a kind because their rule partner (easy/hard) or every
    #: candidate (random) was already paired in this condition: {"same": n, "different": n}
    skipped_partner_taken: dict[str, int] = field(default_factory=dict)

    @property
    def per_kind(self) -> int:
        return len(self.pairs) // 2


def condition_rng(seed: int, dataset: str, condition: str, purpose: str = "anchors") -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(dataset.encode()), zlib.crc32(condition.encode()),
                                  zlib.crc32(purpose.encode())])


def eligible_anchors(identity: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Rows with a known identity (code ≥ 0) that share identity and viewpoint group with at
    least one other row."""
    identity = np.asarray(identity)
    group = np.asarray(group)
    known = identity >= 0
    keys = identity.astype(np.int64) * (int(group.max(initial=0)) + 1) + group.astype(np.int64)
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return np.flatnonzero(known & (counts[inverse] >= 2))


class _Index:
    """Precomputed membership: same-(identity, group) lists and per-group rows."""

    def __init__(self, identity: np.ndarray, group: np.ndarray) -> None:
        self.identity = np.asarray(identity, dtype=np.int64)
        self.group = np.asarray(group, dtype=np.int64)
        members: dict[tuple[int, int], list[int]] = {}
        for row, (ident, grp) in enumerate(zip(self.identity.tolist(), self.group.tolist())):
            if ident >= 0:
                members.setdefault((ident, grp), []).append(row)
        self.members = {key: np.asarray(rows, dtype=np.int64) for key, rows in members.items()}
        self.group_rows = {int(g): np.flatnonzero(self.group == g) for g in np.unique(self.group)}

    def same_candidates(self, anchor: int) -> np.ndarray:
        rows = self.members[int(self.identity[anchor]), int(self.group[anchor])]
        return rows[rows != anchor]

    def different_candidates(self, anchor: int) -> np.ndarray:
        rows = self.group_rows[int(self.group[anchor])]
        ident = self.identity[rows]
        return rows[(ident >= 0) & (ident != self.identity[anchor])]


def _blocks(anchors: np.ndarray, embeddings: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(anchor row, similarity row against every annotation), block by block."""
    for start in range(0, len(anchors), ANCHOR_BLOCK):
        block = anchors[start:start + ANCHOR_BLOCK]
        sims = embeddings[block] @ embeddings.T
        for k, anchor in enumerate(block.tolist()):
            yield anchor, sims[k]


def _choose(condition: str, same: bool, candidates: np.ndarray, sims: np.ndarray,
            used: set[tuple[int, int]], anchor: int, rng: np.random.Generator,
            identity: np.ndarray) -> int | None:
    """The partner for ``anchor`` among ``candidates`` (``sims`` their similarities), skipping
    pairs already used; None when no permitted partner is free (easy/hard: the rule partner is
    taken; random: every candidate pair is used)."""
    def free(row: int) -> bool:
        return (min(anchor, row), max(anchor, row)) not in used

    if condition == "random":
        if same:
            order = rng.permutation(len(candidates))
            for k in order.tolist():
                if free(int(candidates[k])):
                    return int(candidates[k])
            return None
        idents = identity[candidates]
        individuals = np.unique(idents)
        for ident in rng.permutation(individuals).tolist():
            rows = candidates[idents == ident]
            for k in rng.permutation(len(rows)).tolist():
                if free(int(rows[k])):
                    return int(rows[k])
        return None
    # easy-same and hard-different: the most similar; hard-same and easy-different: the least
    # similar. Only the rule partner (or a candidate tied with it, lowest row first) may be taken.
    most_similar_first = (condition == "easy") == same
    key = -sims if most_similar_first else sims
    for k in np.flatnonzero(key == key.min()).tolist():
        if free(int(candidates[k])):
            return int(candidates[k])
    return None


def build_pairs(embeddings: np.ndarray, identity: np.ndarray, group: np.ndarray, *, condition: str,
                target: int, seed: int, dataset: str) -> PairResult:
    """Pairs of one dataset × condition (see the module docstring). ``embeddings`` are
    L2-normalised rows; ``identity`` codes are −1 for unknown; ``group`` codes the viewpoint."""
    if condition not in CONDITIONS:
        raise ValueError(f"condition must be one of {CONDITIONS}, not {condition!r}")
    embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)
    identity = np.asarray(identity, dtype=np.int64)
    index = _Index(identity, np.asarray(group))
    anchors = eligible_anchors(identity, group)
    rng = condition_rng(seed, dataset, condition)
    order = anchors[rng.permutation(len(anchors))] if len(anchors) else anchors
    choice_rng = condition_rng(seed, dataset, condition, "partners")
    used: set[tuple[int, int]] = set()
    skipped = {"same": 0, "different": 0}
    found: dict[bool, list[tuple[int, int, float, float, float]]] = {True: [], False: []}
    for same in (True, False):  # same-ID pairs are drawn first
        if target <= 0:
            break
        for anchor, row in _blocks(order, embeddings):
            candidates = index.same_candidates(anchor) if same else index.different_candidates(anchor)
            if not len(candidates):
                continue
            sims = row[candidates]
            partner = _choose(condition, same, candidates, sims, used, anchor, choice_rng, identity)
            if partner is None:
                skipped["same" if same else "different"] += 1
                continue
            used.add((min(anchor, partner), max(anchor, partner)))
            found[same].append((anchor, partner, float(row[partner]), float(sims.min()), float(sims.max())))
            if len(found[same]) >= target:
                break
    per_kind = min(target, len(found[True]), len(found[False]))
    side_rng = condition_rng(seed, dataset, condition, "sides")
    pairs = []
    for same in (True, False):
        for anchor, partner, sim, lo, hi in found[same][:per_kind]:
            anchor_left = bool(side_rng.random() < 0.5)
            left, right = (anchor, partner) if anchor_left else (partner, anchor)
            pairs.append(Pair(condition, same, anchor, partner, left, right, sim, lo, hi))
    return PairResult(pairs=pairs, requested=target, eligible_anchors=int(len(anchors)),
                      same_found=len(found[True]), different_found=len(found[False]),
                      skipped_partner_taken=skipped)


def auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for ``positive`` labels (ties count one half;
    the Mann–Whitney statistic); NaN when a class is empty."""
    from biovqa.stats.ranks import average_ranks

    scores = np.asarray(scores, dtype=float)
    positive = np.asarray(positive, dtype=bool)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = average_ranks(scores)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


__all__ = ["CONDITIONS", "Pair", "PairResult", "auc", "build_pairs", "eligible_anchors"]
