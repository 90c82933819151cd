"""Does Bio-VQA-Lite rank the models as the full benchmark does? (paper Conclusion, Bio-VQA-Lite: a
subset is only useful if it orders the models as the full benchmark does)

Given score folders of a full run and of a Lite run (benchmark manifest generator
``biovqa.lite``) of the same models, :func:`full_vs_lite` builds Table 3 from each and gives,
per Table 3 column, the Spearman ρ (average ranks) between the generalists' full and Lite
values over the models that have both, and the same for each model's mean over the columns
that every compared model has in both runs (the "Mean" row).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from biovqa.reporting.leaderboard import Run, build_leaderboard

MEAN_ROW = "Mean"


def _rho(a: np.ndarray, b: np.ndarray) -> float:
    from biovqa.stats.ranks import spearman_matrix

    if len(a) < 3 or np.all(a == a[0]) or np.all(b == b[0]):
        return math.nan
    return float(spearman_matrix(np.column_stack([a, b]))[0, 1])


def full_vs_lite(full: Sequence[Run], lite: Sequence[Run]) -> pd.DataFrame:
    """One row per Table 3 column present in both (then ``Mean``): component, the number of
    models compared, Spearman ρ of full vs Lite (NaN with fewer than 3 models or no spread)."""
    from biovqa.components.registry import component_rank, get_component

    names = sorted({r.component for r in [*full, *lite]}, key=component_rank)
    columns = {c: list(get_component(c).table3) for c in names if get_component(c).table3}
    a, b = build_leaderboard(full, columns), build_leaderboard(lite, columns)
    models = [m for m in a.generalists if m in set(b.generalists)]
    rows = []
    used = []
    for component, cols in columns.items():
        for column in cols:
            x, y = a.value.loc[models, column], b.value.loc[models, column]
            both = x.notna() & y.notna()
            if not both.any():
                continue
            if both.all():
                used.append(column)
            rows.append({"column": column, "component": component.upper(), "models": int(both.sum()),
                         "spearman_rho": _rho(x[both].to_numpy(), y[both].to_numpy())})
    if used and models:
        x, y = a.value.loc[models, used].mean(axis=1), b.value.loc[models, used].mean(axis=1)
        rows.append({"column": MEAN_ROW, "component": "all", "models": len(models),
                     "spearman_rho": _rho(x.to_numpy(), y.to_numpy())})
    frame = pd.DataFrame(rows, columns=["column", "component", "models", "spearman_rho"]).set_index("column")
    frame.attrs["title"] = ("Full vs Lite: Spearman ρ between the models' full-benchmark and Lite scores "
                            "(Mean = each model's mean over the columns both runs hold)")
    return frame


__all__ = ["full_vs_lite"]
