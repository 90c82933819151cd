"""Marker rendering speed against bare PIL decode + encode of the same images.

    python benchmarks/render_markers.py [--images 300] [--size 500x375] [--build 240]

Writes N photo-like JPEGs (smooth colour fields plus sensor noise, so that PNG encoding costs what
it costs on real photos) and times, on the same files and the same encoder settings:

* reference — PIL only: open, decode, convert to RGB, encode PNG, write;
* render    — ``biovqa.components.c2.render.render_all`` (the same plus three markers), 1 worker;
* render ×2 — the same with 2 worker processes (bytes are checked identical to 1 worker).

The target is render ≥ 0.8 × reference images/s. ``--build N`` also times a whole ``build_c2``
on an N-image CUB fixture of the same image size and extrapolates to the 11 788 CUB images.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from biovqa.components.c2.render import PNG_SAVE_OPTIONS, Marker, RenderJob, encode_png, render_all

CUB_IMAGES = 11_788


def photo_like(rng: np.random.Generator, width: int, height: int) -> Image.Image:
    coarse = rng.integers(0, 256, size=(height // 25 + 2, width // 25 + 2, 3), dtype=np.uint8)
    smooth = Image.fromarray(coarse).resize((width, height), Image.BICUBIC)
    noise = rng.normal(0, 6, size=(height, width, 3))
    return Image.fromarray(np.clip(np.asarray(smooth, dtype=np.float64) + noise, 0, 255).astype(np.uint8))


def reference_decode_encode(paths: list[Path], out: Path) -> None:
    """Plain PIL, the yardstick: decode + RGB + PNG encode + write, nothing else."""
    out.mkdir(parents=True, exist_ok=True)
    for k, path in enumerate(paths):
        with Image.open(path) as image:
            image.load()
            (out / f"{k}.png").write_bytes(encode_png(image.convert("RGB")))


def time_it(fn, *args, repeat: int = 2) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=300)
    parser.add_argument("--size", default="500x375", help="CUB photos are about 500 px wide")
    parser.add_argument("--build", type=int, default=0, help="also time build_c2 on this many images")
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.split("x"))
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = []
        for k in range(args.images):
            path = root / "src" / f"{k:05d}.jpg"
            path.parent.mkdir(exist_ok=True)
            photo_like(rng, width, height).save(path, format="JPEG", quality=90)
            paths.append(path)

        def jobs(folder: str) -> list[RenderJob]:
            out = []
            for k, path in enumerate(paths):
                x, y = rng.uniform(0, width, 3), rng.uniform(0, height, 3)
                markers = (Marker(x[0], y[0], "red", "square"), Marker(x[1], y[1], "blue", "dot"),
                           Marker(x[2], y[2], "red", "dot"))
                out.append(RenderJob(path, root / folder / f"{k}.png", markers))
            return out

        one, two = jobs("r1"), jobs("r2")
        two = [RenderJob(j.source, root / "r2" / j.destination.name, o.markers) for j, o in zip(two, one)]
        t_ref = time_it(reference_decode_encode, paths, root / "ref")
        t_one = time_it(render_all, one)
        t_two = time_it(lambda js: render_all(js, workers=2), two)
        identical = all(a.destination.read_bytes() == b.destination.read_bytes() for a, b in zip(one, two))
        n = len(paths)
        print(f"images: {n} × {width}x{height} JPEG → PNG (compress_level {PNG_SAVE_OPTIONS['compress_level']})")
        print(f"reference PIL decode+encode : {n / t_ref:8.1f} images/s")
        print(f"render, 1 worker            : {n / t_one:8.1f} images/s   ratio {t_ref / t_one:.3f}")
        print(f"render, 2 workers           : {n / t_two:8.1f} images/s   ratio {t_ref / t_two:.3f}")
        print(f"2-worker bytes identical to 1-worker: {identical}")
        print(f"full CUB ({CUB_IMAGES} images), 1 worker ≈ {CUB_IMAGES * t_one / n:.0f} s")

        if args.build:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
            from biovqa.components.c2.build import build_c2
            from fixtures.cub import write_cub

            per_class = 20
            cub = write_cub(root / "cub", n_classes=max(1, args.build // per_class),
                            images_per_class=per_class, image_size=(width, height),
                            class_ids=tuple(range(1, args.build // per_class + 1)))
            # replace the flat fixture pictures by photo-like ones so encoding is realistic
            for line in (cub / "images.txt").read_text().splitlines():
                photo_like(rng, width, height).save(cub / "images" / line.split()[1], format="JPEG", quality=90)
            for workers in (1, 2):
                start = time.perf_counter()
                bench = build_c2(cub, root / f"bench{workers}", workers=workers)
                elapsed = time.perf_counter() - start
                images = bench.manifest["images"]["source"]
                print(f"build_c2, {workers} worker(s): {images} images, {bench.items.num_rows} items "
                      f"in {elapsed:.2f} s → {images / elapsed:.1f} images/s; "
                      f"full CUB ≈ {CUB_IMAGES * elapsed / images:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
