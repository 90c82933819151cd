"""Benchmark folders (bench/folder.py): builds staged beside ``out`` and moved into place whole,
the manifest's ``files`` card over the side files, checked by ``open_bench`` and the audit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from biovqa.bench.audit import audit_bench
from biovqa.bench.folder import open_bench, staged_build, write_bench, write_json
from biovqa.errors import AuditError, BiovqaError, InputFormatError
from biovqa.records import ITEM_COLUMNS


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _items(answer: str) -> pa.Table:
    columns: dict[str, Any] = {name: [None] for name, _ in ITEM_COLUMNS}
    columns.update(item_id=["t-0"], component=["toy"], task=["name"], question=["What?"], answer=[answer])
    return pa.table({name: pa.array(columns[name], kind) for name, kind in ITEM_COLUMNS})


@staged_build
def _toy_build(out: Path, *, answer: str, fail: bool = False) -> Any:
    """A build in the shape of the components' ones: side files first, then write_bench."""
    (Path(out) / "toy").mkdir(parents=True, exist_ok=True)
    write_json(Path(out) / "toy" / "side.json", {"answer": answer})
    (Path(out) / "rendered").mkdir(parents=True, exist_ok=True)
    (Path(out) / "rendered" / "x.png").write_bytes(answer.encode())
    (Path(out) / "toy" / "cache.bin").write_bytes(b"reusable")
    if fail:
        raise RuntimeError("the build failed half-way")
    return write_bench(out, _items(answer), component="c1", generator="toy", seed=0, sources={},
                      parameters={}, caches=[Path(out) / "toy" / "cache.bin"])


def test_card_hashes_side_files_only(tmp_path: Path) -> None:
    bench = _toy_build(tmp_path / "bench", answer="a")
    card = bench.manifest["files"]
    assert sorted(card) == ["toy/side.json"]  # not items, manifest, rendered/ or the listed cache
    side = tmp_path / "bench" / "toy" / "side.json"
    assert card["toy/side.json"]["bytes"] == side.stat().st_size
    assert bench.manifest["caches"] == ["toy/cache.bin"]
    assert bench.root == tmp_path / "bench"
    assert ".partial" not in (tmp_path / "bench" / "manifest.json").read_text()


def test_failed_rebuild_leaves_the_earlier_bench_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    _toy_build(out, answer="old")
    before = _snapshot(out)
    with pytest.raises(RuntimeError):
        _toy_build(out, answer="new", fail=True)
    assert _snapshot(out) == before
    assert open_bench(out).items.column("answer").to_pylist() == ["old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench"]  # no staging folder left


