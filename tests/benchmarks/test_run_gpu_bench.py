"""The CPU-side helpers of ``benchmarks/gpu/run_gpu_bench.py``: the sample, the weightless model
folder (loaded by the real transformers classes and run on CPU at smoke size), the hit-rate
ceiling and the summary arithmetic. The GPU stages themselves run only on a GPU machine.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import ClassVar

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "run_gpu_bench.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_gpu_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_gpu_bench"] = module
    spec.loader.exec_module(module)
    return module


def test_the_sample_is_image_grouped_with_component_caps(bench: ModuleType, tmp_path: Path) -> None:
    items = bench.make_sample(tmp_path, c1_images=3, c2_images=2, c1_size=(80, 60), c2_size=(50, 40))
    assert len(items) == 3 * 9 + 2 * 35
    assert {item.max_new_tokens for item in items if item.component == "c1"} == {15}
    assert {item.max_new_tokens for item in items if item.component == "c2"} == {48}
    order = [item.image for item in items]
    assert [image for i, image in enumerate(order) if i == 0 or order[i - 1] != image] == list(
        dict.fromkeys(order)
    )  # each image's questions are consecutive
    assert len({item.key for item in items}) == len(items)
    assert sum("CRITICAL INSTRUCTIONS" in item.prompt for item in items) == 2 * 32


def test_the_sample_is_deterministic(bench: ModuleType, tmp_path: Path) -> None:
    first = bench.make_sample(tmp_path / "a", c1_images=2, c2_images=1, c1_size=(64, 48), c2_size=(40, 30))
    second = bench.make_sample(tmp_path / "b", c1_images=2, c2_images=1, c1_size=(64, 48), c2_size=(40, 30))
    assert [(i.key, i.prompt) for i in first] == [(i.key, i.prompt) for i in second]
    assert [Path(i.image).read_bytes() for i in first] == [Path(i.image).read_bytes() for i in second]


def test_hit_rate_ceiling_counts_whole_blocks_of_followers(bench: ModuleType) -> None:
    # One image, three questions of 100 prompt tokens, 40 shared → followers reuse 32 each.
    assert bench.prefix_cache_ceiling([100, 100, 100], ["x", "x", "x"], [40, 40, 40]) == pytest.approx(
        64 / 300
    )
    # Two images, one question each: nothing to reuse.
    assert bench.prefix_cache_ceiling([100, 100], ["x", "y"], [80, 80]) == 0.0


def test_summary_ratios_and_targets(bench: ModuleType) -> None:
    rows = [
        bench.Measurement("a_ours_grouped", 1000, 10.0, 400_000, 30_000).row(),
        bench.Measurement("a_ours_c2", 700, 7.0, 300_000, 30_000, hit_rate=0.85).row(),
        bench.Measurement("b_vllm_per_request", 100, 5.0, 40_000, 3_000).row(),
        bench.Measurement("c_transformers_loop", 50, 10.0, 20_000, 1_500).row(),
    ]
    summary = bench.summarise(rows)
    assert summary["speedup_vs_per_request"] == pytest.approx(100 / 20)
    assert summary["target_5x_met"] is True
    assert summary["speedup_vs_transformers"] == pytest.approx(100 / 5)
    assert summary["target_hit_rate_80_met"] is True
    assert "a_ours_grouped" in bench.format_table(rows, summary)


def test_stage_arguments_round_trip(bench: ModuleType) -> None:
    args = bench.parse_arguments(["--smoke", "--out", "o", "--c2-images", "5", "--c2-size", "640x480"])
    args.workdir = "w"
    again = bench.parse_arguments(bench.stage_arguments(args, "vllm"))
    assert again.stage == "vllm"
    assert {k: v for k, v in vars(again).items() if k != "stage"} == {
        k: v for k, v in vars(args).items() if k != "stage"
    }
    assert bench.parse_size("640x480") == (640, 480)


@pytest.mark.slow
@pytest.mark.models
def test_the_weightless_model_folder_loads_and_runs_at_smoke_size(
    bench: ModuleType, tmp_path: Path
) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from PIL import Image

    from biovqa.engine.presets import get_preset

    folder = bench.write_model_folder(
        tmp_path / "model", bench.QWEN2_5_VL_SMOKE, bench.tokenizer_corpus(),
        min_pixels=3136, max_pixels=12845056,
    )
    items = bench.make_sample(tmp_path / "images", c1_images=0, c2_images=1, c2_size=(500, 375))
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    config = transformers.AutoConfig.from_pretrained(folder)
    assert len(tokenizer) == 152064  # every id the model can emit decodes
    assert tokenizer.convert_tokens_to_ids("<|image_pad|>") == config.image_token_id == 151655
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": items[0].prompt}]}],
        add_generation_prompt=True, tokenize=False,
    )
    assert text.index("<|image_pad|>") < text.index("What is")
    image_processor_class = getattr(transformers, "Qwen2VLImageProcessorPil", None)
    if image_processor_class is None:
        pytest.skip("no PIL Qwen2-VL image processor in this transformers")
    image_processor = image_processor_class.from_pretrained(folder)
    with Image.open(items[0].image) as image:
        pixels = image_processor(images=[image.convert("RGB")], return_tensors="pt")
    grid = pixels["image_grid_thw"][0].tolist()
    placeholders = grid[0] * grid[1] * grid[2] // 4
    assert placeholders + 2 == get_preset("Qwen2.5-VL-7B").image_tokens(500, 375)
    inputs = tokenizer([text.replace("<|image_pad|>", "<|image_pad|>" * placeholders)], return_tensors="pt")
    torch.manual_seed(0)
    model = transformers.Qwen2_5_VLForConditionalGeneration._from_config(config).eval()
    output = model.generate(**inputs, pixel_values=pixels["pixel_values"],
                            image_grid_thw=pixels["image_grid_thw"], max_new_tokens=4,
                            min_new_tokens=4, do_sample=False)
    assert output.shape[1] == inputs["input_ids"].shape[1] + 4
    assert isinstance(tokenizer.decode(output[0, inputs["input_ids"].shape[1]:]), str)


class StandInLLM:
    """Stands in for ``vllm.LLM`` (vLLM cannot run on CPU): answers in RequestOutput's shape and
    reports an image's tokens as cached from its second question on."""

    instances: ClassVar[list[StandInLLM]] = []

    def __init__(self, **engine: object) -> None:
        self.engine = engine
        self.seen: set[str] = set()
        self.calls: list[int] = []
        StandInLLM.instances.append(self)

    def chat(self, conversations, sampling_params, use_tqdm=False, add_generation_prompt=True):
        params = sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(
            conversations
        )
        self.calls.append(len(conversations))
        outputs = []
        for conversation, settings in zip(conversations, params):
            url = conversation[-1]["content"][0]["image_url"]["url"]
            cached = 240 if url in self.seen else 0
            self.seen.add(url)
            outputs.append(SimpleNamespace(
                prompt_token_ids=[0] * 450, num_cached_tokens=cached,
                outputs=[SimpleNamespace(text="x", token_ids=[1] * settings["max_tokens"],
                                         finish_reason="length")],
            ))
        return outputs

    def reset_prefix_cache(self) -> None:
        self.seen = set()


