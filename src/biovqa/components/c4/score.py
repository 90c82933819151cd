"""C4 scoring: the yes/no parser, signal-detection statistics per dataset × condition and pooled
over datasets, the difficulty-ordering check (paper appendix C, Tables 49–55; parser of appendix H.1).

``score(bench, predictions, options) -> ScoreResult`` is registered as
``biovqa.components.c4.score:score``. Options: ``bootstrap`` (default 2000, appendix L.3), ``seed``,
``level``.

Per-item table: the score schema's core columns (``parsed`` = ``yes``/``no`` or null, ``score`` =
1.0 when the reply is correct), then dataset, condition, same, gold, parse_tier, said_yes,
correct, similarity.

Summary::

    {
      "table3":   {dprime, acc: the random condition pooled over datasets},
      "pooled":   {easy|random|hard: <cell>} (counts summed over datasets) + c_mean_species,
      "cells":    {<dataset>: {easy|random|hard: <cell>}},
      "verdict":  Table 49's label from the random pooled d′ and c,
      "ordering": {per dataset and pooled: balanced accuracy per condition and whether
                   easy ≥ random ≥ hard; n_monotone / n_cells; easy − hard accuracy with its
                   Wald interval},
      "parse":    {n_replies, parse_rate, tiers: {strict, loose, …: count}},
      "bootstrap": {resamples, seed, level, unit: "items within dataset × condition"}
    }

``<cell>`` = hits, misses, same_unparsed, false_alarms, correct_rejections, different_unparsed,
n, n_same, n_different, H, F and the estimates dprime, c, acc, balanced_acc, mcc, kappa.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.bench.folder import Bench
from biovqa.components.registry import ScoreResult
from biovqa.scoring.schema import core_columns
from biovqa.components.c4.parser import PARSED_TIERS, TIERS, parse_reply, reply_similarity
from biovqa.components.c4.pairs import CONDITIONS, auc
from biovqa.components.c4.summary import auc_to_dprime, bootstrap_counts, cell_summary, verdict, wald_difference

__all__ = ["parse_items", "reply_similarities", "score", "stratum_counts"]


def _resolve(options: Mapping[str, Any] | None) -> dict[str, Any]:
    from biovqa.components.c4 import COMPONENT

    return COMPONENT.resolve_score_options(dict(options or {}))


def parse_items(responses: list[str | None], statuses: list[str]) -> tuple[list[str | None], list[str]]:
    """(parsed answer, tier) per item; each distinct reply is parsed once."""
    memo: dict[str | None, tuple[str | None, str]] = {}
    parsed: list[str | None] = []
    tiers: list[str] = []
    for response, status in zip(responses, statuses):
        if status != "ok":
            parsed.append(None)
            tiers.append("missing")
            continue
        if response not in memo:
            memo[response] = parse_reply(response)
        answer, tier = memo[response]
        parsed.append(answer)
        tiers.append(tier)
    return parsed, tiers


def stratum_counts(same: np.ndarray, parsed: list[str | None], strata: np.ndarray, n_strata: int) -> np.ndarray:
    """``n_strata × 6`` counts: same→yes/no/unparsed, different→yes/no/unparsed."""
    answer = np.array([2 if p is None else (0 if p == "yes" else 1) for p in parsed], dtype=np.int64)
    cell = np.where(same, 0, 3) + answer
    flat = np.bincount(strata * 6 + cell, minlength=n_strata * 6) if len(cell) else np.zeros(n_strata * 6, np.int64)
    return flat.reshape(n_strata, 6)


def score(bench: Bench, predictions: pa.Table, options: Mapping[str, Any] | None = None) -> ScoreResult:
    """Score C4 predictions (aligned with ``bench.items``): per-item table + summary."""
    options = _resolve(options)
    resamples, seed, level = int(options["bootstrap"]), int(options["seed"]), float(options["level"])
    items = bench.items
    responses = predictions.column("response").to_pylist()
    statuses = predictions.column("status").to_pylist()
    parsed, tiers = parse_items(responses, statuses)
    same = np.asarray(items.column("same").to_numpy(zero_copy_only=False), dtype=bool)
    gold = ["yes" if s else "no" for s in same.tolist()]
    correct = np.array([p is not None and p == g for p, g in zip(parsed, gold)], dtype=bool)
    said_yes = np.array([p == "yes" for p in parsed], dtype=bool)

    table = pa.table({
        **core_columns(items, predictions, component="c4", parsed=pa.array(parsed, pa.string()),
                       score=correct.astype(float)),
        "dataset": items.column("dataset"),
        "condition": items.column("condition"),
        "same": items.column("same"),
        "gold": pa.array(gold, pa.string()),
        "parse_tier": pa.array(tiers, pa.string()),
        "said_yes": pa.array(said_yes),
        "correct": pa.array(correct),
        "similarity": items.column("similarity"),
    })

    datasets_all = items.column("dataset").to_pylist()
    conditions_all = items.column("condition").to_pylist()
    datasets = _ordered(datasets_all)
    conditions = [c for c in CONDITIONS if c in set(conditions_all)]
    d_index = {d: i for i, d in enumerate(datasets)}
    c_index = {c: i for i, c in enumerate(conditions)}
    strata = np.array([d_index[d] * len(conditions) + c_index[c] for d, c in zip(datasets_all, conditions_all)],
                      dtype=np.int64)
    n_strata = len(datasets) * len(conditions)
    counts = stratum_counts(same, parsed, strata, n_strata)
    boot = bootstrap_counts(counts, resamples=resamples, seed=seed) if resamples > 0 else None

    cells: dict[str, dict[str, Any]] = {}
    for d, dataset in enumerate(datasets):
        cells[dataset] = {}
        for c, condition in enumerate(conditions):
            s = d * len(conditions) + c
            if counts[s].sum() == 0:
                continue
            cells[dataset][condition] = cell_summary(counts[s], None if boot is None else boot[:, s, :], level)
    pooled: dict[str, Any] = {}
    grid = counts.reshape(len(datasets), len(conditions), 6)
    boot_grid = None if boot is None else boot.reshape(resamples, len(datasets), len(conditions), 6)
    for c, condition in enumerate(conditions):
        summed = grid[:, c, :].sum(axis=0)
        entry = cell_summary(summed, None if boot_grid is None else boot_grid[:, :, c, :].sum(axis=1), level)
        per_species = [cells[d][condition]["c"]["value"] for d in datasets if condition in cells[d]]
        per_species = [v for v in per_species if v is not None]
        entry["c_mean_species"] = float(np.mean(per_species)) if per_species else None
        entry["n_datasets"] = sum(1 for d in datasets if condition in cells[d])
        pooled[condition] = entry

    similarity = reply_similarities(responses, statuses)
    decision_variable = None
    if similarity is not None:
        decision_variable = _similarity_section(similarity, same, strata, datasets, conditions, cells, pooled,
                                                resamples=resamples, seed=seed, level=level)
    random_pooled = pooled.get("random")
    table3 = {}
    if random_pooled is not None:
        # a run that carries its decision variable (the specialist) reports √2·z(AUC), as Table 3
        # does for MegaDescriptor; every other run the d′ of its Yes/No replies
        dprime_key = "dprime_auc" if decision_variable is not None else "dprime"
        table3 = {"dprime": random_pooled[dprime_key], "acc": random_pooled["acc"]}
    summary = {
        "table3": table3,
        "pooled": pooled,
        "cells": cells,
        "verdict": None if random_pooled is None else verdict(random_pooled["dprime"]["value"],
                                                             random_pooled["c"]["value"]),
        "ordering": _ordering(cells, pooled),
        "parse": _parse_section(tiers),
        "construction_checks": _construction_checks(items, datasets, conditions),
        "bootstrap": {"resamples": resamples, "seed": seed, "level": level,
                      "unit": "items within dataset × condition"},
        "datasets": datasets,
    }
    if decision_variable is not None:
        summary["decision_variable"] = decision_variable
    return ScoreResult(items=table, summary=summary)


def reply_similarities(responses: list[str | None], statuses: list[str]) -> np.ndarray | None:
    """The similarity each reply carries (:data:`~biovqa.components.c4.parser.SIMILARITY_REPLY`;
    NaN where there is no reply), or None unless every reply carries one."""
    values = np.full(len(responses), np.nan)
    answered = 0
    for k, (response, status) in enumerate(zip(responses, statuses)):
        if status != "ok":
            continue
        value = reply_similarity(response)
        if value is None:
            return None
        values[k] = value
        answered += 1
    return values if answered else None


def _auc_estimate(similarity: np.ndarray, same: np.ndarray, rows: np.ndarray, *, resamples: int,
                  rng: np.random.Generator, level: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """AUC and √2·z(AUC) of ``rows`` (items with a similarity), with percentile intervals from
    resampling those items (B = ``resamples``)."""
    from biovqa.scoring.schema import estimate

    rows = rows[~np.isnan(similarity[rows])]

    def both(index: np.ndarray) -> tuple[float, float]:
        value = auc(similarity[index], same[index])
        return value, (auc_to_dprime(value) if 0.0 < value < 1.0 else float("nan"))

    value, dprime = both(rows) if len(rows) else (float("nan"), float("nan"))
    lo_hi: list[tuple[float | None, float | None]] = [(None, None), (None, None)]
    if resamples > 0 and len(rows):
        draws = np.array([both(rows[rng.integers(0, len(rows), len(rows))]) for _ in range(resamples)])
        for k in range(2):
            finite = draws[:, k][np.isfinite(draws[:, k])]
            if len(finite):
                lo, hi = np.percentile(finite, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
                lo_hi[k] = (float(lo), float(hi))
    n = int(len(rows))
    return estimate(float(value), *lo_hi[0], n=n), estimate(float(dprime), *lo_hi[1], n=n)


def _similarity_section(similarity: np.ndarray, same: np.ndarray, strata: np.ndarray, datasets: list[str],
                        conditions: list[str], cells: dict[str, Any], pooled: dict[str, Any], *,
                        resamples: int, seed: int, level: float) -> dict[str, Any]:
    """Add ``auc`` and ``dprime_auc`` (√2·z(AUC), appendix B "MegaDescriptor for C4") to every cell
    and pooled condition; pooled over datasets = the AUC of all that condition's items (the paper
    runs the specialist on one dataset, where pooled and per-dataset agree)."""
    rng = np.random.default_rng([seed, 4])
    for d, dataset in enumerate(datasets):
        for c, condition in enumerate(conditions):
            if condition in cells[dataset]:
                rows = np.flatnonzero(strata == d * len(conditions) + c)
                cells[dataset][condition]["auc"], cells[dataset][condition]["dprime_auc"] = _auc_estimate(
                    similarity, same, rows, resamples=resamples, rng=rng, level=level)
    for c, condition in enumerate(conditions):
        rows = np.flatnonzero(strata % len(conditions) == c)
        pooled[condition]["auc"], pooled[condition]["dprime_auc"] = _auc_estimate(
            similarity, same, rows, resamples=resamples, rng=rng, level=level)
    return {"name": "cosine similarity carried by every reply", "dprime": "sqrt(2) * z(AUC)",
            "table3_dprime": "dprime_auc of the random condition, pooled"}


def _ordered(values: list[str]) -> list[str]:
    from biovqa.components.c4.build import DATASETS

    present = set(values)
    return [d for d in DATASETS if d in present] + sorted(present - set(DATASETS))


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
    from biovqa.components.c4.build import construction_checks

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


def _parse_section(tiers: list[str]) -> dict[str, Any]:
    counts = dict.fromkeys(TIERS, 0)
    for tier in tiers:
        counts[tier] += 1
    replies = len(tiers) - counts["missing"]
    parsed = sum(counts[t] for t in PARSED_TIERS)
    return {"n_replies": replies, "n_parsed": parsed, "parse_rate": parsed / replies if replies else None,
            "n_unparsed": replies - parsed, "tiers": counts}
