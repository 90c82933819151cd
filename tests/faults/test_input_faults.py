"""Malformed input through the real command line: each case must exit 2 with one message naming
the file (and row / field where there is one), no traceback, and leave earlier outputs as they
were (docs/reliability.md)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fixtures.cli_runner import cli




@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory, demo_bench: Path) -> Path:
    from biovqa.engine.runner import RunOptions, run_benchmark

    out = tmp_path_factory.mktemp("baseline") / "run"
    return run_benchmark(demo_bench, out, RunOptions(backend="baseline", progress=False)).predictions_path


def first_ids(bench: Path, n: int = 3) -> list[str]:
    return pq.read_table(bench / "items.parquet", columns=["item_id"]).column("item_id").to_pylist()[:n]


def jsonl(tmp: Path, body: bytes) -> Path:
    path = tmp / "predictions.jsonl"
    path.write_bytes(body)
    return path


def parquet(tmp: Path, table: pa.Table) -> Path:
    path = tmp / "predictions.parquet"
    pq.write_table(table, path)
    return path


# Each case writes a predictions file for the demo bench and names what the message must say.
PREDICTION_CASES: dict[str, tuple[Callable[[Path, list[str]], Path], list[str]]] = {
    "jsonl not UTF-8": (lambda t, ids: jsonl(t, b'{"item_id": "%s", "response": "caf\xe9"}\n' % ids[0].encode()),
                        ["predictions.jsonl", "row 1", "not UTF-8"]),
    "jsonl lone surrogate": (lambda t, ids: jsonl(t, ('{"item_id": "%s", "response": "\\ud800"}\n' % ids[0]).encode()),
                             ["row 1", "field 'response'", "surrogate"]),
    "jsonl numeric item_id": (lambda t, ids: jsonl(t, b'{"item_id": 7, "response": "x"}\n'),
                              ["row 1", "field 'item_id'", "must be a string"]),
    "jsonl numeric status": (lambda t, ids: jsonl(t, ('{"item_id": "%s", "response": "x", "status": 1}\n' % ids[0]).encode()),
                             ["row 1", "field 'status'"]),
    "jsonl array line": (lambda t, ids: jsonl(t, b'["a", "b"]\n'), ["row 1", "JSON object"]),
    "jsonl broken json": (lambda t, ids: jsonl(t, ('{"item_id": "%s", "response": "x"}\n{"item_id": ' % ids[0]).encode()),
                          ["row 2", "not valid JSON"]),
    "jsonl missing response": (lambda t, ids: jsonl(t, ('{"item_id": "%s"}\n' % ids[0]).encode()),
                               ["row 1", "field 'response'", "missing key"]),
    "jsonl empty": (lambda t, ids: jsonl(t, b"\n\n"), ["predictions.jsonl", "no rows"]),
    "jsonl unknown status": (lambda t, ids: jsonl(t, ('{"item_id": "%s", "response": "x", "status": "done"}\n' % ids[0]).encode()),
                             ["row 1", "field 'status'", "unknown status"]),
    "jsonl unknown item": (lambda t, ids: jsonl(t, b'{"item_id": "c1:nope:family", "response": "x"}\n'),
                           ["field 'item_id'", "not in the benchmark", "row 1"]),
    "jsonl duplicate item": (lambda t, ids: jsonl(t, ('{"item_id": "%s", "response": "x"}\n' % ids[0] * 2).encode()),
                             ["duplicate item_id", "rows 1 and 2"]),
    "parquet numeric item_id": (lambda t, ids: parquet(t, pa.table({"item_id": [1, 2], "response": ["a", "b"]})),
                                ["predictions.parquet", "field 'item_id'", "must be text"]),
    "parquet numeric response": (lambda t, ids: parquet(t, pa.table({"item_id": ids[:2], "response": [1.5, 2.0]})),
                                 ["field 'response'", "must be text"]),
    "parquet without response": (lambda t, ids: parquet(t, pa.table({"item_id": ids[:2]})),
                                 ["field 'response'", "lack a required column"]),
    "parquet null item_id": (lambda t, ids: parquet(t, pa.table({"item_id": [ids[0], None], "response": ["a", "b"]})),
                             ["row 2", "field 'item_id'", "empty"]),
    "parquet truncated": (lambda t, ids: (lambda p: (p.write_bytes(p.read_bytes()[:40]), p)[1])(
        parquet(t, pa.table({"item_id": ids, "response": ["a"] * len(ids)}))),
        ["predictions.parquet", "cannot read predictions"]),
    "csv predictions": (lambda t, ids: (lambda p: (p.write_text("item_id,response\n"), p)[1])(t / "p.csv"),
                        ["p.csv", "unsupported predictions format"]),
}


@pytest.mark.parametrize("case", sorted(PREDICTION_CASES))
def test_bad_predictions(case: str, tmp_path: Path, demo_bench: Path, baseline: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scores"
    assert cli(["score", demo_bench, "-p", baseline, "-o", out, "--bootstrap", "0"], capsys)[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    make, says = PREDICTION_CASES[case]
    code, err = cli(["score", demo_bench, "-p", make(tmp_path, first_ids(demo_bench)), "-o", out], capsys)
    assert code == 2, err
    for text in says:
        assert text in err, (text, err)
    assert "Traceback" not in err and "internal error" not in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # earlier scores untouched


def test_text_columns_of_any_arrow_text_type_are_accepted(tmp_path: Path, demo_bench: Path, baseline: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    table = pq.read_table(baseline, columns=["item_id", "response"])
    large = pa.table({"item_id": table.column("item_id").cast(pa.large_string()),
                      "response": table.column("response").dictionary_encode()})
    path = parquet(tmp_path, large)
    assert cli(["score", demo_bench, "-p", path, "-o", tmp_path / "a", "--bootstrap", "0"], capsys)[0] == 0
    assert cli(["score", demo_bench, "-p", baseline, "-o", tmp_path / "b", "--bootstrap", "0"], capsys)[0] == 0
    a = pq.read_table(tmp_path / "a" / "items.parquet")
    b = pq.read_table(tmp_path / "b" / "items.parquet")
    assert a.column("score").to_pylist() == b.column("score").to_pylist()


SUMMARY_CASES: dict[str, tuple[bytes, list[str]]] = {
    "summary is a list": (b"[]", ["summary.json", "must be a JSON object"]),
    "summary not UTF-8": (b'{"component": "c\xff1"}', ["summary.json", "not UTF-8"]),
    "summary broken JSON": (b'{"component": ', ["summary.json", "not valid JSON", "row 1"]),
    "summary of an older version": (b'{"component": "c1", "meta": {}}', ["summary lacks label"]),
    "summary wrong types": (json.dumps({"component": "c1", "label": "m", "n_items": "many", "statuses": {},
                                       "options": {}, "table3": {}}).encode(), ["field 'n_items'", "wrong type"]),
    "summary estimate of another form": (json.dumps({
        "component": "c1", "label": "m", "n_items": 1, "statuses": {}, "options": {},
        "table3": {"phy": {"value": 1.0}}}).encode(), ["table3", "estimate"]),
    "summary of an unknown component": (json.dumps({
        "component": "c9", "label": "m", "n_items": 1, "statuses": {}, "options": {}, "table3": {}}).encode(),
        ["unknown component 'c9'"]),
}


@pytest.mark.parametrize("case", sorted(SUMMARY_CASES))
def test_bad_score_folders(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = tmp_path / "scores"
    scores.mkdir()
    body, says = SUMMARY_CASES[case]
    (scores / "summary.json").write_bytes(body)
    report = tmp_path / "report"
    report.mkdir()
    (report / "index.html").write_text("earlier report")
    # --overwrite: the folder is not a report biovqa wrote; the bad summary must still leave it as it was
    code, err = cli(["report", scores, "-o", report, "--overwrite"], capsys)
    assert code == 2, err
    for text in says:
        assert text in err, (text, err)
    assert "Traceback" not in err and (report / "index.html").read_text() == "earlier report"


MANIFEST_CASES: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "manifest not UTF-8": (lambda b: (b / "manifest.json").write_bytes(b'{"component": "\xff"}'),
                           ["manifest.json", "not UTF-8"]),
    "manifest is a list": (lambda b: (b / "manifest.json").write_text("[1, 2]"),
                           ["manifest.json", "must be a JSON object"]),
    "manifest without component": (lambda b: (b / "manifest.json").write_text('{"counts": {}}'),
                                   ["manifest.json", "field 'component'"]),
    "manifest component not text": (lambda b: (b / "manifest.json").write_text('{"component": 1, "counts": {}}'),
                                    ["field 'component'", "must be a JSON text"]),
    "items missing": (lambda b: (b / "items.parquet").unlink(), ["items.parquet", "missing"]),
    "items not parquet": (lambda b: (b / "items.parquet").write_text("item_id\n"),
                          ["items.parquet", "differs from the sha256"]),
    "manifest without items_sha256": (lambda b: _edit_manifest(b, lambda m: m.pop("items_sha256")),
                                      ["manifest records no items_sha256"]),
    "items edited after build": (lambda b: _edit_items(b, lambda t: t.set_column(
        t.schema.get_field_index("answer"), "answer", pa.array(["x"] * t.num_rows))), ["differs from the sha256"]),
    "items without answer, hash updated": (lambda b: _edit_items(b, lambda t: t.drop(["answer"]), rehash=True),
                                           ["items lack the column(s) answer"]),
}


def _edit_manifest(bench: Path, change: Callable[[dict], object]) -> None:
    manifest = json.loads((bench / "manifest.json").read_text())
    change(manifest)
    (bench / "manifest.json").write_text(json.dumps(manifest))


def _edit_items(bench: Path, change: Callable[[pa.Table], pa.Table], rehash: bool = False) -> None:
    from biovqa.bench.folder import sha256_file

    pq.write_table(change(pq.read_table(bench / "items.parquet")), bench / "items.parquet")
    if rehash:
        _edit_manifest(bench, lambda m: m.__setitem__("items_sha256", sha256_file(bench / "items.parquet")))


@pytest.mark.parametrize("command", ["audit", "score", "run", "plan"])
@pytest.mark.parametrize("case", sorted(MANIFEST_CASES))
def test_bad_benchmark_folders(case: str, command: str, tmp_path: Path, demo_bench: Path, baseline: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "bench"
    shutil.copytree(demo_bench, bench)
    damage, says = MANIFEST_CASES[case]
    damage(bench)
    argv: list[str | Path] = {
        "audit": ["audit", bench],
        "score": ["score", bench, "-p", baseline, "-o", tmp_path / "s"],
        "run": ["run", bench, "--backend", "baseline", "-o", tmp_path / "r", "--no-progress"],
        "plan": ["plan", bench, "--model", "qwen2_5-vl-7b"],
    }[command]
    code, err = cli(argv, capsys)
    assert code == 2, err
    for text in says:
        assert text in err, (text, err)
    assert "Traceback" not in err and "internal error" not in err


@pytest.mark.parametrize("command", ["score", "report", "run", "demo", "taxonomy index"])
def test_out_is_a_file(command: str, tmp_path: Path, demo_bench: Path, demo_data: Path, baseline: Path,
                       capsys: pytest.CaptureFixture[str]) -> None:
    taken = tmp_path / "taken"
    taken.write_text("mine")
    if command == "report":
        assert cli(["score", demo_bench, "-p", baseline, "-o", tmp_path / "s", "--bootstrap", "0"], capsys)[0] == 0
    argv: list[str | Path] = {
        "score": ["score", demo_bench, "-p", baseline, "-o", taken],
        "report": ["report", tmp_path / "s", "-o", taken],
        "run": ["run", demo_bench, "--backend", "baseline", "-o", taken, "--no-progress"],
        "demo": ["demo", "-o", taken],
        "taxonomy index": ["taxonomy", "index", demo_data / "backbone", "-o", taken],
    }[command]
    code, err = cli(argv, capsys)
    assert code == 2, err
    assert str(taken) in err and "Traceback" not in err and "internal error" not in err
    assert taken.read_text() == "mine"


def test_a_misbehaving_server_fails_its_items_never_the_run(tmp_path: Path, demo_bench: Path) -> None:
    """A loopback OpenAI-compatible server that echoes a 5-character key, replies with a lone
    surrogate, a refusal, content parts and ``usage: []``: ``biovqa run`` (a subprocess) finishes,
    records the broken replies as failed, keeps the rest, stores no key and says it masked one."""
    import itertools
    import os
    import subprocess
    import sys
    import threading

    from fixtures.scripted_server import chat_reply, scripted_server

    key = "k3y5Z"
    shapes = itertools.cycle([
        chat_reply(f"Aves (your key {key})"),
        b'{"choices": [{"message": {"content": "Ave\\ud800s"}}], "usage": []}',
        json.dumps({"choices": [{"message": {"content": None, "refusal": "no"}}]}).encode(),
        json.dumps({"choices": [{"message": {"content": [{"type": "text", "text": "Aves"}]}}],
                    "usage": []}).encode(),
        chat_reply("Chordata", usage="odd"),
    ])
    lock = threading.Lock()

    def answer(request: dict) -> bytes:
        with lock:
            return next(shapes)

    out = tmp_path / "run"
    with scripted_server(answer) as server:
        ran = subprocess.run([sys.executable, "-m", "biovqa", "run", str(demo_bench), "--backend", "openai",
                              "--model", "tiny", "--base-url", server.base_url, "--api-key-env", "BIOVQA_TEST_KEY",
                              "--limit", "2", "--max-retries", "0", "--concurrency", "1", "-o", str(out),
                              "--no-progress"], capture_output=True, text=True, timeout=300,
                             env={**os.environ, "BIOVQA_TEST_KEY": key, "HF_HUB_OFFLINE": "1"})
    assert ran.returncode == 0, ran.stderr
    table = pq.read_table(out / "predictions.parquet").to_pylist()
    statuses = [row["status"] for row in table]
    assert statuses.count("failed") >= 2 and statuses.count("ok") >= 2, statuses
    assert all(row["response"] for row in table if row["status"] == "ok")  # never an empty answer
    assert all(row["response"] is None for row in table if row["status"] == "failed")
    stored = (out / "predictions.parquet").read_bytes() + (out / "run.json").read_bytes()
    assert key.encode() not in stored and not any(key in json.dumps(row) for row in table)
    card = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert card["redactions"]["masked"] >= 1 and "shorter than" in card["redactions"]["warning"]
    assert card["backend_facts"]["usage_unreadable"] >= 1
