"""A C2 benchmark records no builder path: the CUB folder and the benchmark moved together still audit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures.cli_runner import cli
from fixtures.cub import write_cub

from biovqa.bench.folder import open_bench
from biovqa.components.c2.build import default_names_path


def _recorded_text(bench: Path) -> str:
    """Every string the build recorded: the manifest and every column of the items."""
    table = pq.read_table(bench / "items.parquet")
    values = [json.dumps(table.column(name).to_pylist()) for name in table.column_names]
    return (bench / "manifest.json").read_text(encoding="utf-8") + "\n".join(values)


@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative"])
def test_c2_bench_moved_with_its_cub_folder_audits(relative: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    write_cub(project / "download", n_classes=3, images_per_class=2, seed=3)
    shutil.copyfile(default_names_path(), project / "my names.csv")
    given = project
    if relative:  # paths as typed from the project folder
        monkeypatch.chdir(project)
        given = Path(".")
    # a user's names map is recorded by name and sha256 only
    code, err = cli(["build", "c2", "--cub", given / "download" / "CUB_200_2011", "--names",
                     given / "my names.csv", "--out", given / "bench"], capsys)
    assert code == 0, err
    recorded = _recorded_text(project / "bench")
    for builder_path in {str(tmp_path), str(tmp_path.resolve())}:
        assert builder_path not in recorded
    manifest = json.loads((project / "bench" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["images_root"] == "../download/CUB_200_2011/images"
    assert manifest["sources"]["cub_names"]["file"] == "my names.csv"
    assert all(Path(card["file"]).name == card["file"] for card in manifest["sources"].values())

    monkeypatch.chdir(tmp_path)
    moved = tmp_path / "elsewhere" / "deeper"
    moved.parent.mkdir()
    shutil.move(project, moved)
    code, err = cli(["audit", moved / "bench"], capsys)
    assert code == 0, err
    bench = open_bench(moved / "bench")
    photo = next(i for i in bench.items.column("image").to_pylist() if not i.startswith("rendered/"))
    assert bench.resolve_image(photo).resolve() == (moved / "download" / "CUB_200_2011" / "images" / photo).resolve()

    # the control: the bench moved without its CUB folder no longer finds the photos
    shutil.move(moved / "bench", tmp_path / "bench")
    code, err = cli(["audit", tmp_path / "bench"], capsys)
    assert code == 2 and "image missing" in err, err
