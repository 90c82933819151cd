"""C4's Table 3 columns for the rank bootstrap (:mod:`biovqa.reporting.replicates`): the random
pairing condition pooled over datasets. d′ is recomputed from resampled counts — cells "same"
and "different" pairs, value = answered Yes (an unparsed reply counts as No), log-linear
corrected H and F as in :mod:`biovqa.components.c4.metrics`; accuracy is the mean of ``score``.

The C4 score's own intervals resample within every dataset × condition stratum; the rank
bootstrap resamples the random-condition items (pairs) as one pool so that all models share one
draw matrix — the method note of the rank table says so."""

from __future__ import annotations

import numpy as np
import pandas as pd

from biovqa.reporting.replicates import ColumnItems, mean_statistic
from biovqa.stats.inference import normal_quantile

METHOD = "bootstrap, shared draws: random-condition pairs resampled (unstratified); {} recomputed"


def dprime_statistic(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """d′ = z(H) − z(F) from (B × 2) Yes counts and pair counts, cells (different, same)."""
    if sums.shape[1] != 2:  # only one kind of pair among the shared items: d′ is undefined
        return np.full(sums.shape[0], np.nan)
    hit_rate = (sums[:, 1] + 0.5) / (counts[:, 1] + 1.0)
    false_alarm_rate = (sums[:, 0] + 0.5) / (counts[:, 0] + 1.0)
    return normal_quantile(hit_rate) - normal_quantile(false_alarm_rate)


def rank_inputs(items: pd.DataFrame) -> dict[str, ColumnItems]:
    """``dprime`` and ``acc`` → the random-condition items."""
    rows = items[items["condition"].astype(str) == "random"].copy()
    if rows.empty:
        return {}
    rows["side"] = np.where(rows["same"].astype(bool), "same", "different")
    rows["yes"] = rows["said_yes"].astype(float)
    return {"dprime": ColumnItems.of(rows, cluster="item_id", cell="side", value="yes", statistic=dprime_statistic,
                                     method=METHOD.format("d′")),
            "acc": ColumnItems.of(rows, cluster="item_id", cell=None, value="score", statistic=mean_statistic,
                                  method=METHOD.format("accuracy"))}
