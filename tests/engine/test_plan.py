from __future__ import annotations

import math
import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fixtures.engine_helpers import make_bench, make_items

from biovqa.errors import BiovqaError
from biovqa.bench import write_bench
from biovqa.engine.runner import DEFAULT_IMAGE_SIZE, Selection
from biovqa.engine.plan import DEFAULT_THROUGHPUT, plan_run, render_plan
from biovqa.engine.presets import GEMMA_SYSTEM_MESSAGE, get_preset


def _text_tokens(items: pa.Table, system: str | None = None) -> int:
    return sum(math.ceil((len(f"{q}\n{i}") + len(system or "")) / 4) for q, i in zip(
        items.column("question").to_pylist(), items.column("instruction").to_pylist()))


def test_plan_counts_tokens_hours_and_cost(tmp_path: Path) -> None:
    bench = make_bench(tmp_path / "b", n_images=4)  # 4 images × 3 questions, C1
    plan = plan_run(bench.root, "gemma-3-12b", throughput=2.0, price_in=0.5, price_out=2.0)
    assert (plan.items, plan.images) == (12, 4)
    assert plan.items_by_task == {"family": 4, "order": 4, "species": 4}
    image_cost = get_preset("gemma-3-12b").image_tokens(24, 16)
    assert plan.image_tokens == 12 * image_cost
    assert plan.text_tokens == _text_tokens(bench.items, GEMMA_SYSTEM_MESSAGE)
    assert plan.prompt_tokens == plan.image_tokens + plan.text_tokens
    assert plan.completion_tokens_max == 12 * 15  # C1 cap
    assert plan.gpu_hours == pytest.approx(12 / 2.0 / 3600)
    assert plan.api_cost == pytest.approx(plan.prompt_tokens / 1e6 * 0.5 + 180 / 1e6 * 2.0)
    assert plan.image_sizes_from == "image files" and plan.images_missing == 0
    text = render_plan(plan)
    assert "distinct images     4" in text and "GPU-hours" in text


def test_plan_uses_the_model_image_token_rule_and_pixel_limits(tmp_path: Path) -> None:
    items = make_items(n_images=3)
    items = items.append_column("width", pa.array([2000] * items.num_rows, pa.int64()))
    items = items.append_column("height", pa.array([1500] * items.num_rows, pa.int64()))
    root = tmp_path / "sized"
    write_bench(root, items, component="c1", generator="t", seed=1, sources={}, parameters={})
    model = "Qwen/Qwen2.5-VL-7B-Instruct"
    plan = plan_run(root, model)
    per_image = get_preset(model).image_tokens(2000, 1500)
    assert plan.image_tokens == 9 * per_image
    assert plan.image_sizes_from == "items table"
    assert plan.throughput_items_per_s == DEFAULT_THROUGHPUT
    assert any("--throughput" in note for note in plan.notes)


def test_plan_without_image_files_assumes_a_default_size(tmp_path: Path) -> None:
    bench = make_bench(tmp_path / "b", n_images=2, with_images=False)
    plan = plan_run(bench.root, "llava-hf/llava-v1.6-vicuna-7b-hf")
    preset = get_preset("llava-hf/llava-v1.6-vicuna-7b-hf")
    assert plan.image_tokens == 6 * preset.image_tokens(*DEFAULT_IMAGE_SIZE)
    assert "default" in plan.image_sizes_from
    assert plan.images_missing == 2 and any("not found" in note for note in plan.notes)


def test_plan_follows_the_selection(tmp_path: Path) -> None:
    bench = make_bench(tmp_path / "b", n_images=9)
    plan = plan_run(bench.root, "some/model", Selection(tasks=("order",), limit=4, shard=(0, 2)))
    assert set(plan.items_by_task) == {"order"} and plan.items <= 4
    assert plan.completion_tokens_max == plan.items * 15


@pytest.mark.parametrize("kwargs", [{"throughput": 0}, {"price_in": -1.0}])
def test_plan_rejects_bad_numbers(tmp_path: Path, kwargs: dict) -> None:
    bench = make_bench(tmp_path / "b", n_images=1)
    with pytest.raises(BiovqaError):
        plan_run(bench.root, "some/model", **kwargs)


def test_plan_image_tokens_follow_each_models_rules(tmp_path: Path,
                                                    tiny_model_dir) -> None:
    from biovqa.engine.image_tokens import openai_tile_tokens

    bench = make_bench(tmp_path / "b", n_images=4)  # 24×16 images
    llava = plan_run(bench.root, str(tiny_model_dir("llava")))
    assert llava.image_tokens == 12 * 16  # (32 / 8)² patch tokens, not the flat 576
    gemma = plan_run(bench.root, str(tiny_model_dir("gemma3")))
    assert gemma.image_tokens == 12 * (4 + 4)  # mm_tokens_per_image + markers
    mini = plan_run(bench.root, "gpt-4o-mini")
    assert mini.image_tokens == 12 * openai_tile_tokens(24, 16, 2833, 5667) == 12 * 8500
    # OpenAI's worked example: 1024×1024 → 768×768 → 4 tiles → 85 + 4·170
    assert openai_tile_tokens(1024, 1024, 85, 170) == 765
    assert openai_tile_tokens(2048, 4096, 85, 170) == 85 + 170 * 6


@pytest.mark.models
def test_calibrate_measures_rates_and_reestimates(tmp_path: Path, tiny_model_dir) -> None:
    from biovqa.engine.plan import calibrate
    from biovqa.engine.runner import RunOptions

    bench = make_bench(tmp_path / "b", n_images=6)
    model = str(tiny_model_dir("llava"))
    plan = plan_run(bench.root, model)
    options = RunOptions(model=model, backend="transformers", threads=1, max_new_tokens=6,
                         backend_options={"device": "cpu"})
    calibrated = calibrate(bench.root, options, 6, plan, tmp_path / "work")
    c = calibrated.calibration
    assert c is not None and c["items"] == 6
    assert c["items_per_s"] > 0 and c["prefill_tokens_per_s"] > 0
    assert c["estimated_hours"] == pytest.approx(calibrated.gpu_hours)
    assert 0 < c["completion_tokens_per_item"] <= 6
    assert "calibration" in render_plan(calibrated)
