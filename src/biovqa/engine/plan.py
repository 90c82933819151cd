"""``biovqa plan``: what a run would cost, before it starts.

From the same selection and requests a run would make: items, distinct images, estimated prompt
tokens (each request's image tokens by the model preset's rule and pixel limits, plus its text at
about 4 characters a token), completion tokens at the token caps (an upper bound), GPU-hours at a
stated throughput and API cost at stated prices per million tokens:

    gpu_hours = items / throughput / 3600
    api_cost  = prompt_tokens / 1e6 · price_in + completion_tokens / 1e6 · price_out
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.errors import BiovqaError
from biovqa.bench import Bench, open_bench
from biovqa.engine.requests import CHARS_PER_TOKEN, DEFAULT_IMAGE_SIZE, build_requests, resolve_preset
from biovqa.engine.selection import Selection, image_keys, select_items

#: Items per second per GPU assumed when ``--throughput`` is not given [DEFAULT]: a 7–8B VLM on
#: one H100-class GPU with prefix caching answers C1-length questions at roughly this rate.
DEFAULT_THROUGHPUT = 10.0


@dataclass(frozen=True)
class PlanEstimate:
    """The dry-run numbers for one model on one selection."""

    model: str
    items: int
    images: int
    items_by_task: dict[str, int]
    image_sizes_from: str
    images_missing: int
    image_tokens: int
    text_tokens: int
    prompt_tokens: int
    completion_tokens_max: int
    throughput_items_per_s: float
    gpu_hours: float
    price_in_per_million: float
    price_out_per_million: float
    api_cost: float
    notes: list[str] = field(default_factory=list)
    calibration: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def image_sizes(bench: Bench, items: pa.Table) -> tuple[pa.Table, str]:
    """``items`` with ``width``/``height`` columns: the recorded ones, else read from the image
    files' headers, else :data:`DEFAULT_IMAGE_SIZE`. Returns the table and where sizes came from."""
    if "width" in items.column_names and "height" in items.column_names:
        return items, "items table"
    from PIL import Image

    sizes: dict[str | None, tuple[int, int] | None] = {}  # None: a text-only item
    for image in set(items.column("image").to_pylist()):
        if image is None:  # a text-only item: no image to measure
            sizes[image] = None
            continue
        path = bench.resolve_image(image)
        try:
            with Image.open(path) as handle:
                sizes[image] = handle.size
        except (OSError, ValueError):
            sizes[image] = None
    found = sum(v is not None for v in sizes.values())
    source = ("image files" if found == len(sizes) else
              f"image files ({found}/{len(sizes)}), default {DEFAULT_IMAGE_SIZE} for the rest"
              if found else f"default {DEFAULT_IMAGE_SIZE[0]}×{DEFAULT_IMAGE_SIZE[1]}")
    column = [sizes[i] or DEFAULT_IMAGE_SIZE for i in items.column("image").to_pylist()]
    items = items.append_column("width", pa.array([w for w, _ in column], pa.int64()))
    items = items.append_column("height", pa.array([h for _, h in column], pa.int64()))
    return items, source


