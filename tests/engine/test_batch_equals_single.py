"""Batched and shared-prefix decoding equal one request per call, greedy, on C1- and C2-shaped
items with the real prompt wording (the paper's §2.4 C1 instructions, the C2 MCQ instruction block):
prompts of very different lengths in one left-padded batch, an item system prompt, caps 15 and 48.

This is the check behind benchmarks/gpu's ``equal_to_per_request`` column: on the tiny random
LLaVA (full attention) and Gemma 3 (sliding-window layers), every batched reply is the
one-request-per-call reply, text and token count.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from biovqa.components.c1.prompts import INSTRUCTIONS
from biovqa.components.c2.prompts import MCQ_INSTRUCTION
from biovqa.engine.backends.base import Request
from biovqa.engine.presets import GEMMA_SYSTEM_MESSAGE

pytestmark = [pytest.mark.models]

C1_RANKS = ("phylum", "class", "order", "family", "genus", "species", "scientific_name", "common_name",
            "common_name_mcq")
PARTS = ("bill", "wing", "tail", "breast", "crown", "nape")


def c1_requests(images: list[Path], system: str | None) -> list[Request]:
    """Nine questions for each of two images (the paper's §2.4: one per rank, then the MCQ)."""
    requests = []
    for i, image in enumerate(images[:2]):
        for rank in C1_RANKS:
            word = rank.replace("_mcq", "").replace("_", " ")
            question = f"What is the {word} of the animal shown in this image?"
            if rank == "common_name_mcq":
                question += " Options: " + ", ".join(f"warbler {i}-{k}" for k in range(4))
            requests.append(Request(key=f"c1-{i}-{rank}", item_id=f"c1-{i}-{rank}",
                                    prompt=f"{question}\n{INSTRUCTIONS[rank]}", image_path=image, system=system,
                                    max_new_tokens=15, task=rank))
    return requests


def c2_requests(image: Path, system: str | None) -> list[Request]:
    """Twelve questions of one image: open naming questions and MCQs with the long instruction."""
    requests = [Request(key="c2-open", item_id="c2-open", prompt="What is the genus of the bird?\nAnswer with "
                        "ONLY the capitalized Genus name of the bird.", image_path=image, system=system,
                        max_new_tokens=48, task="c2")]
    for k in range(11):
        options = ", ".join(f"({letter}) {colour}" for letter, colour in
                            zip("ABCD", ("black", "white", "brown", "striped", "rufous")[k % 2:]))
        requests.append(Request(key=f"c2-{k}", item_id=f"c2-{k}",
                                prompt=f"What is the {PARTS[k % len(PARTS)]} color of this bird? Options: "
                                       f"{options}\n{MCQ_INSTRUCTION}", image_path=image, system=system,
                                max_new_tokens=48, task="c2"))
    return requests


@pytest.fixture
def one_thread():
    """One torch thread: the same numbers, and no thread thrashing on a loaded 2-core machine."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _plumbing(replies) -> list[tuple]:
    return [(r.key, r.status, r.text, r.prompt_tokens, r.completion_tokens) for r in replies]


@pytest.mark.parametrize("kind", ["llava", "gemma3"])
def test_batched_and_shared_prefix_equal_one_request_per_call(
        kind: str, tiny_model_dir: Callable[[str], Path], tiny_images: list[Path], one_thread: None) -> None:
    from biovqa.engine.backends.transformers import create

    model = str(tiny_model_dir(kind))
    system = GEMMA_SYSTEM_MESSAGE if kind == "gemma3" else None
    batched = create(model, device="cpu", batch_size=16)
    shared = create(model, device="cpu", batch_size=16, shared_prefix=True)
    try:
        for requests in (c1_requests(tiny_images, system), c2_requests(tiny_images[2], system)):
            lengths = {len(r.prompt) for r in requests}
            assert max(lengths) - min(lengths) > 50  # real left padding inside the batch
            single = [batched.generate([r])[0] for r in requests]
            assert all(r.status == "ok" for r in single), [r.error for r in single]
            assert _plumbing(batched.generate(requests)) == _plumbing(single)
            assert _plumbing(shared.generate(requests)) == _plumbing(single)
    finally:
        batched.close()
        shared.close()


def _step_logits(backend, requests: list[Request], steps: int):
    """Greedy tokens and per-step logits of ``requests`` as one left-padded batch."""
    from biovqa.engine.backends.transformers import _load_image

    texts = [backend.prompt_text(r) for r in requests]
    images = [[_load_image(Path(r.image_path))] for r in requests]
    inputs = backend.processor(text=texts, images=images, padding=True, return_tensors="pt")
    import torch

    with torch.inference_mode():
        out = backend.model.generate(**inputs, max_new_tokens=steps, do_sample=False,
                                     num_beams=1, pad_token_id=backend.pad_token_id, output_logits=True,
                                     return_dict_in_generate=True)
    return out.sequences[:, inputs["input_ids"].shape[1]:], torch.stack(out.logits, 1)


def test_padding_moves_logits_by_float_noise_only(tiny_llava_dir: Path, tiny_images: list[Path],
                                                  one_thread: None) -> None:
    """Token equality is not luck: where batched and single share a context, their logits differ
    by float noise (< 1e-4) while the greedy choice wins by a wider margin on every step."""
    from biovqa.engine.backends.transformers import create

    backend = create(str(tiny_llava_dir), device="cpu", dtype="float32")
    requests = c1_requests(tiny_images, None)[:9]
    tokens, logits = _step_logits(backend, requests, 8)
    for index, request in enumerate(requests):
        alone_tokens, alone = _step_logits(backend, [request], 8)
        steps = alone.shape[1]  # the steps it generated alone (fewer if it stopped)
        assert alone_tokens[0].tolist() == tokens[index, :steps].tolist()
        noise = (alone[0] - logits[index, :steps]).abs().max().item()
        top2 = alone[0].topk(2, dim=-1).values
        margin = (top2[:, 0] - top2[:, 1]).min().item()
        assert noise < 1e-4 < margin, (request.key, noise, margin)
    backend.close()
