from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fixtures.engine_helpers import make_bench

from biovqa.errors import BiovqaError
from biovqa.engine.runner import RunOptions, Selection, run_benchmark
from biovqa.engine.store import HEADER_FILE, STORE_DIR, merge_runs


def _run(bench: Path, out: Path, **kwargs: object) -> Path:
    selection = Selection(shard=kwargs.pop("shard", None))  # type: ignore[arg-type]
    options = RunOptions(backend="echo", selection=selection, progress=False,
                         **kwargs)  # type: ignore[arg-type]
    return run_benchmark(bench, out, options).predictions_path


@pytest.fixture()
def bench(tmp_path: Path) -> Path:
    return make_bench(tmp_path / "bench", n_images=14).root


def test_three_shards_merged_equal_one_run_byte_for_byte(tmp_path: Path, bench: Path) -> None:
    single = _run(bench, tmp_path / "single")
    shards = [tmp_path / f"shard{i}" for i in range(3)]
    for index, shard in enumerate(shards):
        _run(bench, shard, shard=(index, 3))
    sizes = [pq.read_metadata(s / "predictions.parquet").num_rows for s in shards]
    assert sum(sizes) == pq.read_metadata(single).num_rows and min(sizes) > 0
    merged = merge_runs(shards, tmp_path / "merged")
    assert merged.num_rows == pq.read_metadata(single).num_rows
    assert (tmp_path / "merged" / "predictions.parquet").read_bytes() == single.read_bytes()
    # merging in another order, or merging a merge with a shard again, changes nothing
    merge_runs(shards[::-1], tmp_path / "merged2")
    assert (tmp_path / "merged2" / "predictions.parquet").read_bytes() == single.read_bytes()
    merge_runs([tmp_path / "merged", shards[1]], tmp_path / "merged")
    assert (tmp_path / "merged" / "predictions.parquet").read_bytes() == single.read_bytes()


def test_resume_is_independent_of_the_shard_layout(tmp_path: Path, bench: Path) -> None:
    from biovqa.bench import open_bench
    from biovqa.engine.runner import select_items

    items = open_bench(bench).items
    single = _run(bench, tmp_path / "single")
    out = tmp_path / "resharded"
    _run(bench, out, shard=(0, 2))          # half the images, as if on one machine
    result = run_benchmark(bench, out, RunOptions(backend="echo", selection=Selection(
        shard=(1, 3)), progress=False))     # a different layout into the same folder
    assert result.resumed > 0 and result.asked < result.selected
    covered = {i for layout in [(0, 2), (1, 3)] for i in select_items(
        items, Selection(shard=layout)).column("item_id").to_pylist()}
    final = run_benchmark(bench, out, RunOptions(backend="echo", progress=False))
    assert final.asked == items.num_rows - len(covered)
    assert final.predictions_path.read_bytes() == single.read_bytes()


def _edit_header(run_dir: Path, field: str, value: object) -> None:
    path = run_dir / STORE_DIR / HEADER_FILE
    header = json.loads(path.read_text())
    header[field] = value
    path.write_text(json.dumps(header))


@pytest.mark.parametrize("field, words", [
    ("revision", "model revision"),
    ("prompt_template_hash", "prompts"),
])
def test_merge_refuses_stores_that_disagree(tmp_path: Path, bench: Path, field: str,
                                            words: str) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _run(bench, a, shard=(0, 2))
    _run(bench, b, shard=(1, 2))
    _edit_header(b, field, "something-else")
    with pytest.raises(BiovqaError) as info:
        merge_runs([a, b], tmp_path / "merged")
    message = str(info.value)
    assert "cannot merge" in message and words in message and "something-else" in message
    assert not (tmp_path / "merged" / "predictions.parquet").exists()


def test_merge_refuses_a_different_model_revision_from_a_real_run(tmp_path: Path,
                                                                   bench: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _run(bench, a, shard=(0, 2))
    _run(bench, b, shard=(1, 2), backend_options={"revision": "v2"})
    with pytest.raises(BiovqaError, match=r"model revision \(revision\).*'echo-1'.*'v2'"):
        merge_runs([a, b], tmp_path / "merged")


def test_merge_refuses_different_decoding_from_a_real_run(tmp_path: Path, bench: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _run(bench, a, shard=(0, 2))
    _run(bench, b, shard=(1, 2), max_new_tokens=64)
    with pytest.raises(BiovqaError, match="decoding settings"):
        merge_runs([a, b], tmp_path / "merged")


def test_merge_refuses_a_different_benchmark_from_a_real_run(tmp_path: Path, bench: Path) -> None:
    other = make_bench(tmp_path / "other-bench", n_images=14, seed=7).root
    a, b = tmp_path / "a", tmp_path / "b"
    _run(bench, a, shard=(0, 2))
    _run(other, b, shard=(1, 2))
    with pytest.raises(BiovqaError, match="benchmark manifest"):
        merge_runs([a, b], tmp_path / "merged")


def test_merge_refuses_a_different_model_from_a_real_run(tmp_path: Path, bench: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _run(bench, a, shard=(0, 2))
    _run(bench, b, shard=(1, 2), model="gemma-3-12b")  # another model, with its system message
    with pytest.raises(BiovqaError) as info:
        merge_runs([a, b], tmp_path / "merged")
    assert "model (model)" in str(info.value) and "prompts" in str(info.value)


def test_merge_into_a_folder_of_another_run_is_refused(tmp_path: Path, bench: Path) -> None:
    a = tmp_path / "a"
    _run(bench, a)
    target = tmp_path / "target"
    shutil.copytree(a, target)
    _edit_header(target, "model", "another")
    with pytest.raises(BiovqaError, match="already holds predictions"):
        merge_runs([a], target)
