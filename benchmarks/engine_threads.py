"""torch intra-op threads for the transformers backend on CPU: items/s by ``--threads``.

Builds the tiny random LLaVA of the tests (from its config, offline), a synthetic C1 benchmark, and
runs ``run_benchmark`` with the transformers backend on CPU at several thread counts: 1, biovqa's
default (physical cores shared among workers) and torch's own default (usually every logical
CPU), each with and without a competing CPU load (``--load`` busy processes, as when other jobs
share the machine). Each setting runs in a fresh subprocess so torch's thread pool is set once.
The reference is torch's default in the same conditions; ratios are items/s over it.

    python benchmarks/engine_threads.py [--images 40] [--load 2]

Results: benchmarks/RESULTS-engine.md (section "Threads").
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _busy(stop_at: float) -> None:
    x = 0
    while time.time() < stop_at:
        x = (x * 31 + 7) % 1_000_003


def _one(bench: str, model: str, threads: int | None, out: str) -> dict:
    code = f"""
import json, sys, torch
from biovqa.engine.runner import RunOptions, run_benchmark
torch_default = torch.get_num_threads()
options = RunOptions(model={model!r}, backend="transformers", max_new_tokens=4,
                     backend_options={{"device": "cpu", "batch_size": 8}}, progress=False,
                     threads={threads!r} or None)
if {threads!r} == 0:  # torch's own default: do not touch the pool
    import biovqa.engine.executors as ex
    ex.apply_threads = lambda threads, backend: None
result = run_benchmark({bench!r}, {out!r}, options)
print(json.dumps({{"items_per_s": result.card["items_per_s"], "items": result.asked,
                  "threads": torch.get_num_threads(), "torch_default": torch_default}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=40)
    parser.add_argument("--load", type=int, default=2, help="busy processes for the loaded case")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    from fixtures.engine_helpers import make_bench
    from fixtures.tiny_models import build_tiny_llava

    from biovqa.engine.executors import default_threads, physical_cores

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = str(build_tiny_llava(work / "llava"))
        bench = str(make_bench(work / "bench", n_images=args.images).root)
        print(f"logical CPUs {os.cpu_count()}, physical cores {physical_cores()}, "
              f"biovqa default threads {default_threads()}; {args.images * 3} items")
        settings = [("torch default", 0), ("--threads 1", 1),
                    (f"biovqa default ({default_threads()})", None)]
        for load in (0, args.load):
            procs = []
            if load:
                stop_at = time.time() + 3600
                procs = [multiprocessing.Process(target=_busy, args=(stop_at,), daemon=True)
                         for _ in range(load)]
                for proc in procs:
                    proc.start()
            try:
                rows = []
                for index, (label, threads) in enumerate(settings):
                    found = _one(bench, model, threads, str(work / f"run-{load}-{index}"))
                    rows.append((label, found))
            finally:
                for proc in procs:
                    proc.terminate()
            reference = rows[0][1]["items_per_s"]
            print(f"\n{'with ' + str(load) + ' busy processes' if load else 'idle machine'}")
            print(f"{'setting':28s} {'threads':>7s} {'items/s':>9s} {'ratio':>7s}")
            for label, found in rows:
                print(f"{label:28s} {found['threads']:7d} {found['items_per_s']:9.2f} "
                      f"{found['items_per_s'] / reference:7.2f}")


if __name__ == "__main__":
    main()
