"""C4 aggregation: signal-detection statistics per dataset × condition and pooled over datasets,
their stratified bootstrap, the difficulty-ordering check and the parse rates (paper appendix C,
Tables 49–55; appendix L.3 for B = 2000).

``summarize(scored, items, options) -> dict`` reads the per-item table of :mod:`.score` (and the
items, for the construction checks):

    {
      "table3":   {dprime, acc: the random condition pooled over datasets},
      "pooled":   {easy|random|hard: <cell>} (counts summed over datasets) + c_mean_species,
      "cells":    {<dataset>: {easy|random|hard: <cell>}},
      "verdict":  Table 49's label from the random pooled d′ and c,
      "ordering": {per dataset and pooled: balanced accuracy per condition and whether
                   easy ≥ random ≥ hard; n_monotone / n_cells; easy − hard accuracy with its
                   Wald interval},
      "format":   {n_replies, n_parsed, parse_rate, n_unparsed, parse_status: {strict, loose, …: count}},
      "construction_checks": {<dataset>: {<condition>: DINOv2 AUC and similarity margin}},
      "bootstrap": {B, seed, confidence, cluster: "items within dataset × condition"},
      "datasets": [the datasets scored, in report order],
      "decision_variable": {…}   (only when every reply carries its similarity: the specialist)
    }

``<cell>`` = hits, misses, same_unparsed, false_alarms, correct_rejections, different_unparsed,
n, n_same, n_different, H, F and the estimates dprime, c, acc, balanced_acc, mcc, kappa (and auc,
dprime_auc with a decision variable).

Bootstrap (:mod:`biovqa.stats`): within every dataset × condition stratum the items are resampled
with replacement, B replicates; a cell's statistics see an item only through its six-way class, so
a replicate is one multinomial draw of the stratum's cell counts
(:func:`~biovqa.stats.draws.resampled_class_counts`); pooled statistics are recomputed from the
resampled strata. The specialist's AUC resamples the items of each cell (and of each pooled
condition) on the shared cluster draws (:func:`~biovqa.stats.bootstrap.bootstrap_replicates`, one
stream per cell). Percentile intervals (:func:`~biovqa.stats.bootstrap.percentile_interval`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.components.c4.metrics import (COUNT_NAMES, STATISTICS, auc_to_dprime, construction_checks, rates,
                                          statistics, verdict, wald_difference, weighted_auc)
from biovqa.components.c4.pairs import auc
from biovqa.components.c4.parse import PARSE_STATUSES, PARSED_STATUSES
from biovqa.components.c4.tasks import CONDITIONS, DATASETS, TABLE3, TASKS
from biovqa.scoring.schema import estimate
from biovqa.stats.bootstrap import bootstrap_replicates, percentile_interval
from biovqa.stats.draws import resampled_class_counts
from biovqa.stats.inference import normal_quantile

__all__ = ["cell_summary", "stratum_counts", "summarize"]


def stratum_counts(same: np.ndarray, answer: np.ndarray, strata: np.ndarray, n_strata: int) -> np.ndarray:
    """``n_strata × 6`` counts: same→yes/no/unparsed, different→yes/no/unparsed (``answer``: 0 yes,
    1 no, 2 unparsed)."""
    cell = np.where(same, 0, 3) + answer
    flat = np.bincount(strata * 6 + cell, minlength=n_strata * 6) if len(cell) else np.zeros(n_strata * 6, np.int64)
    return flat.reshape(n_strata, 6)


def _interval(replicates: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    """The percentile interval of one statistic's replicates (NaN ignored; None when none is left)."""
    lo, hi = percentile_interval(replicates, confidence)
    return (None, None) if np.isnan(lo[0]) else (float(lo[0]), float(hi[0]))


def cell_summary(counts: np.ndarray, replicates: np.ndarray | None, confidence: float) -> dict[str, Any]:
    """Counts, H, F and the estimates of one cell (``replicates``: B × 6 or None)."""
    counts = np.asarray(counts, dtype=np.int64)
    values = statistics(counts)
    boot = statistics(replicates) if replicates is not None else None
    n = int(counts.sum())
    h, f = rates(counts)
    out: dict[str, Any] = {name: int(counts[k]) for k, name in enumerate(COUNT_NAMES)}
    out.update({"n": n, "n_same": int(counts[:3].sum()), "n_different": int(counts[3:].sum()),
                "H": float(h), "F": float(f)})
    for name in STATISTICS:
        lo, hi = _interval(boot[name], confidence) if boot is not None else (None, None)
        out[name] = estimate(float(values[name]), lo, hi, n=n)
    return out


def _ordered(values: list[str]) -> list[str]:
    present = set(values)
    return [d for d in DATASETS if d in present] + sorted(present - set(DATASETS))


