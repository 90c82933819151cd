"""C4 build performance (not a test): pair search on a 10 000-annotation catalog (target ≤ 2 s
for the three conditions × 500 + 500 pairs, matrix ops) and embedding throughput, batched
(``embed_annotations``, batch 32) vs a plain per-image loop, with a random DINOv2 built from a
config (no download).

    python benchmarks/c4_pairs.py [--annotations 10000] [--dim 768] [--crops 256] [--model small|base]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

import numpy as np

from biovqa.components.c4.pairs import build_pairs
from biovqa.components.c4.tasks import CONDITIONS


def pair_search(n: int, dim: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    per_identity = 5
    identity = np.repeat(np.arange(n // per_identity), per_identity)[:n]
    group = rng.integers(0, 4, size=n)  # four viewpoint groups
    centres = rng.normal(size=(identity.max() + 1, dim)).astype(np.float32)
    vectors = centres[identity] + rng.normal(scale=1.0, size=(n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    started = time.perf_counter()
    produced = {}
    for condition in CONDITIONS:
        result = build_pairs(vectors, identity, group, condition=condition, target=500, seed=42, dataset="bench")
        produced[condition] = result.per_kind
    elapsed = time.perf_counter() - started
    print(f"pair search: {n:,} annotations × {dim} dims, 3 conditions → pairs per kind {produced} "
          f"in {elapsed:.2f} s (target ≤ 2 s: {'PASS' if elapsed <= 2 else 'FAIL'})")


def embedding(crops: int, size: str) -> None:
    import torch
    from PIL import Image
    from transformers import Dinov2Config, Dinov2Model

    from biovqa.components.c4.embed import DinoEmbedder, EmbeddingCache, embed_annotations
    from biovqa.sources.wildlife import WildlifeAnnotation

    config = {"small": dict(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, intermediate_size=1536,
                            image_size=224, patch_size=14),
              "tiny": dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=2, intermediate_size=128,
                           image_size=112, patch_size=14)}[size]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "dinov2"
        torch.manual_seed(0)
        Dinov2Model(Dinov2Config(**config)).save_pretrained(folder)
        rng = np.random.default_rng(0)
        annotations = []
        for k in range(crops):
            path = Path(tmp) / f"{k}.jpg"
            Image.fromarray(rng.integers(0, 255, size=(240, 320, 3), dtype=np.uint8)).save(path)
            annotations.append(WildlifeAnnotation("bench", str(k), str(k), path, path.name, 320, 240,
                                                  (10.0, 10.0, 200.0, 150.0), 0.0, "left", "x", None, k + 1))
        embedder = DinoEmbedder(folder, batch_size=32, device="cpu")
        started = time.perf_counter()
        _, _, stats = embed_annotations(annotations, embedder, EmbeddingCache(None), progress=False)
        batched = time.perf_counter() - started
        from biovqa.components.c4.embed import load_crop

        started = time.perf_counter()
        for annotation in annotations:  # the plain loop: one crop, one forward pass
            embedder.embed([load_crop(annotation)])
        plain = time.perf_counter() - started
        cache = EmbeddingCache(None)
        embed_annotations(annotations, embedder, cache, progress=False)
        started = time.perf_counter()
        _, _, again = embed_annotations(annotations, embedder, cache, progress=False)
        cached = time.perf_counter() - started
    print(f"embedding ({size} DINOv2, {config['image_size']} px, {crops} crops, {torch.get_num_threads()} threads): "
          f"batched {crops / batched:,.1f} crops/s, per-image loop {crops / plain:,.1f} crops/s "
          f"({plain / batched:.2f}×); rebuild from cache {crops / cached:,.0f} crops/s "
          f"(embedded {again['embedded']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--annotations", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--crops", type=int, default=128)
    parser.add_argument("--model", choices=("tiny", "small"), default="small")
    args = parser.parse_args()
    pair_search(args.annotations, args.dim)
    embedding(args.crops, args.model)


if __name__ == "__main__":
    main()
