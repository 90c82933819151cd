"""``biovqa export --format lmms-eval`` (a task folder lmms-eval's task manager loads) and
lmms-eval ``--log_samples`` files scored by ``biovqa score -p SAMPLES.jsonl``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from fixtures.cli_runner import cli

from biovqa.bench.folder import open_bench
from biovqa.interop.prompts import harness_requests


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory: pytest.TempPathFactory, demo_bench: Path) -> Path:
    out = tmp_path_factory.mktemp("lmms") / "tasks"
    from biovqa.cli.main import main

    try:
        main(["export", str(demo_bench), "--format", "lmms-eval", "--out", str(out)])
    except SystemExit as exited:
        assert not exited.code
    return out


def load_utils(task_dir: Path) -> Any:
    spec = importlib.util.spec_from_file_location("biovqa_lmms_utils", task_dir / "utils.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_task_folder_carries_the_engines_prompts(task_dir: Path, demo_bench: Path) -> None:
    bench = open_bench(demo_bench)
    requests = harness_requests(bench, "lmms-eval")
    docs = [json.loads(line) for line in (task_dir / "biovqa_c1_docs.jsonl").read_text().splitlines()]
    assert [d["item_id"] for d in docs] == bench.items.column("item_id").to_pylist()
    utils = load_utils(task_dir)
    for doc, request in zip(docs, requests):
        assert doc["text"] == request.user_text and doc["system"] == request.system
        assert utils.doc_to_target(doc) == request.item_id
        assert utils._image_path(doc) == request.image.resolve()
    yaml_text = (task_dir / "biovqa_c1.yaml").read_text()
    assert "max_new_tokens: 15" in yaml_text and "temperature: 0" in yaml_text  # paper App. B.2
    # a document leading outside its listed folder opens nothing
    with pytest.raises(ValueError, match="leads outside"):
        utils._image_path({**docs[0], "image": "../../etc/passwd"})


def test_gemma_export_carries_its_system_message(tmp_path: Path, demo_bench: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from biovqa.engine.presets import GEMMA_SYSTEM_MESSAGE

    code, err = cli(["export", demo_bench, "--format", "lmms-eval", "--model", "google/gemma-3-12b-it",
                     "--out", tmp_path / "gemma"], capsys)
    assert code == 0, err
    doc = json.loads((tmp_path / "gemma" / "biovqa_c1_docs.jsonl").read_text().splitlines()[0])
    utils = load_utils(tmp_path / "gemma")
    assert doc["system"] == GEMMA_SYSTEM_MESSAGE
    assert utils.doc_to_text(doc) == f"{GEMMA_SYSTEM_MESSAGE}\n\n{doc['text']}"
    assert utils.doc_to_messages(doc)[0] == {"role": "system",
                                             "content": [{"type": "text", "text": GEMMA_SYSTEM_MESSAGE}]}
    code, err = cli(["export", demo_bench, "--format", "csv", "--out", tmp_path / "x"], capsys)
    assert code == 2 and "unknown export format 'csv'" in err


def _needs_lmms_eval() -> None:
    """Skip without lmms-eval (the [lmms] extra), except in CI's vision environment, which installs it
    (it needs torchvision) and sets BIOVQA_REQUIRE_LMMS=1 so that a broken install fails."""
    import os

    if os.environ.get("BIOVQA_REQUIRE_LMMS") == "1":
        import lmms_eval  # noqa: F401
    else:
        pytest.importorskip("lmms_eval", reason="lmms-eval is not installed (the [lmms] extra; CI runs these "
                                                "in its vision environment)")


def test_task_folder_loads_through_lmms_eval(task_dir: Path, demo_bench: Path) -> None:
    _needs_lmms_eval()
    from lmms_eval.tasks import TaskManager, get_task_dict

    manager = TaskManager(include_path=str(task_dir), include_defaults=False)
    assert "biovqa_c1" in manager.all_tasks
    task = get_task_dict(["biovqa_c1"], manager)["biovqa_c1"]
    docs = list(task.test_docs())
    requests = harness_requests(open_bench(demo_bench), "lmms-eval")
    assert len(docs) == len(requests)
    assert task.doc_to_text(docs[0]) == requests[0].user_text
    assert task.doc_to_target(docs[0]) == requests[0].item_id
    assert len(task.doc_to_visual(docs[0])) == 1
    kwargs = task.config.generation_kwargs
    assert kwargs["max_new_tokens"] == 15 and kwargs["temperature"] == 0 and kwargs["until"] == []


def samples_row(doc_id: int, item_id: str, reply: Any) -> dict[str, Any]:
    """One line of lmms-eval 0.7.3's ``--log_samples`` file, written from lmms-eval's documented
    format (``EvaluationTracker.save_results_samples``: the doc and arguments dropped, a single
    request's ``filtered_resps`` flattened, ``resps`` dropped when equal, ``target`` as text, the
    task's metrics merged in) — not produced by lmms-eval itself, which cannot run a model here."""
    return {"doc_id": doc_id, "target": item_id, "filtered_resps": reply, "token_counts": [None],
            "doc_hash": f"{doc_id:064x}", "input": "…",
            "biovqa_reply_rate": 1.0 if isinstance(reply, str) and reply else 0.0}


def test_samples_file_scored_as_jsonl(tmp_path: Path, demo_bench: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    items = open_bench(demo_bench).items
    ids, golds = items.column("item_id").to_pylist(), items.column("answer").to_pylist()
    chosen = list(range(0, len(ids), 23))
    failed = "[LMMS_EVAL_REQUEST_FAILED after 5 retries] Connection refused"
    scripted = [str(golds[chosen[0]]), ["Zzyzx quux"], "", failed, [str(golds[chosen[4]])]]
    samples, plain = [], []
    for k, row in enumerate(chosen):
        reply = scripted[k % len(scripted)]
        samples.append(samples_row(row, ids[row], reply))
        text = reply[0] if isinstance(reply, list) else reply
        plain.append({"item_id": ids[row], "response": None if text == failed else text,
                      "status": "failed" if text == failed else "ok"})
    log = tmp_path / "20261201_samples_biovqa_c1.jsonl"
    log.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples), encoding="utf-8")
    jsonl = tmp_path / "replies.jsonl"
    jsonl.write_text("".join(json.dumps(p) + "\n" for p in plain), encoding="utf-8")

    for source, out in ((log, "from-samples"), (jsonl, "from-jsonl")):
        code, err = cli(["score", demo_bench, "-p", source, "-o", tmp_path / out, "--bootstrap", "0"], capsys)
        assert code == 0, err
    left = pq.read_table(tmp_path / "from-samples" / "items.parquet")
    assert left.equals(pq.read_table(tmp_path / "from-jsonl" / "items.parquet"))
    statuses = left.column("status").to_pylist()
    assert statuses.count("failed") == len(chosen[3::5]) and statuses.count("missing") == len(ids) - len(chosen)
    assert any(s == 1.0 for s in left.column("score").to_pylist())

    # another benchmark's samples are refused naming the first foreign id; a row without the
    # carried id names its line and field
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text(json.dumps(samples_row(0, "c2-attr-00001-01", "A")) + "\n", encoding="utf-8")
    code, err = cli(["score", demo_bench, "-p", foreign, "-o", tmp_path / "f"], capsys)
    assert code == 2 and "'c2-attr-00001-01' (row 1)" in err and "not in the benchmark" in err
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(samples_row(0, ids[0], "A")) + "\n"
                      + json.dumps({**samples_row(1, ids[1], "A"), "target": ""}) + "\n", encoding="utf-8")
    code, err = cli(["score", demo_bench, "-p", broken, "-o", tmp_path / "b"], capsys)
    assert code == 2 and "row 2, field 'target'" in err, err