@pytest.mark.slow
def test_the_vllm_stage_runs_end_to_end_around_the_engine(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")  # describe() reports the torch version
    stand_in = ModuleType("vllm")
    stand_in.LLM = StandInLLM  # type: ignore[attr-defined]
    stand_in.SamplingParams = dict  # type: ignore[attr-defined]
    stand_in.__version__ = "stand-in"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", stand_in)
    args = bench.parse_arguments(["--smoke", "--out", str(tmp_path), "--c1-images", "3",
                                  "--c2-images", "2", "--per-request-items", "12"])
    args.workdir = str(tmp_path / "work")
    folder, items = bench.prepare(args)
    rows = bench.stage_vllm(args, folder, items)
    engine = StandInLLM.instances[-1]
    assert engine.engine["enable_prefix_caching"] is True
    assert engine.engine["load_format"] == "dummy"
    by_mode = {row["mode"]: row for row in rows}
    assert by_mode["a_ours_c1"]["items"] == 27 and by_mode["a_ours_c2"]["items"] == 70
    assert by_mode["a_ours_grouped"]["items"] == 97
    assert 0 < by_mode["a_ours_c2"]["hit_rate"] <= by_mode["a_ours_c2"]["hit_rate_ceiling"] + 1e-9
    assert by_mode["b_vllm_per_request"]["items"] == 12
    assert engine.calls[-12:] == [1] * 12  # (b): one request per call
    assert max(engine.calls[:-12]) > 1  # (a): whole batches
    summary = bench.summarise([row for row in rows if not row["mode"].startswith("_")])
    assert "speedup_vs_per_request" in summary and "c2_hit_rate_ceiling_for_this_layout" in summary


@pytest.mark.slow
@pytest.mark.models
def test_the_processor_is_built_without_torchvision(bench: ModuleType, tmp_path: Path) -> None:
    """The lent GPU machine may have no torchvision: Qwen's processor is then assembled from the PIL
    image processor, the tokenizer and the chat template, and gives the preset's image tokens."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from PIL import Image

    from biovqa.engine.presets import get_preset

    folder = bench.write_model_folder(tmp_path / "model", bench.QWEN2_5_VL_SMOKE, bench.tokenizer_corpus(),
                                      min_pixels=3136, max_pixels=12845056)
    (item,) = bench.make_sample(tmp_path / "images", c1_images=0, c2_images=1, c2_size=(500, 375))[:1]
    processor = bench.pil_processor(folder)
    assert processor.video_processor is None
    assert not type(processor.image_processor).__name__.endswith("Fast")  # the PIL one
    text = processor.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": item.prompt}]}],
        add_generation_prompt=True, tokenize=False)
    with Image.open(item.image) as image:
        inputs = processor(text=[text], images=[image.convert("RGB")], return_tensors="pt")
    image_pad = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    placeholders = int((inputs["input_ids"][0] == image_pad).sum())
    assert placeholders + 2 == get_preset("Qwen2.5-VL-7B").image_tokens(500, 375)
    loaded, source = bench.load_processor(folder)
    assert source == "auto" or source.startswith("pil-pieces (")
    # one implementation: the benchmark's processor is the engine's
    from biovqa.engine.backends import processors

    assert type(processor).__module__ == processors.__name__
    assert source == processors.load_processor(folder)[1]


def test_preflight_names_what_is_missing(bench: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    monkeypatch.setattr(bench, "REQUIRED_MODULES", (*bench.REQUIRED_MODULES, "no_such_module_here"))
    args = bench.parse_arguments(["--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="no_such_module_here not importable here"):
        bench.preflight(args)
    found = bench.environment()
    assert found["no_such_module_here"] is None and found["python"].count(".") == 2


@pytest.mark.slow
@pytest.mark.models
def test_the_one_command_cpu_smoke_writes_results(bench: ModuleType, tmp_path: Path) -> None:
    """The prepared command at smoke size on CPU: every transformers mode measured, ratios and
    the environment written to --out."""
    import json
    import subprocess

    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    out = tmp_path / "out"
    ran = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--device", "cpu", "--c1-images", "1",
                          "--c2-images", "1", "--hf-images", "1", "--hf-batch", "4", "--hf-questions", "3",
                          "--hf-max-new-tokens", "3", "--workdir", str(tmp_path / "work"), "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    modes = {row["mode"]: row for row in results["rows"]}
    for component in ("c1", "c2"):
        for mode in ("hf_per_request", "hf_batched", "hf_shared_prefix"):
            row = modes[f"{mode}_{component}"]
            assert row["items"] == 3 and row["failed"] == 0 and row["items_per_s"] > 0
            assert row["generated_tokens_per_s"] > 0 and "peak_gpu_memory_gib" in row
            assert row["processor"] == "auto" or row["processor"].startswith("pil-pieces")
        assert f"{component}_shared_prefix_over_per_request" in results["summary"]
        # float32 on CPU: every image's questions really took the shared path, with the
        # one-request-per-call tokens (no tie to explain away)
        shared = modes[f"hf_shared_prefix_{component}"]
        assert shared["shared_prefix_use"]["shared_questions"] == 3
        assert shared["shared_prefix_use"]["plain_questions"] == 0
        assert shared["equal_to_per_request"] is True and shared["requests_differing"] == 0
        assert shared["min_top2_logit_margin"] is None
    assert modes["_environment_transformers"]["transformers"] == results["environment"]["transformers"]
    table = (out / "results.md").read_text()
    assert "| peak GPU GiB |" in table and "environment: python" in table


@pytest.mark.models
def test_greedy_margins_are_the_smallest_top2_gap_of_the_greedy_path(
        bench: ModuleType, tiny_model_dir, tiny_images: list[Path]) -> None:  # noqa: ANN001
    """What the GPU equality check records where a mode differs: per request, the smallest gap
    between the two best logits along its unpadded greedy path (a bf16 tie shows as ~0)."""
    import torch

    from biovqa.engine.backends.base import Request
    from biovqa.engine.backends.transformers import _load_image, create

    backend = create(str(tiny_model_dir("qwen2_5_vl")), device="cpu", dtype="float32")
    requests = [Request(key=f"k{n}", item_id=f"k{n}", prompt=prompt, image_path=tiny_images[n],
                        max_new_tokens=3)
                for n, prompt in enumerate(("What is the order?", "Is the wing visible?"))]
    margins = bench.greedy_margins(backend.model, backend.processor, requests, "cpu")
    assert len(margins) == 2
    for request, margin in zip(requests, margins):  # recomputed by hand, step by step
        text = backend.prompt_text(request)
        inputs = backend.processor(text=[text], images=[[_load_image(request.image_path)]],
                                   return_tensors="pt")
        gaps = []
        with torch.inference_mode():
            output = backend.model.generate(**inputs, max_new_tokens=3, do_sample=False,
                                            output_logits=True, return_dict_in_generate=True)
        for logits in output.logits:
            top = torch.topk(logits[0], 2).values
            gaps.append(float(top[0] - top[1]))
        assert margin == pytest.approx(min(gaps)) and margin >= 0
    backend.close()
