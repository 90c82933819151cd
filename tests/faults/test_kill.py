"""Crash safety of the writers (an interrupted command never leaves a half output): ``biovqa score``, ``biovqa build c1`` and ``biovqa
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
from collections.abc import Callable
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


# --- Ctrl-C and SIGTERM: every command unwinds, says what it kept, and resumes --------

def _start(args: list[str], *, tty: bool) -> tuple[subprocess.Popen[bytes], int]:
    """``biovqa ARGS`` with its output on a pseudo-terminal (``tty``) or a pipe; returns the
    process and the descriptor its output is read from."""
    import pty

    command = [sys.executable, "-m", "biovqa", *args]
    if tty:
        reader, writer = pty.openpty()
        process = subprocess.Popen(command, env=_env(), stdin=writer, stdout=writer, stderr=writer)
        os.close(writer)
        return process, reader
    process = subprocess.Popen(command, env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    assert process.stdout is not None
    return process, process.stdout.fileno()


def _read_until(reader: int, seen: bytearray, until: Callable[[], bool], timeout: float = 300.0) -> None:
    import select

    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, f"timed out; output so far: {seen.decode(errors='replace')}"
        ready, _, _ = select.select([reader], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(reader, 65536)
            except OSError:  # a pseudo-terminal reports EIO once the child is gone
                chunk = b""
            if not chunk:
                return
            seen += chunk


def _interrupt(args: list[str], *, tty: bool, signum: int, when: Callable[[str], bool]) -> tuple[int, str]:
    """Start ``biovqa ARGS``, send ``signum`` once ``when(output so far)`` holds, return (exit
    status, whole output)."""
    process, reader = _start(args, tty=tty)
    seen = bytearray()
    try:
        _read_until(reader, seen, lambda: when(seen.decode(errors="replace")) or process.poll() is not None)
        assert process.poll() is None, f"finished before the signal: {seen.decode(errors='replace')}"
        process.send_signal(signum)
        _read_until(reader, seen, lambda: False)
        import re

        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode(errors="replace"))  # a terminal gets colours
        return process.wait(timeout=120), text.replace("\r", "")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(reader) if tty else None


@pytest.mark.slow
def test_sigint_mid_demo_on_a_terminal_then_rerun(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    code, output = _interrupt(["demo", "-o", str(out)], tty=True, signum=signal.SIGINT,
                              when=lambda text: "\n3/" in text)  # the third component's step
    assert code == 130, output
    assert "Traceback" not in output
    flat = " ".join(output.split())
    assert "interrupted (Ctrl-C): the demo folder is incomplete" in flat
    assert f"biovqa demo -o {out}" in flat
    assert json.loads((out / ".biovqa-demo.json").read_text(encoding="utf-8"))["complete"] is False
    assert not (out / "report").exists()
    rerun = subprocess.run([sys.executable, "-m", "biovqa", "demo", "-o", str(out)], env=_env(),
                           capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads((out / ".biovqa-demo.json").read_text(encoding="utf-8"))["complete"] is True
    assert (out / "report" / "index.html").is_file()
    assert "next: run a real model" in rerun.stderr


@pytest.mark.slow
@pytest.mark.parametrize("signum, tty", [(signal.SIGTERM, False), (signal.SIGINT, True)])
def test_signal_mid_build_c3_leaves_no_folder_then_rerun(tmp_path: Path, signum: int, tty: bool) -> None:
    from biovqa.components.c3.demo import write_demo_sources

    sources = write_demo_sources(tmp_path / "sources")
    out = tmp_path / "bench-c3"
    args = ["build", "c3", *[a for name, path in sources.items() for a in ("--source", f"{name}={path}")],
            "-o", str(out), "--per-subset", "20", "--canvas", "320", "--plate-side", "640",
            "--rpos-items", "16", "--complete-counts", "gzcd"]
    code, output = _interrupt(args, tty=tty, signum=signum,
                              when=lambda _: any(".partial-" in p.name for p in tmp_path.iterdir()))
    assert code == 128 + signum, output
    assert "Traceback" not in output
    flat = " ".join(output.split())
    assert "the output folder was left as it was, nothing half-written" in flat and "biovqa build c3" in flat
    assert not out.exists()  # a new folder: nothing under its name, no stage or lock left beside it
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    rerun = subprocess.run([sys.executable, "-m", "biovqa", *args], env=_env(), capture_output=True,
                           text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert (out / "manifest.json").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("tty", [False, True])
def test_sigint_mid_run_keeps_replies_and_resumes(tmp_path: Path, demo_bench: Path, tty: bool) -> None:
    out = tmp_path / "run"
    args = ["run", str(demo_bench), "--backend", "echo", "--option", "delay_s=0.01", "--max-batch", "8",
            "--flush-seconds", "0.2", "-o", str(out)]
    code, output = _interrupt(args, tty=tty, signum=signal.SIGINT,
                              when=lambda text: "items (" in text and (out / "store").is_dir())
    assert code == 130, output
    flat = " ".join(output.split())
    assert "every reply received so far is kept in the run folder; resume with: biovqa run" in flat
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))["status"] == "interrupted"
    rerun = subprocess.run([sys.executable, "-m", "biovqa", *args], env=_env(), capture_output=True,
                           text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    resumed = int(rerun.stderr.split("items (")[-1].split(" resumed")[0])
    assert resumed > 0, rerun.stderr
    assert pq.read_table(out / "predictions.parquet").num_rows == pq.read_metadata(
        demo_bench / "items.parquet").num_rows
