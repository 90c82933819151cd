"""Statistics shared by every component: one bootstrap, one ranks module, one estimate.

The contract (the paper's Appendix L.3 for the bootstrap; Appendix C and §6 for the ranks):

* **Codes** (:mod:`biovqa.stats.codes`) — ``cluster_codes(labels) -> (codes, n_clusters)``
  numbers clusters in sorted label order, by ``dense_codes(values, sort=)``, the one
  factorisation (NaN one value, sorted last).
* **Draws** (:mod:`biovqa.stats.draws`) — the only source of resamples.
  ``resampled_cluster_counts(n_clusters, B=, seed=)`` yields blocks (≤ 64 replicates ×
  clusters, float32) of how often each cluster was drawn: below 2¹⁸ clusters replicate after
  replicate from one ``numpy.random.default_rng(seed)`` stream of bounded integers, from 2¹⁸ on
  each replicate ``replicate_counts(n_clusters, seed, b)`` from its own stream, Poissonized (the
  same multinomial, at less than half the cost). Same seed and labels → same numbers, whatever
  the row order, chunking or thread. ``CountsDrawnAhead({name: n_clusters}, B=, seed=)`` draws
  several such bootstraps ahead on a worker thread (one per task, say). ``resampled_class_counts(counts, B=,
  seed=)`` is the stratified item bootstrap of statistics that see an item only through its class
  (C4's six answer × truth cells): one multinomial per stratum and replicate.
* **The bootstrap** (:mod:`biovqa.stats.bootstrap`) — every interval is a statistic of
  per-cluster sums on those counts: ``bootstrap_replicates(S_or_product, statistics, B=, seed=,
  counts=None, rowwise=False) -> (B × K)``. ``S`` is ``clusters × columns`` (build it from per-row
  columns with ``SumColumns``: ``add``, ``cells``, ``cluster_sums``); ``statistics(totals, W)``
  returns K vectors over the replicates from the resampled totals (and the counts ``W`` when
  ``rowwise``, e.g. for :func:`~biovqa.stats.ranks.weighted_spearman`). ``Bootstrap(B, seed,
  confidence, draws=None)(columns, statistics, clusters, n)`` gives the summary's estimates directly.
  The special forms are uses of that loop, with unchanged numbers: ``ratio_of_sums_replicates``
  (means as ratios, float32 products), ``ClusterBootstrapPlan`` (many cell means on one plan),
  ``partition_replicates`` (item bootstrap of per-part sums), ``bootstrap_means`` /
  ``cluster_bootstrap_means`` / ``item_bootstrap_means``; the leaderboard's rank bootstrap runs
  the same loop on sparse sums (``SparseProduct``). ``partition_replicates(..., classes=True)``
  draws how many items fall in each class of identical rows instead of n items per replicate (the
  same distribution, another stream; C2's item bootstrap and the report's paired differences).
  ``percentile_interval(replicates, confidence)`` is the one interval (NaN replicates ignored);
  its confidence defaults to :data:`CONFIDENCE` (0.95), the one default of every interval (the
  score option ``confidence``, the rank and paired intervals). ``B = 0`` gives no replicates and
  null bounds everywhere.
* **Ranks** (:mod:`biovqa.stats.ranks`) — ``average_ranks``, ``group_ranks``,
  ``descending_ranks``, ``spearman``, ``spearman_p``, ``spearman_matrix``, ``grouped_spearman``,
  ``weighted_spearman`` (+ ``RankLayout``), ``rank_distribution``.
* **Inference** (:mod:`biovqa.stats.inference`) — ``holm``, ``alpha_std``, ``within_across_gap``,
  ``permutation_gap_p``, ``pca_share``, ``fisher_ci`` (the cross-component analysis, §6);
  ``normal_quantile`` (Φ⁻¹ without SciPy: C4's d′ and c).
* **Estimates** live at the schema seam (:class:`biovqa.scoring.schema.Estimate`, frozen: value,
  lo, hi, n; ``estimate(...)`` writes the dict form, ``estimate_value(entry, part="value")`` is the
  one reader of a float out of an estimate or a number).

``confidence`` is always an interval's confidence level; ``level`` in biovqa means a level of a
nested hierarchy (a taxonomic rank, a C3 count level) and ``tier`` a difficulty stratum.
"""

#: The confidence of every percentile interval unless a caller asks otherwise (the paper's 95%).
CONFIDENCE = 0.95
