"""Benchmark: build all ten C3 subsets from synthetic sources in their native formats and render
every C3 image; compare the rendering with bare PIL decode + encode of the same photos.

    python benchmarks/build_c3.py [--per-subset 500] [--photos 600] [--catalog-photos 1300]
                                  [--plates 588] [--photo-size 240x180] [--canvas 192] [--plate-side 384]
                                  [--counting-partners 4] [--grids-per-anchor 5.4] [--sample N]

Sources (written into a temporary folder with the writers of :mod:`biovqa.components.c3.demo`):
WAID (three splits, classes cycling over its six per-class counting subsets), Boxes on Bees,
DePondFi, 2018-NEON-beetles (``--plates`` plates of 12 specimens: 588 plates give the paper's
≈ 14 108 measurements), GZCD as a GGR table (declared complete: every animal is drawn), and three
Wild Me COCO catalogs (localization and viewpoint only). Item counts are those of a full build (ten subsets of ``--per-subset``
images, every beetle measurement, every catalog annotation); the *pixel* sizes are scaled down
(``--photo-size`` sources, ``--canvas`` canvases) so that the ~75 000 canvases render in well under
an hour on one core — the ratio to PIL is measured on the same files either way.

Prints: time to write the sources; ``biovqa build c3`` wall time for reading and making the items
(the build's rendering is deferred to the loop below); items per task and images (canvases and
overlays; source photos shown as they are; shared canvases counted once) beside the paper's, with
the relative difference; then every canvas (or every k-th with ``--sample N``) rendered into the
bench, one at a time, each followed by the reference on the same photos (so that load on the
machine weighs on both alike) — PIL opens and decodes each source photo the canvas reads and
encodes one PNG (same encoder settings) — with the ratio reference time / our time (target ≥ 0.8×);
and the time to hash the source photos items show as they are (nothing is written for them).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image
from rich.progress import track

import biovqa.components.c3.build as c3_build
from biovqa.components.c3.build.items import COUNTING_PARTNERS, GRIDS_PER_ANCHOR
from biovqa.components.c3.demo import _layout, _scene, write_bees, write_beetles, write_depondfi, write_gzcd, write_waid
from biovqa.components.c3.render import PNG_SAVE_OPTIONS, CanvasJob, SourcePhoto, render_one
from biovqa.components.c3.tasks import TASKS

PAPER_COUNTS = {t.name: t.paper_count for t in TASKS}
from biovqa.sources.wildlife import write_coco_catalog

VIEWS = ("left", "right", "front", "back", "frontleft", "frontright", "backleft", "backright", "up", "down")


def counts(rng: np.random.Generator, n: int, high: int) -> list[int]:
    """``n`` counts, log-uniform in 1..high (sparse and dense scenes)."""
    return [int(v) for v in np.maximum(1, np.round(np.exp(rng.uniform(0, np.log(high), n))))]


def write_catalog(root: Path, name: str, photos: int, size: tuple[int, int], rng: np.random.Generator) -> Path:
    folder = root / f"{name}.coco"
    images, annotations = [], []
    for k in range(photos):
        n = 1 if rng.random() < 0.6 else int(rng.integers(2, 6))
        boxes = _layout(rng, n, size, min(size) * 0.4)
        file_name = f"{k:05d}.jpg"
        _scene(rng, size, boxes, folder / "images" / "train2022" / file_name)
        images.append({"id": k + 1, "file_name": file_name, "width": size[0], "height": size[1]})
        for b in boxes:
            annotations.append({"id": len(annotations) + 1, "image_id": k + 1, "theta": 0.0, "category_id": 0,
                                "bbox": [b[0], b[1], b[2] - b[0], b[3] - b[1]], "name": f"ind{len(annotations) % 97}",
                                "viewpoint": VIEWS[int(rng.integers(len(VIEWS)))]})
    write_coco_catalog(folder, annotations, images, categories=[{"id": 0, "name": name}])
    return folder


def write_sources(root: Path, args: argparse.Namespace, size: tuple[int, int]) -> dict[str, Path]:
    rng = np.random.default_rng(7)
    n = args.photos
    plates = {f"A{32929 + p:011d}.jpg": [(round(float(rng.uniform(0.6, 1.9)), 3), round(float(rng.uniform(0.25, 0.7)), 3))
                                         for _ in range(12)] for p in range(args.plates)}
    g, pz, r = "zebra_grevys", "zebra_plains", "giraffe_reticulated"
    gzcd = [[g] * int(c) + [pz] * int(rng.integers(0, 2)) + [r] * int(rng.random() < 0.2) for c in counts(rng, n, 8)]
    return {
        # WAID's six per-class counting subsets: 2n photos per split, classes cycling (≥ 500 per class)
        "waid": write_waid(root / "waid", {s: counts(rng, 2 * n, 60) for s in ("train", "valid", "test")}, size=size,
                           cycle_classes=True),
        "bees": write_bees(root / "bees", counts(rng, n, 120), size=size),
        "depondfi": write_depondfi(root / "depondfi", counts(rng, n, 20), size=(size[0], size[0])),
        "beetles": write_beetles(root / "beetles", plates, cell=60, cm_pix=25.0),
        "gzcd": write_gzcd(root / "gzcd", gzcd, size=size),
        **{name: write_catalog(root, name, args.catalog_photos, size, rng) for name in ("whaleshark", "hyena", "leopard")},
    }


def reference_one(job: CanvasJob, destination: Path) -> None:
    """Bare PIL on the photos ``job`` reads: decode each, encode one PNG (same encoder settings)."""
    decoded = []
    for source in (p.source for p in job.panels):
        with Image.open(source) as image:
            image.load()
            decoded.append(image.convert("RGB"))
    decoded[0].save(destination, **PNG_SAVE_OPTIONS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-subset", type=int, default=500)
    parser.add_argument("--photos", type=int, default=600, help="photos per counting source (WAID: per split)")
    parser.add_argument("--catalog-photos", type=int, default=1300, help="photos per Wild Me catalog")
    parser.add_argument("--plates", type=int, default=588, help="beetle plates of 12 specimens")
    parser.add_argument("--photo-size", default="240x180")
    parser.add_argument("--canvas", type=int, default=192)
    parser.add_argument("--plate-side", type=int, default=384)
    parser.add_argument("--counting-partners", type=int, default=COUNTING_PARTNERS)
    parser.add_argument("--grids-per-anchor", type=float, default=GRIDS_PER_ANCHOR)
    parser.add_argument("--sample", type=int, default=0,
                        help="render only every k-th image so that about this many are rendered (0: all of them)")
    args = parser.parse_args(argv)
    size = tuple(int(v) for v in args.photo_size.split("x"))
    captured: dict[str, object] = {}

    def deferred_render_all(jobs, *, workers=1):  # type: ignore[no-untyped-def]
        captured["jobs"] = list(jobs)  # rendered below, job by job beside the reference
        return ["0" * 64] * len(captured["jobs"])

    c3_build.render_all = deferred_render_all  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        sources = write_sources(root / "sources", args, size)  # type: ignore[arg-type]
        print(f"sources written in {time.perf_counter() - started:.1f} s ({size[0]}×{size[1]} photos)")
        started = time.perf_counter()
        bench = c3_build.build_c3(sources, root / "bench", per_subset=args.per_subset, canvas=args.canvas,
                                  plate_side=args.plate_side, counting_partners=args.counting_partners,
                                  grids_per_anchor=args.grids_per_anchor,
                                  complete_counts=("gzcd",))  # the synthetic GGR table annotates every animal
        total = time.perf_counter() - started
        jobs: list[CanvasJob | SourcePhoto] = captured["jobs"]  # type: ignore[assignment]
        manifest = bench.manifest
        print(f"biovqa build c3: {manifest['counts']['total']:,} items, {len(jobs):,} images; reading + items "
              f"{total:.1f} s (rendering below)")
        print(f"subsets: {len(manifest['subsets'])} — " + ", ".join(
            f"{sid} {entry['selected']}" for sid, entry in manifest["subsets"].items()))
        print(f"counting partners {args.counting_partners}, grids per anchor {args.grids_per_anchor:g}")
        for task, entry in manifest["task_counts"].items():
            print(f"  {task:18s} {entry['produced']:>7,}  (paper {PAPER_COUNTS[task]:,}; "
                  f"{entry['produced'] / PAPER_COUNTS[task] - 1:+.1%})")
        total, images = manifest["counts"]["total"], manifest["images"]
        print(f"  {'all items':18s} {total:>7,}  (paper {sum(PAPER_COUNTS.values()):,}; "
              f"{total / sum(PAPER_COUNTS.values()) - 1:+.1%})")
        print(f"  {'images':18s} {images['produced']:>7,}  (paper {images['expected_paper_count']:,}; "
              f"{images['produced'] / images['expected_paper_count'] - 1:+.1%}) — {images['canvases']:,} canvases, "
              f"{images['source_photos']:,} source photos, {images['items_per_image']} items per image; per task "
              + ", ".join(f"{t} {n:,}" for t, n in images["by_task"].items()))
        canvases = [job for job in jobs if isinstance(job, CanvasJob)]
        photos = [job for job in jobs if isinstance(job, SourcePhoto)]
        step = max(1, len(canvases) // args.sample) if args.sample else 1
        sample = canvases[::step]
        ours = theirs = 0.0
        (root / "reference").mkdir()
        # canvas by canvas, ours then the reference on the same photos, so that whatever else the
        # machine does weighs on both alike
        for k, job in enumerate(track(sample, description="render + reference", update_period=5)):
            started = time.perf_counter()
            render_one(job)
            middle = time.perf_counter()
            reference_one(job, root / "reference" / f"{k % 64}.png")
            ours += middle - started
            theirs += time.perf_counter() - middle
        started = time.perf_counter()
        for job in photos:  # shown as they are: only hashed
            render_one(job)
        hashing = time.perf_counter() - started
    print(f"rendered {len(sample):,} of {len(canvases):,} canvases (every {step}): ours {ours:.1f} s; reference "
          f"(PIL decode of every source photo + one PNG encode per canvas) {theirs:.1f} s")
    print(f"all {len(canvases):,} canvases at this rate: ours {ours * len(canvases) / max(1, len(sample)):.0f} s on "
          f"one worker; {len(photos):,} source photos shown as they are: hashed in {hashing:.1f} s (nothing written)")
    ratio = theirs / ours if ours else float("nan")
    print(f"canvases ratio reference/ours {ratio:5.2f}×  target ≥ 0.8× → {'PASS' if ratio >= 0.8 else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
