"""vLLM backend request building, grouping and ordering, on CPU without importing vllm.

The engine call itself runs only on a GPU machine (``benchmarks/gpu/run_gpu_bench.py``); here we
test everything around it: image-first grouping, the prefix warm-up split, the message layout
that makes every question of an image share one prefix, sampling settings, reply mapping and the
hit-rate arithmetic.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from biovqa.errors import BiovqaError
from biovqa.engine.backends.base import Request
from biovqa.engine.backends.vllm import (
    PrefixCacheCounter,
    build_conversation,
    build_conversations,
    encode_images,
    engine_options_for,
    execution_plan,
    group_by_image,
    image_content_part,
    metrics_hit_rate,
    reply_from_output,
    sampling_settings,
    split_leaders,
)
from biovqa.engine.presets import get_preset


def request(index: int, image: str | Path | None, *, system: str | None = None, cap: int = 15) -> Request:
    return Request(
        key=f"key-{index}",
        item_id=f"item-{index}",
        prompt=f"Question {index}?",
        image_path=None if image is None else Path(image),
        system=system,
        max_new_tokens=cap,
    )


def test_importing_the_backend_does_not_import_vllm() -> None:
    assert "vllm" not in sys.modules


def test_groups_follow_first_appearance_and_keep_order_inside() -> None:
    requests = [request(0, "b.png"), request(1, "a.png"), request(2, "b.png"), request(3, None),
                request(4, "a.png"), request(5, "c.png"), request(6, None)]
    assert group_by_image(requests) == [[0, 2], [1, 4], [3, 6], [5]]


@given(st.lists(st.sampled_from(["a", "b", "c", "d", None]), max_size=40))
def test_grouping_is_a_permutation_with_each_image_contiguous(images: list[str | None]) -> None:
    requests = [request(i, image) for i, image in enumerate(images)]
    order = [index for group in group_by_image(requests) for index in group]
    assert sorted(order) == list(range(len(requests)))
    seen: list[Path | None] = []
    for index in order:
        image = requests[index].image_path
        if not seen or seen[-1] != image:
            assert image not in seen  # an image's questions are consecutive
            seen.append(image)


@given(st.lists(st.sampled_from(["a", "b", "c", None]), max_size=40), st.booleans())
def test_execution_plan_covers_every_request_once_in_at_most_two_calls(
    images: list[str | None], warmup: bool
) -> None:
    requests = [request(i, image) for i, image in enumerate(images)]
    calls = execution_plan(requests, prefix_warmup=warmup)
    assert len(calls) <= (2 if warmup else 1)
    flat = [index for call in calls for index in call]
    assert sorted(flat) == list(range(len(requests)))
    if warmup and calls:
        distinct_images = {image for image in images if image is not None}
        leaders = calls[0] if distinct_images else []
        assert len(leaders) == len(distinct_images)
        assert {requests[i].image_path for i in leaders} == {Path(x) for x in distinct_images}


def test_warmup_sends_each_image_leader_first_then_the_rest() -> None:
    requests = [request(i, image) for i, image in enumerate(["x", "y", "x", "y", "x", None])]
    assert split_leaders(group_by_image(requests)) == ([0, 1, 5], [2, 4, 3])
    assert execution_plan(requests, prefix_warmup=True) == [[0, 1], [2, 4, 3, 5]]
    assert execution_plan(requests, prefix_warmup=False) == [[0, 2, 4, 1, 3, 5]]
    assert execution_plan([], prefix_warmup=True) == []


def test_conversation_layout_is_system_then_image_then_text(tiny_images: list[Path]) -> None:
    parts, errors = encode_images([request(0, tiny_images[0])])
    assert errors == {}
    conversation = build_conversation(request(0, tiny_images[0], system="Sys."), parts[str(tiny_images[0])])
    assert conversation[0] == {"role": "system", "content": "Sys."}
    assert conversation[1]["role"] == "user"
    assert [part["type"] for part in conversation[1]["content"]] == ["image_url", "text"]
    url = conversation[1]["content"][0]["image_url"]["url"]
    assert base64.b64decode(url.split(",", 1)[1]) == tiny_images[0].read_bytes()


def test_questions_on_one_image_share_everything_but_their_text(tiny_images: list[Path]) -> None:
    requests = [request(i, tiny_images[0], system="Sys.") for i in range(3)]
    parts, _ = encode_images(requests)
    conversations = build_conversations(requests, range(3), parts)
    rendered = [json.dumps(conversation) for conversation in conversations]
    shared = rendered[0][: rendered[0].index("Question 0?")]
    assert all(text.startswith(shared) for text in rendered)
    # The shared prefix holds the system turn and the whole image.
    assert "Sys." in shared and parts[str(tiny_images[0])]["image_url"]["url"] in shared


def test_each_image_is_encoded_once_and_unreadable_ones_are_reported(
    tiny_images: list[Path], tmp_path: Path
) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG garbage")
    requests = [request(0, tiny_images[0]), request(1, tmp_path / "missing.png"),
                request(2, tiny_images[0]), request(3, None)]
    parts, errors = encode_images(requests)
    assert list(parts) == [str(tiny_images[0])]
    assert list(errors) == [str(tmp_path / "missing.png")]
    conversations = build_conversations(requests, [0, 2], parts)
    assert conversations[0][-1]["content"][0] is conversations[1][-1]["content"][0]
    pil_parts, pil_errors = encode_images([request(0, tiny_images[1]), request(1, broken)],
                                          image_format="pil")
    assert pil_parts[str(tiny_images[1])]["type"] == "image_pil"
    assert list(pil_errors) == [str(broken)]


def test_unknown_image_format_is_refused(tiny_images: list[Path]) -> None:
    with pytest.raises(BiovqaError, match="image format"):
        image_content_part(tiny_images[0], "tensor")


def test_sampling_is_greedy_with_the_request_cap() -> None:
    assert sampling_settings(request(0, None, cap=8)) == {
        "temperature": 0.0, "top_p": 1.0, "max_tokens": 8, "seed": 0,
    }


def test_replies_are_built_from_engine_outputs() -> None:
    output = SimpleNamespace(
        prompt_token_ids=[1] * 40,
        num_cached_tokens=32,
        outputs=[SimpleNamespace(text="Araneae", token_ids=[5, 6], finish_reason="stop")],
    )
    reply = reply_from_output(request(0, "a.png"), output, 0.25)
    assert (reply.key, reply.text, reply.status, reply.prompt_tokens, reply.completion_tokens) == (
        "key-0", "Araneae", "ok", 40, 2
    )
    aborted = SimpleNamespace(prompt_token_ids=[1], outputs=[SimpleNamespace(text="", token_ids=[],
                                                                            finish_reason="abort")])
    failed = reply_from_output(request(1, "a.png"), aborted, 0.1)
    assert failed.status == "failed" and failed.text is None and "abort" in failed.error


@pytest.mark.parametrize(
    ("counts", "expected"),
    [([(100, 0)], 0.0), ([(100, 0), (100, 96), (100, 96)], 192 / 300), ([(10, None)], None)],
)
def test_prefix_cache_hit_rate(counts: list[tuple[int, int | None]], expected: float | None) -> None:
    counter = PrefixCacheCounter()
    for prompt, cached in counts:
        counter.add(prompt, cached)
    assert counter.hit_rate == (None if expected is None else pytest.approx(expected))


def test_hit_rate_from_engine_metrics() -> None:
    metrics = [SimpleNamespace(name="vllm:prefix_cache_queries", value=1000.0),
               SimpleNamespace(name="vllm:prefix_cache_hits", value=850.0),
               SimpleNamespace(name="vllm:num_requests_running", value=3.0)]
    assert metrics_hit_rate(metrics) == (850, 1000)
    assert metrics_hit_rate([SimpleNamespace(name="other", value=1.0)]) is None


def test_engine_options_force_prefix_caching_and_carry_preset_limits() -> None:
    preset = get_preset("Qwen2.5-VL-7B")
    options = {"max_model_len": 8192, "min_pixels": 1024}
    engine = engine_options_for(preset.checkpoint, preset, options)
    assert engine["enable_prefix_caching"] is True
    assert engine["limit_mm_per_prompt"] == {"image": 1}
    assert engine["dtype"] == "bfloat16"
    assert engine["max_model_len"] == 8192
    assert engine["mm_processor_kwargs"] == {"min_pixels": 1024, "max_pixels": preset.max_pixels}
    assert options == {}
    internvl = get_preset("InternVL3-8B")
    assert engine_options_for(internvl.checkpoint, internvl, {})["trust_remote_code"] is True


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_create_without_vllm_says_what_to_install() -> None:
    from biovqa.engine.backends.vllm import create

    with pytest.raises(BiovqaError, match="vllm"):
        create("Qwen2.5-VL-7B")


# ---------------------------------------------------------------------------------------------
# VllmBackend.generate around the engine call. vLLM cannot run on a CPU machine, so a recording
# stand-in for ``vllm.LLM`` takes its place: it checks what the backend sends and answers in
# vLLM's RequestOutput shape. The real engine is exercised by benchmarks/gpu/run_gpu_bench.py.


class RecordingEngine:
    """Records each ``chat`` call; rejects any call holding a prompt that contains "TOO LONG"."""

    def __init__(self) -> None:
        self.calls: list[list[list[dict]]] = []
        self.seen_images: set[str] = set()

    def chat(self, conversations, sampling_params, use_tqdm, add_generation_prompt):
        assert len(sampling_params) == len(conversations)
        if any("TOO LONG" in c[-1]["content"][-1]["text"] for c in conversations):
            raise ValueError("prompt longer than max_model_len")
        self.calls.append(conversations)
        outputs = []
        for conversation, params in zip(conversations, sampling_params):
            image = conversation[-1]["content"][0]
            url = image["image_url"]["url"] if image["type"] == "image_url" else None
            cached = 64 if url is not None and url in self.seen_images else 0
            if url is not None:
                self.seen_images.add(url)
            text = conversation[-1]["content"][-1]["text"]
            outputs.append(SimpleNamespace(
                prompt_token_ids=list(range(100)),
                num_cached_tokens=cached,
                outputs=[SimpleNamespace(text=f"answer to {text}", finish_reason="length",
                                         token_ids=list(range(params["max_tokens"])))],
            ))
        return outputs


def stand_in_backend(warmup: bool = True):
    from biovqa.engine.backends.vllm import VllmBackend

    engine = RecordingEngine()
    backend = VllmBackend(engine, model="m", preset=get_preset("m"), engine_options={},
                          prefix_warmup=warmup, sampling_params_factory=dict)
    return backend, engine


def test_generate_sends_image_groups_in_two_calls_and_answers_in_order(tiny_images: list[Path]) -> None:
    backend, engine = stand_in_backend()
    images = [tiny_images[i] for i in (0, 1, 0, 2, 1, 0)]
    requests = [request(i, image, cap=5 + i) for i, image in enumerate(images)]
    replies = backend.generate(requests)
    assert [reply.key for reply in replies] == [r.key for r in requests]
    assert [reply.text for reply in replies] == [f"answer to Question {i}?" for i in range(6)]
    assert [reply.completion_tokens for reply in replies] == [5 + i for i in range(6)]
    assert [len(call) for call in engine.calls] == [3, 3]  # leaders (3 images), then followers
    follower_texts = [c[-1]["content"][-1]["text"] for c in engine.calls[1]]
    assert follower_texts == ["Question 2?", "Question 5?", "Question 4?"]  # grouped by image
    assert backend.prefix_cache.hit_rate == pytest.approx(3 * 64 / 600)
    assert backend.prefix_cache_stats()["source"] == "RequestOutput.num_cached_tokens"


def test_without_warmup_the_whole_batch_is_one_call(tiny_images: list[Path]) -> None:
    backend, engine = stand_in_backend(warmup=False)
    replies = backend.generate([request(i, tiny_images[i % 2]) for i in range(5)])
    assert [len(call) for call in engine.calls] == [5]
    assert all(reply.status == "ok" for reply in replies)


def test_a_rejected_prompt_fails_alone(tiny_images: list[Path], tmp_path: Path) -> None:
    backend, engine = stand_in_backend()
    requests = [request(i, tiny_images[i % 3]) for i in range(8)]
    requests[5] = Request(key="key-5", item_id="item-5", prompt="TOO LONG", image_path=tiny_images[2])
    requests.append(request(8, tmp_path / "missing.png"))
    replies = backend.generate(requests)
    assert [reply.key for reply in replies] == [r.key for r in requests]
    assert {r.key for r in replies if r.status == "failed"} == {"key-5", "key-8"}
    assert "max_model_len" in replies[5].error and "missing.png" in replies[8].error
    answered = [c[-1]["content"][-1]["text"] for call in engine.calls for c in call]
    assert sorted(answered) == sorted(f"Question {i}?" for i in range(8) if i != 5)  # once each
