"""Aggregation (the paper's App. C.4 and §3.11: item-weighted categories, pooled, severity), format
diagnostics and laterality."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pytest
from fixtures.c2_items import c2_item, predictions_for

from biovqa.components.c2.score import score
from biovqa.components.c2.summary import laterality, summarize

COUNTS = {
    "attr_bare_value": 280_433, "attr_group_value": 321_073, "marker_localization": 11_788,
    "visibility_partset": 117_880, "visibility_side": 35_364, "category_mcq": 11_191,
    "open_common_name": 11_788, "open_scientific_name": 11_668, "open_genus": 11_728,
    "open_kind_of": 11_191,
}
#: Table 33, Qwen3-VL-32B.
QWEN32 = {
    "attr_bare_value": .644, "attr_group_value": .584, "category_mcq": .959, "marker_localization": .727,
    "open_common_name": .619, "open_genus": .696, "open_kind_of": .763, "open_scientific_name": .629,
    "visibility_partset": .435, "visibility_side": .526,
}


def constant_family_scores(values: dict[str, float]) -> pa.Table:
    families = np.repeat(np.array(list(COUNTS)), list(COUNTS.values()))
    cags = np.repeat([values[f] for f in COUNTS], list(COUNTS.values())).astype(float)
    n = len(families)
    return pa.table({
        "family": pa.array(families), "cags": cags, "em": np.zeros(n, dtype=np.int8), "s": cags,
        "parse_status": pa.array(["parsed"] * n), "status": pa.array(["ok"] * n),
        "pred_letter": pa.array([None] * n, pa.string()), "gold": pa.array([None] * n, pa.string()),
        "parsed": pa.array([None] * n, pa.string()),
    })


def test_item_weighted_category_and_pooled():
    summary = summarize(constant_family_scores(QWEN32), None, {"bootstrap": 0})
    assert summary["pooled"]["n"] == 824_104
    assert summary["categories"]["anatomical"]["cags"]["value"] == pytest.approx(0.4754, abs=5e-5)
    assert summary["categories"]["anatomical"]["n"] == 165_032
    assert summary["pooled"]["cags"]["value"] == pytest.approx(0.5929, abs=5e-5)
    unweighted = np.mean([QWEN32[f] for f in ("marker_localization", "visibility_partset", "visibility_side")])
    assert unweighted == pytest.approx(0.5627, abs=5e-5)  # what an unweighted mean would give
    assert summary["families"]["visibility_side"]["cags"]["value"] == pytest.approx(0.526)
    assert summary["pooled"]["cags"]["lo"] is None and summary["pooled"]["cags"]["hi"] is None
    assert summary["table3"]["loc"] == summary["categories"]["anatomical"]["cags"]


def test_bootstrap_intervals_bracket_the_mean(make_bench):
    options = ["purple", "blue", "green", "yellow"]
    rows = [c2_item("attr_bare_value", f"i{k}", "blue", options, part="wing", property="color",
                    attribute_group="has_wing_color") for k in range(40)]
    rows += [c2_item("category_mcq", f"m{k}", "Gull", ["Gull", "Tern", "Grebe"]) for k in range(20)]
    bench = make_bench(rows)
    replies = [["(B) blue", "(A) purple", "(C) green"][k % 3] for k in range(40)] + \
              [["(A) Gull", "(B) Tern"][k % 2] for k in range(20)]
    summary = score(bench, predictions_for(bench, replies), {"bootstrap": 300, "seed": 7}).summary
    for block in [summary["pooled"], *summary["categories"].values(), *summary["families"].values()]:
        for metric in ("cags", "em", "gs_raw"):
            estimate = block[metric]
            assert estimate["lo"] <= estimate["value"] <= estimate["hi"]
            assert estimate["n"] == block["n"]
    assert summary["bootstrap"] == {"B": 300, "seed": 7, "confidence": 0.95, "cluster": "item"}
    assert summary["families"]["category_mcq"]["choose_a_rate"] == pytest.approx(0.5)
    # severity: mean 1 − cags over wrong items
    fam = summary["families"]["attr_bare_value"]
    assert fam["n_wrong"] == 26 and fam["severity"]["value"] > 0 and fam["severity"]["n"] == 26


def test_format_diagnostics(make_bench):
    options = ["Red", "Blue", "Green"]
    rows = [c2_item("category_mcq", f"m{k}", "Blue", options) for k in range(6)]
    rows.append(c2_item("open_genus", "g0", "Larus", class_name="California Gull", genus="Larus"))
    bench = make_bench(rows)
    replies = ["(B) Red", "(A) Red", "nonsense", "Bluee", None, "(A)", "Larus"]
    statuses = ["ok", "ok", "ok", "ok", "failed", "ok", "ok"]
    summary = score(bench, predictions_for(bench, replies, statuses), {"bootstrap": 0}).summary
    fam = summary["families"]["category_mcq"]
    assert fam["n_replies"] == 5 and fam["n_missing"] == 1 and fam["n_failed_requests"] == 1
    assert fam["parse_rate"] == pytest.approx(4 / 5)
    assert fam["mismatch_rate"] == pytest.approx(1 / 5)
    assert fam["n_fuzzy"] == 1
    assert fam["choose_a_rate"] == pytest.approx(2 / 4)
    assert summary["families"]["open_genus"]["mismatch_rate"] is None
    assert summary["format"]["em_open"] == 1.0
    assert summary["format"]["n_mcq"] == 6 and summary["format"]["n_open"] == 1


def test_laterality_on_em():
    gold = ["left wing", "left wing", "right eye", "beak", "left leg"]
    pred = ["right wing", "left wing", "left eye", "beak", "breast"]
    options = [["left wing", "right wing", "beak"], ["left wing", "right wing"], ["right eye", "left eye"],
               ["beak", "tail"], ["left leg", "breast"]]
    em = np.array([0, 1, 0, 1, 0])
    out = laterality(gold, pred, options, em)
    assert out["n_lateral"] == 4
    assert out["n_mirror_offered"] == 3
    assert out["mirror_confusion_rate"] == pytest.approx(2 / 3)
    assert out["n_part_named"] == 3
    assert out["laterality_given_part"] == pytest.approx(1 / 3)
    assert 0 <= out["laterality_p_below_chance"] <= 1


def test_summary_is_json_clean(make_bench):
    import json

    options = ["beak", "breast", "left leg", "left eye", "left wing"]
    rows = [c2_item("marker_localization", f"k{k}", "left eye", options, marker_color="red", marker_shape="dot")
            for k in range(4)]
    bench = make_bench(rows)
    summary = score(bench, predictions_for(bench, ["(D) left eye", "(A) beak", "left eye", "(E) left wing"]),
                    {"bootstrap": 20}).summary
    text = json.dumps(summary, allow_nan=False)
    assert json.loads(text) == summary
    assert summary["laterality"]["n_lateral"] == 4


def _masked_group_intervals(cags: np.ndarray, em: np.ndarray, s: np.ndarray,
                      groups: Sequence[np.ndarray], *, resamples: int, seed: int,
                      confidence: float = 0.95, counts: np.ndarray | None = None,
                      ) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """The path summarize() took before it summed each item once in its family: bootstrap CIs of
    (cags, EM, GS_raw) for every group mask, from one set of item resamples (``counts``, items ×
    replicates, or the shared :mod:`biovqa.stats.bootstrap` draws): each group's mean is a ratio
    of resampled sums, the three metrics of a group share its denominator. Identical to
    ``cluster_bootstrap_means`` on NaN-masked columns with the items as clusters."""
    from biovqa.stats.bootstrap import percentile_interval, ratio_of_sums_replicates

    if resamples <= 0 or len(cags) == 0:
        return [None] * len(groups)
    numerators = np.column_stack([np.where(mask, metric, 0.0) for mask in groups
                                  for metric in (cags, em, s)])
    denominators = np.column_stack([mask.astype(float) for mask in groups])
    replicates = ratio_of_sums_replicates(numerators, denominators, B=resamples, seed=seed,
                                          denominator_of=np.repeat(np.arange(len(groups)), 3),
                                          counts=None if counts is None else [counts])
    lo, hi = percentile_interval(replicates, confidence)
    return [(lo[3 * g:3 * g + 3], hi[3 * g:3 * g + 3]) for g in range(len(groups))]


def test_family_path_intervals_equal_the_masked_group_path():
    """summarize() bootstraps each class of items (same family and scores) once in its family's
    sums; every interval of the summary (pooled, categories, families) equals the one the
    masked-columns path (_masked_group_intervals) gives from the same resamples, to its float32
    rounding. The items here are all distinct, each its own class, numbered in family-then-value
    order, and enough of them that the classes are drawn Poissonized, a replicate per stream
    (replicate_class_counts). An item of no known family counts in the pooled group only."""
    from biovqa.components.c2.summary import family_parts
    from biovqa.components.c2.tasks import CATEGORIES, CATEGORY_OF, FAMILIES
    from biovqa.stats.bootstrap import CLASSES_POISSONIZED_FROM
    from biovqa.stats.draws import ClassSizes, replicate_class_counts
    from biovqa.text import codes_in

    rng = np.random.default_rng(3)
    sizes = {"attr_bare_value": 1000, "attr_group_value": 800, "marker_localization": 100,
             "visibility_side": 150, "category_mcq": 80, "open_genus": 3}
    families = rng.permutation(np.repeat(np.array(list(sizes) + ["not_a_family"], dtype=object),
                                         list(sizes.values()) + [5]))
    n = len(families)
    assert n >= CLASSES_POISSONIZED_FROM
    cags = rng.random(n)
    em = (rng.random(n) < 0.6).astype(np.int8)
    table = pa.table({
        "family": pa.array(families.tolist()), "cags": cags, "em": em, "s": rng.random(n),
        "parse_status": pa.array(["parsed"] * n), "status": pa.array(["ok"] * n),
        "pred_letter": pa.array([None] * n, pa.string()), "gold": pa.array([None] * n, pa.string()),
        "parsed": pa.array([None] * n, pa.string()),
    })
    summary = summarize(table, None, {"bootstrap": 300, "seed": 11})
    part = family_parts(codes_in(table.column("family"), FAMILIES))[0]
    s = table.column("s").to_numpy()
    order = np.lexsort((s, em, cags, part))  # the classes' order: family, then the values
    counts = np.zeros((300, n), dtype=np.float32)
    for b in range(300):
        counts[b, order] = replicate_class_counts(ClassSizes(np.ones(n)), 11, b)
    present = [f for f in FAMILIES if f in sizes]
    categories = [c for c in CATEGORIES if any(CATEGORY_OF[f] == c for f in present)]
    masks = ([np.ones(n, dtype=bool)]
             + [np.isin(families, [f for f in present if CATEGORY_OF[f] == c]) for c in categories]
             + [families == f for f in present])
    reference = _masked_group_intervals(cags, em.astype(float), s, masks, resamples=300, seed=11,
                                        counts=counts)
    entries = [summary["pooled"]] + [summary["categories"][c] for c in categories] \
        + [summary["families"][f] for f in present]
    assert len(entries) == len(reference)
    for entry, (lo, hi) in zip(entries, reference):
        for k, metric in enumerate(("cags", "em", "gs_raw")):
            if np.isnan(lo[k]):
                assert entry[metric]["lo"] is None
                continue
            assert entry[metric]["lo"] == pytest.approx(lo[k], rel=1e-6)
            assert entry[metric]["hi"] == pytest.approx(hi[k], rel=1e-6)
    assert summary["pooled"]["n"] == n


@pytest.mark.parametrize(("k", "n"), [(0, 1), (7, 15), (4, 15), (12, 30), (40, 100), (5_400, 12_000), (6_000, 12_000),
                                      (12_000, 12_000)])
def test_laterality_p_value_is_the_exact_binomial_tail(k, n):
    """The laterality test's p-value is P(X ≤ k), X ~ Bin(n, 1/2), summed exactly and rounded once:
    scipy's binomtest agrees to its own rounding (1e-16 near the middle, 1e-12 deep in the tail),
    the exact fractions bit for bit."""
    from fractions import Fraction
    from math import comb

    from scipy.stats import binomtest

    from biovqa.components.c2.summary import binomial_half_lower_tail

    p = binomial_half_lower_tail(k, n)
    if n <= 100:
        assert p == float(Fraction(sum(comb(n, i) for i in range(k + 1)), 2 ** n))
    assert p == pytest.approx(binomtest(k, n, 0.5, alternative="less").pvalue, rel=1e-11, abs=1e-300)
    assert binomial_half_lower_tail(n, n) == 1.0
    with pytest.raises(ValueError):
        binomial_half_lower_tail(n + 1, n)
