from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fixtures.engine_helpers import make_bench, register_floor_component

from biovqa.cli.main import main
from biovqa.cli.run import parse_backend_options
from biovqa.records import PREDICTION_SCHEMA


def _cli(argv: list[str]) -> int:
    """Run the real ``biovqa`` entry point (all commands registered) and return its exit code."""
    from biovqa.cli.main import main as biovqa_main

    try:
        biovqa_main(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return 0


def test_run_with_the_baseline_backend_through_the_main_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    register_floor_component(monkeypatch, tmp_path)
    bench = make_bench(tmp_path / "bench", n_images=4).root
    out = tmp_path / "run"
    assert _cli(["run", str(bench), "--backend", "baseline", "--out", str(out),
                 "--no-progress"]) == 0
    table = pq.read_table(out / "predictions.parquet")
    assert table.schema == PREDICTION_SCHEMA and table.num_rows == 12
    card = json.loads((out / "run.json").read_text())
    assert card["backend"] == "baseline" and card["status"] == "complete"
    assert "predictions written" in capsys.readouterr().err


def test_run_shards_then_merge_then_plan(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    bench = make_bench(tmp_path / "bench", n_images=6).root
    common = ["--backend", "echo", "--no-progress"]
    assert _cli(["run", str(bench), "--out", str(tmp_path / "one"), *common]) == 0
    for index in range(2):
        assert _cli(["run", str(bench), "--out", str(tmp_path / f"s{index}"),
                     "--shard", f"{index}/2", *common]) == 0
    assert _cli(["merge", str(tmp_path / "s0"), str(tmp_path / "s1"),
                 "--out", str(tmp_path / "merged")]) == 0
    assert (tmp_path / "merged" / "predictions.parquet").read_bytes() == (
        tmp_path / "one" / "predictions.parquet").read_bytes()
    merged_card = json.loads((tmp_path / "merged" / "run.json").read_text())
    assert merged_card["status"] == "merged" and len(merged_card["merged_from"]) == 2
    capsys.readouterr()
    assert _cli(["plan", str(bench), "--model", "gemma-3-12b", "--throughput", "3",
                 "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["items"] == 18 and plan["images"] == 6
    assert plan["gpu_hours"] == pytest.approx(18 / 3 / 3600)


@pytest.mark.parametrize("argv, words", [
    (["--shard", "2/2"], "out of range"),
    (["--backend", "nope", "--model", "m"], "unknown backend"),
    (["--backend", "basline", "--model", "m"], "unknown backend 'basline' (did you mean 'baseline'?)"),
    (["--backend", "openai", "--model", "m"], "needs an endpoint"),
    (["--backend", "transformers"], "no model given"),
    (["--backend", "echo", "--option", "delay_s"], "NAME=VALUE"),
    (["--backend", "echo", "--executor", "spark"], "unknown executor"),
])
def test_errors_are_one_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      argv: list[str], words: str) -> None:
    bench = make_bench(tmp_path / "bench", n_images=1).root
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(bench), "--out", str(tmp_path / "run"), "--no-progress", *argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_missing_benchmark_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", str(tmp_path / "nowhere"), "--backend", "echo", "--out", str(tmp_path / "r")])
    assert "benchmark folder not found" in capsys.readouterr().err


def test_backend_options_are_typed() -> None:
    assert parse_backend_options(["a=1", "b=0.5", "c=true", "d=bf16", "e=none", "f=x=y"]) == {
        "a": 1, "b": 0.5, "c": True, "d": "bf16", "e": None, "f": "x=y"}


@pytest.mark.slow
@pytest.mark.models
def test_run_a_tiny_transformers_model_end_to_end(
    tmp_path: Path, tiny_model_dir: Callable[[str], Path]
) -> None:
    model = str(tiny_model_dir("gemma3"))
    bench = make_bench(tmp_path / "bench", n_images=3).root
    out = tmp_path / "run"
    argv = ["run", str(bench), "--model", model, "--backend", "transformers", "--device", "cpu",
            "--dtype", "float32", "--out", str(out), "--max-batch", "4", "--no-progress"]
    assert _cli(argv) == 0
    table = pq.read_table(out / "predictions.parquet")
    assert table.num_rows == 9 and set(table.column("status").to_pylist()) == {"ok"}
    assert all(t is not None and t > 0 for t in table.column("prompt_tokens").to_pylist())
    assert all(0 < t <= 15 for t in table.column("completion_tokens").to_pylist())
    card = json.loads((out / "run.json").read_text())
    assert card["backend"] == "transformers" and card["dtype"] == "float32"
    assert card["revision"] and card["backend_facts"]["backend_version"]
    first = (out / "predictions.parquet").read_bytes()
    assert _cli(argv) == 0  # resume: nothing asked again, same file
    assert (out / "predictions.parquet").read_bytes() == first


def test_baseline_on_the_built_demo_c1_benchmark(tmp_path: Path, demo_bench: Path) -> None:
    """The real C1 floor rules through ``biovqa run --backend baseline`` (the lead's demo path)."""
    from biovqa.components.c1.floor import floor_responses
    from biovqa.bench import open_bench

    out = tmp_path / "run"
    assert _cli(["run", str(demo_bench), "--backend", "baseline", "--out", str(out),
                 "--no-progress"]) == 0
    items = open_bench(demo_bench).items
    expected = dict(zip(items.column("item_id").to_pylist(),
                        floor_responses(items).to_pylist()))
    table = pq.read_table(out / "predictions.parquet")
    assert table.num_rows == items.num_rows
    assert {r["item_id"]: r["response"] for r in table.to_pylist()} == expected


@pytest.mark.slow
@pytest.mark.models
def test_run_against_a_real_openai_compatible_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transformers_server: dict[str, str]
) -> None:
    """`biovqa run --backend openai` against `transformers serve` on 127.0.0.1; the API key is
    read from the environment and written nowhere."""
    secret = "sk-test-never-written-0123456789"
    monkeypatch.setenv("BIOVQA_TEST_API_KEY", secret)
    bench = make_bench(tmp_path / "bench", n_images=2).root
    out = tmp_path / "run"
    argv = ["run", str(bench), "--model", transformers_server["model"], "--backend", "openai",
            "--base-url", transformers_server["base_url"], "--api-key-env", "BIOVQA_TEST_API_KEY",
            "--concurrency", "2", "--out", str(out), "--no-progress"]
    assert _cli(argv) == 0
    table = pq.read_table(out / "predictions.parquet")
    assert table.num_rows == 6 and set(table.column("status").to_pylist()) == {"ok"}
    card = json.loads((out / "run.json").read_text())
    assert card["backend_options"]["api_key_env"] == "BIOVQA_TEST_API_KEY"
    for path in out.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_a_run_whose_requests_all_failed_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = make_bench(tmp_path / "bench", n_images=2).root
    assert _cli(["run", str(bench), "--out", str(tmp_path / "run"), "--backend", "echo",
                 "--option", "fail_every=1", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "all 6 of 6 requests failed" in err and "echo: injected failure" in err
    assert (tmp_path / "run" / "predictions.parquet").exists()  # the failures are kept


def test_merge_of_incomplete_shards_warns_and_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = make_bench(tmp_path / "bench", n_images=6).root
    assert _cli(["run", str(bench), "--out", str(tmp_path / "s0"), "--shard", "0/2",
                 "--backend", "echo", "--no-progress"]) == 0
    capsys.readouterr()
    merge = ["merge", str(tmp_path / "s0"), "--out", str(tmp_path / "merged")]
    assert _cli(merge) == 1
    err = capsys.readouterr().err
    assert "partial" in err and "9 of 18 selected items (50.0%)" in err
    assert "missing shards 1/2" in err and "--allow-partial" in err
    assert _cli([*merge, "--allow-partial"]) == 0
    card = json.loads((tmp_path / "merged" / "run.json").read_text())
    assert card["coverage"]["covered"] == 9 and card["coverage"]["expected"] == 18


def test_a_limit_run_is_scored_on_its_selection(
    tmp_path: Path, demo_bench: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from biovqa.bench import open_bench

    total = open_bench(demo_bench).items.num_rows
    out = tmp_path / "run"
    assert _cli(["run", str(demo_bench), "--backend", "baseline", "--limit", "3", "--out",
                 str(out), "--no-progress"]) == 0
    card = json.loads((out / "run.json").read_text())
    selected = card["selection"]["selected"]
    assert card["selection"]["total"] == total and 0 < selected < total
    assert card["selection"]["stratified"] is True and card["selection"]["item_ids_sha256"]
    capsys.readouterr()
    predictions = str(out / "predictions.parquet")
    assert _cli(["score", str(demo_bench), "--predictions", predictions, "--out",
                 str(tmp_path / "subset")]) == 0
    assert f"subset: {selected:,} of {total:,} items, stratified" in capsys.readouterr().err
    summary = json.loads((tmp_path / "subset" / "summary.json").read_text())
    assert summary["subset"]["n_items"] == selected and summary["subset"]["of"] == total
    assert summary["n_items"] == selected and summary["statuses"]["missing"] == 0
    assert _cli(["score", str(demo_bench), "--predictions", predictions, "--out",
                 str(tmp_path / "all"), "--score-missing-as-wrong"]) == 0
    everything = json.loads((tmp_path / "all" / "summary.json").read_text())
    assert "subset" not in everything and everything["n_items"] == total
    assert everything["statuses"]["missing"] == total - selected


def test_preset_can_be_forced_and_the_card_says_which(tmp_path: Path) -> None:
    from biovqa.engine.executors import default_threads

    bench = make_bench(tmp_path / "bench", n_images=1).root
    out = tmp_path / "run"
    assert _cli(["run", str(bench), "--out", str(out), "--backend", "echo", "--model",
                 str(tmp_path / "my-copy"), "--preset", "gemma-3-12b", "--no-progress"]) == 0
    card = json.loads((out / "run.json").read_text())
    assert card["preset"] == {"preset": "gemma-3-12b", "matched_by": "forced"}
    assert card["model"] == "gemma-3-12b"  # the preset's wrappers and label were used
    assert 1 <= default_threads(2) <= default_threads(1)
