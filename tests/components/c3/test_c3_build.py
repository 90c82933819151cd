"""C3 build: deterministic items and byte-identical renders, manifest of skipped tasks and
exclusions, the CLI, and (slow) build → baseline → score → report through the public path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import biovqa
from biovqa.components.c3.build import build_c3
from biovqa.components.c3.build.geometry import direction_of
from biovqa.components.c3.build.sources import parse_sources
from biovqa.components.c3.demo import write_demo_sources
from biovqa.components.c3.render import CanvasJob, Panel, Shape, render_one
from biovqa.components.c3.tasks import TASK_NAMES
from biovqa.errors import BiovqaError

SMALL = {"per_subset": 20, "canvas": 128, "plate_side": 256, "rpos_items": 16}


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_demo_sources(tmp_path_factory.mktemp("c3src"))


def test_build_is_deterministic_and_records_what_it_skipped(tmp_path: Path, sources: dict[str, Path]) -> None:
    a = build_c3(sources, tmp_path / "a", **SMALL)
    b = build_c3(sources, tmp_path / "b", workers=2, **SMALL)
    assert a.manifest["items_sha256"] == b.manifest["items_sha256"]
    for image in a.items.column("image").to_pylist()[::7]:
        assert a.resolve_image(image).read_bytes() == b.resolve_image(image).read_bytes()
    counts = a.manifest["counts"]["by_task"]
    assert set(counts) == set(TASK_NAMES)
    assert set(a.manifest["counts"]["by_tier"]) >= {"easy", "medium", "hard", "red_box"}
    conditions = {(task, condition) for task, condition in zip(a.items.column("task").to_pylist(),
                                                               a.items.column("condition").to_pylist()) if condition}
    assert conditions == {("relative_counting", "same"), ("relative_counting", "different")}
    assert a.manifest["skipped_tasks"] == {}
    # WAID's per-class subsets, Bees, DePondFi, beetles; GZCD given as a GGR table feeds no counting
    assert set(a.manifest["subsets"]) == {"waid-sheep", "waid-cattle", "waid-seal", "waid-camelus", "waid-kiang",
                                          "waid-zebra", "bees", "depondfi", "beetles"}
    assert a.manifest["counting_sources"]["gzcd"]["counting"] is False
    items = a.items.to_pydict()
    for task, payload, answer in zip(items["task"], items["answer_payload"], items["answer"]):
        data = json.loads(payload)
        if task == "counting":
            assert str(data["count"]) == answer
        elif task == "relative_position":
            assert answer in data["options"] and len(data["options"]) == 4
    # every item's image exists and matches its recorded hash
    assert biovqa.audit(a.root)


def test_items_do_not_depend_on_where_the_sources_lie(tmp_path: Path, sources: dict[str, Path]) -> None:
    import os
    import shutil

    moved_root = tmp_path / "elsewhere" / "deeper"
    common = Path(os.path.commonpath([str(p) for p in sources.values()]))
    shutil.copytree(common, moved_root)
    moved = {name: moved_root / Path(path).relative_to(common) for name, path in sources.items()}
    a = build_c3(sources, tmp_path / "a", **SMALL)
    b = build_c3(moved, tmp_path / "b", **SMALL)
    assert (a.root / "items.parquet").read_bytes() == (b.root / "items.parquet").read_bytes()
    items = a.items.to_pydict()
    for column in ("cluster", "source_id", "image"):
        assert not any(str(common) in str(v) for v in items[column]), column
    catalog = items["task"].index("localization")
    assert items["cluster"][catalog] == items["source_id"][catalog]
    assert items["cluster"][catalog].startswith("gzcd/") and not items["cluster"][catalog].startswith("gzcd//")


def test_photos_shown_as_they_are_are_referenced_not_copied(tmp_path: Path, sources: dict[str, Path],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib
    import shutil

    from biovqa.bench.export import export_bench
    from biovqa.bench.hub import open_release
    from biovqa.bench.lite import make_lite

    bench = build_c3(sources, tmp_path / "bench", **SMALL)
    items = bench.items.to_pydict()
    referenced = {(task, image, digest) for task, image, digest in
                  zip(items["task"], items["image"], items["image_sha256"]) if not image.startswith("rendered/")}
    assert {task for task, _, _ in referenced} == {"ocr", "localization", "viewpoint"}
    roots = bench.manifest["image_roots"]
    assert set(roots) == {"beetles", "gzcd"}
    for _, image, digest in referenced:
        source, _, rest = image.partition("/")
        path = bench.resolve_image(image)
        assert path.resolve() == Path(sources[source]).resolve() / rest and path.is_file()
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert bench.manifest["images"]["source_photos"] == len({image for _, image, _ in referenced})
    rendered = {p.relative_to(bench.root).as_posix() for p in (bench.root / "rendered").rglob("*") if p.is_file()}
    assert rendered == {image for image in items["image"] if image.startswith("rendered/")}  # no copies
    assert biovqa.audit(bench.root)
    # a Lite subset resolves them through its parent's roots
    lite = make_lite(bench.root, tmp_path / "lite", per_task=3)
    assert all(lite.resolve_image(image).is_file() for image in lite.items.column("image").to_pylist())
    # a release takes --images ROOT with one folder per source: ROOT/<source>/…
    pytest.importorskip("datasets")
    monkeypatch.setenv("BIOVQA_CACHE", str(tmp_path / "cache"))
    export_bench([bench.root], tmp_path / "release")
    photos = tmp_path / "photos"
    photos.mkdir()
    for name in roots:  # a copy of each source's photo folder (a link leading out of ROOT is an escape)
        shutil.copytree(Path(sources[name]), photos / name)
    opened = open_release(tmp_path / "release" / "data" / "c3", images=photos)
    assert "image_roots" not in opened.manifest and opened.items.equals(bench.items)
    assert biovqa.audit(opened.root)


def test_missing_sources_skip_their_tasks(tmp_path: Path, sources: dict[str, Path]) -> None:
    bench = build_c3({"beetles": sources["beetles"]}, tmp_path / "b", **SMALL)
    assert set(bench.manifest["skipped_tasks"]) == {"localization", "viewpoint"}
    assert bench.manifest["counts"]["by_task"]["ocr"] == 3
    assert bench.manifest["skipped"]["counting medium: no partner photograph"] == 3  # one dataset only
    bench = build_c3({"bees": sources["bees"]}, tmp_path / "c", **SMALL)
    assert set(bench.manifest["skipped_tasks"]) == {"absolute_distance", "relative_distance", "relative_position",
                                                    "ocr", "localization", "viewpoint"}


def test_source_arguments_are_checked() -> None:
    assert parse_sources(["waid=/x", "Bees=/y"]) == {"waid": Path("/x"), "bees": Path("/y")}
    for bad in (["zoo=/x"], ["waid"], ["waid=/x", "waid=/y"]):
        with pytest.raises(BiovqaError):
            parse_sources(bad)
    with pytest.raises(BiovqaError, match=r"unknown C3 source 'wiad' \(did you mean 'waid'\?\)"):
        parse_sources(["wiad=/x"])


def test_direction_sectors_and_boundary_skip() -> None:
    assert direction_of((0, 0), (0, -10)) == "top"
    assert direction_of((0, 0), (10, -10)) == "top-right"
    assert direction_of((0, 0), (-10, 10)) == "bottom-left"
    assert direction_of((0, 0), (10, -4.3)) is None  # 23.3° from the right axis: near a boundary


def test_rendering_is_byte_identical(tmp_path: Path, sources: dict[str, Path]) -> None:
    photo = next((sources["beetles"] / "group_images").glob("*.jpg"))
    job = lambda name: CanvasJob(tmp_path / name, (300, 200), (Panel(photo, (0, 0, 300, 200)),),  # noqa: E731
                                 (Shape("line", 0, (10, 10, 200, 150), "red", border="white"),
                                  Shape("box", 0, (20, 20, 120, 90), "blue", dotted=True)))
    assert render_one(job("a.png")) == render_one(job("b.png"))
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()


def test_cli_builds_c3(tmp_path: Path, sources: dict[str, Path]) -> None:
    from typer.testing import CliRunner

    from biovqa.cli.main import app

    result = CliRunner().invoke(app, ["build", "c3", "--source", f"bees={sources['bees']}", "--source",
                                      f"depondfi={sources['depondfi']}", "--out", str(tmp_path / "bench"),
                                      "--canvas", "64"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "bench" / "items.parquet").exists()


@pytest.mark.slow
def test_baseline_scores_its_floors_and_reports(tmp_path: Path, sources: dict[str, Path]) -> None:
    bench = build_c3(sources, tmp_path / "bench", **SMALL).root
    predictions = biovqa.run(bench, tmp_path / "run", backend="baseline", progress=False)
    out = biovqa.score(bench, predictions, tmp_path / "scores", bootstrap=30, label="floor")
    s = json.loads((out / "summary.json").read_text())
    assert set(s["table3"]) == set(biovqa.get_component("c3").table3)
    assert all(entry["parse_rate"] == 1.0 for entry in s["format"].values())
    # the baseline replays the floor rules: its scores equal the floors fitted on its rows
    assert s["table3"]["cnt"]["value"] == pytest.approx(s["counting"]["floor"]["cas"]["value"])
    assert s["table3"]["adst"]["value"] == pytest.approx(s["absolute_distance"]["floor"]["acc20"]["value"])
    e = s["table3"]["cnt"]
    assert e["lo"] <= e["value"] <= e["hi"]
    index = biovqa.report([out], tmp_path / "report")
    html = index.read_text()
    assert "C3 quantitative spatial reasoning" in html
    assert (tmp_path / "report" / "c3_model_vs_floor.png").exists()


def test_wildlife_catalogs_feed_localization_and_viewpoint(tmp_path: Path) -> None:
    wildlife = pytest.importorskip("biovqa.sources.wildlife")
    from PIL import Image

    root = tmp_path / "hyena.coco"
    views = ["left", "right", "frontleft", "back", "right", "up"]
    images = [{"id": k + 1, "file_name": f"{k:03d}.jpg", "width": 120, "height": 80} for k in range(6)]
    annotations = [{"id": k + 1, "image_id": k + 1, "bbox": [10.0 + k, 12.0, 60.0, 40.0], "theta": 0.0,
                    "viewpoint": v, "name": f"ind{k % 2}", "category_id": 0} for k, v in enumerate(views)]
    wildlife.write_coco_catalog(root, annotations, images, categories=[{"id": 0, "name": "hyena"}])
    for image in images:
        Image.new("RGB", (120, 80), (100, 90, 80)).save(root / "images" / "train2022" / image["file_name"])
    bench = build_c3({"hyena": root}, tmp_path / "bench", canvas=96, plate_side=128)
    counts = bench.manifest["counts"]["by_task"]
    assert counts["localization"] == 6 and counts["viewpoint"] == 6
    assert set(bench.manifest["counts"]["by_tier"]) >= {"red_box", "species", "three_panel"}
    items = bench.items.to_pydict()
    first = items["task"].index("localization")
    assert items["answer"][first] == "[10, 12, 60, 40]" and "120 pixels wide" in items["question"][first]
