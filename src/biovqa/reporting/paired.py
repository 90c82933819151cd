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
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from biovqa.reporting.leaderboard import GENERALIST, Run
from biovqa.stats import CONFIDENCE


#: a pair's differences count as few values when each distinct value stands for at least this
#: many items on average: then drawing class counts costs less than drawing every item
ITEMS_PER_VALUE = 16


def _scores(run: Run) -> tuple[pa.Array, np.ndarray] | None:
    """A run's item ids and headline scores, the first row of a repeated id only (in file order)."""
    if run.path is None or not (run.path / "items.parquet").is_file():
        return None
    table = pq.read_table(run.path / "items.parquet", columns=["item_id", "score"])
    ids = table.column("item_id").cast(pa.string()).combine_chunks()
    score = np.asarray(table.column("score").to_numpy(zero_copy_only=False), dtype=float)
    first = np.asarray(pc.index_in(ids, value_set=ids).to_numpy(zero_copy_only=False)) == np.arange(len(ids))
    if not first.all():
        ids, score = ids.filter(pa.array(first)), score[first]
    return ids, score


def _shared_difference(a: tuple[pa.Array, np.ndarray], b: tuple[pa.Array, np.ndarray]) -> np.ndarray:
    """``a − b`` over the items both have, in ``a``'s order, without items either scored NaN."""
    (ids_a, score_a), (ids_b, score_b) = a, b
    in_b = pc.index_in(ids_a, value_set=ids_b)
    shared = np.asarray(pc.is_valid(in_b).to_numpy(zero_copy_only=False), dtype=bool)
    rows_b = np.asarray(in_b.drop_null().to_numpy(), dtype=np.int64)
    diff = score_a[shared] - score_b[rows_b]
    return diff[~np.isnan(diff)]


def paired_differences(runs: Sequence[Run], order: Sequence[str], *, B: int = 1000, seed: int = 42,
                       confidence: float = CONFIDENCE) -> pd.DataFrame:
    """One row per component and adjacent pair of generalists (in ``order``): shared items, mean
    difference ``a − b`` of the item scores, its paired bootstrap interval and a verdict.

    The pairs of a component over the same number of items are bootstrapped together, one column
    each (:func:`biovqa.stats.bootstrap.partition_replicates`, one part): the resamples depend
    only on that number and the seed, so each pair gets the draws it would get alone, drawn once,
    and the resampled sums are float64. A pair whose differences take few distinct values (0/1
    item scores give −1, 0 and 1) is resampled alone as one multinomial over those values per
    replicate (``classes``): the same resampling distribution of the mean difference at a
    fraction of the cost (three counts per replicate instead of one per item), from its own
    stream, so its bounds differ from item-by-item draws by Monte Carlo noise only."""
    from biovqa.stats.bootstrap import partition_replicates, percentile_interval

    rows = []
    for component in sorted({r.component for r in runs}):
        by_name = {r.name: r for r in runs if r.component == component and r.kind == GENERALIST}
        names = [m for m in order if m in by_name]
        scores = {m: _scores(by_name[m]) for m in names}
        pairs: list[tuple[str, str, np.ndarray]] = []
        for a, b in zip(names, names[1:]):
            sa, sb = scores[a], scores[b]
            if sa is None or sb is None:
                continue
            diff = _shared_difference(sa, sb)
            if len(diff):
                pairs.append((a, b, diff))
        batches: dict[int, list[int]] = {}  # items → the pairs drawn together
        few_values: list[int] = []  # pairs resampled as one multinomial over their values
        for k, (_, _, diff) in enumerate(pairs):
            if len(pd.unique(diff)) * ITEMS_PER_VALUE <= len(diff):
                few_values.append(k)
            else:
                batches.setdefault(len(diff), []).append(k)
        bounds: dict[int, tuple[float, float]] = {}
        for members, classes in [*((members, False) for members in batches.values()),
                                 *(([k], True) for k in few_values)]:
            if B <= 0:
                bounds.update({k: (math.nan, math.nan) for k in members})
                continue
            n = len(pairs[members[0]][2])
            sums, counts = partition_replicates(np.column_stack([pairs[k][2] for k in members]),
                                                np.zeros(n, dtype=np.int64), 1, B=B, seed=seed, classes=classes)
            lo, hi = percentile_interval(sums[:, 0, :] / counts[:, :1], confidence)
            bounds.update({k: (float(lo[j]), float(hi[j])) for j, k in enumerate(members)})
        for k, (a, b, diff) in enumerate(pairs):
            d_lo, d_hi = bounds[k]
            verdict = "—" if math.isnan(d_lo) else ("tie" if d_lo <= 0 <= d_hi else ("a better" if d_lo > 0 else "b better"))
            rows.append({"component": component.upper(), "model_a": a, "model_b": b, "items": len(diff),
                         "difference": float(np.mean(diff)), "lo": d_lo, "hi": d_hi, "verdict": verdict})
    frame = pd.DataFrame(rows, columns=["component", "model_a", "model_b", "items", "difference", "lo", "hi",
                                        "verdict"])
    frame.attrs["title"] = ("Paired differences of adjacent models on shared items "
                            "(mean item score a − b, 95% paired bootstrap CI)")
    return frame