def plan_run(bench_path: str | Path, model: str, selection: Selection | None = None, *,
             throughput: float | None = None, price_in: float = 0.0, price_out: float = 0.0,
             max_new_tokens: int | None = None,
             force_preset: str | None = None) -> PlanEstimate:
    """Estimate a run of ``model`` on the selected items of a benchmark (nothing is run)."""
    throughput = DEFAULT_THROUGHPUT if throughput is None else throughput
    selection = Selection() if selection is None else selection
    if throughput <= 0:
        raise BiovqaError("throughput must be positive", field="--throughput")
    if price_in < 0 or price_out < 0:
        raise BiovqaError("prices must not be negative", field="--price-in/--price-out")
    bench = open_bench(bench_path)
    items = select_items(bench.items, selection)
    if items.num_rows == 0:
        raise BiovqaError("the selection holds no items", file=bench.root,
                          hint="check --components/--tasks/--limit/--shard")
    preset, wrap = resolve_preset(model, force_preset)
    items, sizes_from = image_sizes(bench, items)
    missing = sum(not bench.resolve_image(image).is_file()
                  for image in set(items.column("image").to_pylist()) if image is not None)  # text-only items have none
    requests = build_requests(bench, items, preset, wrap, model, "plan",
                              max_new_tokens=max_new_tokens)
    text_tokens = int(sum(
        np.ceil((len(r.prompt) + len(r.system or "")) / CHARS_PER_TOKEN) for r in requests.requests
    ))
    completion = int(sum(r.max_new_tokens for r in requests.requests))
    prompt_tokens = int(requests.token_estimates.sum()) - completion
    image_tokens = prompt_tokens - text_tokens
    gpu_hours = items.num_rows / throughput / 3600.0
    cost = prompt_tokens / 1e6 * price_in + completion / 1e6 * price_out
    notes = [
        "text tokens ≈ characters / 4; image tokens by the model's image-token rule",
        "completion tokens are the token caps, an upper bound",
    ]
    if missing:
        notes.append(f"{missing} image file(s) not found under {bench.images_root()}: their "
                     "requests would fail; check the benchmark's images_root")
    if throughput == DEFAULT_THROUGHPUT:
        notes.append(f"throughput {DEFAULT_THROUGHPUT:g} items/s is a default; give --throughput")
    return PlanEstimate(
        model=str(getattr(preset, "key", model)),
        items=items.num_rows,
        images=len(set(image_keys(items).to_pylist())),
        items_by_task=dict(sorted(Counter(items.column("task").to_pylist()).items())),
        image_sizes_from=sizes_from,
        images_missing=missing,
        image_tokens=image_tokens,
        text_tokens=text_tokens,
        prompt_tokens=prompt_tokens,
        completion_tokens_max=completion,
        throughput_items_per_s=throughput,
        gpu_hours=gpu_hours,
        price_in_per_million=price_in,
        price_out_per_million=price_out,
        api_cost=cost,
        notes=notes,
    )


