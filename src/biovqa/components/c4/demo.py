"""The C4 part of ``biovqa demo``: a tiny Wild Me COCO catalog drawn from code (native layout:
``whaleshark.coco/annotations/instances_train2020.json`` + ``images/train2020/``), the C4 build
from the catalog's precomputed crop embeddings shipped with biovqa (made by
:func:`write_demo_embeddings` with a tiny random DINOv2 built from a config; no torch is needed to
use them), the image-blind baseline and its scores.

Each synthetic individual has its own spot pattern; its photos show the pattern at a jittered
size and place on a noisy background, mirrored for the ``right`` viewpoint. One annotation has
the unknown identity ``____`` and one has no viewpoint, so the manifest shows both exclusions.
"""

from __future__ import annotations

import importlib.util
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

if TYPE_CHECKING:
    from biovqa.components.registry import DemoContext

DEMO_CATALOG = "whaleshark"
DEMO_YEAR = 2020
#: A tiny DINOv2 (ViT, 2 layers, width 32, 56 px input): random weights, built offline.
TINY_DINOV2: dict[str, Any] = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
               "intermediate_size": 64, "image_size": 56, "patch_size": 14}


def _pattern(rng: np.random.Generator, size: int = 48) -> np.ndarray:
    base = rng.integers(60, 160, size=3)
    patch = np.ones((size, size * 2, 3), dtype=np.float32) * base
    for _ in range(14):
        y, x = rng.integers(0, size), rng.integers(0, size * 2)
        r = int(rng.integers(2, 6))
        yy, xx = np.ogrid[:size, :size * 2]
        patch[(yy - y) ** 2 + (xx - x) ** 2 <= r * r] = 245.0
    return patch


def write_synthetic_catalog(root: str | Path, *, n_individuals: int = 6, images_per_view: int = 3,
                            viewpoints: tuple[str, ...] = ("left", "right"), seed: int = 0,
                            image_size: tuple[int, int] = (160, 120), name: str = DEMO_CATALOG,
                            year: int = DEMO_YEAR, extras: bool = True, lossless: bool = False) -> Path:
    """Write a Wild Me COCO catalog ``root/<name>.coco`` and return that folder. ``lossless``
    writes PNG photos drawn with NumPy only (no Pillow resampling, no JPEG codec), so their
    decoded pixels, and with them the crop keys of precomputed embeddings, are the same with any
    Pillow version: the demo's shipped embeddings rely on it."""
    from PIL import Image

    from biovqa.sources.wildlife import UNKNOWN_IDENTITY, write_coco_catalog

    coco = Path(root) / f"{name}.coco"
    images_dir = coco / "images" / f"train{year}"
    images_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    width, height = image_size
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    names = [str(uuid.UUID(int=int(rng.integers(0, 2**62)) << 64 | i)) for i in range(n_individuals)]
    plan: list[tuple[str, str | None]] = [
        (view, names[i]) for i in range(n_individuals) for view in viewpoints for _ in range(images_per_view)]
    patterns = {identity: _pattern(np.random.default_rng([seed, k])) for k, identity in
                enumerate(dict.fromkeys(identity for _, identity in plan))}
    if extras:
        plan += [(viewpoints[0], None), ("", next(iter(patterns)))]
    for k, (view, identity) in enumerate(plan, start=1):
        canvas = rng.normal(110, 25, size=(height, width, 3))
        pattern = patterns.get(identity) if identity else _pattern(rng)
        assert pattern is not None
        scale = rng.uniform(0.8, 1.1)
        ph, pw = int(pattern.shape[0] * scale), int(pattern.shape[1] * scale)
        if lossless:  # nearest-neighbour resize by index arithmetic
            rows = np.arange(ph) * pattern.shape[0] // ph
            cols = np.arange(pw) * pattern.shape[1] // pw
            patch = pattern.astype(np.uint8)[rows][:, cols].astype(np.float32)
        else:
            patch = np.asarray(Image.fromarray(pattern.astype(np.uint8)).resize((pw, ph)), dtype=np.float32)
        if view == "right":
            patch = patch[:, ::-1]
        x = int(rng.integers(0, width - pw))
        y = int(rng.integers(0, height - ph))
        canvas[y:y + ph, x:x + pw] = patch + rng.normal(0, 6, size=patch.shape)
        file_name = f"{k:06d}.{'png' if lossless else 'jpg'}"
        photo = Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8))
        if lossless:
            photo.save(images_dir / file_name, compress_level=1)
        else:
            photo.save(images_dir / file_name, quality=92)
        images.append({"id": k, "file_name": file_name, "width": width, "height": height,
                       "date_captured": "NA", "uuid": str(uuid.UUID(int=k))})
        annotation = {"id": k, "image_id": k, "bbox": [float(x), float(y), float(pw), float(ph)], "theta": 0.0,
                      "category_id": 0, "iscrowd": 0, "area": pw * ph, "uuid": str(uuid.UUID(int=10_000 + k)),
                      "name": identity or UNKNOWN_IDENTITY, "individual_ids": [], "isinterest": 1,
                      "segmentation": [[x, y, x + pw, y, x + pw, y + ph, x, y + ph]]}
        if view:
            annotation["viewpoint"] = view
        annotations.append(annotation)
    write_coco_catalog(coco, annotations, images, year=year,
                       categories=[{"id": 0, "name": "whale_shark", "supercategory": "animal"}])
    return coco


