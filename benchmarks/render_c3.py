"""C3 canvas rendering speed against bare PIL decode + encode of the same photos.

    python benchmarks/render_c3.py [--images 200] [--size 1600x1200] [--canvas 1024]

Writes N photo-like JPEGs (smooth colour fields plus sensor noise, so PNG encoding costs what it
costs on real photos) and times, on the same files and the same PNG encoder settings:

* reference — PIL only: open, decode, convert to RGB, encode PNG, write (the issue's yardstick);
* single    — one photo fitted into a canvas with a red measurement line (white border), a blue
              scale bar (green border) and a dotted box: absolute/relative distance overlays;
* grid      — 2×2 relative-counting grids (four photos per canvas, counted per photo);
* overlay   — the six-box relative-position overlay;
* single ×2 — ``single`` with two worker processes (bytes checked identical to one worker).

The target is every C3 rendering ≥ 0.8 × the reference's photos/s.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from biovqa.components.c3.render import PNG_SAVE_OPTIONS, CanvasJob, Panel, Shape, render_all

sys.path.insert(0, str(Path(__file__).parent))
from render_markers import photo_like  # noqa: E402  (the same synthetic photos as the C2 benchmark)


def reference(paths: list[Path], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for k, path in enumerate(paths):
        with Image.open(path) as image:
            image.load()
            image.convert("RGB").save(out / f"{k}.png", **PNG_SAVE_OPTIONS)


def timed(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--size", default="1600x1200", help="source photo size (beetle plates are larger)")
    parser.add_argument("--canvas", type=int, default=1024, help="canvas side in pixels")
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.split("x"))
    side = args.canvas
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = []
        for k in range(args.images):
            path = root / "src" / f"{k}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            photo_like(rng, width, height).save(path, quality=90)
            paths.append(path)
        w, h = width, height
        single = [CanvasJob(root / "single" / f"{k}.png", (side, side), (Panel(p, (0, 0, side, side)),), (
            Shape("line", 0, (0.2 * w, 0.5 * h, 0.7 * w, 0.55 * h), "red", border="white"),
            Shape("line", 0, (0.1 * w, 0.9 * h, 0.3 * w, 0.9 * h), "blue", border="green"),
            Shape("box", 0, (0.15 * w, 0.3 * h, 0.8 * w, 0.75 * h), "cyan", dotted=True)))
            for k, p in enumerate(paths)]
        half = side // 2
        grid = [CanvasJob(root / "grid" / f"{k}.png", (side, side), tuple(
            Panel(paths[(4 * k + i) % len(paths)], ((i % 2) * half, (i // 2) * half, half, half)) for i in range(4)))
            for k in range(len(paths) // 4)]
        overlay = [CanvasJob(root / "overlay" / f"{k}.png", (side, side), (Panel(p, (0, 0, side, side)),), tuple(
            Shape("box", 0, ((i % 3) * w / 3 + 10, (i // 3) * h / 2 + 10, (i % 3 + 1) * w / 3 - 10,
                             (i // 3 + 1) * h / 2 - 10), ["red", "blue", "green", "cyan", "white", "black"][i])
            for i in range(6))) for k, p in enumerate(paths)]

        base = timed(reference, paths, root / "reference")
        rates = {"reference": args.images / base}
        rates["single"] = args.images / timed(render_all, single)
        rates["grid"] = (4 * len(grid)) / timed(render_all, grid)
        rates["overlay"] = args.images / timed(render_all, overlay)
        one = [hashlib.sha256(job.destination.read_bytes()).hexdigest() for job in single]
        for job in single:
            job.destination.unlink()
        rates["single ×2"] = args.images / timed(lambda jobs: render_all(jobs, workers=2), single)
        two = [hashlib.sha256(job.destination.read_bytes()).hexdigest() for job in single]
        assert one == two, "two workers wrote different bytes"
    print(f"{args.images} photos {width}×{height} → {side}×{side} canvases (PNG level {PNG_SAVE_OPTIONS['compress_level']})")
    for name, rate in rates.items():
        ratio = rate / rates["reference"]
        mark = "" if name == "reference" else f"  {ratio:4.2f}× reference {'✓' if ratio >= 0.8 else '✗ below 0.8×'}"
        print(f"{name:10s} {rate:7.1f} photos/s{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
