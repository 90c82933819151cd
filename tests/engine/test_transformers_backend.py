"""The transformers backend end to end on tiny random LLaVA and Gemma3 models built offline.

Random weights give junk text, so these tests assert plumbing: one reply per request with its
key, the image placed before the text in the rendered prompt, system messages and images reaching
the model (prompt token counts), token caps, batch order, batched == one-at-a-time, determinism.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from biovqa.engine.backends.base import Backend, Reply, Request

pytestmark = [pytest.mark.models]

KINDS = ("llava", "gemma3")


@pytest.fixture(scope="module", params=KINDS)
def backend(request: pytest.FixtureRequest, tiny_model_dir: Callable[[str], Path]):
    from biovqa.engine.backends.transformers import create

    created = create(str(tiny_model_dir(request.param)), batch_size=4, device="cpu")
    yield created
    created.close()


def make_requests(images: list[Path]) -> list[Request]:
    """Seven requests: three images (two questions each, one with a system message) and one
    text-only request; caps 3..9 tokens."""
    requests = []
    for index in range(6):
        requests.append(
            Request(
                key=f"key-{index}",
                item_id=f"item-{index}",
                prompt=f"What is the order of the animal shown in this image? {index}",
                image_path=images[index // 2],
                system="You are a precise taxonomy expert." if index % 2 else None,
                max_new_tokens=3 + index,
                task="order",
            )
        )
    requests.append(Request(key="key-text", item_id="item-text", prompt="Name a genus.", max_new_tokens=4))
    return requests


def test_backend_follows_the_protocol(backend) -> None:
    assert isinstance(backend, Backend)
    assert backend.name == "transformers"


def test_a_batch_gets_one_reply_per_request_in_order(backend, tiny_images: list[Path]) -> None:
    requests = make_requests(tiny_images)
    replies = backend.generate(requests)
    assert [reply.key for reply in replies] == [request.key for request in requests]
    for request, reply in zip(requests, replies):
        assert isinstance(reply, Reply)
        assert reply.status == "ok", reply.error
        assert isinstance(reply.text, str)
        assert 0 <= reply.completion_tokens <= request.max_new_tokens
        assert reply.prompt_tokens > 0
        assert reply.latency_s is not None and reply.latency_s >= 0


def test_batched_output_equals_one_at_a_time(backend, tiny_images: list[Path]) -> None:
    requests = make_requests(tiny_images)
    batched = backend.generate(requests)
    single = [backend.generate([request])[0] for request in requests]
    assert [(r.text, r.prompt_tokens, r.completion_tokens) for r in batched] == [
        (r.text, r.prompt_tokens, r.completion_tokens) for r in single
    ]


def test_two_runs_and_a_shuffled_batch_are_identical(backend, tiny_images: list[Path]) -> None:
    requests = make_requests(tiny_images)
    first = backend.generate(requests)
    second = backend.generate(requests)
    assert [plumbing(reply) for reply in first] == [plumbing(reply) for reply in second]
    shuffled = list(reversed(requests))
    by_key = {reply.key: reply.text for reply in backend.generate(shuffled)}
    assert by_key == {reply.key: reply.text for reply in first}


def plumbing(reply: Reply) -> tuple:
    """Everything in a reply except its timing."""
    return (reply.key, reply.text, reply.status, reply.prompt_tokens, reply.completion_tokens)


def test_image_and_system_message_reach_the_model(backend, tiny_images: list[Path]) -> None:
    question = "What is the order of the animal shown in this image?"
    bare = Request(key="a", item_id="a", prompt=question, max_new_tokens=2)
    with_image = Request(key="b", item_id="b", prompt=question, image_path=tiny_images[0], max_new_tokens=2)
    with_system = Request(
        key="c", item_id="c", prompt=question, image_path=tiny_images[0], system="Be brief.",
        max_new_tokens=2,
    )
    replies = backend.generate([bare, with_image, with_system])
    assert replies[1].prompt_tokens > replies[0].prompt_tokens  # the image's tokens are in
    assert replies[2].prompt_tokens > replies[1].prompt_tokens  # the system turn is in


def test_the_image_comes_before_the_text_in_the_user_turn(backend, tiny_images: list[Path]) -> None:
    from biovqa.engine.backends.transformers import build_messages

    request = Request(
        key="k", item_id="i", prompt="Which genus?", image_path=tiny_images[0], system="Sys text."
    )
    messages = build_messages(request)
    assert [message["role"] for message in messages] == ["system", "user"]
    assert [part["type"] for part in messages[1]["content"]] == ["image", "text"]
    rendered = backend.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    image_marker = "<image>" if "<image>" in rendered else "<start_of_image>"
    assert rendered.index("Sys text.") < rendered.index(image_marker) < rendered.index("Which genus?")


def test_max_new_tokens_is_a_hard_cap(backend, tiny_images: list[Path]) -> None:
    requests = [
        Request(key=f"k{cap}", item_id=f"i{cap}", prompt="Name the family.", image_path=tiny_images[1],
                max_new_tokens=cap)
        for cap in (1, 2, 5)
    ]
    replies = backend.generate(requests)
    assert all(reply.completion_tokens <= cap for reply, cap in zip(replies, (1, 2, 5)))
    # Greedy decoding is prefix-consistent: a shorter cap yields a prefix of the longer reply.
    assert replies[2].text.startswith(replies[0].text.rstrip("\ufffd"))


def test_an_unreadable_image_fails_only_its_own_request(
    backend, tiny_images: list[Path], tmp_path: Path
) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not a png")
    requests = [
        Request(key="good", item_id="good", prompt="Name the order.", image_path=tiny_images[0]),
        Request(key="bad", item_id="bad", prompt="Name the order.", image_path=broken),
        Request(key="missing", item_id="missing", prompt="Name the order.",
                image_path=tmp_path / "nope.png"),
    ]
    replies = backend.generate(requests)
    assert [reply.key for reply in replies] == ["good", "bad", "missing"]
    assert replies[0].status == "ok"
    assert [reply.status for reply in replies[1:]] == ["failed", "failed"]
    assert all(reply.text is None and reply.error for reply in replies[1:])


def test_describe_gives_the_run_card_facts(backend) -> None:
    import torch
    import transformers

    facts = backend.describe()
    assert facts["backend"] == "transformers"
    assert facts["transformers_version"] == transformers.__version__
    assert facts["torch_version"] == torch.__version__
    assert facts["revision"].startswith("local:")
    assert facts["dtype"] == "float32"
    assert facts["device"] == "cpu"
    assert set(facts["processor"]) >= {"min_pixels", "max_pixels"}


def test_bad_options_are_refused(tiny_llava_dir: Path) -> None:
    from biovqa.errors import BiovqaError, MissingResourceError
    from biovqa.engine.backends.transformers import create

    with pytest.raises(BiovqaError, match="dtype"):
        create(str(tiny_llava_dir), dtype="float8")
    with pytest.raises(MissingResourceError):
        create(str(tiny_llava_dir.parent / "no-such-model"))


def test_unknown_options_are_reported_not_silently_dropped(tiny_llava_dir: Path) -> None:
    from biovqa.engine.backends.transformers import create

    with pytest.warns(RuntimeWarning, match="colour"):
        created = create(str(tiny_llava_dir), colour="blue")
    assert created.describe()["ignored_options"] == ["colour"]


def test_a_text_only_checkpoint_is_refused_with_a_hint(tiny_llava_dir: Path, tmp_path: Path) -> None:
    import shutil

    from transformers import LlamaConfig, LlamaForCausalLM

    from biovqa.errors import BiovqaError
    from biovqa.engine.backends.transformers import create

    folder = tmp_path / "text-only"
    LlamaForCausalLM(LlamaConfig(vocab_size=500, hidden_size=16, intermediate_size=32,
                                 num_hidden_layers=1, num_attention_heads=2,
                                 num_key_value_heads=1)).save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "processor_config.json"):
        shutil.copy(tiny_llava_dir / name, folder / name)
    with pytest.raises(BiovqaError, match="image-text-to-text") as raised:
        create(str(folder))
    assert "--backend vllm" in (raised.value.hint or "")
