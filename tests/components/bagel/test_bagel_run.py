"""Text-only BAGEL items through the real engine and backends: a request without an image."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures.bagel_items import APPENDIX_B, write_jsonl

import biovqa
from biovqa.components.bagel.build import build_bagel


@pytest.fixture
def bagel_bench(tmp_path: Path) -> Path:
    return build_bagel([write_jsonl(tmp_path / "b.jsonl", APPENDIX_B)], tmp_path / "bench").root


def _check_and_score(run: Path, bench: Path, tmp_path: Path) -> dict:
    table = pq.read_table(run / "predictions.parquet")
    assert table.num_rows == len(APPENDIX_B) and set(table.column("status").to_pylist()) == {"ok"}
    assert all(isinstance(text, str) for text in table.column("response").to_pylist())
    summary = json.loads((biovqa.score(bench, run / "predictions.parquet", tmp_path / "score", bootstrap=0)
                          / "summary.json").read_text())
    assert summary["statuses"]["ok"] == len(APPENDIX_B)
    assert summary["format"]["n_parsed"] + summary["format"]["n_unparsed"] == len(APPENDIX_B)
    return summary


@pytest.mark.slow
@pytest.mark.models
@pytest.mark.parametrize("kind", ["gemma3", "llava"])
def test_tiny_vlm_answers_a_text_only_bench_through_transformers(
        tmp_path: Path, bagel_bench: Path, tiny_model_dir: Callable[[str], Path], kind: str) -> None:
    run = tmp_path / "run"
    biovqa.run(bagel_bench, run, backend="transformers", model=str(tiny_model_dir(kind)),
               backend_options={"device": "cpu", "dtype": "float32"}, progress=False)
    _check_and_score(run, bagel_bench, tmp_path)
    assert all(t > 0 for t in pq.read_table(run / "predictions.parquet").column("prompt_tokens").to_pylist())


@pytest.mark.slow
@pytest.mark.models
def test_tiny_text_only_language_model_through_transformers(tmp_path: Path, bagel_bench: Path) -> None:
    """A causal LM without a vision tower (the "LLM inside the VLM" control) on a text-only bench."""
    pytest.importorskip("transformers")
    from fixtures.tiny_text_model import build_tiny_text_lm

    model = build_tiny_text_lm(tmp_path / "text-lm")
    run = tmp_path / "run"
    biovqa.run(bagel_bench, run, backend="transformers", model=str(model),
               backend_options={"device": "cpu", "dtype": "float32", "text_only": True}, progress=False)
    _check_and_score(run, bagel_bench, tmp_path)
    card = json.loads((run / "run.json").read_text())
    assert card["backend"] == "transformers"


@pytest.mark.slow
@pytest.mark.models
def test_openai_backend_sends_a_text_only_request_to_transformers_serve(
        tmp_path: Path, bagel_bench: Path, transformers_server: dict[str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIOVQA_TEST_API_KEY", "sk-test")
    run = tmp_path / "run"
    biovqa.run(bagel_bench, run, backend="openai", model=transformers_server["model"],
               backend_options={"base_url": transformers_server["base_url"], "concurrency": 2,
                                "api_key_env": "BIOVQA_TEST_API_KEY"}, progress=False)
    _check_and_score(run, bagel_bench, tmp_path)
