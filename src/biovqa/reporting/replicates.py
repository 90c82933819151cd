"""Rank intervals of Table 3 from the bootstrap, with one set of resamples shared by all models.

Bootstrap draws are deterministic given the seed and the sorted cluster labels
(:mod:`biovqa.stats.bootstrap`), so models scored on the same benchmark can be resampled
*together*: for each component, the items every generalist has a score for are taken, their
clusters (images, plates or the items themselves — as the component's own intervals resample)
are numbered in sorted label order, and one ``B × clusters`` draw-count matrix ``W`` serves every
model and every Table 3 column. A replicate of a column's statistic is computed from the
resampled per-cell sums and counts (``W @ S``, ``W @ N``); ranking the models within each
replicate gives each model's rank distribution: the 95% rank interval (2.5% and 97.5% quantiles
of its rank, 1 = best) and P(best), the share of replicates in which it ranks first (ties share
the better rank).

A component states how each of its Table 3 columns is recomputed from its score folder's
``items.parquet`` through two fields of its :class:`~biovqa.components.Component`::

    rank_inputs="module:function"   # function(items: pandas.DataFrame) -> dict[str, ColumnItems]
    rank_columns=(…)                # the items.parquet columns the function reads

A :class:`ColumnItems` lists, per item that enters the column: its id, cluster, cell (a group
of a macro average, the signal/noise side of a d′, or one cell for a plain mean) and value, and
the statistic that turns per-cell sums and counts into the column's value. A column without
such inputs for every generalist keeps the interval-overlap rank range
(:mod:`biovqa.reporting.leaderboard`), and the table note says which method each column used.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from biovqa.stats import CONFIDENCE
from biovqa.stats.ranks import rank_distribution

#: Replicates of the rank bootstrap (its confidence: :data:`biovqa.stats.CONFIDENCE`)
RANK_B = 1000

if TYPE_CHECKING:
    from biovqa.reporting.leaderboard import Run

Statistic = Callable[[np.ndarray, np.ndarray], np.ndarray]


def mean_statistic(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Σ value / Σ items over all cells (a plain mean); NaN without items."""
    top, bottom = sums.sum(axis=1), counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), np.nan)


def macro_statistic(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Mean over the cells that hold items of the cell means (balanced accuracy, macro cas, …)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.where(counts > 0, counts, 1), np.nan)
        present = counts > 0
        total = np.where(present, means, 0.0).sum(axis=1)
        k = present.sum(axis=1)
        return np.where(k > 0, total / np.where(k > 0, k, 1), np.nan)


@dataclass(frozen=True)
class ColumnItems:
    """The items of one Table 3 column of one score folder, as the rank bootstrap needs them."""

    item_id: np.ndarray
    cluster: np.ndarray
    cell: np.ndarray
    value: np.ndarray
    statistic: Statistic
    method: str

    @classmethod
    def of(cls, frame: pd.DataFrame, *, cluster: str, cell: str | None, value: str, statistic: Statistic,
           method: str) -> "ColumnItems":
        """From ``frame`` columns: item ids, the cluster column, the cell column (None: one
        cell), the value column (NaN = not in the statistic)."""
        cells = np.zeros(len(frame), dtype=object) if cell is None else frame[cell].astype(str).to_numpy(dtype=object)
        return cls(frame["item_id"].astype(str).to_numpy(dtype=object),
                   frame[cluster].astype(str).to_numpy(dtype=object), cells,
                   frame[value].to_numpy(dtype=np.float64, na_value=np.nan), statistic, method)


@dataclass(frozen=True)
class RankIntervals:
    """Per column (frame column) and generalist (frame index): rank interval and P(best)."""

    rank_lo: pd.DataFrame
    rank_hi: pd.DataFrame
    p_best: pd.DataFrame
    methods: dict[str, str]
    B: int
    seed: int


@dataclass(frozen=True)
class RankSource:
    """How a component's Table 3 columns are recomputed from a score folder's items."""

    columns: tuple[str, ...]
    rank_inputs: Callable[[pd.DataFrame], dict[str, "ColumnItems"]]


def rank_source(component: str) -> RankSource | None:
    """The registered component's ``rank_inputs`` and ``rank_columns``; None when it has none."""
    from biovqa.components.registry import list_components

    found = next((c for c in list_components() if c.name == component), None)
    if found is None or found.rank_inputs is None:
        return None
    return RankSource(found.rank_columns, found.load("rank_inputs"))


