"""The first hour of a new user (every first command works or says what to do) and one writer per
output folder, through the
installed command in subprocesses: writing commands refuse a folder holding something else, replace
their own earlier output whole, refuse a second writer naming its pid; a missing optional
dependency is a user error naming the extra; help texts read like click's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def biovqa(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "biovqa", *map(str, args)], capture_output=True,
                          text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory, demo_bench: Path) -> dict[str, Path]:
    """A run, its scores and a report of the demo benchmark: the inputs of every writing command."""
    root = tmp_path_factory.mktemp("outputs")
    run = biovqa("run", demo_bench, "--backend", "baseline", "-o", root / "run")
    assert run.returncode == 0, run.stderr
    scores = biovqa("score", demo_bench, "-p", root / "run" / "predictions.parquet", "--bootstrap", "20",
                    "-o", root / "scores")
    assert scores.returncode == 0, scores.stderr
    return {"run": root / "run", "scores": root / "scores", "bench": demo_bench}


def _writers(outputs: dict[str, Path], demo_data: Path, demo_index: Path, demo_images: Path,
             out: Path) -> dict[str, list[str | Path]]:
    bench = outputs["bench"]
    return {
        "score": ["score", bench, "-p", outputs["run"] / "predictions.parquet", "--bootstrap", "0", "-o", out],
        "report": ["report", outputs["scores"], "-o", out],
        "lite": ["lite", bench, "--per-task", "2", "-o", out],
        "export": ["export", bench, "-o", out],
        "run": ["run", bench, "--backend", "baseline", "-o", out],
        "merge": ["merge", outputs["run"], "-o", out],
        "build c1": ["build", "c1", "--catalog", demo_data / "catalog.csv", "--backbone", demo_index,
                     "--images", demo_images, "--per-group", "2", "--species-cap", "1", "-o", out],
    }


@pytest.mark.slow
def test_every_writing_command_refuses_an_unrelated_folder_and_overwrite_keeps_other_files(
        tmp_path: Path, outputs: dict[str, Path], demo_data: Path, demo_index: Path, demo_images: Path) -> None:
    for name in ("score", "report", "lite", "export", "run", "merge", "build c1"):
        out = tmp_path / name.replace(" ", "-")
        out.mkdir()
        (out / "notes.txt").write_text("mine\n", encoding="utf-8")
        argv = _writers(outputs, demo_data, demo_index, demo_images, out)[name]
        refused = biovqa(*argv)
        assert refused.returncode == 2, (name, refused.stderr)
        flat = " ".join(refused.stderr.split())
        assert str(out) in flat and "the folder is not empty: it holds 1 other entry (notes.txt)" in flat, name
        assert "--overwrite" in flat and "Traceback" not in flat
        assert sorted(p.name for p in out.iterdir()) == ["notes.txt"], name
        written = biovqa(*argv, "--overwrite")
        assert written.returncode == 0, (name, written.stderr)
        assert (out / "notes.txt").read_text(encoding="utf-8") == "mine\n", name  # not its to replace
        assert len(list(out.iterdir())) > 1, name
        assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")], name  # lock released


@pytest.mark.slow
def test_a_command_replaces_its_own_output_whole_and_refuses_another_commands(
        tmp_path: Path, outputs: dict[str, Path]) -> None:
    out = tmp_path / "report"
    first = biovqa("report", outputs["scores"], "-o", out)
    assert first.returncode == 0, first.stderr
    (out / "figures-from-an-older-report.png").write_bytes(b"old")
    again = biovqa("report", outputs["scores"], "-o", out)
    assert again.returncode == 0, again.stderr
    assert not (out / "figures-from-an-older-report.png").exists()  # its own earlier output, whole
    scored = biovqa("score", outputs["bench"], "-p", outputs["run"] / "predictions.parquet", "-o", out)
    assert scored.returncode == 2
    assert "it holds the output of `biovqa report`" in " ".join(scored.stderr.split())


def test_a_second_writer_is_refused_with_the_holders_pid(tmp_path: Path, outputs: dict[str, Path]) -> None:
    out = tmp_path / "report"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from biovqa.bench.folder import claim_output\n"
         f"with claim_output({str(out)!r}, command='report'):\n    print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        for argv in (["report", outputs["scores"], "-o", out],
                     ["score", outputs["bench"], "-p", outputs["run"] / "predictions.parquet", "-o", out]):
            second = biovqa(*argv)
            assert second.returncode == 2, second.stderr
            flat = " ".join(second.stderr.split())
            assert f"this folder is in use by biovqa pid {holder.pid}" in flat and "(biovqa report)" in flat
        assert not out.exists()
    finally:
        holder.kill()
        holder.wait()
    after = biovqa("report", outputs["scores"], "-o", out)  # the lock died with its holder
    assert after.returncode == 0, after.stderr


def test_run_without_torch_names_the_extra_and_writes_nothing(tmp_path: Path, outputs: dict[str, Path]) -> None:
    blocker = tmp_path / "site"
    blocker.mkdir()
    # as on a base install: `import torch` fails (find_spec reports it absent)
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['torch'] = None\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "run"
    result = biovqa("run", outputs["bench"], "--model", "Qwen/Qwen2.5-VL-7B-Instruct", "-o", out, env=env)
    assert result.returncode == 2, result.stderr
    flat = " ".join(result.stderr.split())
    assert "the transformers backend needs torch, which is not installed" in flat
    assert "pip install 'biovqa[transformers]'" in flat and "internal error" not in flat
    assert list(tmp_path.iterdir()) == [blocker]  # no run folder, no lock beside it


def test_help_texts_name_values_readably() -> None:
    commands = [["score"], ["run"], ["plan"], ["export"], ["lite"], ["fetch"], ["merge"], ["report"],
                ["demo"], ["audit"], ["build", "c1"], ["build", "c3"], ["taxonomy", "index"]]
    for command in commands:
        result = biovqa(*command, "--help")
        assert result.returncode == 0, (command, result.stderr)
        for unreadable in ("<list[", " range>", "<path>", "<int>", "<str>"):
            assert unreadable not in result.stdout, (command, unreadable)
    assert "-o, --out PATH" in biovqa("build", "c1", "--help").stdout


def test_unknown_component_lists_the_known_ones() -> None:
    result = biovqa("build", "c5")
    assert result.returncode == 2
    assert "No such component 'c5'; known: c1, c2, c3, c4" in result.stderr
    close = biovqa("build", "bagle")
    assert "(did you mean 'bagel'?)" in close.stderr


def test_plan_says_what_it_assumed(outputs: dict[str, Path]) -> None:
    unknown = biovqa("plan", outputs["bench"], "--model", "some/unknown-model")
    assert unknown.returncode == 0, unknown.stderr
    assert "'some/unknown-model' is not one of the paper's models" in unknown.stdout
    assert "no API prices given: the cost is 0" in unknown.stdout
    priced = biovqa("plan", outputs["bench"], "--model", "gpt-4o", "--price-in", "2.5", "--price-out", "10")
    cost = next(line for line in priced.stdout.splitlines() if line.startswith("API cost"))
    assert cost.split()[2] == "USD" and "per 1M tokens" in cost


def test_export_names_the_hf_upload_command(tmp_path: Path, outputs: dict[str, Path]) -> None:
    pytest.importorskip("datasets")
    result = biovqa("export", outputs["bench"], "-o", tmp_path / "release")
    assert result.returncode == 0, result.stderr
    flat = " ".join(result.stderr.split())
    assert f"upload with `hf upload imageomics/Bio-VQA {tmp_path / 'release'} --repo-type dataset`" in flat
    assert "huggingface-cli" not in flat


def test_a_run_printed_to_a_log_ends_with_one_final_line(tmp_path: Path, outputs: dict[str, Path]) -> None:
    result = biovqa("run", outputs["bench"], "--backend", "baseline", "-o", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    progress = [line for line in result.stderr.splitlines() if "items/s" in line]
    assert len(progress) == len(set(p.split(" | ")[0] for p in progress)) >= 1, result.stderr




def test_every_extra_named_in_a_hint_exists() -> None:
    import tomllib

    from biovqa.cli._app import BACKEND_MODULES, EXTRAS

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    extras = pyproject["project"]["optional-dependencies"]
    assert set(EXTRAS.values()) <= set(extras)
    assert {module for modules in BACKEND_MODULES.values() for module in modules} <= set(EXTRAS)
