"""``biovqa demo``: the whole pipeline on data bundled with the package, in seconds.

1. index the bundled GBIF Backbone excerpt (native DwC-A layout);
2. draw placeholder images for the bundled TreeOfLife-200M-format catalog (the catalog's
   ``demo_image`` column marks rows whose image is missing or too small, to show exclusions);
3. build C1, audit it, run the image-blind baseline, score it and write the report.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow.csv as pacsv

DEMO_PACKAGE = "biovqa.data.demo"


def demo_data_dir() -> Path:
    return Path(str(resources.files("biovqa") / "data" / "demo"))


def draw_placeholder_images(catalog: Path, images: Path, *, size: int = 256) -> int:
    """Write one deterministic PNG per catalog row (``demo_image``: ok → size², small → 64²,
    missing → none); returns how many were written."""
    from PIL import Image, ImageDraw

    images.mkdir(parents=True, exist_ok=True)
    table = pacsv.read_csv(catalog).select(["uuid", "species", "demo_image"]).to_pylist()
    written = 0
    for row in table:
        if row["demo_image"] == "missing":
            continue
        side = 64 if row["demo_image"] == "small" else size
        digest = hashlib.sha256(f"{row['species']}|{row['uuid']}".encode()).digest()
        background = tuple(60 + b % 150 for b in digest[:3])
        image = Image.new("RGB", (side, side), background)
        draw = ImageDraw.Draw(image)
        for k in range(4):
            x0, y0 = digest[4 + k] % side, digest[8 + k] % side
            box = (min(x0, side - 1 - x0), min(y0, side - 1 - y0), max(x0, side - 1 - x0), max(y0, side - 1 - y0))
            draw.ellipse(box, outline=tuple(255 - c for c in background), width=3)
        image.save(images / f"{row['uuid']}.png", format="PNG", optimize=False)
        written += 1
    return written


def run_demo(out: str | Path, *, console: Any | None = None) -> Path:
    """Run the demo into ``out`` and return the path of the report's index.html."""
    from .build.c1 import C1BuildOptions, build_c1
    from .manifests.audit import audit_bench
    from .report import write_report
    from .run.engine import RunOptions, run_benchmark
    from .scoring import score_predictions
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
    say(f"1/6 indexed the bundled GBIF Backbone excerpt → {index}")

    images = out / "images"
    n_images = draw_placeholder_images(data / "catalog.csv", images)
    say(f"2/6 drew {n_images} placeholder images → {images}")

    bench_dir = out / "bench-c1"
    bench = build_c1(data / "catalog.csv", index, images, bench_dir,
                     options=C1BuildOptions(per_group=8, species_cap=2, min_side=224))
    excluded = {reason: sum(v.values()) for reason, v in bench.manifest["exclusions"].items()}
    say(f"3/6 built C1: {bench.manifest['counts']['total']} questions over "
        f"{bench.manifest['images']} images (excluded: {excluded}) → {bench_dir}")

    say(f"4/6 audit passed: {audit_bench(bench_dir)}")

    run_dir = out / "run-baseline"
    predictions = run_benchmark(bench_dir, run_dir, RunOptions(backend="baseline", progress=False)).predictions_path
    say(f"5/6 ran the image-blind baseline → {predictions}")

    score_dir = out / "scores-baseline"
    score_predictions(bench_dir, predictions, score_dir, options={"label": "floor (image-blind)", "bootstrap": 200})
    report = write_report([score_dir], out / "report")
    say(f"6/6 scored and reported → {report}")
    say(f"done in {time.perf_counter() - started:.1f} s. Open {report} in a browser.")
    return report
