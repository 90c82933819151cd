"""``biovqa demo``: the whole pipeline on data bundled with the package, in seconds.

1. index the bundled GBIF Backbone excerpt (native DwC-A layout);
2. draw placeholder images for the bundled TreeOfLife-200M-format catalog (the catalog's
   ``demo_image`` column marks rows whose image is missing or too small, to show exclusions);
3. write a tiny CUB-200-2011 archive in its native layout (generated images);
4. build C1 and C2, audit both, run the image-blind baseline, score it and write one report.
"""

from __future__ import annotations

import shutil
import time
from importlib import resources
from pathlib import Path
from typing import Any

DEMO_PACKAGE = "biovqa.data.demo"


def demo_data_dir() -> Path:
    return Path(str(resources.files("biovqa") / "data" / "demo"))


def run_demo(out: str | Path, *, console: Any | None = None) -> Path:
    """Run the demo into ``out`` and return the path of the report's index.html."""
    from .build.c1 import C1BuildOptions, build_c1
    from .build.c2 import build_c2
    from .manifests.audit import audit_bench
    from .report import write_report
    from .run.engine import RunOptions, run_benchmark
    from .scoring import score_predictions
    from .synthetic import draw_placeholder_images, write_cub
    from .taxonomy.index import build_index

    say = console.print if console is not None else print
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    data = demo_data_dir()
    started = time.perf_counter()

    index = out / "taxonomy-index"
    build_index(data / "backbone", index)
    say(f"1/7 indexed the bundled GBIF Backbone excerpt → {index}")

    images = out / "images"
    n_images = draw_placeholder_images(data / "catalog.csv", images)
    cub = write_cub(out / "cub", n_classes=12, images_per_class=3, seed=7, image_size=(320, 240))
    say(f"2/7 drew {n_images} placeholder images for the C1 catalog and a 36-image CUB-format archive → {out}")

    bench_c1 = out / "bench-c1"
    bench = build_c1(data / "catalog.csv", index, images, bench_c1,
                     options=C1BuildOptions(per_group=8, species_cap=2, min_side=224))
    excluded = {reason: sum(v.values()) for reason, v in bench.manifest["exclusions"].items()}
    bench_c2 = out / "bench-c2"
    c2 = build_c2(cub, bench_c2)
    say(f"3/7 built C1: {bench.manifest['counts']['total']} questions over {bench.manifest['images']} images "
        f"(excluded: {excluded}); C2: {c2.manifest['counts']['total']} questions → {out}")

    say(f"4/7 audits passed: {audit_bench(bench_c1)}; {audit_bench(bench_c2)}")

    score_dirs = []
    for name, bench_dir in (("c1", bench_c1), ("c2", bench_c2)):
        run_dir = out / f"run-baseline-{name}"
        predictions = run_benchmark(bench_dir, run_dir, RunOptions(backend="baseline", progress=False)).predictions_path
        score_dir = out / f"scores-baseline-{name}"
        score_predictions(bench_dir, predictions, score_dir,
                          options={"label": "floor (image-blind)", "bootstrap": 200})
        score_dirs.append(score_dir)
    say(f"5/7 ran the image-blind baseline → {out}/run-baseline-c1, {out}/run-baseline-c2")
    say(f"6/7 scored → {', '.join(str(d) for d in score_dirs)}")
    report = write_report(score_dirs, out / "report")
    say(f"7/7 report → {report}")
    say(f"done in {time.perf_counter() - started:.1f} s. Open {report} in a browser.")
    return report
