"""C2 scoring: the five-step parser, the six similarity kernels, the naming kernels, cags and
its companions (metrics.md §3; prompts.md §6.3).

``score(bench, predictions, options) -> ScoreResult`` is registered as ``biovqa.score.c2:score``.

Options (all optional): ``bootstrap`` (resamples, 1000), ``seed`` (42), ``level`` (0.95),
``prefer_text`` (False: the letter wins a letter–text mismatch), ``tau`` (30), ``alpha`` (0.5),
``colour_kernel`` ("exponential" | "linear"), ``visibility_kernel`` ("exact" | "anatomy").

Per-item table columns: item_id, family, category, gold, pred, gold_letter, pred_letter,
parse_status (parsed / mismatch / fuzzy / failed / missing), response_status, em, s, b, cags,
severity.

Summary shape (JSON-able; every mean is item-weighted; ``*_ci`` = [lo, hi] 95 % percentile
bootstrap over items)::

    {
      "component": "c2", "n_items": int,
      "options": {bootstrap, seed, prefer_text, tau, alpha, colour_kernel, visibility_kernel},
      "pooled":     {n, cags, cags_ci, em, em_ci, gs_raw, gs_raw_ci, severity, n_wrong},
      "categories": {morphological|relative_salience|anatomical|naming: <same as pooled>},
      "families":   {<family>: <same as pooled> + category, n_replies, n_missing,
                     n_failed_requests, n_parse_failed, n_fuzzy, n_mismatch, parse_rate,
                     mismatch_rate, choose_a_rate},
      "format":     {parse_rate, mismatch_rate, choose_a_rate, em_mcq, em_open, n_mcq, n_open,
                     n_replies, n_missing, n_failed_requests, n_parse_failed, n_fuzzy, n_mismatch},
      "laterality": {n_lateral, n_mirror_offered, mirror_confusion_rate, mirror_baseline,
                     n_part_named, laterality_given_part, laterality_chance,
                     laterality_p_below_chance, laterality_below_chance},
      "bootstrap":  {resamples, seed, level, unit: "items"}
    }

Rates are fractions in [0, 1] (reports print percentages); families without items are absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from ...components import ScoreResult
from ...manifests.bench import Bench
from .aggregate import summarize
from .cags import C2Context, score_items
from .kernels import KernelConfig, PartLayout

PART_LAYOUT_FILE = Path("c2") / "part_layout.json"

__all__ = ["C2Context", "KernelConfig", "kernel_config", "load_context", "score"]


def kernel_config(options: Mapping[str, Any] | None = None) -> KernelConfig:
    """The kernel configuration named by scoring options (defaults = the paper's)."""
    options = options or {}
    defaults = KernelConfig()
    return KernelConfig(
        tau=float(options.get("tau", defaults.tau)),
        alpha=float(options.get("alpha", defaults.alpha)),
        colour_kernel=str(options.get("colour_kernel", defaults.colour_kernel)),
        prefer_text=bool(options.get("prefer_text", defaults.prefer_text)),
        visibility_kernel=str(options.get("visibility_kernel", defaults.visibility_kernel)),
    )


def load_context(bench: Bench) -> C2Context:
    """Scoring context of a C2 benchmark folder: part layout (if written) + name index + gold pools."""
    layout_path = bench.root / PART_LAYOUT_FILE
    layout = PartLayout.from_file(layout_path) if layout_path.exists() else None
    return C2Context.from_items(bench.items, layout)


def score(bench: Bench, predictions: pa.Table, options: Mapping[str, Any] | None = None
          ) -> ScoreResult:
    """Score C2 predictions (aligned with ``bench.items``): per-item table + summary."""
    options = dict(options or {})
    config = kernel_config(options)
    resamples = int(options.get("bootstrap", 1000))
    seed = int(options.get("seed", 42))
    level = float(options.get("level", 0.95))
    items = bench.items
    context = load_context(bench)
    table = score_items(items, predictions, context, config)
    option_lists = None
    if "marker_localization" in set(table.column("family").unique().to_pylist()):
        option_lists = _marker_options(items, table)
    summary = summarize(table, options=option_lists, resamples=resamples, seed=seed, level=level)
    summary["options"] = {
        "bootstrap": resamples, "seed": seed, "prefer_text": config.prefer_text,
        "tau": config.tau, "alpha": config.alpha, "colour_kernel": config.colour_kernel,
        "visibility_kernel": config.visibility_kernel,
    }
    return ScoreResult(items=table, summary=summary)


def _marker_options(items: pa.Table, table: pa.Table) -> list[Any]:
    """Option lists of marker_localization rows (None elsewhere) for the laterality analysis."""
    import numpy as np
    import pyarrow.compute as pc

    mask = pc.equal(table.column("family"), "marker_localization").to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(mask)
    out: list[Any] = [None] * items.num_rows
    for row, opts in zip(rows, items.column("options").take(pa.array(rows)).to_pylist()):
        out[row] = opts
    return out
