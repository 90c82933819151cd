"""Paired model differences on shared items: is a model's lead over the next one real?

For each component and each pair of generalists adjacent in the Table 3 order, the per-item
headline ``score`` (the ``score`` column of ``SCORES/items.parquet``) of both models is joined on
``item_id``; the difference of means over the items both have a score for gets a paired percentile
bootstrap interval (items resampled together for both models; :mod:`biovqa.stats.bootstrap`). An
interval that excludes 0 marks a real difference; one that covers 0 is a tie on these items.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from biovqa.reporting.leaderboard import GENERALIST, Run


def _scores(run: Run) -> pd.Series | None:
    import pyarrow.parquet as pq

    if run.path is None or not (run.path / "items.parquet").is_file():
        return None
    table = pq.read_table(run.path / "items.parquet", columns=["item_id", "score"])
    series = pd.Series(table.column("score").to_numpy(zero_copy_only=False), dtype=float,
                       index=table.column("item_id").to_pylist())
    return series[~series.index.duplicated()]


def paired_differences(runs: Sequence[Run], order: Sequence[str], *, B: int = 1000, seed: int = 42,
                       level: float = 0.95) -> pd.DataFrame:
    """One row per component and adjacent pair of generalists (in ``order``): shared items, mean
    difference ``a − b`` of the item scores, its paired bootstrap interval and a verdict."""
    from biovqa.stats.bootstrap import item_bootstrap_means

    rows = []
    for component in sorted({r.component for r in runs}):
        by_name = {r.name: r for r in runs if r.component == component and r.kind == GENERALIST}
        names = [m for m in order if m in by_name]
        scores = {m: _scores(by_name[m]) for m in names}
        for a, b in zip(names, names[1:]):
            sa, sb = scores[a], scores[b]
            if sa is None or sb is None:
                continue
            shared = sa.index.intersection(sb.index)
            diff = (sa.loc[shared] - sb.loc[shared]).dropna().to_numpy()
            if len(diff) == 0:
                continue
            lo, hi = item_bootstrap_means(diff, B=B, seed=seed, level=level)
            d_lo, d_hi = float(lo[0]), float(hi[0])
            verdict = "—" if math.isnan(d_lo) else ("tie" if d_lo <= 0 <= d_hi else ("a better" if d_lo > 0 else "b better"))
            rows.append({"component": component.upper(), "model_a": a, "model_b": b, "items": len(diff),
                         "difference": float(np.mean(diff)), "lo": d_lo, "hi": d_hi, "verdict": verdict})
    frame = pd.DataFrame(rows, columns=["component", "model_a", "model_b", "items", "difference", "lo", "hi",
                                        "verdict"])
    frame.attrs["title"] = ("Paired differences of adjacent models on shared items "
                            "(mean item score a − b, 95% paired bootstrap CI)")
    return frame
