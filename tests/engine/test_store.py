from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError
from biovqa.records import PREDICTION_SCHEMA
from biovqa.engine.backends.base import Reply
from biovqa.engine.store import (
    STORE_SCHEMA,
    PredictionStore,
    StoreHeader,
    best_per_key,
    merge_runs,
    predictions_from_rows,
    read_header,
)

HEADER = StoreHeader(manifest_sha256="m" * 64, model="tiny", revision="r1",
                     prompt_template_hash="p" * 64, decoding={"greedy": True,
                                                              "max_new_tokens": {"c1": 15}})


def _replies(keys: list[str], status: str = "ok") -> list[Reply]:
    return [Reply(key=k, text=None if status == "failed" else f"answer-{k}", status=status,
                  error="boom" if status == "failed" else None, latency_s=None,
                  prompt_tokens=3, completion_tokens=1) for k in keys]


def test_flush_writes_one_complete_segment_and_no_temp_file(tmp_path: Path) -> None:
    store = PredictionStore.open(tmp_path, HEADER)
    store.append(["i1", "i2"], _replies(["k1", "k2"]), "tiny")
    assert store.segment_paths() == []  # buffered until flush_rows / flush_seconds
    path = store.flush()
    assert path is not None and path.exists()
    assert [p.name for p in store.segments_dir.iterdir() if p.name.startswith(".")] == []
    rows = pq.read_table(path)
    assert rows.schema.names == STORE_SCHEMA.names
    assert rows.column("key").to_pylist() == ["k1", "k2"]
    assert store.flush() is None  # nothing pending: no empty segment


def test_flush_rows_triggers_automatic_segments(tmp_path: Path) -> None:
    store = PredictionStore.open(tmp_path, HEADER, flush_rows=2, flush_seconds=1e9)
    for index in range(5):
        store.append([f"i{index}"], _replies([f"k{index}"]), "tiny")
    assert len(store.segment_paths()) == 2
    assert store.pending == 1


def test_temp_files_of_interrupted_writes_are_ignored(tmp_path: Path) -> None:
    store = PredictionStore.open(tmp_path, HEADER)
    store.append(["i1"], _replies(["k1"]), "tiny")
    store.flush()
    (store.segments_dir / ".tmp-half-written.parquet").write_bytes(b"PAR1 trunc")
    assert store.done_keys() == {"k1"}


