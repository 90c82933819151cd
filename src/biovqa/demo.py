"""``biovqa demo``: the whole pipeline on data bundled with the package, in seconds.

1. index the bundled GBIF Backbone excerpt (native DwC-A layout);
2. draw placeholder images for the bundled TreeOfLife-200M-format catalog (the catalog's
   ``demo_image`` column marks rows whose image is missing or too small, to show exclusions);
3. write a tiny CUB-200-2011 archive in its native layout (generated images);
4. build C1, C2 and C3, audit them, run the image-blind baseline, score it and write one report;
5. C4: a synthetic Wild Me COCO catalog, built from its bundled precomputed crop embeddings (no
   torch needed), baseline and scores (:mod:`biovqa.components.c4.demo`).
"""

from __future__ import annotations

import json
import shutil
import time
from importlib import resources
from pathlib import Path
from typing import Any

from biovqa.errors import BiovqaError

DEMO_PACKAGE = "biovqa.data.demo"
#: Written into every demo folder; lists what the demo made, so a re-run replaces only that.
MARKER_FILE = ".biovqa-demo.json"
DEMO_ENTRIES: tuple[str, ...] = (
    "taxonomy-index", "images", "cub", "bench-c1", "bench-c2", "run-baseline-c1", "run-baseline-c2",
    "scores-baseline-c1", "scores-baseline-c2", "report",
    "c4-catalog", "c4-embedder", "bench-c4", "run-baseline-c4", "scores-baseline-c4",
    "c3-sources", "bench-c3", "run-baseline-c3", "scores-baseline-c3",
    "bagel-items", "bench-bagel", "run-baseline-bagel", "scores-baseline-bagel",
    "bench-hca", "bench-hca-text", "run-baseline-hca", "run-baseline-hca-text", "scores-baseline-hca",
    "scores-baseline-hca-text",
)


def prepare_demo_folder(out: Path) -> None:
    """Make ``out`` ready for the demo: a new or empty folder, or one an earlier demo wrote (its
    entries are removed; anything else in it is left alone). Any other folder is refused."""
    if out.exists() and not out.is_dir():
        raise BiovqaError("the demo output is a file, not a folder", file=out,
                          hint="give a new folder with --out")
    if out.exists() and any(out.iterdir()):
        marker = out / MARKER_FILE
        if not marker.is_file():
            raise BiovqaError(
                "the folder is not empty and was not written by `biovqa demo`; nothing was changed",
                file=out, hint="give a new or empty folder with --out, e.g. --out biovqa-demo-2")
        try:
            entries = json.loads(marker.read_text(encoding="utf-8")).get("entries", [])
        except (json.JSONDecodeError, AttributeError):
            raise BiovqaError("the demo marker file is damaged; nothing was changed", file=marker,
                              hint="delete the folder yourself or give another --out") from None
        for name in entries:
            if name not in DEMO_ENTRIES:
                continue  # the marker only ever names the demo's own entries
            path = out / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
    out.mkdir(parents=True, exist_ok=True)
    write_marker(out, complete=False)


def write_marker(out: Path, *, complete: bool) -> None:
    """The demo's marker: the entries it may replace, and whether the demo finished (an
    interrupted demo leaves ``"complete": false``; re-running it replaces the folder)."""
    (out / MARKER_FILE).write_text(json.dumps({"written_by": "biovqa demo", "complete": complete,
                                               "entries": list(DEMO_ENTRIES)}, indent=2) + "\n",
                                   encoding="utf-8")


def _counted(counts: dict[str, int]) -> str:
    """``{"low_resolution": 1, "missing_image": 2}`` → ``"1 low resolution, 2 missing image"``."""
    return ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in sorted(counts.items()) if n) or "none"


def demo_data_dir() -> Path:
    return Path(str(resources.files("biovqa") / "data" / "demo"))


def run_demo(out: str | Path, *, console: Any | None = None) -> Path:
    """Run the demo into ``out`` and return the path of the report's index.html. One demo writes
    a folder at a time (a second is refused naming the first one's pid)."""

    def say(text: str) -> None:  # plain text: paths and hints like biovqa[transformers] are not markup
        (console.print(text, markup=False, highlight=False) if console is not None else print(text))
    from biovqa.bench.folder import FolderLock, output_lock_path

    out = Path(out)
    from biovqa.progress import without_stage_lines

    lock = FolderLock(output_lock_path(out), folder=out, command="demo").acquire()
    try:
        with without_stage_lines():  # the demo prints its own numbered steps
            return _run_demo(out, say)
    finally:
        lock.release(remove=True)


