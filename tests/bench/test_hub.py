"""Export to a Hugging Face dataset folder and open it again (a release others can load, with its
images checked against their sha256)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from biovqa.bench import open_bench
from biovqa.bench.audit import audit_bench
from biovqa.bench.export import export_bench
from biovqa.bench.hub import RENDERED_IMAGE, open_release
from biovqa.errors import AuditError, BiovqaError, MissingResourceError

datasets = pytest.importorskip("datasets")


@pytest.fixture(scope="module")
def c1_bench(tmp_path_factory: pytest.TempPathFactory, demo_data: Path, demo_index: Path) -> Path:
    """A private C1 demo build (own photos: the shared demo photos are damaged by other tests)."""
    from fixtures.private_c1 import build_private_c1

    return build_private_c1(tmp_path_factory.mktemp("c1"), demo_data, demo_index)


@pytest.fixture(scope="module")
def c2_bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A real C2 build (CUB layout; marker images rendered, other items on source photos)."""
    from biovqa.components.c2.build import build_c2
    from biovqa.synthetic import write_cub

    root = tmp_path_factory.mktemp("c2")
    cub = write_cub(root / "cub", n_classes=4, images_per_class=2, seed=7, image_size=(96, 72))
    bench = build_c2(cub, root / "bench-c2")
    return bench.root, bench.images_root()


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory, c1_bench: Path, c2_bench: tuple[Path, Path]) -> Path:
    out = tmp_path_factory.mktemp("export") / "Bio-VQA"
    export_bench([c1_bench, c2_bench[0]], out, shard_rows=150)
    return out


@pytest.fixture(autouse=True)
def _offline_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIOVQA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("BIOVQA_IMAGES", raising=False)