@pytest.mark.slow
def test_lmms_eval_run_on_a_loopback_server_is_scored(task_dir: Path, demo_bench: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """lmms-eval itself runs the exported task with its OpenAI-compatible model against a scripted
    loopback server; the samples file it writes is scored equal to the same replies as JSONL."""
    _needs_lmms_eval()
    import os
    import subprocess
    import sys

    from fixtures.scripted_server import chat_reply, scripted_server

    def rule(text: str) -> str | None:
        if "phylum" in text.lower():
            return "Chordata"
        if "class" in text.lower():
            return None  # the server answers garbage: lmms-eval's failure marker
        return "Zzyzx quux"

    def answer(body: dict[str, Any]) -> bytes:
        parts = body["messages"][-1]["content"]
        text = " ".join(p.get("text", "") for p in parts if isinstance(p, dict))
        reply = rule(text)
        return b"not json" if reply is None else chat_reply(reply)

    limit = 6
    with scripted_server(answer) as server:
        env = {**os.environ, "OPENAI_API_KEY": "x", "NO_PROXY": "127.0.0.1", "HF_DATASETS_OFFLINE": "1"}
        done = subprocess.run(
            [sys.executable, "-m", "lmms_eval", "--model", "openai", "--model_args",
             f"model_version=m,base_url={server.base_url},max_retries=1", "--include_path", str(task_dir),
             "--tasks", "biovqa_c1", "--limit", str(limit), "--log_samples", "--output_path",
             str(tmp_path / "out")], capture_output=True, text=True, env=env, timeout=300)
        bodies = [json.loads(b) for b in server.bodies]
    samples = sorted((tmp_path / "out").rglob("*_samples_biovqa_c1.jsonl"))
    assert samples, done.stderr[-2000:]
    # the engine's decoding and the image reached the model
    assert {b["max_tokens"] if "max_tokens" in b else b.get("max_completion_tokens") for b in bodies} == {15}
    assert {b.get("temperature") for b in bodies} == {0}
    assert all(any(p.get("type") == "image_url" for p in b["messages"][-1]["content"]) for b in bodies)

    docs = [json.loads(line) for line in
            (task_dir / "biovqa_c1_docs.jsonl").read_text().splitlines()[:limit]]
    jsonl = tmp_path / "replies.jsonl"
    jsonl.write_text("".join(json.dumps({"item_id": d["item_id"], "response": rule(d["text"]),
                                         "status": "failed" if rule(d["text"]) is None else "ok"}) + "\n"
                             for d in docs), encoding="utf-8")
    for source, out in ((samples[0], "from-samples"), (jsonl, "from-jsonl")):
        code, err = cli(["score", demo_bench, "-p", source, "-o", tmp_path / out, "--bootstrap", "0"], capsys)
        assert code == 0, err
    left = pq.read_table(tmp_path / "from-samples" / "items.parquet")
    assert left.equals(pq.read_table(tmp_path / "from-jsonl" / "items.parquet"))
    assert left.column("status").to_pylist().count("failed") >= 1
