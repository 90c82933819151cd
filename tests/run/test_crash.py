"""Crash safety: a run killed with SIGKILL at 20 random points, then resumed, ends with every item
answered exactly once and the same predictions file as an uninterrupted run."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from engine_helpers import make_bench

from biovqa.run.store import STORE_SCHEMA

KILLS = 20


def _command(bench: Path, out: Path) -> list[str]:
    # the echo backend, slowed to 8 ms an item, in batches of 4; a segment every 2 replies
    return [sys.executable, "-m", "biovqa.cli_run", "run", str(bench), "--out", str(out),
            "--backend", "echo", "--option", "delay_s=0.008", "--max-batch", "4",
            "--flush-rows", "2", "--flush-seconds", "0.05", "--no-progress"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "0"
    return env


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume(tmp_path: Path) -> None:
    bench = make_bench(tmp_path / "bench", n_images=30).root  # 90 items
    reference = tmp_path / "reference"
    started = time.monotonic()
    subprocess.run(_command(bench, reference), check=True, env=_env(), capture_output=True)
    full_run_s = time.monotonic() - started

    out = tmp_path / "killed"
    rng = random.Random(20261130)
    finished_early = 0
    for _ in range(KILLS):
        process = subprocess.Popen(_command(bench, out), env=_env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.05, 1.0) * full_run_s)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        else:
            finished_early += 1
        process.wait()
        if process.returncode not in (0, -signal.SIGKILL):
            pytest.fail(f"run failed with {process.returncode}: {process.stderr.read()!r}")
        process.stderr.close()
    # at least most attempts were really interrupted
    assert finished_early < KILLS // 2
    resumed = subprocess.run(_command(bench, out), env=_env(), capture_output=True, text=True,
                             check=False)
    assert resumed.returncode == 0, resumed.stderr

    expected = pq.read_table(reference / "predictions.parquet")
    got = pq.read_table(out / "predictions.parquet")
    ids = got.column("item_id").to_pylist()
    assert len(ids) == len(set(ids)) == 90
    assert got.equals(expected)
    assert (out / "predictions.parquet").read_bytes() == (
        reference / "predictions.parquet").read_bytes()
    # every item was asked exactly once over all the killed and resumed sessions
    segments = sorted((out / "store" / "segments").glob("*.parquet"))
    keys = Counter(k for path in segments
                   for k in pq.read_table(path, schema=STORE_SCHEMA).column("key").to_pylist())
    assert len(keys) == 90 and set(keys.values()) == {1}