def test_every_config_loads_with_datasets_and_equals_the_bench(exported: Path, c1_bench: Path,
                                                                c2_bench: tuple[Path, Path]) -> None:
    assert sorted(p.name for p in (exported / "data").iterdir()) == ["c1", "c2"]
    assert len(list((exported / "data" / "c2").glob("test-*-of-*.parquet"))) > 1  # sharded at 150 rows
    card = (exported / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\n") and "config_name: c1" in card and "CUB-200-2011" in card and "@misc" in card
    for component, bench_root in (("c1", c1_bench), ("c2", c2_bench[0])):
        bench = open_bench(bench_root)
        loaded = datasets.load_dataset(str(exported), component, split="test")
        assert isinstance(loaded.features[RENDERED_IMAGE], datasets.Image)
        assert loaded.num_rows == bench.items.num_rows
        raw = loaded.cast_column(RENDERED_IMAGE, datasets.Image(decode=False))
        table = raw.with_format("arrow")[:]
        for name in bench.items.column_names:
            assert table.column(name).to_pylist() == bench.items.column(name).to_pylist(), name
        rendered = 0
        for row in raw.select_columns(["image", "image_sha256", "image_kind", RENDERED_IMAGE]):
            if row["image"].startswith("rendered/"):
                assert row["image_kind"] == "rendered"
                assert row[RENDERED_IMAGE]["bytes"] == (bench_root / row["image"]).read_bytes()
                rendered += 1
            else:  # a source photo ships as identifier + content hash only
                assert row["image_kind"] == "source" and row[RENDERED_IMAGE] is None
                photo = bench.images_root() / row["image"]
                assert hashlib.sha256(photo.read_bytes()).hexdigest() == row["image_sha256"]
        assert rendered > 0 if component == "c2" else rendered == 0


def test_export_is_byte_identical_when_repeated(tmp_path: Path, c2_bench: tuple[Path, Path]) -> None:
    first = export_bench([c2_bench[0]], tmp_path / "a", shard_rows=100)
    second = export_bench([c2_bench[0]], tmp_path / "b", shard_rows=100)
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    for relative in files:
        assert (first / relative).read_bytes() == (second / relative).read_bytes(), relative


def test_open_release_rebuilds_the_bench_and_audits(exported: Path, c2_bench: tuple[Path, Path]) -> None:
    bench = open_bench(exported / "data" / "c2")  # through the open_bench hook
    assert bench.manifest.get("release", {}).get("source_photos_checked") is False
    with_images = open_release(exported / "data" / "c2", images=c2_bench[1])
    original = open_bench(c2_bench[0])
    assert with_images.items.equals(original.items)
    assert with_images.component == "c2" and with_images.manifest["seed"] == original.manifest["seed"]
    assert (with_images.root / "c2" / "part_layout.json").read_bytes() == \
        (c2_bench[0] / "c2" / "part_layout.json").read_bytes()
    assert "component c2" in audit_bench(with_images.root)
    with pytest.raises(AuditError):  # without the photos the audit names them missing
        audit_bench(exported / "data" / "c2")


def test_cli_audit_and_score_take_the_exported_folder(tmp_path: Path, exported: Path,
                                                      c2_bench: tuple[Path, Path]) -> None:
    env = {"BIOVQA_IMAGES": str(c2_bench[1]), "BIOVQA_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    ran = subprocess.run([sys.executable, "-m", "biovqa", "audit", str(exported / "data" / "c2")],
                         capture_output=True, text=True, env=env)
    assert ran.returncode == 0, ran.stderr
    assert "audit passed" in ran.stdout + ran.stderr
    bench = open_bench(c2_bench[0])
    predictions = tmp_path / "predictions.parquet"
    pq.write_table(pa.table({"item_id": bench.items.column("item_id"), "response": bench.items.column("answer"),
                             "status": pa.array(["ok"] * bench.items.num_rows)}), predictions)
    scored = subprocess.run([sys.executable, "-m", "biovqa", "score", str(exported / "data" / "c2"), "-p",
                             str(predictions), "-o", str(tmp_path / "scores"), "--bootstrap", "0"],
                            capture_output=True, text=True, env=env)
    assert scored.returncode == 0, scored.stderr
    several = subprocess.run([sys.executable, "-m", "biovqa", "audit", str(exported)],
                             capture_output=True, text=True, env=env)
    assert several.returncode == 2 and "holds 2 components" in several.stderr + several.stdout
    assert "Traceback" not in several.stderr


@pytest.mark.parametrize("damage", ["missing", "altered"])
def test_missing_or_altered_source_photo_names_the_item(tmp_path: Path, exported: Path,
                                                        c2_bench: tuple[Path, Path], damage: str) -> None:
    images = tmp_path / "images"
    shutil.copytree(c2_bench[1], images)
    bench = open_bench(c2_bench[0])
    rows = [r for r in bench.items.select(["item_id", "image"]).to_pylist() if not r["image"].startswith("rendered/")]
    victim = rows[0]["image"]
    first_item = next(r["item_id"] for r in rows if r["image"] == victim)
    if damage == "missing":
        (images / victim).unlink()
    else:
        with open(images / victim, "ab") as handle:
            handle.write(b"\0")
    with pytest.raises(MissingResourceError) as caught:
        open_release(exported / "data" / "c2", images=images)
    message = str(caught.value)
    assert first_item in message and victim in message
    assert ("missing" if damage == "missing" else "altered") in message


def test_damaged_shard_is_refused(tmp_path: Path, exported: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(exported, copy)
    shard = sorted((copy / "data" / "c1").glob("*.parquet"))[0]
    shard.write_bytes(shard.read_bytes()[:-10])
    with pytest.raises(BiovqaError, match="differs from its recorded sha256"):
        open_bench(copy / "data" / "c1")


def test_hub_id_offline_is_a_clear_error() -> None:
    with pytest.raises(MissingResourceError) as caught:
        open_bench(Path("hf://imageomics/Bio-VQA/c1"))  # Path() folds the // as the CLI's Path would
    assert "imageomics/Bio-VQA" in str(caught.value) and "hint" in str(caught.value)


def test_a_hub_download_reports_through_biovqa_progress(tmp_path: Path, exported: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """``hf://`` fetches show biovqa's stage (files fetched), never huggingface_hub's own bars."""
    huggingface_hub = pytest.importorskip("huggingface_hub")
    from huggingface_hub.utils import are_progress_bars_disabled

    from biovqa.progress import show_progress

    seen = {}

    def snapshot_download(repo_id: str, *, repo_type: str, allow_patterns: list[str] | None,
                          tqdm_class: type) -> str:
        seen["hub_bars_off"] = are_progress_bars_disabled()
        with tqdm_class(total=3, desc="Fetching 3 files") as files:  # as huggingface_hub's thread map
            for _ in range(3):
                files.update()
        transfer = tqdm_class(total=10_000, unit="B")  # a byte bar (newer versions): not counted
        transfer.update(10_000)
        transfer.close()
        return str(exported)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setenv("BIOVQA_CACHE", str(tmp_path / "cache"))
    was_off = are_progress_bars_disabled()
    with show_progress():
        bench = open_bench("hf://owner/release/c2")
    assert bench.component == "c2" and seen == {"hub_bars_off": True}
    assert are_progress_bars_disabled() == was_off  # their setting is given back
    logged = capsys.readouterr()
    assert "hf://owner/release: files fetched: 3 files in" in logged.err
    assert "it/s" not in logged.err + logged.out and "Fetching" not in logged.err + logged.out


def test_lite_of_an_export_with_images(tmp_path: Path, exported: Path, c2_bench: tuple[Path, Path]) -> None:
    ran = subprocess.run([sys.executable, "-m", "biovqa", "lite", str(exported / "data" / "c2"), "--per-task", "5",
                          "--images", str(c2_bench[1]), "--out", str(tmp_path / "lite")],
                         capture_output=True, text=True, env={"BIOVQA_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"})
    assert ran.returncode == 0, ran.stderr
    assert "component c2" in audit_bench(tmp_path / "lite")


def test_a_cached_rebuild_rechecks_photos_changed_since(tmp_path: Path, exported: Path,
                                                       c2_bench: tuple[Path, Path]) -> None:
    """The rebuilt folder is reused; a photo altered (or removed) after the first check is still
    caught, also in a rebuild that predates the photo stamps."""
    from biovqa.bench.photos import PHOTO_STAMPS

    images = tmp_path / "images"
    shutil.copytree(c2_bench[1], images)
    first = open_release(exported / "data" / "c2", images=images)
    assert (first.root / PHOTO_STAMPS).is_file()
    rows = [r for r in first.items.select(["item_id", "image"]).to_pylist() if not r["image"].startswith("rendered/")]
    victim, item = rows[0]["image"], rows[0]["item_id"]
    assert open_release(exported / "data" / "c2", images=images).root == first.root  # cached
    (first.root / PHOTO_STAMPS).unlink()  # as an older biovqa left it
    (images / victim).write_bytes((images / victim).read_bytes()[::-1])
    with pytest.raises(MissingResourceError, match=f"item {item}: .*altered"):
        open_release(exported / "data" / "c2", images=images)
    shutil.copyfile(c2_bench[1] / victim, images / victim)
    assert open_release(exported / "data" / "c2", images=images).root == first.root
    assert (first.root / PHOTO_STAMPS).is_file()  # written again
    (images / victim).unlink()
    with pytest.raises(MissingResourceError, match=f"item {item}: source photo .* missing"):
        open_release(exported / "data" / "c2", images=images)


def test_open_bench_takes_the_images_of_an_export(exported: Path, c2_bench: tuple[Path, Path]) -> None:
    from biovqa.errors import BiovqaError

    bench = open_bench(exported / "data" / "c2", images=c2_bench[1])
    assert bench.manifest["release"]["source_photos_checked"] is True
    assert bench.items.equals(open_bench(c2_bench[0]).items)
    with pytest.raises(BiovqaError, match="records its own images folder"):
        open_bench(c2_bench[0], images=c2_bench[1])  # a built folder: refused, not ignored
