"""One prefill per image (``shared_prefix=true``) gives the plain path's tokens, token for token.

The tiny random LLaVA (full attention) and Gemma 3 (sliding-window layers) are asked C1-shaped
groups (3 short questions an image, a system message on Gemma as the paper's preset does) and
C2-shaped ones (12 longer yes/no and naming questions of one image, different caps); every reply
of the shared-prefix path must equal the plain batched path's reply and token count.
"""

from __future__ import annotations

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
        tables.append(pq.read_table(result.predictions_path).select(
            ["item_id", "response", "completion_tokens", "prompt_tokens"]).to_pylist())
    assert tables[0] == tables[1] and len(tables[0]) == 12
