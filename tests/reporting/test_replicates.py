"""The leaderboard's rank bootstrap resamples every model with the same cluster counts: each
model's replicate equals its statistic recomputed from those counts by hand, whether its items
come in the same order as another model's (positions and count blocks then found once) or not,
and whether or not some of its values are left out (NaN)."""

from __future__ import annotations

import numpy as np

from biovqa.reporting.replicates import ColumnItems, column_replicates, macro_statistic
from biovqa.stats.bootstrap import resampled_cluster_counts


def _column(ids: np.ndarray, clusters: np.ndarray, cells: np.ndarray, values: np.ndarray) -> ColumnItems:
    return ColumnItems(ids.astype(object), clusters.astype(object), cells.astype(object), values, macro_statistic,
                       "bootstrap")


def test_every_model_is_resampled_with_the_shared_counts() -> None:
    rng = np.random.default_rng(0)
    n = 120
    ids = np.array([f"q{i:03d}" for i in range(n)])
    clusters = np.array([f"img{i // 3:02d}" for i in range(n)])
    cells = np.array([("a", "b", "c")[i % 3] for i in range(n)])
    values = {m: (rng.random(n) < p).astype(float) for m, p in (("m1", 0.3), ("m2", 0.5), ("m3", 0.7), ("m4", 0.6))}
    values["m3"][rng.random(n) < 0.2] = np.nan  # left out of m3's statistic: its own counts
    reverse = np.arange(n)[::-1]  # m2 lists its items in another order
    inputs = {"m1": {"em": _column(ids, clusters, cells, values["m1"])},
              "m4": {"em": _column(ids, clusters, cells, values["m4"])},  # m1's items alike: one count block
              "m3": {"em": _column(ids, clusters, cells, values["m3"])},  # m1's order: its positions reused
              "m2": {"em": _column(ids[reverse], clusters[reverse], cells[reverse], values["m2"][reverse])}}
    models, replicates, full = column_replicates(inputs, ["em"], B=50, seed=3)["em"]
    assert models == ["m1", "m4", "m3", "m2"]
    labels = np.unique(clusters)
    codes = np.searchsorted(labels, clusters)
    cell_codes = np.searchsorted(["a", "b", "c"], cells)
    W = np.vstack(list(resampled_cluster_counts(len(labels), B=50, seed=3)))
    for k, m in enumerate(models):
        keep = ~np.isnan(values[m])
        weights = W[:, codes] * keep  # replicates × items
        sums = np.column_stack([(weights * np.nan_to_num(values[m]) * (cell_codes == c)).sum(axis=1)
                                for c in range(3)])
        counts = np.column_stack([(weights * (cell_codes == c)).sum(axis=1) for c in range(3)])
        np.testing.assert_allclose(replicates[:, k], macro_statistic(sums, counts), rtol=1e-12)
        means = [np.nanmean(values[m][cell_codes == c]) for c in range(3)]
        assert full[k] == np.mean(means) or abs(full[k] - np.mean(means)) < 1e-12


def test_models_that_give_the_same_items_other_clusters_and_cells_are_resampled_by_their_own() -> None:
    """Two score folders of one benchmark normally agree on each item's image and cell; when they
    do not (a rebuilt benchmark, a hand-made folder), every model's labels are numbered — none is
    dropped (a negative index once crashed the report) or silently taken for another's."""
    rng = np.random.default_rng(1)
    n = 60
    ids = np.array([f"q{i:03d}" for i in range(n)])
    clusters = {"m1": np.array([f"img{i // 3:02d}" for i in range(n)]),
                "m2": np.array([f"photo{i // 2:02d}" for i in range(n)])}  # other image names
    cells = {"m1": np.array([("a", "b")[i % 2] for i in range(n)]),
             "m2": np.array([("a", "b", "z")[i % 3] for i in range(n)])}  # a cell m1 lacks
    values = {m: (rng.random(n) < 0.5).astype(float) for m in ("m1", "m2")}
    inputs = {m: {"em": _column(ids, clusters[m], cells[m], values[m])} for m in ("m1", "m2")}
    models, replicates, full = column_replicates(inputs, ["em"], B=40, seed=5)["em"]
    assert models == ["m1", "m2"] and replicates.shape == (40, 2)
    labels = np.unique(np.concatenate(list(clusters.values())))
    cell_labels = np.array(["a", "b", "z"])
    W = np.vstack(list(resampled_cluster_counts(len(labels), B=40, seed=5)))
    for k, m in enumerate(models):
        weights = W[:, np.searchsorted(labels, clusters[m])]
        cell_codes = np.searchsorted(cell_labels, cells[m])
        sums = np.column_stack([(weights * values[m] * (cell_codes == c)).sum(axis=1) for c in range(3)])
        counts = np.column_stack([(weights * (cell_codes == c)).sum(axis=1) for c in range(3)])
        np.testing.assert_allclose(replicates[:, k], macro_statistic(sums, counts), rtol=1e-12)
        present = [c for c in cell_labels if (cells[m] == c).any()]
        assert abs(full[k] - np.mean([values[m][cells[m] == c].mean() for c in present])) < 1e-12


def test_clusters_inside_one_cell_take_the_dense_partition_path_with_the_same_replicates(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """C2's shape: every item its own cluster, in one cell (family) of one column (category), graded
    values. The replicates come from the dense per-part sums (the same draws) and equal the
    statistic recomputed by hand from the shared counts."""
    import biovqa.stats.bootstrap as bootstrap

    rng = np.random.default_rng(4)
    n = 200
    ids = np.array([f"q{i:03d}" for i in range(n)])
    column_of = np.where(np.arange(n) % 5 < 3, "loc", "nam")
    cells = np.array([("f1", "f2", "f3")[i % 3] if c == "loc" else ("g1", "g2")[i % 2]
                      for i, c in enumerate(column_of)])
    values = {m: rng.random(n) for m in ("m1", "m2", "m3")}
    inputs = {m: {c: _column(ids[column_of == c], ids[column_of == c], cells[column_of == c],
                             values[m][column_of == c]) for c in ("loc", "nam")} for m in values}
    taken: list[bool] = []
    real = bootstrap.partition_replicates
    monkeypatch.setattr(bootstrap, "partition_replicates",
                        lambda *args, **kwargs: taken.append(True) or real(*args, **kwargs))
    out = column_replicates(inputs, ["loc", "nam"], B=60, seed=7)
    assert taken == [True]
    labels = np.unique(ids)  # every item of either column, in sorted label order
    W = np.vstack(list(resampled_cluster_counts(len(labels), B=60, seed=7, dtype=np.float64)))
    for column in ("loc", "nam"):
        models, replicates, _ = out[column]
        mine = column_of == column
        cell_labels = np.unique(cells[mine])
        weights = W[:, np.searchsorted(labels, ids[mine])]
        cell_codes = np.searchsorted(cell_labels, cells[mine])
        counts = np.column_stack([(weights * (cell_codes == c)).sum(axis=1) for c in range(len(cell_labels))])
        for k, m in enumerate(models):
            sums = np.column_stack([(weights * values[m][mine] * (cell_codes == c)).sum(axis=1)
                                    for c in range(len(cell_labels))])
            np.testing.assert_allclose(replicates[:, k], macro_statistic(sums, counts), rtol=1e-12)
