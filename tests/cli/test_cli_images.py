"""``--images DIR`` on every command that takes ``BENCH``: the source photos of an exported folder
are resolved against DIR and checked against their sha256 (``$BIOVQA_IMAGES`` the fallback); a
missing or altered photo is exit 2 naming the item."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from biovqa.bench import open_bench
from fixtures.cli_runner import cli

pytest.importorskip("datasets")


@pytest.fixture(scope="module")
def c2_release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(exported C2 folder, the built bench, its source photos): marker images are rendered and
    shipped, the other items point at CUB photos that are not."""
    from biovqa.bench.export import export_bench
    from biovqa.components.c2.build import build_c2
    from biovqa.synthetic import write_cub

    root = tmp_path_factory.mktemp("release")
    cub = write_cub(root / "cub", n_classes=3, images_per_class=2, seed=11, image_size=(80, 60))
    bench = build_c2(cub, root / "bench-c2")
    exported = export_bench([bench.root], root / "Bio-VQA", shard_rows=500)
    return exported / "data" / "c2", bench.root, bench.images_root()


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIOVQA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("BIOVQA_IMAGES", raising=False)


def _photos(tmp_path: Path, images: Path) -> Path:
    copy = tmp_path / "photos"
    shutil.copytree(images, copy)
    return copy


def _first_source_item(bench_root: Path) -> tuple[str, str]:
    """(image, item_id) of the first item, in benchmark order, that shows a source photo."""
    rows = open_bench(bench_root).items.select(["item_id", "image"]).to_pylist()
    first = next(r for r in rows if not r["image"].startswith("rendered/"))
    return first["image"], first["item_id"]


def _damage(photos: Path, image: str, damage: str) -> None:
    if damage == "missing":
        (photos / image).unlink()
    else:
        with open(photos / image, "r+b") as handle:  # same size: only the hash can tell
            head = handle.read(1)
            handle.seek(0)
            handle.write(bytes([head[0] ^ 0xFF]))


def _predictions(tmp_path: Path, bench_root: Path) -> Path:
    items = open_bench(bench_root).items
    path = tmp_path / "predictions.parquet"
    pq.write_table(pa.table({"item_id": items.column("item_id"), "response": items.column("answer"),
                             "status": pa.array(["ok"] * items.num_rows)}), path)
    return path


def _commands(release: Path, photos: Path, tmp_path: Path, predictions: Path) -> dict[str, list[str | Path]]:
    return {
        "audit": ["audit", release, "--images", photos],
        "score": ["score", release, "--images", photos, "-p", predictions, "-o", tmp_path / "scores",
                  "--bootstrap", "0"],
        "run": ["run", release, "--images", photos, "--backend", "baseline", "-o", tmp_path / "run",
                "--no-progress"],
        "plan": ["plan", release, "--images", photos, "--model", "baseline"],
        "lite": ["lite", release, "--images", photos, "--per-task", "3", "-o", tmp_path / "lite"],
        "specialist bioclip2": ["specialist", "bioclip2", release, "--images", photos, "--model",
                                tmp_path / "no-model", "-o", tmp_path / "bioclip"],
        "specialist megadescriptor": ["specialist", "megadescriptor", release, "--images", photos, "--model",
                                      tmp_path / "no-model", "-o", tmp_path / "mega"],
    }


COMMANDS = ["audit", "score", "run", "plan", "lite", "specialist bioclip2", "specialist megadescriptor"]


@pytest.mark.parametrize("damage", ["missing", "altered"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_or_altered_photo_is_exit_2_naming_the_item(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], c2_release: tuple[Path, Path, Path],
        command: str, damage: str) -> None:
    release, bench_root, images = c2_release
    photos = _photos(tmp_path, images)
    image, item_id = _first_source_item(bench_root)
    _damage(photos, image, damage)
    argv = _commands(release, photos, tmp_path, _predictions(tmp_path, bench_root))[command]
    code, err = cli(argv, capsys)
    assert code == 2, err
    assert f"item {item_id}" in err and image in err
    assert ("is missing under" if damage == "missing" else "altered") in err
    assert "Traceback" not in err and "internal error" not in err


def test_audit_run_score_and_plan_take_the_photos_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], c2_release: tuple[Path, Path, Path]) -> None:
    release, bench_root, images = c2_release
    photos = _photos(tmp_path, images)
    commands = _commands(release, photos, tmp_path, _predictions(tmp_path, bench_root))
    for name in ("audit", "run", "score", "plan"):
        code, err = cli(commands[name], capsys)
        assert code == 0, (name, err)
    card = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert card["benchmark"]["manifest_sha256"] == open_bench(card["benchmark"]["path"]).manifest_sha256
    assert open_bench(card["benchmark"]["path"]).images_root() == photos.resolve()
    answered = pq.read_table(tmp_path / "run" / "predictions.parquet")
    assert answered.num_rows == open_bench(bench_root).items.num_rows
    summary = json.loads((tmp_path / "scores" / "summary.json").read_text(encoding="utf-8"))
    assert summary["component"] == "c2"


def test_a_photo_altered_after_a_good_open_is_still_caught(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], c2_release: tuple[Path, Path, Path]) -> None:
    """The rebuilt benchmark is cached; opening it again re-checks the photos that changed."""
    release, bench_root, images = c2_release
    photos = _photos(tmp_path, images)
    assert cli(["audit", release, "--images", photos], capsys)[0] == 0
    image, item_id = _first_source_item(bench_root)
    (photos / image).write_bytes((photos / image).read_bytes() + b"\0")
    code, err = cli(["audit", release, "--images", photos], capsys)
    assert code == 2 and f"item {item_id}" in err and "altered" in err
    (photos / image).unlink()
    code, err = cli(["audit", release, "--images", photos], capsys)
    assert code == 2 and f"item {item_id}" in err and "missing" in err


def test_the_flag_wins_over_the_environment_which_stays_the_fallback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        c2_release: tuple[Path, Path, Path]) -> None:
    release, bench_root, images = c2_release
    good = _photos(tmp_path, images)
    monkeypatch.setenv("BIOVQA_IMAGES", str(tmp_path / "nowhere"))
    code, err = cli(["audit", release, "--images", good], capsys)
    assert code == 0, err
    monkeypatch.setenv("BIOVQA_IMAGES", str(good))
    code, err = cli(["audit", release], capsys)
    assert code == 0, err
    image, item_id = _first_source_item(bench_root)
    _damage(good, image, "altered")
    code, err = cli(["audit", release], capsys)  # the environment's folder is checked the same way
    assert code == 2 and f"item {item_id}" in err


def test_images_on_a_built_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             c2_release: tuple[Path, Path, Path]) -> None:
    _, bench_root, images = c2_release
    code, err = cli(["audit", bench_root, "--images", images], capsys)
    assert code == 2 and "--images" in err and "records its own images folder" in err
    code, err = cli(["audit", bench_root], capsys)
    assert code == 0, err
