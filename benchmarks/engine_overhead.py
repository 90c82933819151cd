"""The engine's own overhead per item: scheduling, prompt building, keys, store, predictions file.

A no-op backend (replies instantly, no model) runs over 100 000 synthetic C1 items (33 334 images ×
3 questions), so everything measured is the engine. Compared, in the same process, with a plain
reference loop that only builds each prompt, calls the backend one item at a time and writes the
predictions Parquet once at the end (no resume, no crash safety, no grouping, no keys).

    python benchmarks/engine_overhead.py [--items 100000] [--repeat 3]

Target: ≥ 20 000 items/s for the engine. Results: benchmarks/RESULTS-engine.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from biovqa.bench import open_bench, write_bench
from biovqa.bench.folder import write_parquet
from biovqa.records import ITEM_COLUMNS, PREDICTION_SCHEMA
from biovqa.engine.backends.base import Reply, Request
from biovqa.engine.runner import (
    RunOptions,
    build_requests,
    make_batches,
    resolve_preset,
    run_benchmark,
)

TASKS = ("order", "family", "species")
GROUPS = ("Amphibians", "Birds", "Fish", "Insects", "Mammals", "Reptiles")


class NoOpBackend:
    """Replies instantly with a constant; the engine's cost is all that is left."""

    name = "noop"
    batch_tokens = 1 << 30
    max_batch_items = 256

    def generate(self, requests: Sequence[Request]) -> list[Reply]:
        return [Reply(key=r.key, text="Passeriformes") for r in requests]

    def describe(self) -> dict[str, Any]:
        return {"backend": "noop", "revision": "0"}

    def close(self) -> None:
        pass


def create_noop(model: str, **options: Any) -> NoOpBackend:
    return NoOpBackend()


def synthetic_c1_items(count: int) -> pa.Table:
    """C1-shaped items: three rank questions per image, group and tier strata."""
    rows: dict[str, list[Any]] = {name: [] for name, _ in ITEM_COLUMNS}
    rows["group"], rows["tier"] = [], []
    for index in range(count):
        image_index, task = divmod(index, len(TASKS))
        rank = TASKS[task]
        rows["item_id"].append(f"c1-{index:07d}")
        rows["component"].append("c1")
        rows["task"].append(rank)
        rows["question"].append(f"What is the {rank} of the organism shown in this image?")
        rows["instruction"].append(
            f"Answer with ONLY the {rank.capitalize()} name (e.g., Araneae). "
            "Do not write full sentences.")
        rows["options"].append(None)
        rows["answer"].append(f"{rank}-{image_index % 97}")
        rows["image"].append(f"images/{image_index:07d}.jpg")
        rows["image_sha256"].append(f"{image_index:064x}")
        rows["source_id"].append(f"uuid-{image_index}")
        rows["group"].append(GROUPS[image_index % len(GROUPS)])
        rows["tier"].append(("easy", "medium", "hard")[image_index % 3])
    schema = pa.schema([*ITEM_COLUMNS, ("group", pa.string()), ("tier", pa.string())])
    return pa.table(rows, schema=schema)


def reference_loop(bench_root: Path, out: Path) -> float:
    """Plain loop: prompt, backend call per item, one Parquet write; returns seconds."""
    started = time.perf_counter()
    items = open_bench(bench_root).items
    backend = NoOpBackend()
    columns: dict[str, list[Any]] = {name: [] for name in PREDICTION_SCHEMA.names}
    for row in items.select(["item_id", "question", "instruction", "image"]).to_pylist():
        request = Request(key=row["item_id"], item_id=row["item_id"],
                          prompt=f"{row['question']}\n{row['instruction']}",
                          image_path=bench_root / row["image"], max_new_tokens=15)
        reply = backend.generate([request])[0]
        columns["item_id"].append(row["item_id"])
        columns["response"].append(reply.text)
        columns["status"].append(reply.status)
        columns["model"].append("noop")
        for name in ("latency_s", "prompt_tokens", "completion_tokens", "error"):
            columns[name].append(None)
    write_parquet(pa.table(columns, schema=PREDICTION_SCHEMA), out)
    return time.perf_counter() - started


def stage_times(bench_root: Path) -> dict[str, float]:
    """CPU seconds spent in request building and batching alone (no store)."""
    bench = open_bench(bench_root)
    items = bench.items
    preset, wrap = resolve_preset("noop")
    started = time.process_time()
    plan = build_requests(bench, items, preset, wrap, "noop", "0")
    built = time.process_time()
    make_batches(plan.image_keys, plan.token_estimates, batch_tokens=1 << 30, max_batch_items=256)
    batched = time.process_time()
    return {"build requests": built - started, "batches": batched - built}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="biovqa-engine-bench-"))
    try:
        bench = work / "bench"
        write_bench(bench, synthetic_c1_items(args.items), component="c1",
                    generator="engine-overhead", seed=42, sources={}, parameters={})
        engine_s, engine_cpu, resume_s, reference_s, reference_cpu = [], [], [], [], []
        for attempt in range(args.repeat):
            out = work / f"run{attempt}"
            started, cpu = time.perf_counter(), time.process_time()
            run_benchmark(bench, out, RunOptions(model="noop", backend="__main__:create_noop",
                                                 progress=False))
            engine_s.append(time.perf_counter() - started)
            engine_cpu.append(time.process_time() - cpu)
            started = time.perf_counter()
            again = run_benchmark(bench, out, RunOptions(model="noop",
                                                         backend="__main__:create_noop",
                                                         progress=False))
            resume_s.append(time.perf_counter() - started)
            assert again.asked == 0
            cpu = time.process_time()
            reference_s.append(reference_loop(bench, work / f"reference{attempt}.parquet"))
            reference_cpu.append(time.process_time() - cpu)
        stages = stage_times(bench)
        n = args.items
        print(f"items: {n:,}  (best of {args.repeat}; python {sys.version.split()[0]}; wall clock "
              "and this process's CPU time)")
        print(f"engine, full run (no-op backend): {min(engine_s):6.2f} s wall {n / min(engine_s):9,.0f}"
              f" items/s | {min(engine_cpu):6.2f} s CPU {n / min(engine_cpu):9,.0f} items/s"
              "   target >= 20,000")
        print(f"engine, resume (all done):        {min(resume_s):6.2f} s wall "
              f"{n / min(resume_s):9,.0f} items/s")
        print(f"plain reference loop:             {min(reference_s):6.2f} s wall "
              f"{n / min(reference_s):9,.0f} items/s | {min(reference_cpu):6.2f} s CPU "
              f"{n / min(reference_cpu):9,.0f} items/s")
        print(f"engine / reference time:          {min(engine_s) / min(reference_s):6.2f}x wall, "
              f"{min(engine_cpu) / min(reference_cpu):.2f}x CPU")
        for name, seconds in stages.items():
            print(f"  stage {name:<16} {seconds:7.2f} s  {n / seconds:10,.0f} items/s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
