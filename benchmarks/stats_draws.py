"""Benchmark: one bootstrap replicate's cluster counts for C2's 824 104 items, drawn as biovqa draws
them today beside a Poissonized draw of the same multinomial, in the same run.

    python benchmarks/stats_draws.py [--clusters 824104] [--replicates 200] [--repeat 3] [--check 2000]

*today* is :func:`biovqa.stats.draws.resampled_cluster_counts` as C2's bootstrap asks for it: ``n``
uniform cluster indices from NumPy's bounded-integer draw, counted by ``bincount``, stored as a
float64 row of a 16-row block. Both paths run on one thread and fill the same blocks.

*poissonized* counts each cluster Poisson(1) times (one 16-bit uniform per cluster through a
65 536-entry inverse-CDF table; the few buckets that straddle a CDF step take 16 more bits), then
makes the total exactly ``n``: when the ``T`` balls exceed ``n`` it removes ``T − n`` of them
chosen uniformly without replacement, when short it adds ``n − T`` uniform draws. Given ``T``,
Poisson counts are ``T`` balls thrown uniformly into the clusters, so either correction leaves ``n``
independent uniform balls: the counts of an ``n``-out-of-``n`` resample with replacement, the
same distribution as *today* (up to the 2⁻³² steps of the inverse CDF), from a different stream.
Its counts are uint8 (824 KB, inside a core's L2) and need no ``bincount``.

The script is a measurement for a design choice, not a path of the package: a switch would change
every interval's digits (Monte Carlo noise) for the same seed. ``--check`` replicates test the
distribution: every total is ``n``, and the share of clusters drawn ``k`` times matches the
Binomial(``n``, 1/``n``) probabilities (chi-square over k = 0 … 5+).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import numpy as np

from biovqa.stats.draws import resampled_cluster_counts

#: a 16-bit bucket whose count the table cannot tell (it straddles a step of the inverse CDF)
AMBIGUOUS = 255


def _poisson1_steps(bits: int) -> np.ndarray:
    """``⌈2**bits · P(X ≤ k)⌉`` for X ~ Poisson(1), k = 0, 1, … while below ``2**bits``."""
    steps, cdf, k, pmf = [], 0.0, 0, math.exp(-1.0)
    while True:
        cdf += pmf
        step = math.ceil(cdf * 2**bits)
        if step >= 2**bits:
            return np.array(steps, dtype=np.uint64)
        steps.append(step)
        k += 1
        pmf /= k


STEPS32 = _poisson1_steps(32)


def _table() -> np.ndarray:
    """Count per 16-bit bucket: the number of 32-bit CDF steps at or below the bucket's first
    value, or AMBIGUOUS where a step falls inside the bucket."""
    low = np.arange(2**16, dtype=np.uint64) << np.uint64(16)
    high = low + np.uint64(2**16 - 1)
    count_low = np.searchsorted(STEPS32, low, side="right")
    count_high = np.searchsorted(STEPS32, high, side="right")
    return np.where(count_low == count_high, count_low, AMBIGUOUS).astype(np.uint8)


TABLE = _table()


#: clusters per block when locating the balls to remove (NumPy's cumsum over 824K clusters
#: costs 4–8 ms; block sums, then a cumsum inside each affected block, cost well under 1 ms)
BLOCK = 64


def poissonized_counts(rng: np.random.Generator, n: int) -> np.ndarray:
    """uint8 counts of ``n`` draws with replacement from ``n`` clusters (see the module text)."""
    padded = -(-n // BLOCK) * BLOCK
    counts = np.zeros(padded, dtype=np.uint8)
    buckets = rng.bit_generator.random_raw((n + 3) // 4).view(np.uint16)[:n]
    np.take(TABLE, buckets, out=counts[:n])
    unsure = np.flatnonzero(counts[:n] == AMBIGUOUS)
    if len(unsure):
        fine = (buckets[unsure].astype(np.uint64) << np.uint64(16)) | rng.integers(0, 2**16, len(unsure),
                                                                                   dtype=np.uint64)
        counts[unsure] = np.searchsorted(STEPS32, fine, side="right")
    blocks = counts.reshape(-1, BLOCK).sum(axis=1, dtype=np.int64)
    total = int(blocks.sum())
    if total > n:
        # the cluster of each ball to remove: its block from the block totals, then its place
        # inside the block from that block's running counts
        balls = rng.choice(total, total - n, replace=False)
        ends = np.cumsum(blocks)
        block = np.searchsorted(ends, balls, side="right")
        within = balls - (ends[block] - blocks[block])
        running = np.cumsum(counts.reshape(-1, BLOCK)[block], axis=1, dtype=np.int64)
        cells = block * BLOCK + (running <= within[:, None]).sum(axis=1)
        np.subtract.at(counts, cells, 1)
    elif total < n:
        np.add.at(counts, rng.integers(0, n, n - total), 1)
    return counts[:n]


def today(n: int, replicates: int, seed: int) -> None:
    """The package's count blocks as C2's bootstrap asks for them (16 float64 rows a block, one
    buffer), on this thread alone."""
    for _ in resampled_cluster_counts(n, B=replicates, seed=seed, chunk=16, dtype=np.float64, reuse=True):
        pass


def poissonized(n: int, replicates: int, seed: int) -> None:
    """The same blocks filled from :func:`poissonized_counts`."""
    rng = np.random.default_rng(seed)
    block = np.empty((16, n))
    for row in range(replicates):
        block[row % 16] = poissonized_counts(rng, n)


def timed(path, n: int, replicates: int, seed: int) -> tuple[float, float]:
    """(wall, CPU) milliseconds per replicate."""
    path(n, 16, seed)
    wall, cpu = time.perf_counter(), time.process_time()
    path(n, replicates, seed)
    return ((time.perf_counter() - wall) / replicates * 1e3, (time.process_time() - cpu) / replicates * 1e3)


def check(n: int, replicates: int, seed: int) -> dict[str, float]:
    """The distribution of the Poissonized counts: how many totals differ from ``n`` (none may), the
    chi-square p-value of the pooled shares of clusters drawn k = 0 … 5+ times against
    Binomial(n, 1/n), and the z-scores of the mean and variance of the draws falling in the first
    half of the clusters against Binomial(n, 1/2) (a joint property the marginals do not show)."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    observed = np.zeros(6)
    wrong_totals = 0
    halves = np.empty(replicates)
    for b in range(replicates):
        counts = poissonized_counts(rng, n)
        wrong_totals += int(counts.sum(dtype=np.int64) != n)
        observed += np.bincount(np.minimum(counts, 5), minlength=6)
        halves[b] = counts[: n // 2].sum(dtype=np.int64)
    pmf = stats.binom.pmf(np.arange(5), n, 1 / n)
    expected = np.append(pmf, 1 - pmf.sum()) * n * replicates
    p_half = (n // 2) / n
    mean, variance = n * p_half, n * p_half * (1 - p_half)
    return {"totals_not_n": wrong_totals, "chi_square_p": float(stats.chisquare(observed, expected).pvalue),
            "z_mean_half": float((halves.mean() - mean) / math.sqrt(variance / replicates)),
            # the sample variance's standard error for a near-normal sum: variance · √(2 / (B − 1))
            "z_variance_half": float((halves.var(ddof=1) - variance) / (variance * math.sqrt(2 / (replicates - 1))))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=824_104)
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--check", type=int, default=2000, help="replicates of the distribution check (0: none)")
    args = parser.parse_args(argv)
    n = args.clusters
    runs: dict[str, list[tuple[float, float]]] = {"today": [], "poissonized": []}
    for repeat in range(args.repeat):
        for name, path in (("today", today), ("poissonized", poissonized)):
            runs[name].append(timed(path, n, args.replicates, seed=repeat))
    for name, values in runs.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"{name:>12}: {wall:6.2f} ms wall, {cpu:6.2f} ms CPU per replicate of {n:,} clusters "
              f"(median of {args.repeat} × {args.replicates}, one thread)")
    ratio = statistics.median(v[0] for v in runs["today"]) / statistics.median(v[0] for v in runs["poissonized"])
    print(f"ratio today / poissonized: {ratio:.2f}×")
    if args.check:
        print(f"check over {args.check} replicates:", json.dumps(check(n, args.check, seed=12345)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
