"""C3's Table 3 columns for the rank bootstrap (:mod:`biovqa.reporting.replicates`).

Every C3 headline is a mean of the per-item ``score`` or a macro mean of it over groups, so each
is recomputed exactly from resampled per-group sums: counting = macro over subsets of cas;
relative counting, relative distance and relative position = balanced accuracy (macro over gold
answers of correctness); viewpoint = macroVAS (macro over gold viewpoints of the ring credit);
absolute distance (acc@20), localization (meanIoU_all) and OCR (EM) = plain means. Each task's
spec record (:mod:`.tasks`) says which groups (``macro_over``) and which clusters (``cluster``: the
source photograph / plate for counting and absolute distance, the item elsewhere, as the C3
intervals resample)."""

from __future__ import annotations

import pandas as pd

from biovqa.components.c3.tasks import TASKS
from biovqa.reporting.replicates import ColumnItems, macro_statistic, mean_statistic


def rank_inputs(items: pd.DataFrame) -> dict[str, ColumnItems]:
    """Table 3 column → its items (cluster per task, cells = the macro groups)."""
    out = {}
    task = items["task"].astype(str)
    for spec in TASKS:
        rows = items[task == spec.name]
        if rows.empty:
            continue
        group = spec.macro_over
        unit = "photos/plates" if spec.clustered else "items"
        what = f"macro over {group} recomputed" if group else "mean recomputed"
        out[spec.column] = ColumnItems.of(rows, cluster=spec.cluster, cell=group, value="score",
                                          statistic=macro_statistic if group else mean_statistic,
                                          method=f"bootstrap, shared draws: {unit} resampled; {what} (as scored)")
    return out
