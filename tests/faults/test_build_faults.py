"""Faults in the C1 build and the taxonomy index (bad input is one clear error, never a crash): hostile benchmark images excluded and
counted, a broken ``--common-names`` CSV, a synonym pointing nowhere, and the index written as
a whole folder with a card of part hashes that ``build c1`` checks before use."""

from __future__ import annotations

import io
import json
import shutil
import struct
from pathlib import Path

import pytest
from PIL import Image

from biovqa.bench import open_bench
from fixtures.cli_runner import cli
from biovqa.sources import images as limits




def _tree_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _jpeg_header_claiming(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (300, 300), (10, 200, 40)).save(buffer, format="JPEG")
    data = bytearray(buffer.getvalue())
    sof = next(i for i in range(2, len(data) - 9) if data[i] == 0xFF and data[i + 1] == 0xC0)
    data[sof + 5:sof + 9] = struct.pack(">HH", height, width)
    return bytes(data[: len(data) // 2])  # body truncated


def _build_args(demo_data: Path, index: Path, images: Path, out: Path) -> list[str | Path]:
    return ["build", "c1", "--catalog", demo_data / "catalog.csv", "--backbone", index, "--images", images,
            "--out", out, "--per-group", "100", "--species-cap", "2"]


def test_c1_hostile_images_are_excluded_and_counted(tmp_path: Path, demo_data: Path, demo_index: Path,
                                                    demo_images: Path, capsys: pytest.CaptureFixture[str]) -> None:
    images = tmp_path / "images"
    shutil.copytree(demo_images, images)
    files = sorted(p for p in images.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    bomb, cut = files[0], files[1]
    bomb.write_bytes(_jpeg_header_claiming(65_000, 65_000))
    png = io.BytesIO()
    Image.new("RGB", (300, 300)).save(png, format="PNG")
    cut.unlink()
    (images / f"{cut.stem}.png").write_bytes(png.getvalue()[:60])
    out = tmp_path / "bench"
    code, err = cli(_build_args(demo_data, demo_index, images, out), capsys)
    assert code == 0, err
    bench = open_bench(out)
    kept = set(bench.items.column("source_id").to_pylist())
    assert bomb.stem not in kept and cut.stem not in kept
    exclusions = bench.manifest["exclusions"]
    assert sum(exclusions[limits.OVER_PIXELS].values()) == 1
    assert sum(exclusions[limits.UNREADABLE].values()) == 1


@pytest.mark.parametrize("body", [
    b'scientific_name,common_name\nPicea abies,"Norway Spruce\nRana arvalis,Moor Frog\n',
    b'scientific_name,common_name\nPicea abies,Norway \xff Spruce\n',
])
def test_common_names_csv_faults_are_exit_2(body: bytes, tmp_path: Path, demo_data: Path, demo_index: Path,
                                            demo_images: Path, capsys: pytest.CaptureFixture[str]) -> None:
    names = tmp_path / "names.csv"
    names.write_bytes(body)
    out = tmp_path / "bench"
    code, err = cli([*_build_args(demo_data, demo_index, demo_images, out), "--common-names", names], capsys)
    assert code == 2 and "names.csv" in err and "Traceback" not in err, err
    assert not out.exists()


def test_synonym_with_missing_accepted_id_is_counted(tmp_path: Path) -> None:
    from fixtures.dwca import example_taxa, taxon, write_backbone

    from biovqa.taxonomy.index import build_index

    taxa = example_taxa() + [taxon(8800001, "Hyla nowhere", "species", parent=2427525, accepted=123456789,
                                   status="synonym")]
    card = build_index(write_backbone(tmp_path / "backbone", taxa), tmp_path / "index")
    assert card["counts"]["synonym_rows_accepted_id_not_found"] == 1
    assert card["counts"]["synonym_rows_unresolved"] >= 1


def test_index_is_replaced_whole_and_checked_by_build_c1(tmp_path: Path, demo_data: Path, demo_images: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    index = tmp_path / "index"
    code, err = cli(["taxonomy", "index", demo_data / "backbone", "--out", index], capsys)
    assert code == 0, err
    card = json.loads((index / "index.json").read_text(encoding="utf-8"))
    assert set(card["files"]) == {"taxa.parquet", "names.parquet", "vernaculars.parquet"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]  # no staging folder left behind

    # a part edited after the build: `build c1` refuses it, naming the part and the card field
    taxa = index / "taxa.parquet"
    original = taxa.read_bytes()
    taxa.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    out = tmp_path / "bench"
    code, err = cli(_build_args(demo_data, index, demo_images, out), capsys)
    assert code == 2 and "taxa.parquet" in err and "files.taxa.parquet" in err and "Traceback" not in err, err
    assert not out.exists()

    # a folder that is not an index is never replaced
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    code, err = cli(["taxonomy", "index", demo_data / "backbone", "--out", other], capsys)
    assert code == 2 and "notes" in err and (other / "keep.txt").read_text() == "mine", err


def test_failed_index_rebuild_leaves_the_previous_index(tmp_path: Path, demo_data: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    index = tmp_path / "index"
    assert cli(["taxonomy", "index", demo_data / "backbone", "--out", index], capsys)[0] == 0
    before = _tree_bytes(index)
    broken = tmp_path / "backbone"
    shutil.copytree(demo_data / "backbone", broken)
    taxon = broken / "Taxon.tsv"
    lines = taxon.read_bytes().splitlines(keepends=True)
    taxon.write_bytes(b"".join(lines[:-3]) + b"not\ta\tvalid\trow\n" + b"".join(lines[-2:]))
    code, err = cli(["taxonomy", "index", broken, "--out", index], capsys)
    assert code == 2 and "Taxon.tsv" in err and "Traceback" not in err, err
    assert _tree_bytes(index) == before


def test_edited_side_file_is_refused_by_run_score_and_audit(bench_copy: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    tree = bench_copy / "c1" / "tree.parquet"
    tree.write_bytes(tree.read_bytes()[:-1] + bytes([tree.read_bytes()[-1] ^ 1]))  # same size, new bytes
    code, err = cli(["audit", bench_copy], capsys)
    assert code == 2 and "c1/tree.parquet" in err and "sha256" in err and "Traceback" not in err, err
    code, err = cli(["run", bench_copy, "--backend", "baseline", "--out", tmp_path / "run"], capsys)
    assert code == 2 and str(tree) in err and "rebuild" in err, err
    assert not (tmp_path / "run").exists()


def test_failed_c3_rebuild_keeps_the_earlier_bench(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """C3 through the command line (its build function is staged by the dispatch in cli.main)."""
    from biovqa.components.c3.demo import write_demo_sources

    sources = write_demo_sources(tmp_path / "sources")
    out = tmp_path / "bench"
    args = ["build", "c3", "--source", f"waid={sources['waid']}", "--per-subset", "5", "--out", out]
    code, err = cli(args, capsys)
    assert code == 0, err
    before = _tree_bytes(out)
    assert open_bench(out).manifest["files"] is not None
    (sources["waid"] / "images").rename(sources["waid"] / "gone")
    code, err = cli(args, capsys)
    assert code == 2 and "Traceback" not in err, err
    assert _tree_bytes(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench", "sources"]
