"""The Ray executor on a local CPU cluster gives the same predictions as the in-process run."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fixtures.engine_helpers import make_bench

from biovqa.engine.runner import RunOptions, run_benchmark

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[object]:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def test_ray_executor_equals_in_process_run(tmp_path: Path, ray_cluster: object) -> None:
    bench = make_bench(tmp_path / "bench", n_images=20).root
    local = run_benchmark(bench, tmp_path / "local", RunOptions(
        backend="echo", max_batch_items=4, progress=False))
    distributed = run_benchmark(bench, tmp_path / "ray", RunOptions(
        backend="echo", executor="ray", replicas=2, max_batch_items=4, progress=False))
    assert distributed.card["executor"] == "ray"
    assert distributed.card["backend_facts"]["ray_replicas"] == 2
    assert distributed.predictions_path.read_bytes() == local.predictions_path.read_bytes()
    # resuming under Ray skips everything already answered
    again = run_benchmark(bench, tmp_path / "ray", RunOptions(
        backend="echo", executor="ray", replicas=2, progress=False))
    assert again.asked == 0


@pytest.mark.models
def test_ray_executor_with_the_tiny_transformers_model(
    tmp_path: Path, ray_cluster: object, tiny_model_dir: Callable[[str], Path]
) -> None:
    model = str(tiny_model_dir("llava"))
    bench = make_bench(tmp_path / "bench", n_images=4).root
    options: dict = {"model": model, "backend": "transformers", "max_batch_items": 3,
                     "progress": False,
                     "backend_options": {"device": "cpu", "dtype": "float32"}}
    local = run_benchmark(bench, tmp_path / "local", RunOptions(**options))
    distributed = run_benchmark(bench, tmp_path / "ray", RunOptions(
        executor="ray", replicas=2, **options))
    import pyarrow.parquet as pq

    a, b = pq.read_table(local.predictions_path), pq.read_table(distributed.predictions_path)
    assert a.num_rows == b.num_rows == 12
    assert set(a.column("status").to_pylist()) == {"ok"}
    for column in ("item_id", "response", "status", "model", "prompt_tokens",
                   "completion_tokens"):
        assert a.column(column).equals(b.column(column)), column
