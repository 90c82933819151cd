"""Per-item system prompts, request modes (chat vs raw completion) and per-item token caps as
engine concepts: what ``build_requests`` makes of the items columns, that each enters the store key
and the header's prompt hash, and how the openai and vllm backends shape raw requests."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fixtures.bagel_items import APPENDIX_B, write_jsonl
from fixtures.engine_helpers import make_bench
from fixtures.hca_data import LEVELS, TAXONOMY, write_images, write_taxonomy

from biovqa.components.bagel.build import build_bagel
from biovqa.components.hca.build import PromptVariant, build_hca
from biovqa.components.hca.prompts import COT_MAX_NEW_TOKENS, VISUAL_SYSTEM_PROMPT
from biovqa.engine.backends.base import Request, raw_prompt_text, system_in_user_text
from biovqa.engine.backends.openai import build_completion_body, endpoint_for
from biovqa.engine.backends.vllm import build_raw_inputs, split_modes
from biovqa.engine.presets import ModelPreset, get_preset
from biovqa.engine.runner import (
    SYSTEM_RULE,
    RunOptions,
    build_requests,
    item_modes,
    prompt_template_hash,
    prompting_facts,
    resolve_preset,
    run_benchmark,
)
from biovqa.errors import BiovqaError

PRESET_SYSTEM = "PRESET SYSTEM MESSAGE"


def preset_wrap(preset: ModelPreset, component: str, prompt: str) -> tuple[str | None, str]:
    """A preset that sets a system message on every component (as Gemma's does on C1/C2)."""
    return PRESET_SYSTEM, prompt


@pytest.fixture
def hca_inputs(tmp_path: Path) -> tuple[Path, Path]:
    labels = [leaf for leaf in TAXONOMY for _ in range(2)]
    return write_taxonomy(tmp_path / "data"), write_images(tmp_path / "data", labels)


@pytest.fixture
def hca_bench(tmp_path: Path, hca_inputs: tuple[Path, Path]):
    taxonomy, images = hca_inputs
    return build_hca(tmp_path / "hca", taxonomy=taxonomy, images=images, levels=LEVELS)


def _with_column(bench, name: str, values: list) -> object:
    """The bench with one items column replaced (an in-memory stand-in: build_requests reads
    ``bench.items`` through its argument, the manifest through ``bench``)."""
    items = bench.items
    index = items.column_names.index(name)
    return items.set_column(index, name, pa.array(values, items.schema.field(name).type))


# -- per-item system prompts ---------------------------------------------------------------------
def test_item_system_prompt_replaces_the_presets_and_enters_the_key(hca_bench) -> None:
    preset, _ = resolve_preset("some/unknown-model")
    plan = build_requests(hca_bench, hca_bench.items, preset, preset_wrap, "m", "r")
    assert {r.system for r in plan.requests} == {VISUAL_SYSTEM_PROMPT}
    # rows without a system prompt of their own keep the preset's
    n = hca_bench.items.num_rows
    half = [VISUAL_SYSTEM_PROMPT if i % 2 else None for i in range(n)]
    mixed = build_requests(hca_bench, _with_column(hca_bench, "system", half), preset, preset_wrap, "m", "r")
    by_id = {r.item_id: r for r in mixed.requests}
    for item_id, system in zip(hca_bench.items.column("item_id").to_pylist(), half):
        assert by_id[item_id].system == (system or PRESET_SYSTEM)
    # another system prompt, another key (a resume can never mix answers to different prompts)
    other = build_requests(hca_bench, _with_column(hca_bench, "system", ["Be brief."] * n), preset,
                           preset_wrap, "m", "r")
    assert not {r.key for r in other.requests} & {r.key for r in plan.requests}


def test_prompting_facts_enter_the_header_hash_only_when_used(hca_bench, tmp_path: Path) -> None:
    preset, wrap = resolve_preset("some/unknown-model")
    plain = make_bench(tmp_path / "plain", n_images=2)
    assert prompting_facts(plain) == {}
    assert prompt_template_hash(preset, wrap, ["c1"], prompting_facts(plain)) == prompt_template_hash(
        preset, wrap, ["c1"])  # benches without item prompts keep their stores' hash
    facts = prompting_facts(hca_bench)
    assert facts == {"item_system": SYSTEM_RULE}
    assert prompt_template_hash(preset, wrap, ["hca"], facts) != prompt_template_hash(preset, wrap, ["hca"])


def test_a_run_sends_the_item_system_prompt_and_records_the_rule(hca_bench, tmp_path: Path) -> None:
    """The echo backend answers with a hash of the system message, user text and image: the run's
    replies are those of requests carrying the item's system prompt."""
    import hashlib

    result = run_benchmark(hca_bench.root, tmp_path / "run", RunOptions(backend="echo", progress=False))
    assert result.card["prompting"]["item_system"] == SYSTEM_RULE
    table = pq.read_table(tmp_path / "run" / "predictions.parquet").to_pylist()
    items = {row["item_id"]: row for row in hca_bench.items.to_pylist()}
    assert len(table) == len(items)
    for row in table:
        item = items[row["item_id"]]
        seen = "\x1f".join((item["system"], f"{item['question']}\n{item['instruction']}",
                            Path(item["image"]).name))
        assert row["response"] == "echo-" + hashlib.sha256(seen.encode()).hexdigest()[:16]


# -- request modes -------------------------------------------------------------------------------
def test_bagel_raw_mode_reaches_requests_and_changes_keys(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "b.jsonl", APPENDIX_B)
    chat = build_bagel([source], tmp_path / "chat")
    raw = build_bagel([source], tmp_path / "raw", mode="raw")
    assert set(raw.items.column("prompt_mode").to_pylist()) == {"raw"}
    preset, wrap = resolve_preset("some/unknown-model")
    chat_plan = build_requests(chat, chat.items, preset, wrap, "m", "r")
    raw_plan = build_requests(raw, raw.items, preset, wrap, "m", "r")
    assert {r.mode for r in chat_plan.requests} == {"chat"} and {r.mode for r in raw_plan.requests} == {"raw"}
    assert [r.prompt for r in chat_plan.requests] == [r.prompt for r in raw_plan.requests]
    assert not {r.key for r in chat_plan.requests} & {r.key for r in raw_plan.requests}
    assert prompting_facts(raw) == {"modes": ["raw"]}


def test_a_bagel_bench_without_the_mode_column_uses_its_manifest(tmp_path: Path) -> None:
    raw = build_bagel([write_jsonl(tmp_path / "b.jsonl", APPENDIX_B)], tmp_path / "raw", mode="raw")
    legacy = raw.items.drop_columns(["prompt_mode"])
    assert set(item_modes(raw, legacy)) == {"raw"}


def test_an_unknown_mode_is_a_named_error(tmp_path: Path) -> None:
    bench = build_bagel([write_jsonl(tmp_path / "b.jsonl", APPENDIX_B)], tmp_path / "b")
    bad = _with_column(bench, "prompt_mode", ["completion"] * bench.items.num_rows)
    with pytest.raises(BiovqaError, match="prompt_mode"):
        item_modes(bench, bad)


def test_raw_text_is_system_blank_line_prompt() -> None:
    assert raw_prompt_text(Request(key="k", item_id="i", prompt="Question: x\nAnswer:", mode="raw")) == (
        "Question: x\nAnswer:")
    assert raw_prompt_text(Request(key="k", item_id="i", prompt="P", system="S", mode="raw")) == "S\n\nP"
    assert system_in_user_text(None, "P") == "P"


# -- per-item token caps -------------------------------------------------------------------------
def test_item_caps_override_the_preset_and_the_run_option_overrides_both(
        hca_bench, hca_inputs: tuple[Path, Path], tmp_path: Path) -> None:
    preset, wrap = resolve_preset("some/unknown-model")
    assert preset.max_new_tokens("hca") == 10
    plain = build_requests(hca_bench, hca_bench.items, preset, wrap, "m", "r")
    assert {r.max_new_tokens for r in plain.requests} == {10}
    taxonomy, images = hca_inputs
    cot = build_hca(tmp_path / "cot", taxonomy=taxonomy, images=images, levels=LEVELS,
                    variant=PromptVariant(cot=True))
    cot_plan = build_requests(cot, cot.items, preset, wrap, "m", "r")
    assert {r.max_new_tokens for r in cot_plan.requests} == {COT_MAX_NEW_TOKENS}
    forced = build_requests(cot, cot.items, preset, wrap, "m", "r", max_new_tokens=7)
    assert {r.max_new_tokens for r in forced.requests} == {7}
    assert prompting_facts(cot)["item_max_new_tokens"] == [COT_MAX_NEW_TOKENS]
    assert not {r.key for r in cot_plan.requests} & {r.key for r in forced.requests}



# -- component facts come from the declaration ----------------------------------------------------
def test_a_plugin_components_declared_facts_reach_its_requests(tmp_path: Path, monkeypatch) -> None:
    """Token cap, request-mode parameter and the preset system message are read from the
    component's declaration, for a plug-in as for a built-in; an undeclared name gets defaults."""
    import importlib

    from biovqa.bench import write_bench
    from biovqa.engine.presets import GEMMA_SYSTEM_MESSAGE

    from fixtures.engine_helpers import make_items

    registry = importlib.import_module("biovqa.components.registry")
    registry.list_components()
    lab = registry.Component(
        name="labx", title="a lab's suite", tasks=("order",), builder="labx:b",
        build_function="labx:b", floor="labx:f", scorer="labx:s", reporter="labx:r",
        max_new_tokens=7, request_mode_parameter="style", preset_system_message=True)
    monkeypatch.setitem(registry._REGISTRY, "labx", lab)
    gemma, wrap = resolve_preset("Gemma-3-12B")
    plans = {}
    for component in ("labx", "adhoc"):
        (tmp_path / component / "images").mkdir(parents=True)
        items = make_items(2, ("order",), component, tmp_path / component / "images")
        bench = write_bench(tmp_path / component, items, component=component, generator="test",
                            seed=1, sources={}, parameters={"style": "raw"},
                            extra={"images_root": "images"})
        plans[component] = build_requests(bench, bench.items, gemma, wrap, "m", "r").requests
    assert {(r.max_new_tokens, r.mode, r.system) for r in plans["labx"]} == {
        (7, "raw", GEMMA_SYSTEM_MESSAGE)}
    assert {(r.max_new_tokens, r.mode, r.system) for r in plans["adhoc"]} == {(48, "chat", None)}


# -- openai: the completions endpoint ------------------------------------------------------------
def test_raw_requests_go_to_the_completions_endpoint() -> None:
    raw = Request(key="k", item_id="i", prompt="Question: q\nAnswer:", max_new_tokens=5, mode="raw")
    chat = Request(key="k", item_id="i", prompt="Question: q\nAnswer:", max_new_tokens=5)
    assert endpoint_for(raw) == "/completions" and endpoint_for(chat) == "/chat/completions"
    body = build_completion_body(raw, model="m", extra_body={"seed": 0})
    assert body == {"model": "m", "prompt": "Question: q\nAnswer:", "max_tokens": 5, "temperature": 0,
                    "seed": 0}


# -- vllm: LLM.generate for raw requests ---------------------------------------------------------
class RecordingLLM:
    """Stands in for ``vllm.LLM``: records ``chat`` and ``generate`` calls."""

    def __init__(self) -> None:
        self.chat_calls: list[list] = []
        self.generate_calls: list[list] = []

    @staticmethod
    def _output(text: str, params: dict) -> SimpleNamespace:
        return SimpleNamespace(prompt_token_ids=[1, 2, 3], num_cached_tokens=0,
                               outputs=[SimpleNamespace(text=f"re: {text}", finish_reason="stop",
                                                        token_ids=list(range(params["max_tokens"])))])

    def chat(self, conversations, sampling_params, use_tqdm, add_generation_prompt):
        self.chat_calls.append(conversations)
        return [self._output(c[-1]["content"][-1]["text"], p) for c, p in zip(conversations, sampling_params)]

    def generate(self, prompts, sampling_params, use_tqdm):
        self.generate_calls.append(prompts)
        return [self._output(p["prompt"], s) for p, s in zip(prompts, sampling_params)]


def test_vllm_sends_raw_requests_through_generate_with_the_raw_text(tmp_path: Path) -> None:
    from biovqa.engine.backends.vllm import VllmBackend

    image = tmp_path / "a.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n")
    requests = [
        Request(key="c0", item_id="c0", prompt="chat question", max_new_tokens=3),
        Request(key="r0", item_id="r0", prompt="Question: x\nAnswer:", system="S", max_new_tokens=5, mode="raw"),
        Request(key="c1", item_id="c1", prompt="chat two", system="S", max_new_tokens=3),
        Request(key="r1", item_id="r1", prompt="Question: y\nAnswer:", max_new_tokens=5, mode="raw"),
        Request(key="r2", item_id="r2", prompt="with image", image_path=image, max_new_tokens=5, mode="raw"),
    ]
    assert split_modes(requests, [0, 1, 2, 3]) == [("chat", [0, 2]), ("raw", [1, 3])]
    assert build_raw_inputs(requests, [1, 3]) == [{"prompt": "S\n\nQuestion: x\nAnswer:"},
                                                 {"prompt": "Question: y\nAnswer:"}]
    llm = RecordingLLM()
    backend = VllmBackend(llm, model="m", preset=get_preset("m"), engine_options={},
                          sampling_params_factory=dict)
    replies = backend.generate(requests)
    assert [r.key for r in replies] == [r.key for r in requests]
    assert [r.text for r in replies[:4]] == ["re: chat question", "re: S\n\nQuestion: x\nAnswer:",
                                             "re: chat two", "re: Question: y\nAnswer:"]
    assert replies[4].status == "failed" and "raw-mode" in replies[4].error
    assert llm.generate_calls == [[{"prompt": "S\n\nQuestion: x\nAnswer:"}, {"prompt": "Question: y\nAnswer:"}]]
    assert [m[0]["role"] for m in llm.chat_calls[0]] == ["user", "system"]
