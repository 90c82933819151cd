"""The C4 part of ``biovqa demo``: a tiny Wild Me COCO catalog drawn from code (native layout:
``whaleshark.coco/annotations/instances_train2020.json`` + ``images/train2020/``), a tiny random
DINOv2 built from a config (no download), the C4 build, the image-blind baseline and its scores.

Each synthetic individual has its own spot pattern; its photos show the pattern at a jittered
size and place on a noisy background, mirrored for the ``right`` viewpoint. One annotation has
the unknown identity ``____`` and one has no viewpoint, so the manifest shows both exclusions.
"""

from __future__ import annotations

import importlib.util
import uuid
from pathlib import Path
from typing import Any, Callable

import numpy as np

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
                            year: int = DEMO_YEAR, extras: bool = True) -> Path:
    """Write a Wild Me COCO catalog ``root/<name>.coco`` and return that folder."""
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
        patch = np.asarray(Image.fromarray(pattern.astype(np.uint8)).resize((pw, ph)), dtype=np.float32)
        if view == "right":
            patch = patch[:, ::-1]
        x = int(rng.integers(0, width - pw))
        y = int(rng.integers(0, height - ph))
        canvas[y:y + ph, x:x + pw] = patch + rng.normal(0, 6, size=patch.shape)
        file_name = f"{k:06d}.jpg"
        Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8)).save(images_dir / file_name, quality=92)
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


def demo_c4(out: Path, say: Callable[[str], Any], step: str) -> Path | None:
    """Build, run (baseline) and score C4 inside ``out``; returns the score folder, or None (with
    a note) when torch and transformers are not installed."""
    if not models_available():
        say(f"{step} skipped C4: it embeds crops with DINOv2, which needs torch and transformers "
            "(pip install 'biovqa[transformers]')")
        return None
    from transformers.utils import logging as transformers_logging

    from biovqa.components.c4.build import build_c4
    from biovqa.engine.runner import RunOptions, run_benchmark
    from biovqa.scoring.pipeline import score_predictions

    transformers_logging.disable_progress_bar()  # the demo prints its own one-line steps
    catalog = write_synthetic_catalog(out / "c4-catalog")
    model = build_tiny_dinov2(out / "c4-embedder")
    bench = build_c4({DEMO_CATALOG: catalog}, model, out / "bench-c4", pairs_per_kind=6)
    run_dir = out / "run-baseline-c4"
    predictions = run_benchmark(bench.root, run_dir, RunOptions(backend="baseline", progress=False)).predictions_path
    score_dir = score_predictions(bench.root, predictions, out / "scores-baseline-c4", label="floor (image-blind)",
                                  options={"bootstrap": 200})
    checks = {c: v["auc"] for c, v in bench.manifest["construction_checks"][DEMO_CATALOG].items()}
    say(f"{step} built C4 from a synthetic Wild Me catalog with a tiny random DINOv2: "
        f"{bench.manifest['counts']['total']} pairs (DINOv2 AUC {checks}; excluded "
        f"{bench.manifest['datasets'][DEMO_CATALOG]['exclusions']}); baseline scored → {score_dir}")
    return score_dir


__all__ = ["TINY_DINOV2", "build_tiny_dinov2", "demo_c4", "models_available", "write_synthetic_catalog"]
