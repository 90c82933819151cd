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
from fixtures.engine_helpers import make_bench

from biovqa.engine.store import STORE_SCHEMA

KILLS = 20


def _command(bench: Path, out: Path) -> list[str]:
    # the echo backend, slowed to 10 ms an item, in batches of 6 (two images), a segment after
    # every batch: 50 segments in all, so no session reaches the compaction threshold (64
    # segments) and every stored row is one answer actually asked
    return [sys.executable, "-m", "biovqa", "run", str(bench), "--out", str(out),
            "--backend", "echo", "--option", "delay_s=0.01", "--max-batch", "6",
            "--flush-rows", "6", "--flush-seconds", "0.05", "--no-progress"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "0"
    return env


def _segments(out: Path) -> int:
    folder = out / "store" / "segments"
    return sum(1 for p in folder.glob("*.parquet") if not p.name.startswith(".")) \
        if folder.is_dir() else 0


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume(tmp_path: Path) -> None:
    bench = make_bench(tmp_path / "bench", n_images=100).root  # 300 items
    reference = tmp_path / "reference"
    subprocess.run(_command(bench, reference), check=True, env=_env(), capture_output=True)

    out = tmp_path / "killed"
    rng = random.Random(20261130)
    killed = 0
    for attempt in range(KILLS):
        process = subprocess.Popen(_command(bench, out), env=_env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if attempt % 5 == 0:
            time.sleep(rng.uniform(0.0, 1.0))  # anywhere, start-up included
        else:
            # once this attempt has written a segment, a random moment later: mid-batch,
            # mid-segment-write, mid-fsync …
            before = _segments(out)
            while process.poll() is None and _segments(out) <= before:
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.15))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            killed += 1
        process.wait()
        if process.returncode not in (0, -signal.SIGKILL):
            pytest.fail(f"run failed with {process.returncode}: {process.stderr.read()!r}")
        process.stderr.close()
    assert killed >= KILLS - 2  # the attempts really were interrupted
    resumed = subprocess.run(_command(bench, out), env=_env(), capture_output=True, text=True,
                             check=False)
    assert resumed.returncode == 0, resumed.stderr

    expected = pq.read_table(reference / "predictions.parquet")
    got = pq.read_table(out / "predictions.parquet")
    ids = got.column("item_id").to_pylist()
    assert len(ids) == len(set(ids)) == 300
    assert got.equals(expected)
    assert (out / "predictions.parquet").read_bytes() == (
        reference / "predictions.parquet").read_bytes()
    # every item was asked exactly once over all the killed and resumed sessions
    segments = sorted((out / "store" / "segments").glob("*.parquet"))
    keys = Counter(k for path in segments
                   for k in pq.read_table(path, schema=STORE_SCHEMA).column("key").to_pylist())
    assert len(keys) == 300 and set(keys.values()) == {1}
