"""Benchmark: the item bootstrap of per-part sums (C2's intervals), drawn per item against drawn
per class of identical rows, in the same run.

    python benchmarks/stats_item_bootstrap.py [--items 824104] [--bootstrap 1000] [--repeat 3]
                                              [--scores SCORES/items.parquet]

Both paths are ``biovqa.stats.bootstrap.partition_replicates``: the default draws ``n`` item
indices per replicate (the stream every cluster bootstrap shares), ``classes=True`` one
multinomial over the classes of items with the same part and values (the same resampling
distribution, a different stream). Two designs of ``--items`` items over C2's ten families in
the paper's proportions (Table 7): *c2-like* (per family as many distinct cags / GS_raw levels
as the full synthetic C2 bench's scores have, about 141K classes) and *few-valued* (EM 0/1,
cags on four levels, GS_raw 0/1: 160 classes). ``--scores`` adds a real C2 score table (its
``family, cags, em, s`` columns). Prints wall and CPU seconds (all threads) per path, the median
of ``--repeat`` runs, their ratio, the class count, and the largest difference of the two paths'
95% bounds of the pooled cags mean (Monte Carlo noise only).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from biovqa.stats.bootstrap import partition_replicates, percentile_interval

#: C2's families: items in the paper's mix (of 824 104) and the distinct cags / GS_raw values
#: of the full synthetic bench's scores (benchmarks/score_c2.py, one model)
FAMILIES = (("attr_bare_value", 280433, 38958, 96), ("attr_group_value", 321073, 92694, 3399),
            ("category_mcq", 11191, 2, 2), ("marker_localization", 11788, 4034, 60),
            ("open_common_name", 11788, 276, 16), ("open_genus", 11728, 188, 56),
            ("open_kind_of", 11191, 169, 9), ("open_scientific_name", 11668, 5071, 1004),
            ("visibility_partset", 117880, 6, 3), ("visibility_side", 35364, 6, 3))


def design(n_items: int, few: bool, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    total = sum(f[1] for f in FAMILIES)
    values, parts = [], []
    for code, (_, size, cags_levels, s_levels) in enumerate(FAMILIES):
        k = max(1, round(size * n_items / total))
        em = (rng.random(k) < 0.5).astype(float)
        if few:
            cags, s = rng.integers(0, 4, k) / 3, em.copy()
        else:
            cags = rng.integers(0, cags_levels, k) / max(1, cags_levels - 1)
            s = rng.integers(0, s_levels, k) / max(1, s_levels - 1)
        values.append(np.column_stack([cags, em, s]))
        parts.append(np.full(k, code))
    part = np.concatenate(parts)
    order = rng.permutation(len(part))  # the families interleave, as in a built bench
    return np.vstack(values)[order], part[order]


def measure(values: np.ndarray, part: np.ndarray, B: int, classes: bool) -> tuple[float, float, np.ndarray]:
    wall, cpu = time.perf_counter(), time.process_time()
    sums, counts = partition_replicates(values, part, 11, B=B, seed=42, classes=classes)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    pooled = sums[:, :, 0].sum(axis=1) / counts.sum(axis=1)
    lo, hi = percentile_interval(pooled[:, None], 0.95)
    return wall, cpu, np.array([lo[0], hi[0]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=824104)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scores", help="a C2 score table (family, cags, em, s)")
    args = parser.parse_args()
    cases = {"c2-like": design(args.items, few=False), "few-valued": design(args.items, few=True)}
    if args.scores:
        import pyarrow.parquet as pq

        frame = pq.read_table(args.scores, columns=["family", "cags", "em", "s"]).to_pandas()
        codes = frame["family"].astype("category").cat.codes.to_numpy().astype(np.int64)
        cases["scores"] = (frame[["cags", "em", "s"]].to_numpy(dtype=float), codes)
    print(f"B = {args.bootstrap}, median of {args.repeat}")
    print("| design | items | classes | per item: wall / CPU s | per class: wall / CPU s | CPU ratio | max bound diff |")
    print("|---|---|---|---|---|---|---|")
    for name, (values, part) in cases.items():
        n_classes = len(np.unique(np.column_stack([part, values]), axis=0))
        runs: dict[bool, list[tuple[float, float, np.ndarray]]] = {False: [], True: []}
        for _ in range(args.repeat):  # interleaved, so both paths see the same machine load
            for classes in (False, True):
                runs[classes].append(measure(values, part, args.bootstrap, classes))
        med = {c: (statistics.median(r[0] for r in runs[c]), statistics.median(r[1] for r in runs[c]))
               for c in runs}
        diff = float(np.abs(runs[False][0][2] - runs[True][0][2]).max())
        print(f"| {name} | {len(part):,} | {n_classes:,} | {med[False][0]:.2f} / {med[False][1]:.2f} | "
              f"{med[True][0]:.2f} / {med[True][1]:.2f} | {med[False][1] / med[True][1]:.1f}× | {diff:.1e} |")


if __name__ == "__main__":
    main()