def test_rebuild_replaces_what_the_build_writes_and_keeps_other_files(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    _toy_build(out, answer="old")
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    (out / "toy" / "stale.json").write_text("{}", encoding="utf-8")
    bench = _toy_build(out, answer="new")
    assert bench.items.column("answer").to_pylist() == ["new"]
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert not (out / "toy" / "stale.json").exists()  # toy/ is the build's: replaced whole
    assert (out / "toy" / "cache.bin").read_bytes() == b"reusable"
    fresh = _toy_build(tmp_path / "fresh", answer="new")
    assert (out / "manifest.json").read_bytes() == (fresh.root / "manifest.json").read_bytes()


def test_a_file_as_out_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    out.write_text("x", encoding="utf-8")
    with pytest.raises(BiovqaError, match="is a file"):
        _toy_build(out, answer="a")
    assert out.read_text(encoding="utf-8") == "x"


def test_edited_side_file_is_refused_by_open_and_audit(bench_copy: Path) -> None:
    tree = bench_copy / "c1" / "tree.parquet"
    tree.write_bytes(tree.read_bytes() + b"x")
    with pytest.raises(InputFormatError) as info:
        open_bench(bench_copy)
    assert info.value.file == str(tree) and "changed after build" in info.value.message
    assert "rebuild" in (info.value.hint or "")
    with pytest.raises(AuditError) as audit:
        audit_bench(bench_copy)
    assert any(v.startswith("c1/tree.parquet:") and "sha256" in v for v in audit.value.violations)


def test_missing_side_file_is_named(bench_copy: Path) -> None:
    (bench_copy / "c1" / "vernacular.parquet").unlink()
    with pytest.raises(InputFormatError) as info:
        open_bench(bench_copy)
    assert info.value.file == str(bench_copy / "c1" / "vernacular.parquet") and "missing" in info.value.message


def test_bench_without_card_opens_and_the_audit_reports_it(bench_copy: Path) -> None:
    manifest_path = bench_copy / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    del manifest["files"]
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    assert open_bench(bench_copy).items.num_rows == 712
    with pytest.raises(AuditError) as info:
        audit_bench(bench_copy)
    assert [v for v in info.value.violations if "files" in v and "card" in v]


def test_c1_rebuild_failing_after_its_side_files_keeps_the_old_bench(
        bench_copy: Path, demo_data: Path, demo_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from biovqa.components.c1 import build as c1_build

    before = _snapshot(bench_copy)
    manifest = json.loads((bench_copy / "manifest.json").read_text(encoding="utf-8"))

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(c1_build, "write_bench", broken)  # after tree/vernacular are written
    with pytest.raises(OSError):
        c1_build.build_c1(demo_data / "catalog.csv", demo_index, manifest["images_root"], bench_copy,
                          options=c1_build.C1BuildOptions(per_group=8, species_cap=2, seed=3))
    assert _snapshot(bench_copy) == before
    assert open_bench(bench_copy).manifest == manifest


class _CountingEmbedder:
    """A stand-in for DINOv2: a deterministic vector per crop, counting the crops it embeds."""

    name = "counting"
    fingerprint = "counting"
    batch_size = 8

    def __init__(self) -> None:
        self.embedded = 0

    def embed(self, images: list[Any]) -> list[np.ndarray]:
        self.embedded += len(images)
        vectors = []
        for image in images:
            pixels = np.asarray(image.convert("RGB").resize((4, 4)), dtype=np.float32).ravel() + 1.0
            vectors.append(pixels / np.linalg.norm(pixels))
        return vectors


def test_c4_rebuild_in_place_reuses_its_embedding_cache(tmp_path: Path) -> None:
    from fixtures.wildlife import write_catalog

    from biovqa.components.c4.build import build_c4

    catalog = write_catalog(tmp_path / "catalog", n_individuals=4, images_per_view=3)
    out = tmp_path / "bench"
    first = _CountingEmbedder()
    bench = build_c4({"whaleshark": catalog}, first, out, pairs_per_kind=2)
    cache = bench.manifest["embedding"]["cache"]
    assert cache == "c4/embeddings-counting.parquet" and bench.manifest["caches"] == [cache]
    assert first.embedded > 0 and (out / cache).is_file()
    items = (out / "items.parquet").read_bytes()
    manifest = (out / "manifest.json").read_bytes()
    again = _CountingEmbedder()
    build_c4({"whaleshark": catalog}, again, out, pairs_per_kind=2)
    assert again.embedded == 0
    assert (out / "items.parquet").read_bytes() == items
    assert (out / "manifest.json").read_bytes() == manifest  # deterministic: no timings or cache hits
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left


def test_item_columns_read_named_text_columns_as_dictionaries(tmp_path: Path) -> None:
    """A column asked for as a dictionary comes back dictionary-encoded; one the file lacks, or
    one that is not text, is read as it is stored (no error)."""
    bench = _toy_build(tmp_path / "bench", answer="42")
    read = open_bench(bench.root).item_columns(["task", "answer", "image_sha256", "options"],
                                                dictionaries=["task", "no_such_column", "options.list.element"])
    assert pa.types.is_dictionary(read.schema.field("task").type)
    assert read.column("task").to_pylist() == ["name"]
    assert pa.types.is_string(read.schema.field("answer").type)
    assert pa.types.is_dictionary(read.schema.field("options").type.value_type)