def summarize(scored: pa.Table, items: pa.Table, options: Mapping[str, Any]) -> dict[str, Any]:
    """The C4 summary (see the module docstring) from the per-item table of :func:`.score.score_items`."""
    B, seed, confidence = int(options["bootstrap"]), int(options["seed"]), float(options["confidence"])
    same = np.asarray(scored.column("same").to_numpy(zero_copy_only=False), dtype=bool)
    parsed = scored.column("parsed").to_pylist()
    answer = np.array([2 if p is None else (0 if p == "yes" else 1) for p in parsed], dtype=np.int64)
    datasets_all = scored.column("dataset").to_pylist()
    conditions_all = scored.column("condition").to_pylist()
    datasets = _ordered(datasets_all)
    conditions = [c for c in CONDITIONS if c in set(conditions_all)]
    d_index = {d: i for i, d in enumerate(datasets)}
    c_index = {c: i for i, c in enumerate(conditions)}
    strata = np.array([d_index[d] * len(conditions) + c_index[c] for d, c in zip(datasets_all, conditions_all)],
                      dtype=np.int64)
    n_strata = len(datasets) * len(conditions)
    counts = stratum_counts(same, answer, strata, n_strata)
    boot = resampled_class_counts(counts, B=B, seed=seed) if B > 0 else None

    cells: dict[str, dict[str, Any]] = {}
    for d, dataset in enumerate(datasets):
        cells[dataset] = {}
        for c, condition in enumerate(conditions):
            s = d * len(conditions) + c
            if counts[s].sum() == 0:
                continue
            cells[dataset][condition] = cell_summary(counts[s], None if boot is None else boot[:, s, :], confidence)
    pooled: dict[str, Any] = {}
    grid = counts.reshape(len(datasets), len(conditions), 6)
    boot_grid = None if boot is None else boot.reshape(B, len(datasets), len(conditions), 6)
    for c, condition in enumerate(conditions):
        summed = grid[:, c, :].sum(axis=0)
        entry = cell_summary(summed, None if boot_grid is None else boot_grid[:, :, c, :].sum(axis=1), confidence)
        per_species = [cells[d][condition]["c"]["value"] for d in datasets if condition in cells[d]]
        per_species = [v for v in per_species if v is not None]
        entry["c_mean_species"] = float(np.mean(per_species)) if per_species else None
        entry["n_datasets"] = sum(1 for d in datasets if condition in cells[d])
        pooled[condition] = entry

    similarity = _decision_variable(scored)
    decision_variable = None
    if similarity is not None:
        decision_variable = _similarity_section(similarity, same, strata, datasets, conditions, cells, pooled,
                                                B=B, seed=seed, confidence=confidence)
    random_pooled = pooled.get("random")
    table3: dict[str, Any] = {}
    # a run that carries its decision variable (the specialist) reports √2·z(AUC), as Table 3
    # does for MegaDescriptor; every other run the d′ of its Yes/No replies
    for column, condition in TABLE3.items():
        if condition in pooled:
            key = "dprime_auc" if column == "dprime" and decision_variable is not None else column
            table3[column] = pooled[condition][key]
    summary = {
        "table3": table3,
        "pooled": pooled,
        "cells": cells,
        "verdict": None if random_pooled is None else verdict(random_pooled["dprime"]["value"],
                                                             random_pooled["c"]["value"]),
        "ordering": _ordering(cells, pooled),
        "format": _format_section(scored.column("parse_status").to_pylist()),
        "construction_checks": _construction_checks(items, datasets, conditions),
        "bootstrap": {"B": B, "seed": seed, "confidence": confidence, "cluster": TASKS[0].cluster},
        "datasets": datasets,
    }
    if decision_variable is not None:
        summary["decision_variable"] = decision_variable
    return summary


def _decision_variable(scored: pa.Table) -> np.ndarray | None:
    """The similarity every reply carries (NaN where there is no reply), or None unless every
    reply carries one."""
    status = np.asarray(scored.column("status").to_numpy(zero_copy_only=False), dtype=object) == "ok"
    values = np.asarray(scored.column("reply_similarity").to_numpy(zero_copy_only=False), dtype=float)
    if not status.any() or np.isnan(values[status]).any():
        return None
    return np.where(status, values, np.nan)


