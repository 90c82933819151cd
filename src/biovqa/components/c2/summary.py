"""Aggregation of per-item C2 scores (paper App. C.4, §3.11, §3.12, §6.1).

* family score = mean over its items; category score = item-weighted mean over its families
  (= mean over all items of the category); pooled = mean over every item, marker_localization
  included [DERIVED, CONFLICT resolved as "included"];
* GS_raw = mean s; EM = mean em; severity (Eq. 22) = mean (1 − cags) over items with EM = 0;
* 95 % percentile bootstrap CIs over items (B = 1000, seeded) for cags, EM and GS_raw, every
  group from the same resamples, each item summed into its family once (:func:`family_intervals`);
* format diagnostics per family: parse rate, letter–text mismatch rate, choose-A rate;
* laterality / mirror confusion on EM (marker_localization items with a left/right gold part).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.components.c2 import parse
from biovqa.components.c2.tasks import CATEGORIES, CATEGORY_OF, CLUSTER_UNIT, FAMILIES, MCQ_FAMILIES, TABLE3_COLUMNS
from biovqa.scoring.schema import estimate
from biovqa.stats import CONFIDENCE
from biovqa.text import codes_in

METRICS = ("cags", "em", "gs_raw")


def _number(value: float) -> float | None:
    """A JSON-safe float (None for NaN)."""
    value = float(value)
    return None if math.isnan(value) else value


def group_summary(cags: np.ndarray, em: np.ndarray, s: np.ndarray,
                  ci: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """n and the estimates of cags/EM/GS_raw (bounds ``ci`` = (lo[3], hi[3]) when given) and
    of severity (Eq. 22: mean 1 − cags over the EM = 0 items, no interval)."""
    n = len(cags)
    out: dict[str, Any] = {"n": int(n)}
    values = np.column_stack([cags, em, s]).astype(float) if n else np.zeros((0, 3))
    for index, name in enumerate(METRICS):
        mean = values[:, index].mean() if n else math.nan
        lo, hi = (None, None) if ci is None else (ci[0][index], ci[1][index])
        out[name] = estimate(mean, lo, hi, n=n)
    wrong = em == 0
    out["n_wrong"] = int(wrong.sum())
    out["severity"] = estimate((1.0 - cags[wrong]).mean() if wrong.any() else math.nan, n=int(wrong.sum()))
    return out


def family_parts(family: np.ndarray) -> tuple[np.ndarray, int]:
    """Each item's part of the bootstrap's partition (its family code; items of no known family
    form the last part) and the number of parts."""
    return np.where(family >= 0, family, len(FAMILIES)), len(FAMILIES) + 1


def family_intervals(cags: np.ndarray, em: np.ndarray, s: np.ndarray, family: np.ndarray,
                     groups: Sequence[Sequence[int]], *, B: int, seed: int,
                     confidence: float = CONFIDENCE) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """Bootstrap CIs of (cags, EM, GS_raw) for groups that are unions of families, as every C2 group is
    (pooled, a category, a family): ``groups`` lists each group's family codes (``-1`` stands
    for items of no known family, which only the pooled group holds). Every group from the same
    item resamples: each replicate draws how many items fall in each class of items with the same
    family and scores (:func:`biovqa.stats.bootstrap.partition_replicates` with ``classes``: the
    item bootstrap's distribution, a draw per class instead of per item) and a group's replicate
    is the ratio of its families' summed sums."""
    from biovqa.stats.bootstrap import partition_replicates, percentile_interval

    if B <= 0 or len(cags) == 0:
        return [None] * len(groups)
    part, n_parts = family_parts(family)
    sums, counts = partition_replicates(np.column_stack([cags, em, s]), part, n_parts, B=B,
                                        seed=seed, classes=True)
    replicates = np.empty((B, 3 * len(groups)))
    for g, members in enumerate(groups):
        parts = [len(FAMILIES) if code < 0 else code for code in members]
        top = sums[:, parts].sum(axis=1)
        bottom = counts[:, parts].sum(axis=1)[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            replicates[:, 3 * g:3 * g + 3] = np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1),
                                                      np.nan)
    lo, hi = percentile_interval(replicates, confidence)
    return [(lo[3 * g:3 * g + 3], hi[3 * g:3 * g + 3]) for g in range(len(groups))]


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


_PARSE = {name: code for code, name in enumerate(parse.PARSE_STATUSES)}


