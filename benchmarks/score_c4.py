"""Benchmark: score a full-size synthetic C4 bench (15 000 pairs: the five catalogs × easy / random /
hard × 500 same- and 500 different-individual pairs, the paper's §3.4 and Table 2) at C4's default
B = 2000 through the path ``biovqa score`` takes, beside a plain reference in the same process.

    python benchmarks/score_c4.py [--work benchmarks/_work/c4] [--bootstrap 2000] [--repeat 3]

The bench (``items.parquet`` + manifest, no canvases: scoring never opens an image) and its
predictions are made once and cached under ``--work`` (ignored by git); ``make_benchmark(folder)``
is what ``score_all.py`` calls. The pairs' stored similarities follow the conditions' rules (easy:
same pairs similar, different pairs dissimilar; hard: the reverse; each easy/hard pair is its
anchor's pool extreme, so ``biovqa audit`` accepts it); the replies are a Yes-leaning model whose
sensitivity falls from easy to hard, written as models write them (bare, punctuated, markdown,
sentences, negations, refusals, empty), with 0.5 % failed and 0.5 % missing requests.

Prints, per repeat: ``score_predictions`` (read, check, align, score, summary, write: what
``biovqa score`` runs) wall and CPU time against the 1.0 s budget, the scorer alone (per item +
summary), and ``score_all.plain_reference`` (read the replies and answers, count exact matches).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
PAIRS_PER_KIND = 500
#: the target of the issue's budget for C4 (wall, quiet machine, shared overhead included)
BUDGET_S = 1.0
#: the synthetic model's d′ and bias per condition: easy ≥ random ≥ hard, leaning to "Yes"
SENSITIVITY = {"easy": 1.6, "random": 0.7, "hard": -0.3}
CRITERION = -0.4
YES_FORMS = ("Yes", "yes", "Yes.", "**Yes**", "Yes, they are the same individual.", "YES", "It is the same individual.")
NO_FORMS = ("No", "no", "No.", "**No**", "No, these are different individuals.", "They are not the same animal.")
OTHER_FORMS = ("I cannot determine this from the images.", "Maybe.", "")


def make_items(seed: int = 0, pairs_per_kind: int = PAIRS_PER_KIND) -> tuple[pa.Table, list[str | None], list[str]]:
    """(items table, replies, request statuses), 5 × 3 × 2 × ``pairs_per_kind`` pairs."""
    from biovqa.components.c4.build import ITEM_SCHEMA
    from biovqa.components.c4.prompts import C4_INSTRUCTION, C4_QUESTION
    from biovqa.components.c4.tasks import CONDITIONS, DATASETS
    from biovqa.sources.wildlife import CATALOG_SPECIES

    rng = np.random.default_rng(seed)
    rows: dict[str, list] = {name: [] for name in ITEM_SCHEMA.names}
    replies: list[str | None] = []
    statuses: list[str] = []
    for dataset in DATASETS:
        for condition in CONDITIONS:
            same = np.repeat([True, False], pairs_per_kind)
            order = rng.permutation(len(same))
            pool_lo = rng.uniform(0.05, 0.3, len(same))
            pool_hi = rng.uniform(0.6, 0.95, len(same))
            random_sim = np.where(same, rng.uniform(0.35, 0.9, len(same)), rng.uniform(0.1, 0.7, len(same)))
            most_similar = (condition == "easy") == same
            similarity = (random_sim if condition == "random" else np.where(most_similar, pool_hi, pool_lo))
            # the model: an internal signal with the condition's d′, thresholded at its criterion
            signal = rng.normal(size=len(same)) + np.where(same, SENSITIVITY[condition] / 2, -SENSITIVITY[condition] / 2)
            says_yes = signal > CRITERION
            fate = rng.random(len(same))
            for k, index in enumerate(order.tolist()):
                item_id = f"c4-{dataset}-{condition}-{k:04d}"
                row = {"item_id": item_id, "component": "c4", "task": condition, "question": C4_QUESTION,
                       "instruction": C4_INSTRUCTION, "options": None, "answer": "Yes" if same[index] else "No",
                       "image": f"rendered/c4/{dataset}/{condition}/{item_id}.png", "image_sha256": "0" * 64,
                       "source_id": f"{dataset}-{condition}-{index}-l|{dataset}-{condition}-{index}-r",
                       "dataset": dataset, "species": CATALOG_SPECIES.get(dataset), "condition": condition,
                       "same": bool(same[index]), "viewpoint": "left",
                       "left_annotation": f"{dataset}-{condition}-{index}-l",
                       "right_annotation": f"{dataset}-{condition}-{index}-r",
                       "left_identity": f"id{index}", "right_identity": f"id{index if same[index] else index + 1}",
                       "anchor_side": "left", "similarity": round(float(similarity[index]), 6),
                       "pool_min_similarity": round(float(pool_lo[index]), 6),
                       "pool_max_similarity": round(float(pool_hi[index]), 6), "left_panel_width": 672}
                for name, values in rows.items():
                    values.append(row.get(name))
                status = "failed" if fate[index] < 0.005 else "missing" if fate[index] < 0.01 else "ok"
                statuses.append(status)
                if status != "ok":
                    replies.append(None)
                elif fate[index] > 0.97:
                    replies.append(OTHER_FORMS[int(rng.integers(len(OTHER_FORMS)))])
                else:
                    forms = YES_FORMS if says_yes[index] else NO_FORMS
                    replies.append(forms[int(rng.integers(len(forms)))])
    return pa.table(rows, schema=ITEM_SCHEMA), replies, statuses


def make_benchmark(folder: Path) -> tuple[Path, Path]:
    """(bench folder, predictions file) of the full-size bench under ``folder``, made once. A reply
    that never came is an absent row of the predictions file (``biovqa score`` scores it missing)."""
    from biovqa.bench.folder import write_bench, write_parquet

    bench, predictions = folder / "bench", folder / "predictions.parquet"
    if not (bench / "items.parquet").exists() or not predictions.exists():
        folder.mkdir(parents=True, exist_ok=True)
        items, replies, statuses = make_items()
        write_bench(bench, items, component="c4", generator="benchmarks/score_c4.py", seed=0, sources={},
                    parameters={"pairs_per_kind": PAIRS_PER_KIND, "synthetic": True})
        kept = [k for k, status in enumerate(statuses) if status != "missing"]
        write_parquet(pa.table({"item_id": items.column("item_id").take(kept),
                                "response": pa.array([replies[k] for k in kept], pa.string()),
                                "status": pa.array([statuses[k] for k in kept], pa.string())}), predictions)
    return bench, predictions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=HERE / "_work" / "c4")
    parser.add_argument("--bootstrap", type=int, default=None, help="resamples (default: C4's, 2000)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    import pyarrow.parquet as pq

    from score_all import plain_reference  # the reference every component's benchmark shares

    from biovqa.bench.folder import open_bench
    from biovqa.components.registry import get_component
    from biovqa.scoring.pipeline import score_predictions

    bench, predictions = make_benchmark(args.work)
    options = {} if args.bootstrap is None else {"bootstrap": args.bootstrap}
    opened = open_bench(bench)
    score = get_component("c4").load("scorer")  # resolves the options, as `biovqa score` does
    print(f"synthetic C4 bench: {opened.items.num_rows:,} pairs ({bench})")
    for run in range(args.repeat):
        with tempfile.TemporaryDirectory() as out:
            t0, c0 = time.perf_counter(), time.process_time()
            score_predictions(bench, predictions, Path(out) / "scores", options=options)
            t1, c1 = time.perf_counter(), time.process_time()
            summary = json.loads((Path(out) / "scores" / "summary.json").read_text())
            aligned = pq.read_table(Path(out) / "scores" / "items.parquet", columns=["item_id", "response", "status"])
        t2, c2 = time.perf_counter(), time.process_time()
        score(opened, aligned, options)
        t3, c3 = time.perf_counter(), time.process_time()
        plain_reference(bench, predictions)
        t4 = time.perf_counter()
        wall = t1 - t0
        print(f"run {run + 1}: score_predictions (B = {summary['options']['bootstrap']}) {wall:.2f} s wall, "
              f"{c1 - c0:.2f} s CPU; budget ≤ {BUDGET_S} s → {'PASS' if wall <= BUDGET_S else 'MISS'} | scorer alone "
              f"{t3 - t2:.2f} s wall, {c3 - c2:.2f} s CPU | reference {t4 - t3:.2f} s")
    print("table3:", {k: round(v["value"], 4) for k, v in summary["table3"].items()},
          "| verdict:", summary["verdict"], "| parse rate:", round(summary["format"]["parse_rate"], 4))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