def _inputs(path: Path | None, source: RankSource) -> dict[str, ColumnItems] | None:
    import pyarrow.parquet as pq

    file = None if path is None else Path(path) / "items.parquet"
    if file is None or not file.is_file() or not set(source.columns) <= set(pq.read_schema(file).names):
        return None
    frame = pq.read_table(file, columns=list(source.columns)).to_pandas()
    return source.rank_inputs(frame.drop_duplicates("item_id", keep="first"))


def column_replicates(inputs: Mapping[str, Mapping[str, ColumnItems]], columns: Sequence[str], *,
                      B: int = RANK_B, seed: int = 42) -> dict[str, tuple[list[str], np.ndarray, np.ndarray]]:
    """``{column: (models, B × models replicates, full-sample value per model)}`` for one
    component, every model resampled with the same draws over the items all models share in
    that column.

    ``inputs`` maps model → column → :class:`ColumnItems`; a column missing for a model is left
    out for that model."""
    from scipy import sparse

    from biovqa.stats.bootstrap import SparseProduct, bootstrap_replicates

    plan: list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray, int, Statistic]] = []
    shared_clusters: list[np.ndarray] = []
    for column in columns:
        models = [m for m in inputs if column in inputs[m]]
        if not models:
            continue
        shared = None
        for m in models:
            ids = pd.Index(inputs[m][column].item_id)
            shared = ids if shared is None else shared.intersection(ids)
        assert shared is not None
        shared = shared.sort_values()
        # models scored from one benchmark list its items in one order: their positions, clusters
        # and cells are then found once (the same numbers; the string lookups were most of the time)
        found: list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray, Statistic]] = []
        previous: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        for m in models:
            col = inputs[m][column]
            if previous is not None and _same(col.item_id, previous[0]) and _same(col.cluster, previous[1]) \
                    and _same(col.cell, previous[2]):
                position, clusters, cells = previous[3:]
            else:
                position = pd.Index(col.item_id).get_indexer(shared)
                clusters, cells = col.cluster[position], col.cell[position].astype(str)
                # every model's clusters are numbered, not only the first's: models that give the
                # same items other clusters (or cells) are resampled by their own labels
                shared_clusters.append(clusters)
                previous = (col.item_id, col.cluster, col.cell, position, clusters, cells)
            found.append((m, position, clusters, cells, col.value[position], col.statistic))
        cell_labels = np.unique(np.concatenate([cells for _, _, _, cells, _, _ in found]))
        coded: dict[int, np.ndarray] = {}
        for m, _, clusters, cells, values, statistic in found:
            if id(cells) not in coded:
                coded[id(cells)] = np.searchsorted(cell_labels, cells)
            plan.append((column, m, clusters, coded[id(cells)], values, len(cell_labels), statistic))
    if not plan:
        return {}
    # clusters in sorted label order (as the draws number them), found by hash lookup
    labels = pd.Index(np.sort(pd.unique(pd.Series(np.concatenate(shared_clusters)).astype(str).to_numpy())))
    n_clusters = len(labels)
    sums_blocks, count_blocks, spans = [], [], []
    width = count_width = 0
    codes_of: dict[int, np.ndarray] = {}
    #: models whose items enter a column alike (same clusters, cells and kept items) share one
    #: count block: the counts are the same, so they are resampled once
    count_span: dict[tuple[int, int, bytes], tuple[int, int]] = {}
    for column, model, clusters, cells, values, n_cells, statistic in plan:
        if id(clusters) not in codes_of:
            codes_of = {id(clusters): labels.get_indexer(pd.Series(clusters).astype(str).to_numpy())}
        codes = codes_of[id(clusters)]
        keep = ~np.isnan(values)
        shape = (n_clusters, n_cells)
        sums_blocks.append(sparse.csr_matrix((values[keep], (codes[keep], cells[keep])), shape=shape))
        key = (id(clusters), id(cells), np.packbits(keep).tobytes())
        if key not in count_span:
            count_blocks.append(sparse.csr_matrix((np.ones(int(keep.sum())), (codes[keep], cells[keep])),
                                                  shape=shape))
            count_span[key] = (count_width, count_width + n_cells)
            count_width += n_cells
        spans.append((column, model, width, width + n_cells, *count_span[key], statistic))
        width += n_cells
    sums_t = sparse.hstack(sums_blocks, format="csr").T.tocsr()   # K × clusters
    counts_t = sparse.hstack(count_blocks, format="csr").T.tocsr()
    # the shared bootstrap loop: every model and column resampled with the same cluster counts
    partitioned = _partition_replicates(sums_t, counts_t, spans, width, B=B, seed=seed)
    if partitioned is not None:
        resampled_sums, resampled_counts = partitioned
    else:
        resampled = bootstrap_replicates(SparseProduct(sums_t, counts_t), lambda totals, _: list(totals.T),
                                         B=B, seed=seed)
        resampled_sums, resampled_counts = resampled[:, :width], resampled[:, width:]
    full_sums = np.asarray(sums_t.sum(axis=1)).T                       # 1 × K
    full_counts = np.asarray(counts_t.sum(axis=1)).T
    out: dict[str, tuple[list[str], np.ndarray, np.ndarray]] = {}
    for column, model, a, b, c, d, statistic in spans:
        names, reps, full = out.get(column, ([], np.empty((B, 0)), np.empty(0)))
        value = statistic(resampled_sums[:, a:b], resampled_counts[:, c:d])[:, None]
        estimate = statistic(full_sums[:, a:b], full_counts[:, c:d])
        out[column] = (names + [model], np.hstack([reps, value]), np.concatenate([full, estimate]))
    return out


