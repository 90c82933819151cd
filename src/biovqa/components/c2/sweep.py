"""Kernel sensitivity sweep of cags (paper App. I.1; paper I.1, Tables 56–57).

Every model is re-scored on one fixed family-stratified subsample (60 000 rows by default, the
same rows for every configuration and model) under eleven kernel configurations: the default
(τ = 30, α = 0.5, exponential colour kernel, letter wins, exact-match visibility kernel),
τ ∈ {20, 40, 50}, α ∈ {0.3, 0.4, 0.6, 0.7}, the linear colour kernel, "prefer text" and
"anat in vis". Each configuration is compared with the default over the scored models:

* Spearman ρ of the rankings (``1 − 6Σdᵢ²/(n(n²−1))`` without ties; average ranks otherwise),
* Kendall τ_b, displacement ``max |dᵢ|``, whether the top-3 set is unchanged,
* mean |Δ| = mean over models of ``|cags_c − cags_default|``.

The lead wires ``biovqa score BENCH -p P1 -p P2 … --sweep c2`` to :func:`run_sweep`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.bench.folder import Bench
from biovqa.bench.strata import largest_remainder
from biovqa.components.c2.cags import check_predictions, score_items
from biovqa.components.c2.context import family_codes
from biovqa.components.c2.tasks import FAMILIES
from biovqa.components.c2.kernels import KernelConfig

SUBSAMPLE_SIZE = 60_000
TOP_K = 3

SWEEP_CONFIGS: tuple[tuple[str, KernelConfig], ...] = (
    ("default", KernelConfig()),
    ("tau=20", KernelConfig(tau=20.0)),
    ("tau=40", KernelConfig(tau=40.0)),
    ("tau=50", KernelConfig(tau=50.0)),
    ("alpha=0.3", KernelConfig(alpha=0.3)),
    ("alpha=0.4", KernelConfig(alpha=0.4)),
    ("alpha=0.6", KernelConfig(alpha=0.6)),
    ("alpha=0.7", KernelConfig(alpha=0.7)),
    ("linear kernel", KernelConfig(colour_kernel="linear")),
    ("prefer text", KernelConfig(prefer_text=True)),
    ("anat in vis", KernelConfig(visibility_kernel="anatomy")),
)


def stratified_subsample(family_code: np.ndarray, size: int, seed: int = 42) -> np.ndarray:
    """Sorted row indices of a family-stratified sample of ``size`` rows without replacement:
    each family gets its proportional share (:func:`~biovqa.bench.strata.largest_remainder`,
    ties by family order), rows drawn with ``numpy.random.default_rng(seed)``. All rows if there
    are fewer."""
    n = len(family_code)
    if size >= n:
        return np.arange(n)
    families = sorted(set(family_code.tolist()))
    share = largest_remainder({f: int((family_code == f).sum()) for f in families}, size)
    rng = np.random.default_rng(seed)
    chosen = []
    for f, take in share.items():
        rows = np.flatnonzero(family_code == f)
        chosen.append(rng.choice(rows, size=min(int(take), len(rows)), replace=False))
    return np.sort(np.concatenate(chosen))


def _ranks(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """Rank 1 = highest score; tied models share the average of their positions."""
    from biovqa.stats.ranks import descending_ranks

    return descending_ranks(np.asarray(scores, dtype=float))


def rank_agreement(default_scores: Sequence[float], config_scores: Sequence[float],
                   top_k: int = TOP_K) -> dict[str, Any]:
    """Spearman ρ, Kendall τ_b, displacement, top-k stability and mean |Δ| between the
    models' default scores and their scores under one configuration (same model order).
    ρ and τ are None for fewer than two models; 0 where a ranking is constant [DEFAULT]."""
    from scipy.stats import kendalltau, spearmanr

    base = np.asarray(default_scores, dtype=float)
    other = np.asarray(config_scores, dtype=float)
    n = len(base)
    r0, rc = _ranks(base), _ranks(other)
    d = r0 - rc
    out: dict[str, Any] = {
        "displacement": float(np.abs(d).max()) if n else 0.0,
        "top3_stable": bool(set(np.flatnonzero(r0 <= top_k)) == set(np.flatnonzero(rc <= top_k))),
        "mean_abs_delta": float(np.abs(other - base).mean()) if n else 0.0,
    }
    if n < 2:
        out["spearman_rho"] = out["kendall_tau"] = None
    elif np.ptp(r0) == 0 or np.ptp(rc) == 0:
        out["spearman_rho"] = out["kendall_tau"] = 0.0
    else:
        ties = len(set(r0.tolist())) < n or len(set(rc.tolist())) < n
        out["spearman_rho"] = (float(spearmanr(r0, rc).statistic) if ties
                               else 1.0 - 6.0 * float((d**2).sum()) / (n * (n * n - 1)))
        out["kendall_tau"] = float(kendalltau(r0, rc, variant="b").statistic)
    return out


def run_sweep(bench: Bench, predictions_by_model: Mapping[str, pa.Table],
              options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Re-score every model under the eleven configurations on one fixed family-stratified
    subsample and compare each configuration's ranking with the default's.

    Options: ``sweep_size`` (60 000), ``seed`` (42). Returns::

        {"subsample": {"rows", "seed", "by_family"}, "models": [...],
         "scores": {config: {model: pooled cags}},
         "configs": [{"config", "spearman_rho", "kendall_tau", "displacement", "top3_stable",
                      "mean_abs_delta", "ranks": {model: rank}}]}
    """
    from biovqa.components.c2.score import load_context

    options = dict(options or {})
    size = int(options.get("sweep_size", SUBSAMPLE_SIZE))
    seed = int(options.get("seed", 42))
    items = bench.items
    for predictions in predictions_by_model.values():
        check_predictions(items, predictions)
    codes, _unknown = family_codes(items)
    rows = stratified_subsample(codes, size, seed)
    take = pa.array(rows)
    sub_items = items.take(take)
    context = load_context(bench)
    models = list(predictions_by_model)
    sub_predictions = {m: predictions_by_model[m].take(take) for m in models}
    scores: dict[str, dict[str, float]] = {}
    for name, config in SWEEP_CONFIGS:
        scores[name] = {}
        for model in models:
            table = score_items(sub_items, sub_predictions[model], context, config)
            scores[name][model] = float(np.mean(table.column("cags").to_numpy())) if len(rows) else float("nan")
    default = [scores["default"][m] for m in models]
    configs = []
    for name, _config in SWEEP_CONFIGS:
        values = [scores[name][m] for m in models]
        entry = {"config": name, **rank_agreement(default, values)}
        entry["ranks"] = {m: float(r) for m, r in zip(models, _ranks(values))}
        configs.append(entry)
    sub_codes = codes[rows]
    return {
        "subsample": {
            "rows": len(rows), "seed": seed,
            "by_family": {f: int((sub_codes == i).sum()) for i, f in enumerate(FAMILIES) if (sub_codes == i).any()},
        },
        "models": models,
        "scores": scores,
        "configs": configs,
    }
