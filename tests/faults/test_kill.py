"""Crash safety of the writers (issue 9): ``biovqa score``, ``biovqa build c1`` and ``biovqa
taxonomy index`` killed with SIGKILL at random points, then rerun, give byte-identical outputs;
and at every kill point the output folder holds either nothing or a complete earlier output —
never new files beside stale ones; a C1 rebuild over an earlier benchmark leaves that benchmark
openable until the new one moves in (the run engine's own test is tests/engine/test_crash.py)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

KILLS = 6


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "0"
    return env


def _files(folder: Path, *, ignore: tuple[str, ...] = ()) -> dict[str, bytes]:
    if not folder.is_dir():
        return {}
    # a temporary ``.NAME.PID.partial`` left by a killed atomic write never stands under the real
    # name and is replaced by the next write; it is not part of the output
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in ignore and not p.name.endswith(".partial")}


def _index_card_without_timing(folder: Path) -> dict:
    card = json.loads((folder / "index.json").read_text(encoding="utf-8"))
    card.pop("timing", None)
    return card


def _kill_and_rerun(command: list[str], out: Path, reference: Path, seed: int,
                    ignore: tuple[str, ...] = (), card: str | None = None) -> None:
    """Kill ``command`` KILLS times at random moments within its usual duration, checking after
    each kill that ``out`` is empty or complete — or, with ``card``, at least that a partial
    folder lacks that card (so it is never opened as finished) — then rerun it to the end."""
    started = time.perf_counter()
    subprocess.run(command[:-1] + [str(reference)], check=True, env=_env(), capture_output=True)
    duration = time.perf_counter() - started
    expected = _files(reference, ignore=ignore)
    rng = random.Random(seed)
    killed = 0
    for _ in range(KILLS):
        process = subprocess.Popen(command, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.3, 1.0) * duration)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            killed += 1
        process.wait()
        stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
        if process.stderr:
            process.stderr.close()
        assert process.returncode in (0, -signal.SIGKILL), stderr
        found = _files(out, ignore=ignore)
        partial_without_card = card is not None and card not in found
        assert found in ({}, expected) or partial_without_card, \
            f"partial output after a kill: {sorted(found)} vs {sorted(expected)}"
    assert killed >= 1, "no attempt was interrupted"
    rerun = subprocess.run(command, env=_env(), capture_output=True, text=True, check=False)
    assert rerun.returncode == 0, rerun.stderr
    assert _files(out, ignore=ignore) == expected


@pytest.mark.slow
def test_kill_taxonomy_index_then_rerun(tmp_path: Path, demo_data: Path) -> None:
    out = tmp_path / "index"
    command = [sys.executable, "-m", "biovqa", "taxonomy", "index", str(demo_data / "backbone"), "--out", str(out)]
    _kill_and_rerun(command, out, tmp_path / "reference", seed=91, ignore=("index.json",))
    assert _index_card_without_timing(out) == _index_card_without_timing(tmp_path / "reference")


@pytest.mark.slow
def test_kill_build_c1_then_rerun(tmp_path: Path, demo_data: Path, demo_index: Path, demo_images: Path) -> None:
    out = tmp_path / "bench"
    command = [sys.executable, "-m", "biovqa", "build", "c1", "--catalog", str(demo_data / "catalog.csv"),
               "--backbone", str(demo_index), "--images", str(demo_images), "--per-group", "8",
               "--species-cap", "2", "--out", str(out)]
    # a build writes a staging sibling that becomes the folder when complete (bench.folder.staged_build):
    # a killed build of a new folder leaves nothing under its name
    _kill_and_rerun(command, out, tmp_path / "reference", seed=92)


@pytest.mark.slow
def test_kill_rebuild_c1_over_an_existing_bench_then_rerun(tmp_path: Path, demo_data: Path, demo_index: Path,
                                                           demo_images: Path) -> None:
    """A rebuild over an earlier benchmark (another seed), killed at random points: the folder stays
    the earlier benchmark, openable, until the new one is moved in (at worst, during that move,
    it has no manifest, so nothing opens it); the rerun gives the fresh build's bytes."""
    from biovqa.bench import open_bench

    def command(out: Path, seed: int) -> list[str]:
        return [sys.executable, "-m", "biovqa", "build", "c1", "--catalog", str(demo_data / "catalog.csv"),
                "--backbone", str(demo_index), "--images", str(demo_images), "--per-group", "8",
                "--species-cap", "2", "--seed", str(seed), "--out", str(out)]

    out = tmp_path / "bench"
    subprocess.run(command(out, 1), check=True, env=_env(), capture_output=True)
    earlier = _files(out)
    started = time.perf_counter()
    subprocess.run(command(tmp_path / "reference", 42), check=True, env=_env(), capture_output=True)
    duration = time.perf_counter() - started
    expected = _files(tmp_path / "reference")
    assert expected != earlier
    rng = random.Random(94)
    killed = 0
    for _ in range(KILLS):
        process = subprocess.Popen(command(out, 42), env=_env(), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.0) * duration)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            killed += 1
        process.wait()
        assert process.returncode in (0, -signal.SIGKILL)
        found = _files(out)
        if found == expected:  # finished before the kill: start again from the earlier bench
            subprocess.run(command(out, 1), check=True, env=_env(), capture_output=True)
            continue
        if "manifest.json" in found:
            assert found == earlier, f"a manifest beside other files: {sorted(found)}"
            assert open_bench(out).manifest["seed"] == 1
    assert killed >= 1, "no attempt was interrupted"
    rerun = subprocess.run(command(out, 42), env=_env(), capture_output=True, text=True, check=False)
    assert rerun.returncode == 0, rerun.stderr
    assert _files(out) == expected
    assert not [p.name for p in tmp_path.iterdir() if ".partial-" in p.name]  # killed stages are removed


@pytest.mark.slow
def test_kill_score_then_rerun(tmp_path: Path, demo_bench: Path) -> None:
    from biovqa.bench import open_bench

    items = open_bench(demo_bench).items
    predictions = tmp_path / "predictions.parquet"
    pq.write_table(pa.table({"item_id": items.column("item_id"), "response": items.column("answer"),
                             "status": pa.array(["ok"] * items.num_rows)}), predictions)
    out = tmp_path / "scores"
    command = [sys.executable, "-m", "biovqa", "score", str(demo_bench), "-p", str(predictions),
               "--bootstrap", "200", "--out", str(out)]
    _kill_and_rerun(command, out, tmp_path / "reference", seed=93)