def build_tiny_dinov2(folder: str | Path, *, seed: int = 0) -> Path:
    """Save a tiny random DINOv2 (``TINY_DINOV2``) with ``save_pretrained``; needs torch."""
    import torch
    from transformers import Dinov2Config, Dinov2Model

    torch.manual_seed(seed)
    model = Dinov2Model(Dinov2Config(**TINY_DINOV2))
    folder = Path(folder)
    model.save_pretrained(folder)
    return folder


def models_available() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("torch", "transformers"))


def write_demo_catalog(root: str | Path) -> Path:
    """The demo's catalog: :func:`write_synthetic_catalog` with its defaults, photos lossless."""
    return write_synthetic_catalog(root, lossless=True)


def write_demo_embeddings(out: str | Path, workdir: str | Path) -> Path:
    """Make the demo's embeddings file ``out`` the way a user would (``biovqa c4 embed``): the
    demo catalog's crops through :class:`~biovqa.components.c4.embed.DinoEmbedder` with the tiny
    random DINOv2 of :func:`build_tiny_dinov2` (seed 0). Needs torch; ``scripts/make_demo_data.py``
    runs it to refresh ``biovqa/data/demo/c4-embeddings.parquet``."""
    from biovqa.components.c4.build import embed_catalogs

    workdir = Path(workdir)
    catalog = write_demo_catalog(workdir / "c4-catalog")
    model = build_tiny_dinov2(workdir / "tiny-dinov2")
    out = Path(out)
    out.unlink(missing_ok=True)  # made afresh, not extended
    return embed_catalogs({DEMO_CATALOG: catalog}, model, out)


def demo_c4(out: Path, say: Callable[[str], Any], step: str, embeddings: Path) -> Path:
    """Build, run (baseline) and score C4 inside ``out`` from the shipped precomputed
    ``embeddings`` of the demo catalog (no torch needed); returns the score folder."""
    from biovqa.components.c4.build import build_c4
    from biovqa.engine.runner import RunOptions, run_benchmark
    from biovqa.scoring.pipeline import score_predictions

    catalog = write_demo_catalog(out / "c4-catalog")
    bench = build_c4({DEMO_CATALOG: catalog}, None, out / "bench-c4", embeddings=embeddings, pairs_per_kind=6)
    run_dir = out / "run-baseline-c4"
    predictions = run_benchmark(bench.root, run_dir, RunOptions(backend="baseline", progress=False)).predictions_path
    score_dir = score_predictions(bench.root, predictions, out / "scores-baseline-c4", label="floor (image-blind)",
                                  options={"bootstrap": 200})
    checks = ", ".join(f"{c} {v['auc']}" for c, v in bench.manifest["construction_checks"][DEMO_CATALOG].items())
    excluded = ", ".join(f"{k} {v}" for k, v in bench.manifest["datasets"][DEMO_CATALOG]["exclusions"].items())
    say(f"{step} built C4 from a synthetic Wild Me catalog and its precomputed embeddings (a tiny random "
        f"DINOv2, {embeddings.name}): {bench.manifest['counts']['total']} pairs (DINOv2 AUC: {checks}; "
        f"excluded: {excluded}); baseline scored → {score_dir}")
    return score_dir


def run_demo(context: DemoContext) -> list[Path]:
    """C4's part of ``biovqa demo`` (:func:`demo_c4` on the shipped ``c4-embeddings.parquet``)."""
    for name in ("c4-catalog", "bench-c4", "run-baseline-c4", "scores-baseline-c4"):
        context.folder(name)
    score_dir = demo_c4(context.out, context.say, "   ", context.data / "c4-embeddings.parquet")
    context.benches["c4"] = context.out / "bench-c4"
    return [score_dir]


__all__ = ["TINY_DINOV2", "build_tiny_dinov2", "demo_c4", "run_demo", "models_available", "write_demo_catalog",
           "write_demo_embeddings", "write_synthetic_catalog"]
