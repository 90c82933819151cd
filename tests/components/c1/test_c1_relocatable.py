"""A C1 benchmark records no builder path: sources and benchmark moved together still audit and score."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures.cli_runner import cli

import biovqa


def _recorded_text(bench: Path) -> str:
    """Every string the build recorded: the manifest and every text column of the items."""
    table = pq.read_table(bench / "items.parquet")
    values = [json.dumps(table.column(name).to_pylist()) for name in table.column_names]
    return (bench / "manifest.json").read_text(encoding="utf-8") + "\n".join(values)


@pytest.mark.parametrize("form", ["absolute", "relative", "linked"])
def test_c1_bench_moved_with_its_sources_audits_and_scores(
        form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        demo_data: Path, demo_index: Path, demo_images: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copyfile(demo_data / "catalog.csv", project / "catalog.csv")
    shutil.copytree(demo_index, project / "index")
    shutil.copytree(demo_images, project / "images")
    given = project
    if form == "relative":  # paths as typed from the project folder
        monkeypatch.chdir(project)
        given = Path(".")
    elif form == "linked":  # the sources reached through a link to the project folder
        (tmp_path / "link").symlink_to(project)
        given = tmp_path / "link"
    code, err = cli(["build", "c1", "--catalog", given / "catalog.csv", "--backbone", given / "index",
                     "--images", given / "images", "--out", given / "bench", "--per-group", 4,
                     "--species-cap", 2], capsys)
    assert code == 0, err
    recorded = _recorded_text(project / "bench")
    for builder_path in {str(tmp_path), str(tmp_path.resolve())}:
        assert builder_path not in recorded
    manifest = json.loads((project / "bench" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["images_root"] == "../images" and manifest["taxonomy_index"] == "../index"

    monkeypatch.chdir(tmp_path)
    (tmp_path / "link").unlink(missing_ok=True)
    moved = tmp_path / "elsewhere" / "deeper"
    moved.parent.mkdir()
    shutil.move(project, moved)
    code, err = cli(["audit", moved / "bench"], capsys)
    assert code == 0, err
    # the scorer finds the taxonomy index the manifest names, relative to the moved bench
    predictions = biovqa.run(moved / "bench", tmp_path / "run", backend="baseline", progress=False)
    scores = biovqa.score(moved / "bench", predictions, tmp_path / "scores", label="floor", bootstrap=0)
    summary = json.loads((Path(scores) / "summary.json").read_text(encoding="utf-8"))
    assert Path(summary["taxonomy_index"]).resolve() == (moved / "index").resolve()
    assert summary["n_items"] == manifest["counts"]["total"]


def test_c1_bench_whose_sources_were_not_moved_fails_its_audit_naming_the_photo(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], demo_data: Path, demo_index: Path,
        demo_images: Path) -> None:
    """The control: the relative record is what the audit follows (a bench moved without its
    photos does not find them)."""
    images = tmp_path / "images"
    shutil.copytree(demo_images, images)
    code, err = cli(["build", "c1", "--catalog", demo_data / "catalog.csv", "--backbone", demo_index,
                     "--images", images, "--out", tmp_path / "bench", "--per-group", 2, "--species-cap", 2], capsys)
    assert code == 0, err
    (tmp_path / "away").mkdir()
    shutil.move(tmp_path / "bench", tmp_path / "away" / "bench")
    code, err = cli(["audit", tmp_path / "away" / "bench"], capsys)
    assert code == 2 and "image missing for 20 image(s)" in err, err
    assert str(tmp_path / "away" / "bench" / ".." / "images") in err  # where it looked
