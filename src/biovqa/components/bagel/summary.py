"""BAGEL aggregation: item-weighted accuracies per domain, dimension, difficulty tier and meta
group, the format diagnostics, the empirical random guess and the permutation-robustness check (the
BAGEL paper's Table 4; the robustness check is biovqa's).

``summarize(scored, items, options) -> dict`` reads the per-item table of :mod:`.score`. Every
accuracy is item-weighted; every estimate ``{value, lo, hi, n}`` with a percentile bootstrap over
items::

    {
      "table3":     {bagel: overall, globi, wiki, biorxiv, xeno: domain accuracies},
      "overall":    estimate,
      "domains":    {<domain>: estimate},
      "dimensions": {"<domain> / <dimension>": estimate},
      "tiers":      {easy|medium|hard: estimate},
      "groups":     {<meta key>: {<value>: estimate}},
      "format":     {parse_failure_rate: estimate, letter_histogram: {A..D: fraction of parsed},
                     n_parsed, n_unparsed, n_missing, n_failed_requests},
      "gold_positions": {A..D: fraction of items},
      "random_baseline": {analytic: 0.25, empirical: estimate (one seeded uniform letter per item),
                          domains: {<domain>: estimate}, seed},
      "robustness": {reference, accuracy, reference_accuracy, delta, agreement, n}   (with -O reference=…)
      "bootstrap":  {B, seed, confidence, cluster: "items"}
    }
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.components.bagel.floor import random_letter
from biovqa.components.bagel.items import TIERS
from biovqa.components.bagel.metrics import (ANALYTIC_RANDOM_BASELINE, gold_positions, letter_histogram,
                                             permutation_agreement)
from biovqa.components.bagel.tasks import DOMAINS, OVERALL_COLUMN, TASKS
from biovqa.errors import BiovqaError
from biovqa.scoring.schema import estimate
from biovqa.stats.bootstrap import bootstrap_means

#: meta keys with more distinct values than this are not grouped unless asked for.
MAX_AUTO_GROUP_VALUES = 50


def _groups(items: pa.Table, wanted: list[str]) -> dict[str, list[str | None]]:
    metas = [json.loads(text) if text else {} for text in items.column("meta").to_pylist()]
    keys = sorted({key for meta in metas for key in meta})
    out: dict[str, list[str | None]] = {}
    for key in wanted or keys:
        values = [None if meta.get(key) is None else str(meta[key]) for meta in metas]
        if wanted and key not in keys:
            raise BiovqaError(f"no item has the meta key {key!r}", field="group_by",
                              hint="meta keys present: " + (", ".join(keys) or "none"))
        if not wanted and len({v for v in values if v is not None}) > MAX_AUTO_GROUP_VALUES:
            continue
        out[key] = values
    return out


def summarize(scored: pa.Table, items: pa.Table, options: Mapping[str, Any]) -> dict[str, Any]:
    """The BAGEL summary (see the module docstring) from the per-item table of :func:`.score.score_items`."""
    B, seed, confidence = int(options["bootstrap"]), int(options["seed"]), float(options["confidence"])
    random_seed = int(options["random_seed"])
    group_by = [key.strip() for key in str(options["group_by"]).split(",") if key.strip()]
    table = scored
    correct = np.asarray(table.column("correct").to_pylist(), dtype=np.float64)
    n = len(correct)
    statuses = table.column("status").to_pylist()
    parse_status = table.column("parse_status").to_pylist()
    unparsed = np.array([1.0 if p == "unparsed" else 0.0 for p in parse_status])
    item_ids = items.column("item_id").to_pylist()
    gold = items.column("answer").to_pylist()
    guess = np.array([float(random_letter(i, random_seed) == g) for i, g in zip(item_ids, gold)])
    # every statistic is a column of one matrix (NaN = item not in it): one bootstrap for all
    names: list[tuple[str, ...]] = []
    columns: list[np.ndarray] = []

    def add(name: tuple[str, ...], values: np.ndarray, mask: np.ndarray | None = None) -> None:
        names.append(name)
        columns.append(values if mask is None else np.where(mask, values, np.nan))

    add(("overall",), correct)
    replied = np.array([s == "ok" for s in statuses])
    add(("parse_failure_rate",), unparsed, replied)
    add(("random",), guess)
    domain = np.array(table.column("domain").to_pylist(), dtype=object)
    present = [d for d in DOMAINS if d in set(domain)]
    for d in present:
        add(("domains", d), correct, domain == d)
        add(("random_domains", d), guess, domain == d)
    dimension = table.column("dimension").to_pylist()
    for pair in sorted({(d, m) for d, m in zip(domain, dimension) if m is not None}):
        add(("dimensions", f"{pair[0]} / {pair[1]}"), correct,
            np.array([(d, m) == pair for d, m in zip(domain, dimension)]))
    tiers = np.array(table.column("tier").to_pylist(), dtype=object)
    for tier in TIERS:
        if tier in set(tiers):
            add(("tiers", tier), correct, tiers == tier)
    for meta_key, meta_values in _groups(items, group_by).items():
        array = np.array(meta_values, dtype=object)
        for meta_value in sorted({v for v in meta_values if v is not None}):
            add(("groups", meta_key, meta_value), correct, array == meta_value)
    matrix = np.column_stack(columns) if n else np.empty((0, len(columns)))
    counts = (~np.isnan(matrix)).sum(axis=0)
    if B > 0 and n:
        result = bootstrap_means(matrix, np.arange(n), B=B, seed=seed, confidence=confidence)
        values, lows, highs = result.estimate, result.lo, result.hi
    else:
        with np.errstate(invalid="ignore"):
            values = np.nanmean(matrix, axis=0) if n else np.full(len(columns), np.nan)
        lows = highs = np.full(len(columns), np.nan)
    estimates = {name: estimate(v, lo if B else None, hi if B else None, n=int(k))
                 for name, v, lo, hi, k in zip(names, values, lows, highs, counts)}

    def section(prefix: str) -> dict[str, Any]:
        return {name[1]: est for name, est in estimates.items() if name[0] == prefix and len(name) == 2}

    groups: dict[str, dict[str, Any]] = {}
    for stat, est in estimates.items():
        if stat[0] == "groups":
            groups.setdefault(stat[1], {})[stat[2]] = est
    domains = section("domains")
    parsed_letters = table.column("parsed").to_pylist()
    summary = {
        "table3": {OVERALL_COLUMN: estimates[("overall",)],
                   **{spec.table3: domains.get(spec.name, estimate(float("nan"), n=0)) for spec in TASKS}},
        "overall": estimates[("overall",)],
        "domains": domains,
        "dimensions": section("dimensions"),
        "tiers": section("tiers"),
        "groups": groups,
        "format": {
            "parse_failure_rate": estimates[("parse_failure_rate",)],
            "letter_histogram": letter_histogram(parsed_letters),
            "n_parsed": parse_status.count("parsed"),
            "n_unparsed": int(unparsed.sum()),
            "n_missing": statuses.count("missing"),
            "n_failed_requests": statuses.count("failed"),
        },
        "gold_positions": gold_positions(gold),
        "random_baseline": {"analytic": ANALYTIC_RANDOM_BASELINE, "empirical": estimates[("random",)],
                            "domains": section("random_domains"), "seed": random_seed},
        "bootstrap": {"B": B, "seed": seed, "confidence": confidence, "cluster": TASKS[0].cluster},
    }
    if options["reference"]:
        summary["robustness"] = robustness(table, items, Path(options["reference"]))
    return summary


def robustness(table: pa.Table, items: pa.Table, reference: Path) -> dict[str, Any]:
    """Compare with the reference score folder (the same model on the unpermuted bench): accuracy
    delta and the share of items on which both runs chose the same option text (biovqa's option-permutation check)."""
    import pyarrow.parquet as pq

    from biovqa.scoring.pipeline import SCORE_ITEMS_FILE

    path = reference / SCORE_ITEMS_FILE if reference.is_dir() else reference
    if not path.is_file():
        raise BiovqaError("no BAGEL score items here (score the unpermuted run first)", file=path,
                          field="reference")
    ref = pq.read_table(path, columns=["item_id", "component", "chosen", "correct"])
    if set(ref.column("component").to_pylist()) != {"bagel"}:
        raise BiovqaError("not a BAGEL score folder", file=path, field="reference")
    by_id = dict(zip(ref.column("item_id").to_pylist(), zip(ref.column("chosen").to_pylist(),
                                                            ref.column("correct").to_pylist())))
    sources = items.column("source_id").to_pylist()
    missing = [s for s in sources if s not in by_id]
    if missing:
        raise BiovqaError(f"{len(missing)} items are not in the reference run (first {missing[0]!r})",
                          file=path, field="reference")
    chosen = table.column("chosen").to_pylist()
    reference_chosen = [by_id[s][0] for s in sources]
    accuracy = float(np.mean(table.column("correct").to_pylist()))
    reference_accuracy = float(np.mean([by_id[s][1] for s in sources]))
    return {"reference": str(reference), "accuracy": accuracy, "reference_accuracy": reference_accuracy,
            "delta": accuracy - reference_accuracy,
            "agreement": permutation_agreement(chosen, reference_chosen), "n": len(sources)}


__all__ = ["robustness", "summarize"]
