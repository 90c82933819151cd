"""One prefill per image vs the plain batched path, transformers backend on CPU.

Builds the tiny random LLaVA and Gemma 3 of the tests from their configs (offline) and asks
C1-shaped groups (9 questions an image, cap 15) and C2-shaped groups (35 questions an image, caps
4–12) through the same backend class twice: plain (the image and prompt prefilled once per
question, left-padded batches) and ``shared_prefix=True`` (the image + shared prompt prefix
prefilled once per image, its questions decoded from copies of that KV cache). Both in the same
process, same threads, same batch size; replies are checked equal; the ratio is shared/plain.

    python benchmarks/shared_prefix.py [--images 6] [--threads 2] [--repeat 2]

The tiny models have 16 (LLaVA) and 8 (Gemma 3) image tokens, so the prefix they share is short:
real checkpoints (576–2 500 image tokens) share far more of each prompt. Results:
benchmarks/RESULTS-engine.md (section "Shared prefix").
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _requests(images: list[Path], per_image: int, shape: str) -> list:
    from biovqa.engine.backends.base import Request

    requests = []
    for i, image in enumerate(images):
        for q in range(per_image):
            if shape == "c1":
                prompt = (f"What is the {('order', 'family', 'species')[q % 3]} of the animal in "
                          f"this image? ({q})\nReply with one name.")
                cap = 15
            else:
                prompt = (f"Is structure number {q} of this animal visible and what colour is "
                          "it? Answer briefly.")
                cap = 4 + q % 9
            requests.append(Request(key=f"{shape}-{i}-{q}", item_id=f"{shape}-{i}-{q}",
                                    prompt=prompt, image_path=image, max_new_tokens=cap))
    return requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=36)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    import torch
    from fixtures.tiny_models import build_tiny_gemma3, build_tiny_llava, write_test_images

    from biovqa.engine.backends.transformers import create

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        images = write_test_images(work / "images", count=args.images)
        print(f"torch {torch.__version__}, {args.threads} threads, batch size {args.batch_size}, "
              f"{args.images} images; best of {args.repeat}")
        print(f"{'model':8s} {'shape':5s} {'items':>6s} {'plain it/s':>11s} "
              f"{'shared it/s':>12s} {'ratio':>6s} {'equal':>6s}")
        for kind, build in (("llava", build_tiny_llava), ("gemma3", build_tiny_gemma3)):
            model = str(build(work / kind))
            plain = create(model, device="cpu", batch_size=args.batch_size)
            shared = create(model, device="cpu", batch_size=args.batch_size, shared_prefix=True)
            for shape, per_image in (("c1", 9), ("c2", 35)):
                requests = _requests(images, per_image, shape)
                rates, answers = [], []
                for backend in (plain, shared):
                    best = float("inf")
                    for _ in range(args.repeat):
                        started = time.perf_counter()
                        replies = []
                        for start in range(0, len(requests), per_image):  # one image a batch
                            replies += backend.generate(requests[start:start + per_image])
                        best = min(best, time.perf_counter() - started)
                    rates.append(len(requests) / best)
                    answers.append([(r.text, r.completion_tokens) for r in replies])
                print(f"{kind:8s} {shape:5s} {len(requests):6d} {rates[0]:11.1f} "
                      f"{rates[1]:12.1f} {rates[1] / rates[0]:6.2f} "
                      f"{str(answers[0] == answers[1]):>6s}")
            plain.close()
            shared.close()


if __name__ == "__main__":
    main()