def _partition_replicates(sums_t: Any, counts_t: Any, spans: Sequence[tuple], width: int, *, B: int,
                          seed: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The resampled sums and counts of :func:`column_replicates` where every cluster lies in one
    cell of one column (C2: an item is one family of one category), else None. Then a cluster is
    one row of :func:`biovqa.stats.bootstrap.partition_replicates` (its cell the part, one value
    column per model), which draws the same cluster counts from the same stream and sums them
    densely (float64, summed in another order: the same replicates up to float64 rounding) at a
    fraction of the sparse product's cost (most of that was transposing and converting each
    block of counts)."""
    from biovqa.stats.bootstrap import partition_replicates

    by_cluster = counts_t.tocsc()
    if not (np.diff(by_cluster.indptr) == 1).all():
        return None
    part = by_cluster.indices.astype(np.int64)
    models = list(dict.fromkeys(span[1] for span in spans))
    values = np.zeros((counts_t.shape[1], len(models)))
    for _, model, a, b, _, _, _ in spans:
        rows = sums_t[a:b].tocoo()
        values[rows.col, models.index(model)] = rows.data
    sums, counts = partition_replicates(values, part, counts_t.shape[0], B=B, seed=seed)
    resampled_sums = np.empty((B, width))
    for _, model, a, b, c, d, _ in spans:
        resampled_sums[:, a:b] = sums[:, c:d, models.index(model)]
    return resampled_sums, counts


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or (len(a) == len(b) and bool((a == b).all()))


def bootstrap_ranks(runs: Sequence[Run], generalists: Sequence[str], columns: Mapping[str, Sequence[str]], *,
                    B: int = RANK_B, confidence: float = CONFIDENCE) -> RankIntervals:
    """Rank intervals of ``generalists`` in every Table 3 column that all of them can be
    recomputed for (``columns``: component → its Table 3 columns). Seed: the seed the score
    folders of the component were bootstrapped with when they agree, else 42."""
    names = list(generalists)
    every = [c for comp in columns for c in columns[comp]]
    rank_lo = pd.DataFrame(math.nan, index=pd.Index(names, name="model"), columns=every)
    rank_hi, p_best = rank_lo.copy(), rank_lo.copy()
    methods: dict[str, str] = {}
    seeds: list[int] = []
    for component, cols in columns.items():
        source = rank_source(component)
        comp_runs = [r for r in runs if r.component == component and r.name in names]
        if source is None or not comp_runs:
            continue
        inputs: dict[str, dict[str, ColumnItems]] = {}
        for run in comp_runs:
            got = _inputs(run.path, source)
            if got is not None and run.name not in inputs:
                inputs[run.name] = got
        if len(inputs) < 2:
            continue
        seed = _seed(comp_runs)
        seeds.append(seed)
        reps = column_replicates(inputs, list(cols), B=B, seed=seed)
        for column, (models, matrix, _) in reps.items():
            if len(models) < 2:
                continue
            lo, hi, best = rank_distribution(matrix, confidence)
            rank_lo.loc[models, column] = lo
            rank_hi.loc[models, column] = hi
            p_best.loc[models, column] = best
            methods[column] = next(iter(inputs[m][column] for m in models)).method
    seed_used = seeds[0] if len(set(seeds)) == 1 else 42
    return RankIntervals(rank_lo, rank_hi, p_best, methods, B, seed_used)


def _seed(runs: Sequence[Run]) -> int:
    found = set()
    for run in runs:
        options = run.summary.get("options") or {}
        if "seed" in options:
            found.add(int(options["seed"]))
    return found.pop() if len(found) == 1 else 42


__all__ = ["ColumnItems", "RANK_B", "RankIntervals", "bootstrap_ranks", "column_replicates", "macro_statistic",
           "mean_statistic", "rank_distribution", "rank_source", "RankSource"]
