"""Benchmark: one bootstrap replicate's cluster counts for C2's 824 104 items, drawn as bounded
integers of one stream beside the Poissonized draw biovqa uses from 2**18 clusters on, in the same
run.

    python benchmarks/stats_draws.py [--clusters 824104] [--replicates 200] [--repeat 3] [--check 1000]

*integers* is the draw every smaller bootstrap keeps (``biovqa.stats.draws._stream_counts``): ``n``
uniform cluster indices from NumPy's bounded-integer draw, counted by ``bincount``. *poissonized*
is :func:`biovqa.stats.draws.replicate_counts`: each cluster drawn Poisson(1) times through a
16-bit inverse-CDF table, then exactly ``n`` draws by putting back or adding uniform balls (the same
multinomial; see its docstring). Both fill the float64 16-row blocks C2's bootstrap asks for, on
one thread. ``--check`` replicates test the distribution at full size: every total is ``n``, the
share of clusters drawn k times matches Binomial(``n``, 1/``n``) (chi-square over k = 0 … 5+), and
the draws falling in the first half of the clusters match Binomial(``n``, 1/2) in mean and
variance (``tests/stats/test_draws.py`` checks the same at test size).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import numpy as np

from biovqa.stats.draws import POISSONIZED_FROM, _stream_counts, replicate_counts, resampled_cluster_counts


def integers(n: int, replicates: int, seed: int) -> None:
    for _ in _stream_counts(n, B=replicates, seed=seed, chunk=16, dtype=np.float64, order=None,
                            draw_ahead=False, reuse=True):
        pass


def poissonized(n: int, replicates: int, seed: int) -> None:
    if n < POISSONIZED_FROM:
        raise SystemExit(f"--clusters must be at least {POISSONIZED_FROM:,} (below it biovqa draws integers)")
    for _ in resampled_cluster_counts(n, B=replicates, seed=seed, chunk=16, dtype=np.float64, reuse=True):
        pass


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

    observed = np.zeros(6)
    wrong_totals = 0
    halves = np.empty(replicates)
    for b in range(replicates):
        counts = replicate_counts(n, seed, b)
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
    parser.add_argument("--check", type=int, default=1000, help="replicates of the distribution check (0: none)")
    args = parser.parse_args(argv)
    n = args.clusters
    runs: dict[str, list[tuple[float, float]]] = {"integers": [], "poissonized": []}
    for repeat in range(args.repeat):
        for name, path in (("integers", integers), ("poissonized", poissonized)):
            runs[name].append(timed(path, n, args.replicates, seed=repeat))
    for name, values in runs.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"{name:>12}: {wall:6.2f} ms wall, {cpu:6.2f} ms CPU per replicate of {n:,} clusters "
              f"(median of {args.repeat} × {args.replicates}, one thread)")
    ratio = statistics.median(v[0] for v in runs["integers"]) / statistics.median(v[0] for v in runs["poissonized"])
    print(f"ratio integers / poissonized: {ratio:.2f}×")
    if args.check:
        print(f"check over {args.check} replicates:", json.dumps(check(n, args.check, seed=12345)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
