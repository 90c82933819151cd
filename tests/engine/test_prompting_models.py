"""System prompts and raw completion on real (tiny, random) models: how the transformers backend
treats a chat template with a system role (LLaVA), one that merges the system text into the first
user turn (Gemma 3's), and one that refuses a system turn; raw-mode requests without a template,
through the transformers backend and through ``transformers serve``'s ``/v1/completions``."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from biovqa.engine.backends.base import Request, raw_prompt_text

pytestmark = [pytest.mark.models]

SYSTEM = "You are an expert in hierarchical image classification. Respond with only the letter."
QUESTION = "Based on taxonomy, what is the order of the bird in this image?\nA. x\nB. y\nC. z\nD. w"
#: A template without a system role that refuses one (as Gemma 1/2 and some Mistral templates do).
NO_SYSTEM_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{{ message['role'] | upper }}: "
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>\n{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}\n{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


@pytest.fixture(scope="module")
def backends(tiny_model_dir: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory):
    from biovqa.engine.backends.transformers import create

    no_system = tmp_path_factory.mktemp("no-system") / "llava"
    shutil.copytree(tiny_model_dir("llava"), no_system)
    (no_system / "chat_template.jinja").write_text(NO_SYSTEM_TEMPLATE, encoding="utf-8")
    made = {kind: create(str(folder), device="cpu", batch_size=8)
            for kind, folder in (("llava", tiny_model_dir("llava")), ("gemma3", tiny_model_dir("gemma3")),
                                 ("no-system", no_system))}
    yield made
    for backend in made.values():
        backend.close()


def test_the_template_probe_names_how_a_system_prompt_is_sent(backends) -> None:
    assert backends["llava"].system_handling == "system-turn"
    assert backends["gemma3"].system_handling == "merged-by-template"
    assert backends["no-system"].system_handling == "prepended-to-user-text"
    for backend in backends.values():
        assert backend.describe()["system_prompt_handling"] == backend.system_handling


def test_every_template_receives_the_system_text(backends, tiny_images: list[Path]) -> None:
    request = Request(key="k", item_id="i", prompt=QUESTION, image_path=tiny_images[0], system=SYSTEM)
    for kind, backend in backends.items():
        text = backend.prompt_text(backend.prepare(request))
        assert SYSTEM in text, kind
        assert text.index(SYSTEM) < text.index(QUESTION.splitlines()[0]), kind
    # Gemma 3 has no system role: its template itself puts the system text in the first user turn
    gemma = backends["gemma3"].prompt_text(request)
    assert gemma.count("<start_of_turn>") == 2 and "<start_of_turn>user\n" + SYSTEM in gemma


def test_without_a_system_role_the_system_text_leads_the_user_text(backends, tiny_images: list[Path]) -> None:
    backend = backends["no-system"]
    with_system = Request(key="a", item_id="a", prompt=QUESTION, image_path=tiny_images[0], system=SYSTEM,
                          max_new_tokens=6)
    by_hand = Request(key="b", item_id="b", prompt=f"{SYSTEM}\n\n{QUESTION}", image_path=tiny_images[0],
                      max_new_tokens=6)
    first, second = backend.generate([with_system, by_hand])
    assert first.status == "ok", first.error
    assert (first.text, first.prompt_tokens, first.completion_tokens) == (
        second.text, second.prompt_tokens, second.completion_tokens)


@pytest.mark.parametrize("kind", ["llava", "text"])
def test_raw_mode_tokenises_the_text_without_a_template(kind: str, backends, tmp_path_factory,
                                                        tiny_images: list[Path]) -> None:
    from biovqa.engine.backends.transformers import create

    if kind == "text":
        from fixtures.tiny_text_model import build_tiny_text_lm

        backend = create(str(build_tiny_text_lm(tmp_path_factory.mktemp("text-lm") / "lm")), device="cpu",
                         text_only=True)
    else:
        backend = backends["llava"]
    raw = Request(key="r", item_id="r", prompt="Question: Which bird?\nAnswer:", system="Be brief.",
                  max_new_tokens=4, mode="raw")
    chat = Request(key="c", item_id="c", prompt=raw.prompt, system=raw.system, max_new_tokens=4)
    assert backend.prompt_text(raw) == raw_prompt_text(raw) == "Be brief.\n\nQuestion: Which bird?\nAnswer:"
    replies = backend.generate([raw, chat, Request(key="i", item_id="i", prompt="x", image_path=tiny_images[0],
                                                   mode="raw")])
    assert replies[0].status == "ok", replies[0].error
    assert replies[0].prompt_tokens == len(backend.tokenizer(raw_prompt_text(raw))["input_ids"])
    assert replies[1].prompt_tokens > replies[0].prompt_tokens  # the chat template adds role markers
    assert replies[2].status == "failed" and "raw-mode" in replies[2].error
    alone = backend.generate([raw])[0]
    assert (alone.text, alone.completion_tokens) == (replies[0].text, replies[0].completion_tokens)


@pytest.mark.slow
def test_openai_raw_mode_uses_v1_completions_of_transformers_serve(
        backends, transformers_server: dict[str, str]) -> None:
    """The same tiny LLaVA offline and behind ``transformers serve``: raw requests posted to
    ``/v1/completions`` give the transformers backend's raw replies."""
    from biovqa.engine.backends.openai import create

    client = create(transformers_server["model"], base_url=transformers_server["base_url"], api_key_env=None,
                    concurrency=2)
    try:
        requests = [Request(key=f"r{i}", item_id=f"r{i}", prompt=f"Question: bird {i}?\nOptions: A B C D\nAnswer:",
                            max_new_tokens=5, mode="raw") for i in range(3)]
        served = client.generate(requests)
        offline = [backends["llava"].generate([r])[0] for r in requests]
        assert all(r.status == "ok" for r in served), [r.error for r in served]
        assert [r.text for r in served] == [r.text for r in offline]
        assert [r.prompt_tokens for r in served] == [r.prompt_tokens for r in offline]
    finally:
        client.close()


@pytest.mark.slow
def test_an_hca_run_on_gemma3_records_how_the_item_system_prompt_was_sent(
        tiny_model_dir: Callable[[str], Path], tmp_path: Path) -> None:
    import json

    from fixtures.hca_data import LEVELS, TAXONOMY, write_images, write_taxonomy

    import biovqa
    from biovqa.components.hca.build import build_hca

    taxonomy = write_taxonomy(tmp_path / "data")
    images = write_images(tmp_path / "data", list(TAXONOMY)[:2])
    bench = build_hca(tmp_path / "hca", taxonomy=taxonomy, images=images, levels=LEVELS)
    run = tmp_path / "run"
    biovqa.run(bench.root, run, backend="transformers", model=str(tiny_model_dir("gemma3")),
               backend_options={"device": "cpu", "dtype": "float32"}, progress=False)
    card = json.loads((run / "run.json").read_text())
    assert card["prompting"]["system_prompt_handling"] == "merged-by-template"
    assert card["prompting"]["item_system"].startswith("item system prompt replaces")
    assert card["decoding"]["max_new_tokens"] == {"hca": 10}
