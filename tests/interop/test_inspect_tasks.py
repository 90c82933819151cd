"""Bio-VQA as inspect_ai tasks, run for real with inspect's ``mockllm/model``, and the logs scored
by ``biovqa score -p LOG`` equal to the same replies given as JSONL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from fixtures.cli_runner import cli

inspect_ai = pytest.importorskip("inspect_ai", reason="needs the [inspect] extra")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import EvalLog  # noqa: E402
from inspect_ai.log._samples import sample_active  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402

from biovqa.bench.folder import open_bench  # noqa: E402

#: items per bench the scripted model answers (every k-th item, so that every task appears)
N_SAMPLES = 16


@pytest.fixture(scope="module")
def c2_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from biovqa.components.c2.build import build_c2
    from biovqa.synthetic import write_cub

    root = tmp_path_factory.mktemp("c2")
    cub = write_cub(root / "cub", n_classes=4, images_per_class=2, seed=7, image_size=(160, 120))
    build_c2(cub, root / "bench-c2")
    return root / "bench-c2"


def scripted_replies(bench_path: Path) -> tuple[list[str], dict[str, str | None]]:
    """Spread item ids and the reply to each, scripted from the gold: right (the gold answer),
    wrong, unparseable, and one errored request (None)."""
    items = open_bench(bench_path).items
    ids = items.column("item_id").to_pylist()
    golds = items.column("answer").to_pylist()
    step = max(1, len(ids) // N_SAMPLES)
    chosen = list(range(0, len(ids), step))[:N_SAMPLES]
    replies: dict[str, str | None] = {}
    for k, row in enumerate(chosen):
        gold = golds[row]
        replies[ids[row]] = [str(gold), "Zzyzx quux", "!!", None][k % 4] if k else None
    return [ids[row] for row in chosen], replies


def run_inspect(component: str, bench: Path, replies: dict[str, str | None], log_dir: Path,
                log_format: str = "eval") -> EvalLog:
    seen: list[Any] = []

    def reply(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        active = sample_active()
        assert active is not None and active.sample is not None
        seen.append((messages, config))
        text = replies[str(active.sample.id)]
        if text is None:
            raise RuntimeError("scripted request failure")
        output = ModelOutput.from_content(model="mockllm", content=text)
        # usage given, so that mockllm does not fetch a tokenizer (offline)
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output

    logs = inspect_eval(f"biovqa/{component}", task_args={"bench": str(bench)},
                        model=get_model("mockllm/model", custom_outputs=reply),
                        sample_id=list(replies), log_dir=str(log_dir), display="none",
                        fail_on_error=False, max_samples=4, log_format=log_format)
    assert len(logs) == 1 and logs[0].status == "success"
    run_inspect.seen = seen  # type: ignore[attr-defined]
    return logs[0]


def write_jsonl(path: Path, replies: dict[str, str | None]) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for item_id, text in replies.items():
            row = ({"item_id": item_id, "response": None, "status": "failed"} if text is None
                   else {"item_id": item_id, "response": text, "status": "ok"})
            handle.write(json.dumps(row) + "\n")
    return path


def same_scores(a: Path, b: Path) -> None:
    left, right = pq.read_table(a / "items.parquet"), pq.read_table(b / "items.parquet")
    assert left.equals(right)
    sa = json.loads((a / "summary.json").read_text())
    sb = json.loads((b / "summary.json").read_text())
    for summary in (sa, sb):
        summary.pop("provenance"), summary.pop("label")
    assert sa == sb


@pytest.mark.slow
@pytest.mark.parametrize("component", ["c1", "c2"])
def test_inspect_eval_scored_as_jsonl(component: str, demo_bench: Path, c2_bench: Path,
                                      tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = demo_bench if component == "c1" else c2_bench
    ids, replies = scripted_replies(bench)
    log = run_inspect(component, bench, replies, tmp_path / "logs")

    # one sample per asked item, the item id as sample id; the errored one carries its error
    by_id = {str(s.id): s for s in log.samples or []}
    assert sorted(by_id) == sorted(ids)
    errored = [i for i, text in replies.items() if text is None]
    assert sorted(i for i, s in by_id.items() if s.error is not None) == sorted(errored)

    # the prompt and decoding are the engine's: same user text, system message, cap, greedy
    from biovqa.engine.runner import build_requests, resolve_preset

    preset, wrap = resolve_preset("model")
    plan = {r.item_id: r for r in build_requests(open_bench(bench), open_bench(bench).items,
                                                 preset, wrap, "model", "").requests}
    for messages, config in run_inspect.seen:  # type: ignore[attr-defined]
        user = messages[-1]
        item = next(i for i, r in plan.items() if r.prompt == user.text)
        assert config.max_tokens == plan[item].max_new_tokens and config.temperature == 0.0
        assert [c.type for c in user.content] == ["image", "text"]

    code, err = cli(["score", bench, "-p", log.location, "-o", tmp_path / "from-log",
                     "--bootstrap", "0"], capsys)
    assert code == 0, err
    jsonl = write_jsonl(tmp_path / "replies.jsonl", replies)
    code, err = cli(["score", bench, "-p", jsonl, "-o", tmp_path / "from-jsonl",
                     "--bootstrap", "0"], capsys)
    assert code == 0, err
    same_scores(tmp_path / "from-log", tmp_path / "from-jsonl")

    scored = {r["item_id"]: r for r in pq.read_table(tmp_path / "from-log" / "items.parquet").to_pylist()}
    assert {r["status"] for i, r in scored.items() if i not in replies} == {"missing"}
    assert sorted(i for i, r in scored.items() if r["status"] == "failed") == sorted(errored)
    assert scored[errored[0]]["response"] is None
    # inspect's per-sample score is biovqa's per-item score; right replies score somewhere
    for item_id, sample in by_id.items():
        if sample.error is None:
            assert sample.scores["biovqa_scorer"].value == pytest.approx(scored[item_id]["score"])
            assert sample.scores["biovqa_scorer"].explanation.startswith("parsed: ")
    assert any(scored[i]["score"] == 1.0 for i in ids)

    # a folder of logs reads the same; a log for another benchmark is refused naming an id
    code, err = cli(["score", bench, "-p", tmp_path / "logs", "-o", tmp_path / "from-folder",
                     "--bootstrap", "0"], capsys)
    assert code == 0, err
    same_scores(tmp_path / "from-folder", tmp_path / "from-jsonl")
    other = c2_bench if component == "c1" else demo_bench
    code, err = cli(["score", other, "-p", log.location, "-o", tmp_path / "foreign"], capsys)
    first_in_log = str((log.samples or [])[0].id)
    assert code == 2 and "not in the benchmark" in err and f"{first_in_log!r} (row 1)" in err, err
    assert "Traceback" not in err


@pytest.mark.slow
def test_retry_log_replaces_a_failed_sample(demo_bench: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    ids, replies = scripted_replies(demo_bench)
    first = dict(list(replies.items())[:6])
    run_inspect("c1", demo_bench, first, tmp_path / "logs")
    failed = next(i for i, text in first.items() if text is None)
    # inspect's retry as a JSON-format log beside the .eval one
    retry = run_inspect("c1", demo_bench, {failed: "Aves"}, tmp_path / "logs", log_format="json")
    assert retry.location.endswith(".json")
    code, err = cli(["score", demo_bench, "-p", tmp_path / "logs", "-o", tmp_path / "scores",
                     "--bootstrap", "0"], capsys)
    assert code == 0, err
    rows = {r["item_id"]: r for r in pq.read_table(tmp_path / "scores" / "items.parquet").to_pylist()}
    assert rows[failed]["status"] == "ok" and rows[failed]["response"] == "Aves"
    # the same item answered by two logs is refused, naming the item
    run_inspect("c1", demo_bench, {failed: "Mammalia"}, tmp_path / "logs")
    code, err = cli(["score", demo_bench, "-p", tmp_path / "logs", "-o", tmp_path / "again"], capsys)
    assert code == 2 and repr(failed) in err and "two logs" in err, err


def test_task_refuses_a_bench_of_another_component(demo_bench: Path) -> None:
    from biovqa.errors import BiovqaError
    from biovqa.interop.inspect_tasks import bench_task

    with pytest.raises(BiovqaError, match="C1 benchmark, not C2"):
        bench_task(demo_bench, "c2", model="mockllm/model")


def test_gemma_preset_prompts_reach_the_samples(demo_bench: Path) -> None:
    """A preset's wrappers (Gemma's system message on C1, paper App. B.2) are in every sample."""
    from biovqa.engine.presets import GEMMA_SYSTEM_MESSAGE
    from biovqa.interop.inspect_tasks import bench_task

    task = bench_task(demo_bench, "c1", model="google/gemma-3-12b-it")
    first = task.dataset[0]
    assert first.input[0].role == "system" and first.input[0].text == GEMMA_SYSTEM_MESSAGE
    assert first.metadata["max_new_tokens"] == 15
    assert len(task.dataset) == open_bench(demo_bench).items.num_rows


def test_unreadable_logs_are_one_clear_error(demo_bench: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.eval"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    code, err = cli(["score", demo_bench, "-p", broken, "-o", tmp_path / "a"], capsys)
    assert code == 2 and "not a readable inspect_ai log" in err and "broken.eval" in err, err
    empty = tmp_path / "no-logs"
    empty.mkdir()
    code, err = cli(["score", demo_bench, "-p", empty, "-o", tmp_path / "b"], capsys)
    assert code == 2 and "holds no inspect_ai logs" in err, err
    assert "Traceback" not in err
