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


@pytest.fixture
def raw_bench(tmp_path: Path) -> Path:
    return build_bagel([write_jsonl(tmp_path / "b.jsonl", APPENDIX_B)], tmp_path / "raw-bench", mode="raw").root


@pytest.mark.slow
@pytest.mark.models
def test_raw_mode_runs_without_a_chat_template_through_transformers(tmp_path: Path, raw_bench: Path) -> None:
    """``--mode raw`` (bagel.md §5.1, base models): the prompt is tokenised as it is, no template."""
    pytest.importorskip("transformers")
    from fixtures.tiny_text_model import build_tiny_text_lm
    from transformers import AutoTokenizer

    from biovqa.bench import open_bench

    model = build_tiny_text_lm(tmp_path / "text-lm")
    run = tmp_path / "run"
    biovqa.run(raw_bench, run, backend="transformers", model=str(model),
               backend_options={"device": "cpu", "dtype": "float32", "text_only": True}, progress=False)
    _check_and_score(run, raw_bench, tmp_path)
    card = json.loads((run / "run.json").read_text())
    assert card["prompting"]["modes"] == ["raw"]
    assert card["decoding"]["max_new_tokens"] == {"bagel": 5}
    tokenizer = AutoTokenizer.from_pretrained(model)
    prompts = {row["item_id"]: row["question"] for row in open_bench(raw_bench).items.to_pylist()}
    table = pq.read_table(run / "predictions.parquet").to_pylist()
    assert [row["prompt_tokens"] for row in table] == [
        len(tokenizer(prompts[row["item_id"]])["input_ids"]) for row in table]


@pytest.mark.slow
@pytest.mark.models
def test_raw_mode_through_the_openai_backend_matches_the_transformers_backend(
        tmp_path: Path, raw_bench: Path, transformers_server: dict[str, str],
        tiny_model_dir: Callable[[str], Path]) -> None:
    """Raw mode over ``/v1/completions`` of a real ``transformers serve`` gives the transformers
    backend's raw replies (the same tiny LLaVA, no chat template on either side)."""
    served, offline = tmp_path / "served", tmp_path / "offline"
    biovqa.run(raw_bench, served, backend="openai", model=transformers_server["model"],
               backend_options={"base_url": transformers_server["base_url"], "concurrency": 2,
                                "api_key_env": None}, progress=False)
    biovqa.run(raw_bench, offline, backend="transformers", model=str(tiny_model_dir("llava")),
               backend_options={"device": "cpu", "dtype": "float32"}, progress=False)
    _check_and_score(served, raw_bench, tmp_path / "s1")
    ours = pq.read_table(offline / "predictions.parquet").select(["item_id", "response", "prompt_tokens"])
    theirs = pq.read_table(served / "predictions.parquet").select(["item_id", "response", "prompt_tokens"])
    assert theirs.to_pylist() == ours.to_pylist()