def format_diagnostics(parse_status: np.ndarray, response_status: np.ndarray,
                       letters: tuple[np.ndarray, np.ndarray], mcq: bool) -> dict[str, Any]:
    """Parse rate over replies, letter–text mismatch rate over replies, choose-A rate over
    recovered MCQ answers, and the counts of missing replies and failed requests (§3.11).
    ``parse_status``/``response_status`` are codes (parse.PARSE_STATUSES / ok, failed, missing);
    ``letters`` = (an option was chosen, option A was chosen) per item."""
    replies = parse_status != _PARSE[parse.MISSING]
    n_replies = int(replies.sum())
    recovered = np.zeros(len(parse_status), dtype=bool)
    for name in parse.RECOVERED:
        recovered |= parse_status == _PARSE[name]
    out: dict[str, Any] = {
        "n_replies": n_replies,
        "n_missing": int((parse_status == _PARSE[parse.MISSING]).sum()),
        "n_failed_requests": int((response_status == 1).sum()),
        "n_parse_failed": int((parse_status == _PARSE[parse.FAILED]).sum()),
        "n_fuzzy": int((parse_status == _PARSE[parse.FUZZY]).sum()),
        "n_mismatch": int((parse_status == _PARSE[parse.MISMATCH]).sum()),
        "parse_rate": _rate(int(recovered.sum()), n_replies),
    }
    if mcq:
        answered, chose_a = letters
        answered = answered & recovered
        out["mismatch_rate"] = _rate(out["n_mismatch"], n_replies)
        out["choose_a_rate"] = _rate(int((chose_a & answered).sum()), int(answered.sum()))
    else:
        out["mismatch_rate"] = None
        out["choose_a_rate"] = None
    return out


def _side_and_part(text: Any) -> tuple[str, str] | None:
    words = str(text or "").strip().lower().split()
    if len(words) >= 2 and words[0] in ("left", "right"):
        return words[0], " ".join(words[1:])
    return None


def binomial_half_lower_tail(k: int, n: int) -> float:
    """P(X ≤ k) for X ~ Binomial(n, 1/2): the one-sided exact binomial test's p-value against
    chance 0.5, as the exact sum Σ_{i ≤ k} C(n, i) / 2ⁿ in integers, correctly rounded once (a
    few milliseconds for the ≈ 12 000 marker items of the full benchmark, without importing
    scipy.stats, which cost ≈ 1 s per score; scipy's ``binomtest`` agrees to its own rounding,
    1e-16 relative near the middle, 1e-12 deep in the tail)."""
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"binomial tail needs 0 <= k <= n, not k={k}, n={n}")
    term = total = 1
    for i in range(k):
        term = term * (n - i) // (i + 1)  # C(n, i + 1), exact
        total += term
    return total / (1 << n)


def laterality(gold: Sequence[Any], pred: Sequence[Any], options: Sequence[Sequence[str] | None],
               em: np.ndarray) -> dict[str, Any]:
    """Laterality on EM (paper App. F.9 [DEFAULT details]) over marker_localization items
    whose gold is a left/right part:

    * ``mirror_confusion_rate`` = share answered with the mirror part (e.g. right wing for left
      wing), over the items that offer the mirror part; uniform baseline = mean 1/|options|;
    * ``laterality_given_part`` = EM among items where the model named the right part type
      (either side); one-sided exact binomial test against chance 0.5 ("significantly below").
    """
    lateral = mirror_offered = mirror_hits = part_named = side_right = 0
    baseline: list[float] = []
    for g, p, opts, correct in zip(gold, pred, options, em):
        gold_side = _side_and_part(g)
        if gold_side is None:
            continue
        lateral += 1
        mirror = ("right" if gold_side[0] == "left" else "left") + " " + gold_side[1]
        offered = [str(o).strip().lower() for o in (opts or ())]
        pred_side = _side_and_part(p)
        if mirror in offered:
            mirror_offered += 1
            baseline.append(1.0 / len(offered))
            if pred_side is not None and f"{pred_side[0]} {pred_side[1]}" == mirror:
                mirror_hits += 1
        if pred_side is not None and pred_side[1] == gold_side[1]:
            part_named += 1
            side_right += int(correct)
    out: dict[str, Any] = {
        "n_lateral": lateral,
        "n_mirror_offered": mirror_offered,
        "mirror_confusion_rate": _rate(mirror_hits, mirror_offered),
        "mirror_baseline": float(np.mean(baseline)) if baseline else None,
        "n_part_named": part_named,
        "laterality_given_part": _rate(side_right, part_named),
        "laterality_chance": 0.5,
    }
    if part_named:
        p_value = binomial_half_lower_tail(side_right, part_named)
        out["laterality_p_below_chance"] = p_value
        out["laterality_below_chance"] = bool(p_value < 0.05)
    else:
        out["laterality_p_below_chance"] = None
        out["laterality_below_chance"] = None
    return out