def _auc_estimate(similarity: np.ndarray, same: np.ndarray, rows: np.ndarray, *, B: int, seed: int,
                  confidence: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """AUC and √2·z(AUC) of ``rows`` (items with a similarity), with percentile intervals from
    resampling those items (B replicates, the items as clusters of the shared draws)."""
    rows = rows[~np.isnan(similarity[rows])]
    n = int(len(rows))
    scores, positive = similarity[rows], same[rows]

    def both(counts: np.ndarray) -> list[np.ndarray]:
        value = weighted_auc(scores, positive, counts)
        with np.errstate(invalid="ignore", divide="ignore"):
            dprime = np.where((value > 0) & (value < 1), np.sqrt(2.0) * normal_quantile(value), np.nan)
        return [value, dprime]

    if not n:
        return estimate(float("nan"), n=0), estimate(float("nan"), n=0)
    value = auc(scores, positive)
    dprime = auc_to_dprime(value) if 0.0 < value < 1.0 else float("nan")
    lo_hi: list[tuple[float | None, float | None]] = [(None, None), (None, None)]
    if B > 0:
        # rowwise: the statistic reads the draw counts themselves (W, replicates × items)
        draws = bootstrap_replicates(np.zeros((n, 0)), lambda _, W: both(np.asarray(W)), B=B, seed=seed,
                                     rowwise=True)
        for k in range(2):
            lo_hi[k] = _interval(np.where(np.isfinite(draws[:, k]), draws[:, k], np.nan), confidence)
    return estimate(value, *lo_hi[0], n=n), estimate(dprime, *lo_hi[1], n=n)


def _similarity_section(similarity: np.ndarray, same: np.ndarray, strata: np.ndarray, datasets: list[str],
                        conditions: list[str], cells: dict[str, Any], pooled: dict[str, Any], *,
                        B: int, seed: int, confidence: float) -> dict[str, Any]:
    """Add ``auc`` and ``dprime_auc`` (√2·z(AUC), appendix B "MegaDescriptor for C4") to every cell
    and pooled condition; pooled over datasets = the AUC of all that condition's items (the paper
    runs the specialist on one dataset, where pooled and per-dataset agree)."""
    # one stream per cell: seed, then the cell's place (datasets × conditions, then the pooled ones)
    stream = iter(range(1, len(datasets) * len(conditions) + len(conditions) + 1))
    for d, dataset in enumerate(datasets):
        for c, condition in enumerate(conditions):
            if condition in cells[dataset]:
                rows = np.flatnonzero(strata == d * len(conditions) + c)
                cells[dataset][condition]["auc"], cells[dataset][condition]["dprime_auc"] = _auc_estimate(
                    similarity, same, rows, B=B, seed=_cell_seed(seed, next(stream)), confidence=confidence)
    for c, condition in enumerate(conditions):
        rows = np.flatnonzero(strata % len(conditions) == c)
        pooled[condition]["auc"], pooled[condition]["dprime_auc"] = _auc_estimate(
            similarity, same, rows, B=B, seed=_cell_seed(seed, next(stream)), confidence=confidence)
    return {"name": "cosine similarity carried by every reply", "dprime": "sqrt(2) * z(AUC)",
            "table3_dprime": "dprime_auc of the random condition, pooled"}


def _cell_seed(seed: int, place: int) -> int:
    """The seed of the ``place``-th cell's AUC draws: distinct per cell, fixed by the options' seed."""
    return int(np.random.SeedSequence([seed, 4, place]).generate_state(1)[0])


def _monotone(block: Mapping[str, Any]) -> dict[str, Any] | None:
    if not all(c in block for c in CONDITIONS):
        return None
    bal = {c: block[c]["balanced_acc"]["value"] for c in CONDITIONS}
    if any(v is None for v in bal.values()):
        return None
    return {"balanced_acc": bal, "monotone": bool(bal["easy"] >= bal["random"] >= bal["hard"])}


def _ordering(cells: Mapping[str, Any], pooled: Mapping[str, Any]) -> dict[str, Any]:
    per_dataset = {d: _monotone(block) for d, block in cells.items()}
    checked = [v for v in per_dataset.values() if v is not None]
    out: dict[str, Any] = {
        "rule": "weak ordering easy >= random >= hard of balanced accuracy",
        "datasets": per_dataset,
        "pooled": _monotone(pooled),
        "n_monotone": sum(v["monotone"] for v in checked),
        "n_cells": len(checked),
        "chance_probability": 1 / 6,
    }
    if "easy" in pooled and "hard" in pooled:
        easy, hard = pooled["easy"], pooled["hard"]
        if easy["acc"]["value"] is not None and hard["acc"]["value"] is not None:
            out["easy_minus_hard_acc"] = wald_difference(easy["acc"]["value"], easy["n"],
                                                         hard["acc"]["value"], hard["n"])
    return out


def _construction_checks(items: pa.Table, datasets: list[str], conditions: list[str]) -> dict[str, Any]:
    """DINOv2 AUC and similarity margin per dataset × condition from the stored pair similarities
    (appendix H.7, Table 54); they depend on the benchmark only."""
    dataset = np.asarray(items.column("dataset").to_pylist(), dtype=object)
    condition = np.asarray(items.column("condition").to_pylist(), dtype=object)
    similarity = np.asarray(items.column("similarity").to_numpy(zero_copy_only=False), dtype=float)
    same = np.asarray(items.column("same").to_numpy(zero_copy_only=False), dtype=bool)
    out: dict[str, Any] = {}
    for d in datasets:
        out[d] = {}
        for c in conditions:
            mask = (dataset == d) & (condition == c)
            if mask.any():
                out[d][c] = construction_checks(similarity[mask], same[mask])
    return out


def _format_section(parse_status: list[str]) -> dict[str, Any]:
    counts = dict.fromkeys(PARSE_STATUSES, 0)
    for outcome in parse_status:
        counts[outcome] += 1
    replies = len(parse_status) - counts["missing"] - counts["failed"]
    parsed = sum(counts[t] for t in PARSED_STATUSES)
    return {"n_replies": replies, "n_parsed": parsed, "parse_rate": parsed / replies if replies else None,
            "n_unparsed": replies - parsed, "parse_status": counts}
