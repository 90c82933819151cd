"""Where a report reads from and writes to: score folders found from themselves (any working
directory, a moved benchmark named in a warning), a report folder replaced whole, an unrelated
folder refused, one writer at a time."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import biovqa


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, "-m", "biovqa", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture()
def relative_scores(tmp_path_factory: pytest.TempPathFactory, demo_bench: Path,
                    monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder scored the way a user does it, from inside the folder with relative paths:
    two models and the image-blind baseline (labelled "random guess", so only its backend says it
    is a floor) on a copy of the C1 demo bench (as deep below the session folder as the original,
    so the paths it records relative to itself still lead to the taxonomy index and photos)."""
    from biovqa.engine.runner import RunOptions, run_benchmark

    root = tmp_path_factory.mktemp("project")
    shutil.copytree(demo_bench, root / "bench")
    monkeypatch.chdir(root)
    items = pq.read_table("bench/items.parquet", columns=["item_id", "answer"]).to_pylist()
    for k, model in enumerate(("Alpha-VL", "Beta-VL")):
        replies = [i["answer"] if (n + k) % 2 else "Animalia" for n, i in enumerate(items)]
        pq.write_table(pa.table({"item_id": [i["item_id"] for i in items], "response": replies,
                                 "status": ["ok"] * len(items), "model": [model] * len(items)}), f"pred-{k}.parquet")
        biovqa.score("bench", f"pred-{k}.parquet", f"scores-{k}", label=model, bootstrap=20)
    run = run_benchmark("bench", "run-floor", RunOptions(backend="baseline", progress=False))
    biovqa.score("bench", os.path.relpath(run.predictions_path), "scores-floor", label="random guess", bootstrap=20)
    return root


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_report_is_byte_identical_from_any_working_directory(relative_scores: Path, tmp_path: Path) -> None:
    root = relative_scores
    scores = [root / "scores-0", root / "scores-1", root / "scores-floor"]
    reports = []
    for k, cwd in enumerate((root, root / "scores-0", tmp_path)):
        out = tmp_path / f"report-{k}"
        result = _cli("report", *[os.path.relpath(s, cwd) for s in scores], "-o", os.path.relpath(out, cwd), cwd=cwd)
        assert result.returncode == 0, result.stderr
        assert "warning" not in result.stderr.lower(), result.stderr
        reports.append(_files(out))
    assert reports[0].keys() == reports[1].keys() == reports[2].keys()
    for name in reports[0]:
        assert reports[0][name] == reports[1][name] == reports[2][name], name
    # the baseline stays a floor (not ranked, no Mean over it) and the browser has the benchmark's text
    rows = {r["model"]: r for r in csv.DictReader(reports[0]["table3.csv"].decode("utf-8").splitlines())}
    assert rows["random guess"]["kind"] == "floor" and rows["Mean"]["kind"] == "mean"
    assert {rows["Alpha-VL"]["kind"], rows["Beta-VL"]["kind"]} == {"vlm"}
    page = json.loads(reports[0]["browser/page-00001.js"].decode("utf-8").split(",", 1)[1].rsplit(")", 1)[0])
    assert page[0]["question"] and page[0]["gold"] and page[0]["image"]


@pytest.mark.slow
def test_a_moved_benchmark_is_named_in_a_warning(relative_scores: Path, tmp_path: Path) -> None:
    root = relative_scores
    shutil.move(root / "bench", tmp_path / "moved-bench")
    result = _cli("report", "scores-0", "scores-floor", "-o", str(tmp_path / "r"), cwd=root)
    assert result.returncode == 0, result.stderr
    folded = " ".join(result.stderr.split())
    assert "warning" in folded and "scores-0" in folded and "bench" in folded and "is gone" in folded
    # the floor is still known as one: the score folder records the models of its predictions
    rows = {r["model"]: r["kind"] for r in csv.DictReader((tmp_path / "r" / "table3.csv").open(encoding="utf-8"))}
    assert rows["random guess"] == "floor"


@pytest.mark.slow
def test_a_score_folder_moved_with_its_inputs_still_finds_them(relative_scores: Path, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere"
    shutil.move(relative_scores, moved)
    messages: list[str] = []
    from biovqa.reporting import write_report

    write_report([moved / "scores-0"], tmp_path / "r", warn=messages.append)
    assert messages == []
    from biovqa.reporting.browser import read_index, read_page  # noqa: E402

    assert read_page(tmp_path / "r", 1)[0]["question"] and read_index(tmp_path / "r")["items"]


@pytest.mark.slow
def test_older_score_folders_with_cwd_relative_paths_are_found_from_the_folder(relative_scores: Path,
                                                                               tmp_path: Path) -> None:
    """A summary from before the folder-relative paths named its inputs relative to where scoring
    ran; the report looks for them beside the score folder and above it, not in the cwd."""
    summary_path = relative_scores / "scores-0" / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    for key in ("benchmark_from_scores", "predictions_from_scores", "models"):
        summary["provenance"].pop(key)
    summary["provenance"].update(benchmark="bench", predictions="pred-0.parquet")
    summary_path.write_text(json.dumps(summary), encoding="utf-8")
    messages: list[str] = []
    from biovqa.reporting.writer import load_runs

    runs = load_runs([summary_path.parent], warn=messages.append)
    assert messages == []
    assert runs[0].summary["provenance"]["benchmark"] == str((relative_scores / "bench").resolve())


@pytest.mark.slow
def test_re_report_replaces_its_own_folder_whole(relative_scores: Path, tmp_path: Path) -> None:
    out, fresh = tmp_path / "report", tmp_path / "fresh"
    root = relative_scores
    assert _cli("report", "scores-0", "scores-1", "scores-floor", "-o", str(out), cwd=root).returncode == 0
    assert (out / "table3_rank_ranges.csv").exists() and (out / "index.json").exists()
    again = _cli("report", "scores-0", "-o", str(out), cwd=root)
    assert again.returncode == 0, again.stderr
    assert _cli("report", "scores-0", "-o", str(fresh), cwd=root).returncode == 0
    assert _files(out) == _files(fresh)  # nothing of the three-model report is left
    assert json.loads((out / "index.json").read_text(encoding="utf-8"))["runs"] == [
        {"label": "Alpha-VL", "component": "c1", "kind": "vlm"}]


def test_an_unrelated_folder_is_refused(tmp_path: Path, relative_scores: Path) -> None:
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "chapter1.tex").write_text("x", encoding="utf-8")
    result = _cli("report", str(relative_scores / "scores-0"), "-o", str(out), cwd=tmp_path)
    assert result.returncode == 2
    folded = " ".join(result.stderr.split())
    assert "thesis" in folded and "not empty" in folded and "chapter1.tex" in folded
    assert sorted(p.name for p in out.iterdir()) == ["chapter1.tex"]


def test_a_second_writer_is_refused_with_the_holders_pid(tmp_path: Path, relative_scores: Path) -> None:
    from biovqa.bench.folder import FolderLock, output_lock_path

    out = tmp_path / "report"
    with FolderLock(output_lock_path(out), folder=out, command="report"):  # what a first `biovqa report` holds
        result = _cli("report", str(relative_scores / "scores-0"), "-o", str(out), cwd=tmp_path)
    assert result.returncode == 2
    assert f"in use by biovqa pid {os.getpid()}" in " ".join(result.stderr.split())
    assert not (out / "index.html").exists()
