"""CPU cost of the backends' own work, against plain references measured in the same run.

1. vLLM/openai request building for C2-like batches (35 questions per image): our path encodes
   each image once per batch (``encode_images`` + ``build_conversations``) versus the plain
   per-request path (read + base64 the image for every question, as per-item harnesses do).
2. The transformers backend on the tiny random LLaVA of the tests (CPU): batched generation
   (``batch_size=16``) versus one request per ``generate`` call.

    python benchmarks/backend_request_building.py [--images 120] [--tiny-requests 48]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY / "tests"))


def write_jpegs(folder: Path, count: int, size: tuple[int, int] = (500, 375)) -> list[Path]:
    """CUB-sized JPEGs (gradient + noise), deterministic."""
    import numpy as np
    from PIL import Image

    generator = np.random.default_rng(0)
    paths = []
    for index in range(count):
        width, height = size
        gradient = np.linspace(0, 200, width, dtype=np.float32)[None, :, None]
        noise = generator.normal(0, 12, size=(height, width, 3))
        pixels = np.clip(gradient + noise + index % 50, 0, 255).astype(np.uint8)
        path = folder / f"bird_{index:04d}.jpg"
        Image.fromarray(pixels).save(path, quality=90)
        paths.append(path)
    return paths


def bench_request_building(images: int) -> None:
    from biovqa.engine.backends.base import Request
    from biovqa.engine.backends.openai import build_chat_messages, image_data_url
    from biovqa.engine.backends.vllm import build_conversations, encode_images

    with tempfile.TemporaryDirectory() as folder:
        paths = write_jpegs(Path(folder), images)
        requests = [
            Request(key=f"{i}-{q}", item_id=f"{i}-{q}", prompt=f"What is the bill color? Options: {q}",
                    image_path=path, max_new_tokens=48)
            for i, path in enumerate(paths) for q in range(35)
        ]
        started = time.perf_counter()
        parts, _ = encode_images(requests)
        ours = build_conversations(requests, range(len(requests)), parts)
        ours_s = time.perf_counter() - started
        started = time.perf_counter()
        plain = [build_chat_messages(r, image_data_url(r.image_path)) for r in requests]
        plain_s = time.perf_counter() - started
        assert len(ours) == len(plain) == len(requests)
        print(f"request building, {len(requests)} C2-like requests on {images} images (500x375 JPEG):")
        print(f"  ours  (encode once per image): {len(requests) / ours_s:12,.0f} requests/s")
        print(f"  plain (encode per request)   : {len(requests) / plain_s:12,.0f} requests/s")
        print(f"  ratio: {plain_s / ours_s:.1f}x")


def bench_tiny_transformers(count: int) -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        print("transformers batching: skipped (no torch)")
        return
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from fixtures.tiny_models import build_tiny_llava, write_test_images

    from biovqa.engine.backends.base import Request
    from biovqa.engine.backends.transformers import create

    with tempfile.TemporaryDirectory() as folder:
        model = build_tiny_llava(Path(folder) / "llava")
        images = write_test_images(Path(folder) / "images", count=4)
        requests = [
            Request(key=str(i), item_id=str(i), prompt=f"What is the order? {i}",
                    image_path=images[i % 4], max_new_tokens=15)
            for i in range(count)
        ]
        backend = create(str(model), device="cpu", batch_size=16)
        backend.generate(requests[:4])  # warm-up
        started = time.perf_counter()
        batched = backend.generate(requests)
        batched_s = time.perf_counter() - started
        started = time.perf_counter()
        single = [backend.generate([r])[0] for r in requests]
        single_s = time.perf_counter() - started
        assert [r.text for r in batched] == [r.text for r in single]
        print(f"transformers backend, tiny LLaVA on CPU, {count} requests, 15-token cap:")
        print(f"  batched (16 per generate): {count / batched_s:8.1f} items/s")
        print(f"  one request per generate : {count / single_s:8.1f} items/s")
        print(f"  ratio: {single_s / batched_s:.1f}x (identical replies)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=120)
    parser.add_argument("--tiny-requests", type=int, default=48)
    args = parser.parse_args()
    bench_request_building(args.images)
    bench_tiny_transformers(args.tiny_requests)


if __name__ == "__main__":
    main()
