"""C2's Table 3 columns for the rank bootstrap (:mod:`biovqa.reporting.replicates`): cags of a
category is the item-weighted mean of the per-item cags over the category's families (the C2
summary's definition), resampled by item as the C2 intervals are."""

from __future__ import annotations

import pandas as pd

from biovqa.components.c2.tasks import CATEGORY_OF, TABLE3_COLUMNS
from biovqa.reporting.replicates import ColumnItems, mean_statistic

METHOD = "bootstrap, shared draws: items resampled; category cags recomputed (as scored)"


def rank_inputs(items: pd.DataFrame) -> dict[str, ColumnItems]:
    """Table 3 column → its items (cluster = item, one cell, value = cags)."""
    category = items["family"].astype(str).map(CATEGORY_OF)
    return {column: ColumnItems.of(items[category == name], cluster="item_id", cell=None, value="cags",
                                   statistic=mean_statistic, method=METHOD)
            for column, name in TABLE3_COLUMNS.items() if (category == name).any()}
