"""C1's Table 3 columns for the rank bootstrap (:mod:`biovqa.reporting.replicates`): exact
match per question type, a plain mean of the per-item ``score`` (EM) over the type's items,
resampled by image (``source_id``) as the C1 intervals are."""

from __future__ import annotations

import pandas as pd

from biovqa.components.c1.tasks import TABLE3_COLUMNS
from biovqa.reporting.replicates import ColumnItems, mean_statistic

METHOD = "bootstrap, shared draws: images (source_id) resampled; EM recomputed (as scored)"


def rank_inputs(items: pd.DataFrame) -> dict[str, ColumnItems]:
    """Table 3 column → its items (cluster = source photo, one cell, value = EM)."""
    task = items["task"].astype(str)
    return {column: ColumnItems.of(items[task == name], cluster="source_id", cell=None, value="score",
                                   statistic=mean_statistic, method=METHOD)
            for column, name in TABLE3_COLUMNS.items() if (task == name).any()}
