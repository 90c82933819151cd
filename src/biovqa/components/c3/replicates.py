"""C3's Table 3 columns for the rank bootstrap (:mod:`biovqa.reporting.replicates`).

Every C3 headline is a mean of the per-item ``score`` or a macro mean of it over groups, so each
is recomputed exactly from resampled per-group sums: counting = macro over subsets of cas;
relative counting, relative distance and relative position = balanced accuracy (macro over gold
answers of correctness); viewpoint = macroVAS (macro over gold viewpoints of the ring credit);
absolute distance (acc@20), localization (meanIoU_all) and OCR (EM) = plain means. Clusters are
the ones the C3 intervals resample: the source photograph / plate for counting and absolute
distance, the item elsewhere (:data:`biovqa.components.c3.summary.CLUSTER_TASKS`)."""

from __future__ import annotations

import pandas as pd

from biovqa.components.c3.summary import CLUSTER_TASKS
from biovqa.components.c3.tasks import TABLE3
from biovqa.reporting.replicates import ColumnItems, macro_statistic, mean_statistic

#: task → the column whose groups the headline macro-averages (None: a plain mean)
MACRO_OVER: dict[str, str | None] = {
    "counting": "subset", "relative_counting": "gold", "relative_distance": "gold", "relative_position": "gold",
    "viewpoint": "gold", "absolute_distance": None, "localization": None, "ocr": None,
}


def rank_inputs(items: pd.DataFrame) -> dict[str, ColumnItems]:
    """Table 3 column → its items (cluster per task, cells = the macro groups)."""
    out = {}
    task = items["task"].astype(str)
    for column, name in TABLE3.items():
        rows = items[task == name]
        if rows.empty:
            continue
        group = MACRO_OVER[name]
        unit = "photos/plates" if name in CLUSTER_TASKS else "items"
        what = f"macro over {group} recomputed" if group else "mean recomputed"
        out[column] = ColumnItems.of(rows, cluster="cluster" if name in CLUSTER_TASKS else "item_id", cell=group,
                                     value="score", statistic=macro_statistic if group else mean_statistic,
                                     method=f"bootstrap, shared draws: {unit} resampled; {what} (as scored)")
    return out