def test_damaged_segment_is_reported_with_its_file(tmp_path: Path) -> None:
    store = PredictionStore.open(tmp_path, HEADER)
    (store.segments_dir / "0000-broken.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(InputFormatError) as info:
        store.read_rows()
    assert "0000-broken.parquet" in str(info.value)
    assert "delete it" in info.value.hint


def test_ok_wins_over_failed_and_failed_keys_can_be_retried(tmp_path: Path) -> None:
    store = PredictionStore.open(tmp_path, HEADER)
    store.append(["i1", "i2"], _replies(["k1", "k2"], status="failed"), "tiny")
    store.flush()
    assert store.done_keys() == {"k1", "k2"}
    assert store.done_keys(retry_failed=True) == set()
    store.append(["i1"], _replies(["k1"]), "tiny")
    table = store.materialize()
    assert table.column("item_id").to_pylist() == ["i1", "i2"]
    assert table.column("status").to_pylist() == ["ok", "failed"]
    assert table.column("response").to_pylist() == ["answer-k1", None]
    assert table.column("error").to_pylist() == [None, "boom"]
    assert table.schema == PREDICTION_SCHEMA


def test_best_per_key_keeps_the_earliest_of_equal_status() -> None:
    rows = pa.table({
        "key": ["b", "a", "a", "b", "a"],
        "item_id": ["ib", "ia", "ia", "ib", "ia"],
        "response": ["b1", None, "a2", "b2", "a3"],
        "status": ["ok", "failed", "ok", "ok", "ok"],
        "model": ["m"] * 5, "latency_s": [None] * 5, "prompt_tokens": [None] * 5,
        "completion_tokens": [None] * 5, "error": [None, "x", None, None, None],
    }, schema=STORE_SCHEMA)
    best = best_per_key(rows)
    assert best.column("key").to_pylist() == ["a", "b"]
    assert best.column("response").to_pylist() == ["a2", "b1"]


def test_materialize_filters_to_the_selection_and_sorts_by_item_id(tmp_path: Path) -> None:
    store = PredictionStore.open(tmp_path, HEADER)
    store.append(["z", "a", "m"], _replies(["kz", "ka", "km"]), "tiny")
    table = store.materialize(keys=["kz", "ka"])
    assert table.column("item_id").to_pylist() == ["a", "z"]
    assert pq.read_table(tmp_path / "predictions.parquet").equals(table)


def test_one_item_under_two_keys_is_an_error() -> None:
    rows = pa.table({"key": ["k1", "k2"], "item_id": ["same", "same"], "response": ["a", "b"],
                     "status": ["ok", "ok"], "model": ["m", "m"], "latency_s": [None, None],
                     "prompt_tokens": [None, None], "completion_tokens": [None, None],
                     "error": [None, None]}, schema=STORE_SCHEMA)
    with pytest.raises(BiovqaError, match="different keys"):
        predictions_from_rows(rows)


def test_compact_keeps_the_best_rows_in_one_segment(tmp_path: Path) -> None:
    store = PredictionStore.open(tmp_path, HEADER, flush_rows=1)
    store.append(["i1"], _replies(["k1"], status="failed"), "tiny")
    store.append(["i1"], _replies(["k1"]), "tiny")
    store.append(["i2"], _replies(["k2"]), "tiny")
    before = store.best_rows()
    store.compact()
    assert len(store.segment_paths()) == 1
    assert store.best_rows().equals(before)


@pytest.mark.parametrize("field, value", [
    ("manifest_sha256", "x" * 64),
    ("model", "other-model"),
    ("revision", "r2"),
    ("prompt_template_hash", "q" * 64),
    ("decoding", {"greedy": True, "max_new_tokens": {"c1": 32}}),
])
def test_reopening_with_a_different_header_is_refused(tmp_path: Path, field: str,
                                                      value: object) -> None:
    PredictionStore.open(tmp_path, HEADER)
    with pytest.raises(BiovqaError) as info:
        PredictionStore.open(tmp_path, replace(HEADER, **{field: value}))
    assert field in str(info.value)
    assert "new --out" in info.value.hint


def test_reopening_with_the_same_header_resumes(tmp_path: Path) -> None:
    first = PredictionStore.open(tmp_path, HEADER)
    first.append(["i1"], _replies(["k1"]), "tiny")
    first.flush()
    again = PredictionStore.open(tmp_path, HEADER)
    assert again.done_keys() == {"k1"}
    assert read_header(tmp_path) == HEADER


def test_segments_are_fsynced_before_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace",
                        lambda a, b: (events.append(f"rename:{Path(b).suffix}"),
                                      real_replace(a, b))[1])
    store = PredictionStore.open(tmp_path, HEADER)
    events.clear()
    store.append(["i1"], _replies(["k1"]), "tiny")
    store.flush()
    assert events == ["fsync", "rename:.parquet", "fsync"]  # file, rename, folder


def test_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(MissingResourceError, match="prediction store is missing"):
        read_header(tmp_path)
    with pytest.raises(MissingResourceError):
        merge_runs([tmp_path], tmp_path / "out")


def test_stale_temp_files_of_dead_writers_are_removed(tmp_path: Path) -> None:
    import subprocess

    from biovqa.engine import store as store_module

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = store_module._HOST
    segments = tmp_path / "store" / "segments"
    segments.mkdir(parents=True)
    stale = segments / f".tmp-{'1' * 20}-{host}-{dead.pid}-abcdef01-000000.parquet"
    live = segments / f".tmp-{'1' * 20}-{host}-{os.getpid()}-abcdef01-000000.parquet"
    foreign = segments / f".tmp-{'1' * 20}-otherhost-{dead.pid}-abcdef01-000000.parquet"
    for path in (stale, live, foreign):
        path.write_bytes(b"half")
    PredictionStore.open(tmp_path, HEADER)
    assert not stale.exists() and live.exists() and foreign.exists()
