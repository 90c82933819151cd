"""The paper's C4 metric vectors (appendix C) through the public path: a C4 benchmark written in its items schema,
predictions in a Parquet file, scored with biovqa.scoring.pipeline.score_predictions."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.stats import norm

from biovqa.bench.folder import write_bench
from biovqa.components.c4.build import ITEM_SCHEMA
from biovqa.components.c4.prompts import C4_INSTRUCTION, C4_QUESTION
from biovqa.components.c4.metrics import auc_to_dprime, statistics, verdict, wald_difference, weighted_auc
from biovqa.components.c4.pairs import auc
from biovqa.scoring.pipeline import score_predictions


def write_bench_with(out: Path, cells: dict[tuple[str, str], tuple[int, int]]) -> tuple[Path, list[dict]]:
    """A C4 bench with, per (dataset, condition), (n_same, n_different) items."""
    rows = []
    for (dataset, condition), (n_same, n_diff) in cells.items():
        for k in range(n_same + n_diff):
            same = k < n_same
            rows.append({"item_id": f"c4-{dataset}-{condition}-{k:04d}", "component": "c4", "task": condition,
                         "question": C4_QUESTION, "instruction": C4_INSTRUCTION, "options": None,
                         "answer": "Yes" if same else "No", "image": f"rendered/c4/{k}.png",
                         "image_sha256": None, "source_id": f"a{k}|b{k}", "dataset": dataset,
                         "species": dataset, "condition": condition, "same": same, "viewpoint": "left",
                         "left_annotation": f"a{k}", "right_annotation": f"b{k}", "left_identity": "x",
                         "right_identity": "x" if same else "y", "anchor_side": "left",
                         "similarity": (0.9 if same else 0.5) + k * 1e-4, "pool_min_similarity": 0.1,
                         "pool_max_similarity": 0.99, "left_panel_width": 100})
    table = pa.Table.from_pylist(rows, schema=ITEM_SCHEMA)
    write_bench(out, table, component="c4", generator="test", seed=0, sources={}, parameters={})
    return out, rows


def score_with(tmp_path: Path, bench: Path, replies: list[tuple[str, str]], bootstrap: int = 0) -> dict:
    tmp_path.mkdir(parents=True, exist_ok=True)
    predictions = tmp_path / "predictions.parquet"
    pq.write_table(pa.table({"item_id": [i for i, _ in replies], "response": [r for _, r in replies]}), predictions)
    out = score_predictions(bench, predictions, tmp_path / "scores", options={"bootstrap": bootstrap})
    return json.loads((out / "summary.json").read_text())


def test_always_yes_gives_dprime_zero_and_c_minus_3_0908(tmp_path: Path) -> None:
    bench, rows = write_bench_with(tmp_path / "bench", {("gzcd", "random"): (500, 500)})
    summary = score_with(tmp_path, bench, [(r["item_id"], "Yes") for r in rows])
    cell = summary["cells"]["gzcd"]["random"]
    assert cell["H"] == pytest.approx(0.999002, abs=1e-6) and cell["F"] == pytest.approx(0.999002, abs=1e-6)
    assert cell["dprime"]["value"] == pytest.approx(0.0, abs=1e-12)
    assert cell["c"]["value"] == pytest.approx(-3.0908, abs=5e-4)
    assert summary["table3"]["acc"]["value"] == 0.5 and summary["table3"]["dprime"]["value"] == pytest.approx(0.0)
    assert summary["verdict"] == "degenerate"


def test_hits_400_false_alarms_100(tmp_path: Path) -> None:
    bench, rows = write_bench_with(tmp_path / "bench", {("hyena", "random"): (500, 500)})
    replies = []
    for k, row in enumerate(rows):
        same = row["same"]
        yes = (k < 400) if same else (k - 500 < 100)
        replies.append((row["item_id"], "Yes" if yes else "No."))
    summary = score_with(tmp_path, bench, replies, bootstrap=200)
    cell = summary["cells"]["hyena"]["random"]
    assert (cell["hits"], cell["false_alarms"]) == (400, 100)
    assert cell["H"] == pytest.approx(0.799401, abs=1e-6) and cell["F"] == pytest.approx(0.200599, abs=1e-6)
    assert cell["dprime"]["value"] == pytest.approx(1.6790, abs=5e-4)
    assert cell["c"]["value"] == pytest.approx(0.0, abs=1e-9)
    assert cell["acc"]["value"] == pytest.approx(0.8) and cell["balanced_acc"]["value"] == pytest.approx(0.8)
    assert cell["mcc"]["value"] == pytest.approx(0.6) and cell["kappa"]["value"] == pytest.approx(0.6)
    assert cell["dprime"]["lo"] < cell["dprime"]["value"] < cell["dprime"]["hi"]
    assert summary["verdict"] == "moderate"


def test_pooling_sums_counts_and_all_no_and_perfect(tmp_path: Path) -> None:
    datasets = ("whaleshark", "hyena", "leopard", "gzcd", "beluga")
    bench, rows = write_bench_with(tmp_path / "bench", {(d, c): (500, 500) for d in datasets
                                                         for c in ("easy", "random", "hard")})
    replies = []
    for row in rows:  # easy: all Yes; random: all No; hard: perfect
        answer = {"easy": "Yes", "random": "No", "hard": "Yes" if row["same"] else "No"}[row["condition"]]
        replies.append((row["item_id"], answer))
    summary = score_with(tmp_path, bench, replies)
    assert summary["pooled"]["easy"]["c"]["value"] == pytest.approx(-3.5402, abs=5e-4)  # 2500/2500 summed
    assert summary["pooled"]["easy"]["c_mean_species"] == pytest.approx(-3.0908, abs=5e-4)
    assert summary["cells"]["beluga"]["random"]["c"]["value"] == pytest.approx(3.0908, abs=5e-4)
    assert summary["cells"]["beluga"]["random"]["dprime"]["value"] == pytest.approx(0.0, abs=1e-12)
    assert summary["cells"]["leopard"]["hard"]["dprime"]["value"] == pytest.approx(6.1817, abs=5e-4)
    assert summary["cells"]["leopard"]["hard"]["c"]["value"] == pytest.approx(0.0, abs=1e-9)
    # easy (.5) >= random (.5) >= hard (1.0) fails: the ordering check sees it in every dataset
    assert summary["ordering"]["n_monotone"] == 0 and summary["ordering"]["n_cells"] == 5
    assert summary["table3"]["acc"]["n"] == 5000


def test_unparsed_counts_as_no_and_wrong(tmp_path: Path) -> None:
    bench, rows = write_bench_with(tmp_path / "bench", {("leopard", "random"): (2, 2)})
    replies = [(rows[0]["item_id"], "I'm not sure"), (rows[1]["item_id"], "Yes, same animal"),
               (rows[2]["item_id"], "maybe"), (rows[3]["item_id"], "**No**")]
    summary = score_with(tmp_path, bench, replies)
    cell = summary["cells"]["leopard"]["random"]
    assert (cell["hits"], cell["misses"], cell["same_unparsed"]) == (1, 0, 1)
    assert (cell["false_alarms"], cell["correct_rejections"], cell["different_unparsed"]) == (0, 1, 1)
    assert cell["acc"]["value"] == pytest.approx(0.5)
    assert summary["format"]["parse_status"]["refusal"] == 1 and summary["format"]["parse_status"]["loose"] == 1
    assert summary["format"]["parse_rate"] == pytest.approx(0.5)
    items = pq.read_table(tmp_path / "scores" / "items.parquet")
    assert items.column("score").to_pylist() == [0.0, 1.0, 0.0, 1.0]
    assert items.column("parsed").to_pylist() == [None, "yes", None, "no"]
    assert items.column("parse_status").to_pylist() == ["refusal", "loose", "unparsed", "strict"]


@pytest.mark.parametrize(("dprime", "balanced"), [(0.0, 0.5000), (0.5, 0.5987), (1.0, 0.6915), (2.0, 0.8413),
                                                   (3.0, 0.9332), (0.696, 0.6361)])
def test_phi_of_half_dprime_table(dprime: float, balanced: float) -> None:
    assert norm.cdf(dprime / 2) == pytest.approx(balanced, abs=5e-5)


def test_unbiased_observer_balanced_accuracy_is_phi_half_dprime() -> None:
    # an unbiased observer at d′ = 1: H = Φ(½), F = Φ(−½) over 100 000 pairs each (counts, no correction effect)
    n = 100_000
    hits = round(norm.cdf(0.5) * n)
    fa = round(norm.cdf(-0.5) * n)
    stats = statistics([[hits, n - hits, 0, fa, n - fa, 0]])
    assert float(stats["dprime"][0]) == pytest.approx(1.0, abs=2e-3)
    assert float(stats["balanced_acc"][0]) == pytest.approx(norm.cdf(0.5), abs=1e-4)


@pytest.mark.parametrize(("auc", "dprime", "paper"), [(0.927, 2.0560, 2.055), (0.698, 0.7335, 0.733),
                                                      (0.247, -0.9673, -0.969)])
def test_megadescriptor_auc_to_dprime(auc: float, dprime: float, paper: float) -> None:
    assert auc_to_dprime(auc) == pytest.approx(dprime, abs=5e-4)
    assert auc_to_dprime(auc) == pytest.approx(paper, abs=0.003)
    assert auc_to_dprime(auc) == pytest.approx(math.sqrt(2) * norm.ppf(auc))


def test_verdicts_and_wald() -> None:
    assert verdict(0.120, -1.99) == "degenerate" and verdict(0.119, -0.665) == "at chance"
    assert verdict(0.696, -0.076) == "weak" and verdict(2.5, 0) == "strong" and verdict(3.2, 0) == "near ceiling"
    diff = wald_difference(0.801, 5000, 0.413, 5000)
    assert 100 * diff["difference"] == pytest.approx(38.8) and 100 * diff["lo"] == pytest.approx(37.0, abs=0.05)
    assert 100 * diff["hi"] == pytest.approx(40.6, abs=0.05)
    flat = wald_difference(0.5, 5000, 0.5, 5000)
    assert 100 * flat["lo"] == pytest.approx(-2.0, abs=0.05) and 100 * flat["hi"] == pytest.approx(2.0, abs=0.05)


def test_bootstrap_is_seeded_and_stratified(tmp_path: Path) -> None:
    bench, rows = write_bench_with(tmp_path / "bench", {("gzcd", "random"): (30, 30), ("hyena", "random"): (20, 20)})
    replies = [(r["item_id"], "Yes" if (k % 3 == 0) else "No") for k, r in enumerate(rows)]
    first = score_with(tmp_path / "a", bench, replies, bootstrap=300)
    second = score_with(tmp_path / "b", bench, replies, bootstrap=300)
    assert first["pooled"]["random"]["acc"] == second["pooled"]["random"]["acc"]
    assert first["bootstrap"] == {"B": 300, "seed": 42, "confidence": 0.95, "cluster": "items within dataset × condition"}
    assert first["pooled"]["random"]["acc"]["n"] == 100


def test_default_bootstrap_is_2000() -> None:
    from biovqa.components.c4 import COMPONENT

    assert COMPONENT.resolve_score_options({})["bootstrap"] == 2000
    assert COMPONENT.table3 == ("dprime", "acc")


def test_stratified_bootstrap_keeps_every_stratum_size_and_is_seeded() -> None:
    from biovqa.stats.draws import resampled_class_counts

    counts = np.array([[5, 3, 0, 1, 7, 2], [0, 0, 0, 0, 0, 0], [40, 0, 0, 0, 0, 60]])
    draws = resampled_class_counts(counts, B=400, seed=3)
    assert draws.shape == (400, 3, 6)
    assert (draws.sum(axis=2) == counts.sum(axis=1)).all()  # a stratum keeps its number of items
    assert (draws[:, 1] == 0).all() and (draws[:, 0, 2] == 0).all()  # nothing drawn from an empty cell
    assert (draws == resampled_class_counts(counts, B=400, seed=3)).all()
    assert np.abs(draws[:, 2, 0].mean() - 40) < 2  # the resampled share centres on the observed one


def test_weighted_auc_is_the_auc_of_the_resampled_items() -> None:
    rng = np.random.default_rng(0)
    scores, positive = np.round(rng.random(60), 1), rng.random(60) < 0.4  # ties on purpose
    weights = rng.multinomial(60, np.full(60, 1 / 60), size=5)
    expanded = [auc(scores[np.repeat(np.arange(60), w)], positive[np.repeat(np.arange(60), w)]) for w in weights]
    assert weighted_auc(scores, positive, weights) == pytest.approx(expanded, abs=1e-12)
    assert weighted_auc(scores, positive, np.ones(60))[0] == pytest.approx(auc(scores, positive), abs=1e-12)
    assert np.isnan(weighted_auc(scores, np.ones(60, bool), weights)).all()  # one class only