def _run_demo(out: Path, say: Any) -> Path:
    from biovqa.components.c1.build import C1BuildOptions, build_c1
    from biovqa.components.c2.build import build_c2
    from biovqa.bench.audit import audit_bench
    from biovqa.reporting import write_report
    from biovqa.engine.runner import RunOptions, run_benchmark
    from biovqa.scoring.pipeline import score_predictions
    from biovqa.synthetic import draw_placeholder_images, write_cub
    from biovqa.taxonomy.index import build_index

    prepare_demo_folder(out)
    data = demo_data_dir()
    started = time.perf_counter()

    index = out / "taxonomy-index"
    build_index(data / "backbone", index)
    say(f"1/8 indexed the bundled GBIF Backbone excerpt → {index}")

    images = out / "images"
    n_images = draw_placeholder_images(data / "catalog.csv", images)
    cub = write_cub(out / "cub", n_classes=12, images_per_class=3, seed=7, image_size=(320, 240))
    say(f"2/8 drew {n_images} placeholder images for the C1 catalog and a 36-image CUB-format archive → {out}")

    bench_c1 = out / "bench-c1"
    bench = build_c1(data / "catalog.csv", index, images, bench_c1,
                     options=C1BuildOptions(per_group=8, species_cap=2, min_side=224))
    excluded = {reason: sum(v.values()) for reason, v in bench.manifest["exclusions"].items()}
    bench_c2 = out / "bench-c2"
    c2 = build_c2(cub, bench_c2)
    say(f"3/8 built C1: {bench.manifest['counts']['total']} questions over {bench.manifest['images']} images "
        f"(excluded: {_counted(excluded)}); C2: {c2.manifest['counts']['total']} questions → {out}")

    from biovqa.components.c3.demo import build_demo as build_c3_demo

    bench_c3 = out / "bench-c3"
    c3 = build_c3_demo(bench_c3, out / "c3-sources")
    say(f"    C3: {c3.manifest['counts']['total']} questions from tiny WAID/Boxes-on-Bees/DePondFi/beetle/GZCD sources")

    say(f"4/8 audits passed: {audit_bench(bench_c1)}; {audit_bench(bench_c2)}; {audit_bench(bench_c3)}")

    score_dirs = []
    for name, bench_dir in (("c1", bench_c1), ("c2", bench_c2), ("c3", bench_c3)):
        run_dir = out / f"run-baseline-{name}"
        predictions = run_benchmark(bench_dir, run_dir, RunOptions(backend="baseline", progress=False)).predictions_path
        score_dir = out / f"scores-baseline-{name}"
        score_predictions(bench_dir, predictions, score_dir, label="floor (image-blind)",
                          options={"bootstrap": 200})
        score_dirs.append(score_dir)
    say(f"5/8 ran the image-blind baseline → {out}/run-baseline-c1, -c2, -c3")
    say(f"6/8 scored → {', '.join(str(d) for d in score_dirs)}")
    from biovqa.components.c4.demo import demo_c4

    score_dirs.append(demo_c4(out, say, "7/8", data / "c4-embeddings.parquet"))
    from biovqa.components.bagel.demo import demo_bagel
    from biovqa.components.hca.demo import demo_hca

    score_dirs += [demo_bagel(out, say, "    "), *demo_hca(out, bench_c1, say, "    ")]
    report = write_report(score_dirs, out / "report")
    say(f"8/8 report → {report}")
    write_marker(out, complete=True)
    say(f"done in {time.perf_counter() - started:.1f} s. Open {report} in a browser.")
    say(f"next: run a real model on the demo's C1 (pip install 'biovqa[transformers]'): "
        f"biovqa run {bench_c1} --model Qwen/Qwen2.5-VL-3B-Instruct -o {out}/run-qwen, then "
        f"biovqa score {bench_c1} -p {out}/run-qwen/predictions.parquet -o {out}/scores-qwen and "
        f"biovqa report {out}/scores-qwen -o {out}/report-qwen")
    return report