def summarize(scored: pa.Table, items: pa.Table | None = None,
              options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The C2 summary dict from per-item scores (see :mod:`biovqa.components.c2.score` for its
    shape). ``items`` (aligned with ``scored``) gives the option lists the laterality analysis
    reads; ``options`` holds ``bootstrap`` (B), ``seed`` and ``confidence`` (defaults 1000, 42, 0.95)."""
    options = options or {}
    B = int(options.get("bootstrap", 1000))
    seed = int(options.get("seed", 42))
    confidence = float(options.get("confidence", CONFIDENCE))
    scores = scored
    family = codes_in(scores.column("family"), FAMILIES)
    cags = scores.column("cags").to_numpy()
    em = scores.column("em").to_numpy().astype(float)
    s = scores.column("s").to_numpy()
    parse_status = codes_in(scores.column("parse_status"), parse.PARSE_STATUSES)
    response_status = codes_in(scores.column("status"), ("ok", "failed", "missing"))
    chose_a = np.asarray(pc.fill_null(pc.equal(scores.column("pred_letter"), "A"), False)
                         .to_numpy(zero_copy_only=False), dtype=bool)
    answered = np.asarray(pc.is_valid(scores.column("pred_letter")).to_numpy(zero_copy_only=False), dtype=bool)
    pred_letter = (answered, chose_a)

    masks = {name: family == index for index, name in enumerate(FAMILIES)}
    category_masks = {}
    for category in CATEGORIES:
        mask = np.zeros(len(family), dtype=bool)
        for name in FAMILIES:
            if CATEGORY_OF[name] == category:
                mask |= masks[name]
        category_masks[category] = mask
    present_families = [f for f in FAMILIES if masks[f].any()]
    present_categories = [c for c in CATEGORIES if category_masks[c].any()]
    family_code = {name: index for index, name in enumerate(FAMILIES)}
    group_families = ([[-1, *range(len(FAMILIES))]]
                      + [[family_code[f] for f in FAMILIES if CATEGORY_OF[f] == c] for c in present_categories]
                      + [[family_code[f]] for f in present_families])
    intervals = family_intervals(cags, em, s, family, group_families, B=B, seed=seed, confidence=confidence)
    pooled = group_summary(cags, em, s, intervals[0])
    categories: dict[str, Any] = {}
    for offset, category in enumerate(present_categories, start=1):
        mask = category_masks[category]
        categories[category] = group_summary(cags[mask], em[mask], s[mask], intervals[offset])
    families: dict[str, Any] = {}
    for offset, name in enumerate(present_families, start=1 + len(present_categories)):
        mask = masks[name]
        entry = group_summary(cags[mask], em[mask], s[mask], intervals[offset])
        entry["category"] = CATEGORY_OF[name]
        entry.update(format_diagnostics(parse_status[mask], response_status[mask],
                                        (answered[mask], chose_a[mask]), name in MCQ_FAMILIES))
        families[name] = entry
    mcq_mask = np.zeros(len(family), dtype=bool)
    for name in MCQ_FAMILIES:
        mcq_mask |= masks[name]
    open_mask = (family >= 0) & ~mcq_mask
    fmt = format_diagnostics(parse_status, response_status, pred_letter, True)
    mcq_fmt = format_diagnostics(parse_status[mcq_mask], response_status[mcq_mask],
                                 (answered[mcq_mask], chose_a[mcq_mask]), True)
    fmt["mismatch_rate"] = mcq_fmt["mismatch_rate"]
    fmt["choose_a_rate"] = mcq_fmt["choose_a_rate"]
    fmt["em_mcq"] = _number(em[mcq_mask].mean()) if mcq_mask.any() else None
    fmt["em_open"] = _number(em[open_mask].mean()) if open_mask.any() else None
    fmt["n_mcq"] = int(mcq_mask.sum())
    fmt["n_open"] = int(open_mask.sum())
    if "response" in scores.column_names:
        fmt["n_replies_truncated"] = parse.count_truncated(scores.column("response"))

    marker = masks["marker_localization"]
    if marker.any():
        rows = np.flatnonzero(marker)
        gold = scores.column("gold").take(pa.array(rows)).to_pylist()
        pred = scores.column("parsed").take(pa.array(rows)).to_pylist()
        offered = (items.column("options").take(pa.array(rows)).to_pylist()
                   if items is not None and "options" in items.column_names else [None] * len(rows))
        lat = laterality(gold, pred, offered, em[rows])
    else:
        lat = laterality([], [], [], np.zeros(0))
    return {
        "table3": {column: categories[category]["cags"] for column, category in TABLE3_COLUMNS.items()
                   if category in categories},
        "pooled": pooled,
        "categories": categories,
        "families": families,
        "format": fmt,
        "laterality": lat,
        "bootstrap": {"B": B, "seed": seed, "confidence": confidence, "cluster": CLUSTER_UNIT},
    }
