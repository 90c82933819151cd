"""Which photos C3 asks about together: partner photos for the two-panel counting tiers, every
photo with the same number of distinct partners and, across datasets, neighbours from different
groups; and the rule that a relative question has one clear answer (a unique extreme with a margin
over the runner-up, the paper's Sec. A.3)."""

from __future__ import annotations

from typing import Any

import numpy as np


def unique_extreme(counts: list[int], extreme: str, margin: float) -> bool:
    """True when the most (or least) count is unique with ≥ ``margin`` and ≥ 1 over the runner-up."""
    ordered = sorted(counts, reverse=(extreme == "most"))
    best, runner = ordered[0], ordered[1]
    if extreme == "most":
        return best >= runner * (1 + margin) and best - runner >= 1
    return runner >= best * (1 + margin) and runner - best >= 1


def _interleave(entries: list[tuple[str, Any]], window: int, rng: np.random.Generator) -> list[tuple[str, Any]]:
    """``entries`` (group, photo) in an order where no two of the same group lie within ``window``
    places whenever the group sizes allow it: each group shuffled, then greedily the group with the
    most photos left that is not among the last ``window`` placed (ties: a seeded group rank)."""
    groups: dict[str, list[tuple[str, Any]]] = {}
    for entry in entries:
        groups.setdefault(entry[0], []).append(entry)
    names = sorted(groups)
    rank = {name: int(r) for name, r in zip(names, rng.permutation(len(names)))}
    queues = {name: [groups[name][int(i)] for i in rng.permutation(len(groups[name]))] for name in names}
    out: list[tuple[str, Any]] = []
    while len(out) < len(entries):
        recent = {e[0] for e in out[-window:]} if window else set()
        open_groups = [name for name in names if queues[name]]
        eligible = [name for name in open_groups if name not in recent] or open_groups
        name = max(eligible, key=lambda g: (len(queues[g]), -rank[g]))
        out.append(queues[name].pop())
    return out


def partner_pairs(entries: list[tuple[str, Any]], partners: int, rng: np.random.Generator, *,
                  across: bool) -> list[tuple[Any, Any]]:
    """Unordered photo pairs in which every photo has ``partners`` distinct partners (fewer only
    where the pool is too small or, ``across``, a group too large): the photos are put in a seeded
    order (``across``: interleaved so that neighbours come from different groups) and each is
    linked to the next ⌊partners/2⌋ (cyclically), plus, for an odd number, a matching at distance
    ⌈partners/2⌉. ``across`` drops same-group pairs; no unordered pair appears twice."""
    n = len(entries)
    if n < 2 or partners < 1:
        return []
    half = partners // 2
    order = _interleave(entries, (partners + 1) // 2, rng) if across else [entries[int(i)] for i in rng.permutation(n)]
    seen: set[frozenset[int]] = set()
    pairs: list[tuple[Any, Any]] = []

    def link(i: int, j: int) -> None:
        (ga, a), (gb, b) = order[i % n], order[j % n]
        key = frozenset((id(a), id(b)))
        if a is b or (across and ga == gb) or key in seen:
            return
        seen.add(key)
        pairs.append((a, b))

    for i in range(n):
        for d in range(1, half + 1):
            link(i, i + d)
    if partners % 2:
        step = half + 1
        for i in range(n - step):
            if (i // step) % 2 == 0:
                link(i, i + step)
    return pairs


__all__ = ["partner_pairs", "unique_extreme"]