def calibrate(bench_path: str | Path, options: Any, items: int, plan: PlanEstimate,
              workdir: str | Path) -> PlanEstimate:
    """Measure before extrapolating: run about ``items`` items (a stratified ``--limit`` sample)
    twice with the real backend — once with one new token (prefill), once with the caps — and
    derive items/s, prefill tokens/s and decode tokens/s; then re-estimate the whole plan:

        prompt_tokens' = plan prompt tokens · (measured / estimated prompt tokens of the sample)
        completion'    = plan items · measured completion tokens per item
        seconds        = prompt_tokens' / prefill rate + completion' / decode rate

    Model loading is not timed (rates come from the runs' progress clocks). ``options`` is a
    :class:`~biovqa.engine.runner.RunOptions`; the runs go to ``workdir``.
    """
    import math
    from dataclasses import replace

    from biovqa.engine.runner import run_benchmark

    if items < 1:
        raise BiovqaError("calibration needs at least one item", field="--calibrate")
    tasks = max(1, len(plan.items_by_task))
    selection = replace(options.selection, limit=max(1, math.ceil(items / tasks)), shard=None)
    base = replace(options, selection=selection, progress=False)
    workdir = Path(workdir)
    measured: dict[str, dict[str, float]] = {}
    for name, cap in (("prefill", 1), ("full", options.max_new_tokens)):
        result = run_benchmark(bench_path, workdir / name, replace(base, max_new_tokens=cap))
        card = result.card
        rate = float(card.get("items_per_s") or 0.0)
        measured[name] = {
            "items": float(result.asked),
            "seconds": result.asked / rate if rate > 0 else float("nan"),
            "prompt_tokens": float(card["items"].get("prompt_tokens") or 0),
            "completion_tokens": float(card["items"].get("completion_tokens") or 0),
        }
    pre, full = measured["prefill"], measured["full"]
    sample = plan_run(bench_path, str(options.model), selection,
                      max_new_tokens=options.max_new_tokens, force_preset=options.preset)
    prefill_rate = pre["prompt_tokens"] / pre["seconds"] if pre["seconds"] > 0 else None
    decode_seconds = full["seconds"] - pre["seconds"]
    decode_tokens = full["completion_tokens"] - pre["completion_tokens"]
    decode_rate = decode_tokens / decode_seconds if decode_seconds > 0 and decode_tokens > 0 else None
    prompt_ratio = full["prompt_tokens"] / sample.prompt_tokens if sample.prompt_tokens else 1.0
    completion_per_item = full["completion_tokens"] / max(full["items"], 1.0)
    prompt_tokens = plan.prompt_tokens * prompt_ratio
    completion = plan.items * completion_per_item
    if prefill_rate and decode_rate:
        seconds = prompt_tokens / prefill_rate + completion / decode_rate
    else:  # too few tokens to split the time: extrapolate items/s
        seconds = plan.items * full["seconds"] / max(full["items"], 1.0)
    calibration = {
        "items": int(full["items"]),
        "items_per_s": full["items"] / full["seconds"] if full["seconds"] > 0 else None,
        "prefill_tokens_per_s": prefill_rate,
        "decode_tokens_per_s": decode_rate,
        "prompt_tokens_measured_over_estimated": prompt_ratio,
        "completion_tokens_per_item": completion_per_item,
        "estimated_prompt_tokens": int(round(prompt_tokens)),
        "estimated_completion_tokens": int(round(completion)),
        "estimated_hours": seconds / 3600.0,
    }
    notes = [n for n in plan.notes if "is a default; give --throughput" not in n]
    notes.append(f"calibrated on {int(full['items'])} items run here (model loading not timed); "
                 "GPU-hours are for this machine")
    cost = (prompt_tokens / 1e6 * plan.price_in_per_million
            + completion / 1e6 * plan.price_out_per_million)
    return replace(plan, gpu_hours=seconds / 3600.0, api_cost=cost, notes=notes,
                   throughput_items_per_s=plan.items / seconds if seconds > 0 else 0.0,
                   calibration=calibration)


def render_plan(plan: PlanEstimate) -> str:
    """A short human-readable summary."""
    lines = [
        f"model               {plan.model}",
        f"items               {plan.items:,}",
        (f"distinct images     {plan.images:,}  (sizes from {plan.image_sizes_from}; "
         f"{plan.images_missing:,} missing on disk)"),
        (f"prompt tokens       {plan.prompt_tokens:,}  (image {plan.image_tokens:,}, "
         f"text {plan.text_tokens:,})"),
        f"completion tokens   ≤ {plan.completion_tokens_max:,}",
        f"GPU-hours           {plan.gpu_hours:,.2f}  at {plan.throughput_items_per_s:g} items/s",
        (f"API cost            USD {plan.api_cost:,.2f}  at USD {plan.price_in_per_million:g} in / "
         f"{plan.price_out_per_million:g} out per 1M tokens"),
        "items by task       " + ", ".join(f"{k} {v:,}" for k, v in plan.items_by_task.items()),
    ]
    if plan.calibration is not None:
        c = plan.calibration
        rates = ", ".join(f"{label} {c[key]:,.1f} tokens/s" for label, key in (
            ("prefill", "prefill_tokens_per_s"), ("decode", "decode_tokens_per_s"))
            if c[key] is not None)
        lines.append(f"calibration         {c['items']} items: "
                     f"{c['items_per_s'] or 0:,.2f} items/s; {rates}; measured/estimated "
                     f"prompt tokens {c['prompt_tokens_measured_over_estimated']:.2f}")
    lines += [f"note: {n}" for n in plan.notes]
    return "\n".join(lines)
