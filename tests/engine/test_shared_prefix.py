"""One prefill per image (``shared_prefix=true``) gives the plain path's tokens, token for token.

The tiny random LLaVA (full attention) and Gemma 3 (sliding-window layers) are asked C1-shaped
groups (3 short questions an image, a system message on Gemma as the paper's preset does) and
C2-shaped ones (12 longer yes/no and naming questions of one image, different caps); every reply
of the shared-prefix path must equal the plain batched path's reply and token count. The Qwen-VL
families (multimodal rotary positions) must also equal one request per call.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fixtures.engine_helpers import make_bench

from biovqa.engine.backends.base import Request

pytestmark = [pytest.mark.models]

SYSTEM = "You are a precise taxonomy expert. Reply with only the requested term."
C2_QUESTIONS = [
    "Is the {p} visible in this image? Answer yes or no.",
    "What colour is the {p} of this animal?",
    "How many {p} can you count? Reply with a number.",
    "Which side of the body shows the {p}: left or right?",
]
PARTS = ("wing", "tail", "beak")


def c1_requests(images: list[Path], system: str | None) -> list[Request]:
    tasks = ("order", "family", "species")
    return [Request(key=f"c1-{i}-{t}", item_id=f"c1-{i}-{t}",
                    prompt=f"What is the {t} of the animal in this image?\nReply with one name.",
                    image_path=image, system=system, max_new_tokens=15, task=t)
            for i, image in enumerate(images[:3]) for t in tasks]


def c2_requests(image: Path, system: str | None) -> list[Request]:
    prompts = [q.format(p=part) for part in PARTS for q in C2_QUESTIONS]
    return [Request(key=f"c2-{n}", item_id=f"c2-{n}", prompt=prompt, image_path=image,
                    system=system, max_new_tokens=4 + n % 9, task="c2")
            for n, prompt in enumerate(prompts)]


@pytest.mark.parametrize("kind", ["llava", "gemma3"])
def test_shared_prefix_equals_the_plain_path(kind: str, tiny_model_dir: Callable[[str], Path],
                                             tiny_images: list[Path]) -> None:
    from biovqa.engine.backends.prefix import shared_prefix_generate
    from biovqa.engine.backends.transformers import _load_image, create

    model = str(tiny_model_dir(kind))
    plain = create(model, device="cpu", batch_size=8)
    shared = create(model, device="cpu", batch_size=16, shared_prefix=True)
    system = SYSTEM if kind == "gemma3" else None
    for requests in (c1_requests(tiny_images, system), c2_requests(tiny_images[3], system)):
        expected = [(r.text, r.completion_tokens, r.prompt_tokens)
                    for r in plain.generate(requests)]
        through_backend = shared.generate(requests)
        assert [(r.text, r.completion_tokens, r.prompt_tokens)
                for r in through_backend] == expected
        # the shared path itself (not a fallback) produced them
        direct = shared_prefix_generate(shared, requests[:3], _load_image(requests[0].image_path))
        assert [(r.text, r.completion_tokens) for r in direct] == [e[:2] for e in expected[:3]]
        assert any(n > 0 for _, n, _ in expected)  # something was decoded
    plain.close()
    shared.close()


def test_a_run_with_shared_prefix_writes_the_same_predictions(
    tmp_path: Path, tiny_model_dir: Callable[[str], Path]
) -> None:
    from biovqa.engine.runner import RunOptions, run_benchmark

    bench = make_bench(tmp_path / "b", n_images=4).root
    model = str(tiny_model_dir("llava"))
    tables = []
    for name, extra in (("plain", {}), ("shared", {"shared_prefix": True})):
        options = RunOptions(model=model, backend="transformers", threads=1, progress=False,
                             max_new_tokens=5, backend_options={"device": "cpu", **extra})
        result = run_benchmark(bench, tmp_path / name, options)
        facts = json.loads((tmp_path / name / "run.json").read_text())["backend_facts"]
        if extra:  # the card says how many questions really shared a prefill
            use = facts["shared_prefix"]
            assert use["shared_questions"] > 0 and use["shared_questions"] + use["plain_questions"] == 12
        else:
            assert "shared_prefix" not in facts
        tables.append(pq.read_table(result.predictions_path).select(
            ["item_id", "response", "completion_tokens", "prompt_tokens"]).to_pylist())
    assert tables[0] == tables[1] and len(tables[0]) == 12


@pytest.mark.parametrize("kind", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_shared_prefix_equals_plain_and_per_request_on_multimodal_rotary_models(
        kind: str, tiny_model_dir: Callable[[str], Path], tiny_images: list[Path]) -> None:
    """Qwen2-VL, Qwen2.5-VL and Qwen3-VL: multimodal rotary positions (3 × batch × length, with
    the ``rope_deltas`` the model keeps between calls; Qwen3-VL's sections interleaved), image
    patches flattened across the batch and, in Qwen3-VL, DeepStack vision features added to the
    first text layers at the image tokens. The shared path must really run (no silent fallback)
    and give, in float32, the tokens of the plain batched path and of one request per call,
    C1- and C2-shaped (suffixes of different lengths: pads)."""
    from biovqa.engine.backends.prefix import shared_prefix_generate
    from biovqa.engine.backends.transformers import _load_image, create

    model = str(tiny_model_dir(kind))
    per_request = create(model, device="cpu", batch_size=1, dtype="float32")
    plain = create(model, device="cpu", batch_size=8, dtype="float32")
    shared = create(model, device="cpu", batch_size=16, shared_prefix=True, dtype="float32")
    assert shared.model.dtype.is_floating_point and str(shared.model.dtype) == "torch.float32"
    asked = 0
    for requests in (c1_requests(tiny_images, SYSTEM), c2_requests(tiny_images[3], None)):
        reference = [(r.text, r.completion_tokens, r.prompt_tokens)
                     for r in per_request.generate(requests)]
        assert [(r.text, r.completion_tokens, r.prompt_tokens)
                for r in plain.generate(requests)] == reference
        assert [(r.text, r.completion_tokens, r.prompt_tokens)
                for r in shared.generate(requests)] == reference
        asked += len(requests)
        direct = shared_prefix_generate(shared, requests[:3], _load_image(requests[0].image_path))
        assert [(r.text, r.completion_tokens) for r in direct] == [e[:2] for e in reference[:3]]
        assert sum(n for _, n, _ in reference) > len(requests)  # several tokens were decoded
    use = shared.describe()["shared_prefix"]
    assert use["plain_questions"] == 0 and use["plain_reasons"] == {}
    assert use["shared_questions"] == asked and use["shared_groups"] == 3 + 1  # C1: 3 images, C2: 1
    for backend in (per_request, plain, shared):
        backend.close()


def test_a_group_the_shared_path_cannot_take_is_counted_with_its_reason(
        tiny_model_dir: Callable[[str], Path], tiny_images: list[Path]) -> None:
    """A fallback to the plain path is never silent: the run card counts it, with why."""
    from biovqa.engine.backends.transformers import create

    shared = create(str(tiny_model_dir("llava")), device="cpu", batch_size=8, shared_prefix=True)
    shared.model.generation_config.repetition_penalty = 1.3  # not a plain argmax any more
    requests = c1_requests(tiny_images, None)[:3]
    assert all(r.status == "ok" for r in shared.generate(requests))
    use = shared.describe()["shared_prefix"]
    assert use["shared_questions"] == 0 and use["plain_questions"] == 3
    assert use["plain_reasons"] == {"the generation config adds logits processors": 3}
    shared.close()
