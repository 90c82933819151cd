"""Benchmark: ``biovqa report`` on score folders of the real size — 1 861 608 items over C1–C4
(C1 890 000, C2 824 104, C3 132 504, C4 15 000) for several models.

    python benchmarks/report_scale.py [--models 3] [--scale 1.0] [--keep DIR] [--breakdown]

Synthetic score folders (``items.parquet`` in each component's score schema with the columns the
report reads, and a ``summary.json`` with Table 3 and the sections the analysis reads) are written
into a temporary folder (the bench's structure — each item's image, gold answer — is the same for
every model, as on a real benchmark; only the replies and scores differ); their benchmark folder does not exist, so the item browser works from
the score files alone (no question text, no thumbnails). Then ``biovqa report`` runs as a child
process. Prints: generation time, report wall and CPU time, the report's peak RSS, the size of
``index.html``, of the ``browser/`` sidecar (files, bytes, the start-up ``index.js`` and its
cells, the largest page) and, with ``--breakdown``, the time of each stage measured in this
process (ranks, paired differences, browser). ``--scale`` shrinks every component's item count by that factor (for a quick look).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

C1_TASKS = {"phylum": 100_000, "class": 100_000, "order": 90_000, "family": 100_000, "genus": 100_000,
            "species": 100_000, "scientific_name": 100_000, "common_name": 100_000, "common_name_mcq": 100_000}
C1_GROUPS = ("Amphibians", "Angiosperms", "Arachnids", "Birds", "Bryophytes", "Fish", "Gymnosperms", "Insects",
             "Mammals", "Reptiles")
C2_FAMILIES = {"attr_bare_value": 280_433, "attr_group_value": 321_073, "marker_localization": 11_788,
               "visibility_partset": 117_880, "visibility_side": 35_364, "category_mcq": 11_191,
               "open_common_name": 11_788, "open_scientific_name": 11_668, "open_genus": 11_728, "open_kind_of": 11_191}
C3_TASKS = {"counting": 53_498, "viewpoint": 13_000, "absolute_distance": 14_108, "relative_distance": 3_976,
            "relative_counting": 42_412, "localization": 3_988, "relative_position": 1_000, "ocr": 522}
C4_DATASETS = ("whaleshark", "hyena", "leopard", "gzcd", "beluga")
C4_CONDITIONS = ("easy", "random", "hard")
WORDS = ("Larus", "occidentalis", "Passerella", "iliaca", "gull", "sparrow", "blue", "left", "both", "Insecta",
         "Aves", "Mammalia", "Reptilia", "Hylidae", "Rosaceae", "The", "answer", "is", "(B)", "yes", "no", "3")


def _counts(spec: dict[str, int], scale: float) -> dict[str, int]:
    return {k: max(2, int(round(v * scale))) for k, v in spec.items()}


def _replies(rng: np.random.Generator, n: int) -> pa.Array:
    """Replies of 1–6 words from a small vocabulary (the browser's text load)."""
    lengths = rng.integers(1, 7, size=n)
    words = np.asarray(WORDS, dtype=object)[rng.integers(0, len(WORDS), size=int(lengths.sum()))]
    ends = np.cumsum(lengths)
    return pa.array([" ".join(words[e - k:e]) for e, k in zip(ends, lengths)], pa.string())


def _core(component: str, tasks: np.ndarray, score: np.ndarray, rng: np.random.Generator) -> dict[str, pa.Array]:
    n = len(tasks)
    replies = _replies(rng, n)
    return {"item_id": pa.array([f"{component}-{k:07d}" for k in range(n)], pa.string()),
            "component": pa.array([component] * n, pa.string()).dictionary_encode(),
            "task": pa.array(tasks, pa.string()).dictionary_encode(),
            "status": pa.array(["ok"] * n, pa.string()).dictionary_encode(),
            "response": replies, "parsed": replies, "score": pa.array(score, pa.float64())}


def _estimate(values: np.ndarray) -> dict[str, object]:
    return {"value": float(np.mean(values)) if len(values) else None, "lo": None, "hi": None, "n": int(len(values))}


def write_folder(out: Path, component: str, label: str, skill: float, scale: float, seed: int) -> None:
    """One synthetic score folder of ``component`` for a model answering right with ≈ ``skill``."""
    rng = np.random.default_rng(seed)
    summary: dict[str, object] = {"component": component, "label": label, "options": {"seed": 42, "bootstrap": 1000},
                                  "provenance": {"benchmark": str(out / "no-bench")}}
    if component == "c1":
        spec = _counts(C1_TASKS, scale)
        tasks = np.repeat(np.array(list(spec), dtype=object), list(spec.values()))
        n = len(tasks)
        images = max(1, n // 9)
        source = np.random.default_rng(7).integers(0, images, size=n)  # the bench's images: one for every model
        group = np.asarray(C1_GROUPS, dtype=object)[source % len(C1_GROUPS)]
        score = (rng.random(n) < skill * (1 - 0.08 * (np.arange(n) // max(1, n // 9)))).astype(float)
        columns = {**_core("c1", tasks, score, rng), "group": pa.array(group, pa.string()).dictionary_encode(),
                   "source_id": pa.array([f"img{s:06d}" for s in source], pa.string()),
                   "em": pa.array(score.astype(np.int8)),
                   "tier": pa.array(np.asarray(("Easy", "Medium", "Hard"), dtype=object)[source % 3], pa.string())}
        from biovqa.components.c1.tasks import TABLE3_COLUMNS
        summary["table3"] = {col: _estimate(score[tasks == task]) for col, task in TABLE3_COLUMNS.items()}
        summary["groups"] = {g: {"em": _estimate(score[group == g])} for g in C1_GROUPS}
    elif component == "c2":
        from biovqa.components.c2.tasks import CATEGORY_OF, TABLE3_COLUMNS
        spec = _counts(C2_FAMILIES, scale)
        family = np.repeat(np.array(list(spec), dtype=object), list(spec.values()))
        n = len(family)
        cags = np.clip(rng.normal(skill - 0.2, 0.35, size=n), -0.5, 1.0)
        columns = {**_core("c2", family, cags, rng), "family": pa.array(family, pa.string()).dictionary_encode(),
                   "cags": pa.array(cags), "em": pa.array((cags > 0.9).astype(np.int8))}
        category = np.array([CATEGORY_OF[f] for f in family], dtype=object)
        summary["table3"] = {col: _estimate(cags[category == cat]) for col, cat in TABLE3_COLUMNS.items()}
        summary["families"] = {f: {"cags": _estimate(cags[family == f])} for f in spec}
    elif component == "c3":
        from biovqa.components.c3.tasks import TABLE3
        spec = _counts(C3_TASKS, scale)
        tasks = np.repeat(np.array(list(spec), dtype=object), list(spec.values()))
        n = len(tasks)
        gold = np.asarray(("A", "B", "C", "D"), dtype=object)[np.random.default_rng(8).integers(0, 4, size=n)]
        score = (rng.random(n) < skill).astype(float)
        columns = {**_core("c3", tasks, score, rng), "subset": pa.array([f"s{k % 7}" for k in range(n)], pa.string()),
                   "gold": pa.array(gold, pa.string()), "cluster": pa.array([f"p{k // 4:06d}" for k in range(n)], pa.string()),
                   "tier": pa.array(np.asarray(("easy", "medium", "hard"), dtype=object)[np.arange(n) % 3], pa.string())}
        summary["table3"] = {col: _estimate(score[tasks == task]) for col, task in TABLE3.items()}
    else:
        per = max(2, int(round(1000 * scale)))
        dataset = np.repeat(np.array(C4_DATASETS, dtype=object), per * len(C4_CONDITIONS))
        condition = np.tile(np.repeat(np.array(C4_CONDITIONS, dtype=object), per), len(C4_DATASETS))
        n = len(dataset)
        same = (np.arange(n) % 2 == 0)
        said_yes = np.where(same, rng.random(n) < skill, rng.random(n) < 1 - skill)
        correct = said_yes == same
        columns = {**_core("c4", condition, correct.astype(float), rng),
                   "dataset": pa.array(dataset, pa.string()), "condition": pa.array(condition, pa.string()),
                   "same": pa.array(same), "said_yes": pa.array(said_yes), "correct": pa.array(correct)}
        from scipy.stats import norm
        random = condition == "random"

        def dprime(mask: np.ndarray) -> float:
            h = (said_yes[mask & same].sum() + .5) / ((mask & same).sum() + 1)
            f = (said_yes[mask & ~same].sum() + .5) / ((mask & ~same).sum() + 1)
            return float(norm.ppf(h) - norm.ppf(f))
        summary["table3"] = {"dprime": {"value": dprime(random), "lo": None, "hi": None, "n": int(random.sum())},
                             "acc": _estimate(correct[random].astype(float))}
        summary["cells"] = {d: {"random": {"dprime": {"value": dprime(random & (dataset == d)), "lo": None, "hi": None,
                                                      "n": per}}} for d in C4_DATASETS}
    summary["n_items"] = n
    summary["statuses"] = {"ok": n, "failed": 0, "missing": 0}
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), out / "items.parquet")
    (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")


def _folder_size(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the real item counts")
    parser.add_argument("--keep", type=Path, default=None, help="write here instead of a temporary folder")
    parser.add_argument("--breakdown", action="store_true", help="also time the report's stages in-process")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="biovqa-report-scale-"))
    start = time.perf_counter()
    folders = []
    for m in range(args.models):
        for c, component in enumerate(("c1", "c2", "c3", "c4")):
            folder = root / f"scores-{component}-m{m}"
            write_folder(folder, component, f"Model-{m + 1}", 0.75 - 0.1 * m, args.scale, seed=100 * m + c)
            folders.append(folder)
    items = sum(pq.read_metadata(f / "items.parquet").num_rows for f in folders) // args.models
    print(f"generated {args.models} models × {items:,} items (scale {args.scale}) in "
          f"{time.perf_counter() - start:.1f} s → {root}")

    out = root / "report"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "biovqa", "report", *map(str, folders), "--out", str(out)],
                            capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        print(result.stdout, result.stderr)
        raise SystemExit(result.returncode)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"biovqa report: {wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {after.ru_maxrss / 2**20:.2f} GiB")
    html = (out / "index.html").stat().st_size
    files, size = _folder_size(out / "browser")
    pages = sorted((out / "browser").glob("page-*.js"))
    largest = max((p.stat().st_size for p in pages), default=0)
    from biovqa.reporting.browser import read_index

    index = (out / "browser" / "index.js").stat().st_size
    cells = len(read_index(out)["cells"])
    print(f"index.html {html / 2**10:.0f} KiB; browser/ {files:,} files, {size / 2**20:.1f} MiB "
          f"(start-up: index.js {index / 2**10:.1f} KiB over {cells} cells; {len(pages):,} pages, "
          f"largest {largest / 2**10:.1f} KiB)")

    if args.breakdown:
        from biovqa.reporting.browser import write_browser
        from biovqa.reporting.leaderboard import build_leaderboard, with_bootstrap_ranks
        from biovqa.reporting.paired import paired_differences
        from biovqa.reporting.writer import load_runs, table3_columns

        runs = load_runs(folders)
        t0 = time.perf_counter()
        board = with_bootstrap_ranks(build_leaderboard(runs, table3_columns(runs)), runs)
        t1 = time.perf_counter()
        paired_differences(runs, board.generalists)
        t2 = time.perf_counter()
        write_browser(runs, root / "breakdown")
        t3 = time.perf_counter()
        print(f"stages: rank bootstrap (B = 1000) {t1 - t0:.1f} s, paired differences {t2 - t1:.1f} s, "
              f"browser {t3 - t2:.1f} s")


if __name__ == "__main__":
    main()
