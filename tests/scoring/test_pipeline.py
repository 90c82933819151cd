from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.bench import open_bench
from biovqa.scoring import PARSE_MAX_CHARS
from biovqa.scoring.pipeline import align_predictions, read_predictions, score_predictions
from biovqa.scoring.schema import ITEM_CORE_COLUMNS


def gold_predictions(bench_dir: Path) -> pa.Table:
    items = open_bench(bench_dir).items
    return pa.table({"item_id": items.column("item_id"), "response": items.column("answer")})


def test_jsonl_and_parquet_read_alike(tmp_path: Path, demo_bench: Path) -> None:
    table = gold_predictions(demo_bench).slice(0, 20)
    pq.write_table(table, tmp_path / "p.parquet")
    with open(tmp_path / "p.jsonl", "w") as handle:
        for row in table.to_pylist():
            handle.write(json.dumps(row) + "\n")
    assert read_predictions(tmp_path / "p.parquet").to_pylist() == read_predictions(tmp_path / "p.jsonl").to_pylist()


def test_a_jsonl_file_with_a_byte_order_mark_and_crlf_scores_as_without(tmp_path: Path, demo_bench: Path) -> None:
    table = gold_predictions(demo_bench)
    lines = [json.dumps(row) for row in table.to_pylist()]
    (tmp_path / "plain.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    for name in ("plain", "bom"):
        score_predictions(demo_bench, tmp_path / f"{name}.jsonl", tmp_path / f"s-{name}", options={"bootstrap": 0})
    assert (pq.read_table(tmp_path / "s-bom" / "items.parquet").column("score").to_pylist()
            == pq.read_table(tmp_path / "s-plain" / "items.parquet").column("score").to_pylist())
    assert all(v == 1 for v in pq.read_table(tmp_path / "s-bom" / "items.parquet").column("em").to_pylist())


def test_a_jsonl_line_beyond_the_line_bound_is_named_not_read(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write('{"item_id": "a", "response": "x"}\n')
        handle.write('{"item_id": "b", "response": "' + "y" * (2 << 20) + '"}\n')
    with pytest.raises(InputFormatError) as info:
        read_predictions(path)
    assert info.value.row == 2 and "longer than" in info.value.render()


def test_duplicate_item_ids_are_named(tmp_path: Path, demo_bench: Path) -> None:
    table = gold_predictions(demo_bench).slice(0, 5)
    pq.write_table(pa.concat_tables([table, table.slice(2, 1)]), tmp_path / "p.parquet")
    with pytest.raises(InputFormatError) as info:
        score_predictions(demo_bench, tmp_path / "p.parquet", tmp_path / "s", options={"bootstrap": 0})
    assert "1 duplicate item_id(s)" in info.value.render() and "rows 3 and 6" in info.value.render()
    assert not (tmp_path / "s").exists()


def _jsonl_with_blank_lines(path: Path, rows: list[dict]) -> None:
    """Each row after a blank line, so row k of the table is line 2k of the file."""
    path.write_text("".join("\n" + json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def test_every_reply_error_names_the_jsonl_line(tmp_path: Path, demo_bench: Path) -> None:
    """One row numbering for every check of a reply: the file's line, also past blank lines."""
    rows = gold_predictions(demo_bench).slice(0, 4).to_pylist()
    cases = {
        "null id": ([*rows[:2], {"item_id": None, "response": "x"}], "item_id is empty", 6),
        "status": ([*rows[:2], {**rows[2], "status": "done"}], "unknown status 'done'", 6),
        "unknown": ([*rows[:3], {"item_id": "c1:not-a-uuid:phylum", "response": "x"}],
                    "'c1:not-a-uuid:phylum' (row 8)", None),
        "duplicate": ([*rows[:3], rows[1]], "rows 4 and 8", None),
    }
    for name, (case, text, line) in cases.items():
        path = tmp_path / f"{name.replace(' ', '-')}.jsonl"
        _jsonl_with_blank_lines(path, case)
        with pytest.raises(InputFormatError) as info:
            score_predictions(demo_bench, path, tmp_path / f"s-{name}", options={"bootstrap": 0})
        assert text in info.value.render(), name
        assert info.value.row == line, name


def test_predictions_carry_their_file_rows(tmp_path: Path, demo_bench: Path) -> None:
    rows = gold_predictions(demo_bench).slice(0, 3).to_pylist()
    _jsonl_with_blank_lines(tmp_path / "p.jsonl", rows)
    assert read_predictions(tmp_path / "p.jsonl").column("row").to_pylist() == [2, 4, 6]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "p.parquet")
    assert read_predictions(tmp_path / "p.parquet").column("row").to_pylist() == [1, 2, 3]


def test_only_the_prediction_columns_are_read(tmp_path: Path, demo_bench: Path) -> None:
    table = gold_predictions(demo_bench).slice(0, 3)
    table = table.append_column("logprobs", pa.array([[0.1], [0.2], [0.3]]))
    pq.write_table(table, tmp_path / "p.parquet")
    assert read_predictions(tmp_path / "p.parquet").column_names == ["item_id", "response", "status", "model", "row"]


def test_unknown_item_is_refused(tmp_path: Path, demo_bench: Path) -> None:
    table = gold_predictions(demo_bench).slice(0, 3)
    extra = pa.table({"item_id": ["c1:not-a-uuid:phylum"], "response": ["Chordata"]})
    pq.write_table(pa.concat_tables([table, extra]), tmp_path / "p.parquet")
    predictions = read_predictions(tmp_path / "p.parquet")
    with pytest.raises(InputFormatError) as info:
        align_predictions(open_bench(demo_bench), predictions, source=tmp_path / "p.parquet")
    assert "not-a-uuid" in info.value.render() and "row 4" in info.value.render()


def test_bad_jsonl_line_is_named(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text('{"item_id": "a", "response": "x"}\n{"item_id": "b", resp\n')
    with pytest.raises(InputFormatError) as info:
        read_predictions(tmp_path / "p.jsonl")
    assert info.value.row == 2


def test_missing_response_column(tmp_path: Path) -> None:
    pq.write_table(pa.table({"item_id": ["a"], "text": ["x"]}), tmp_path / "p.parquet")
    with pytest.raises(InputFormatError) as info:
        read_predictions(tmp_path / "p.parquet")
    assert info.value.field == "response"


def test_missing_items_are_scored_as_missing(tmp_path: Path, demo_bench: Path) -> None:
    table = gold_predictions(demo_bench)
    pq.write_table(table.slice(0, 100), tmp_path / "p.parquet")
    aligned = align_predictions(open_bench(demo_bench), read_predictions(tmp_path / "p.parquet"))
    assert aligned.num_rows == table.num_rows
    statuses = aligned.column("status").to_pylist()
    assert statuses[:100] == ["ok"] * 100 and set(statuses[100:]) == {"missing"}


def test_failed_predictions_are_not_answers(tmp_path: Path, demo_bench: Path) -> None:
    table = gold_predictions(demo_bench).slice(0, 2)
    table = table.append_column("status", pa.array(["ok", "failed"]))
    pq.write_table(table, tmp_path / "p.parquet")
    aligned = align_predictions(open_bench(demo_bench), read_predictions(tmp_path / "p.parquet"))
    assert aligned.column("response").to_pylist()[:2] == [table.column("response")[0].as_py(), None]


def test_scoring_is_deterministic_and_perfect_on_gold(tmp_path: Path, demo_bench: Path) -> None:
    pq.write_table(gold_predictions(demo_bench), tmp_path / "p.parquet")
    for name in ("a", "b"):
        score_predictions(demo_bench, tmp_path / "p.parquet", tmp_path / name, options={"bootstrap": 50})
    for file in ("items.parquet", "summary.json"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()
    scored = pq.read_table(tmp_path / "a" / "items.parquet")
    assert scored.num_rows == open_bench(demo_bench).items.num_rows
    assert all(v == 1 for v in scored.column("em").to_pylist())


def test_missing_synonym_index_is_an_error(tmp_path: Path, bench_copy: Path) -> None:
    manifest_path = bench_copy / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["taxonomy_index"] = str(tmp_path / "gone")
    manifest_path.write_text(json.dumps(manifest))
    pq.write_table(gold_predictions(bench_copy).slice(0, 5), tmp_path / "p.parquet")
    with pytest.raises(MissingResourceError):
        score_predictions(bench_copy, tmp_path / "p.parquet", tmp_path / "s")


def test_long_replies_are_flagged_truncated_and_kept_whole(tmp_path: Path, demo_bench: Path) -> None:
    table = gold_predictions(demo_bench)
    ids = table.column("item_id").to_pylist()
    responses = table.column("response").to_pylist()
    over = responses[0] + " " + "x" * PARSE_MAX_CHARS  # parsed from its first PARSE_MAX_CHARS only
    responses[:3] = [over, "y" * PARSE_MAX_CHARS, "z" * (PARSE_MAX_CHARS + 1)]  # the cap itself is not cut
    status = ["ok", "ok", "failed"] + ["ok"] * (len(ids) - 3)  # a failed request has no reply to cut
    pq.write_table(pa.table({"item_id": ids, "response": responses, "status": status}), tmp_path / "p.parquet")
    out = score_predictions(demo_bench, tmp_path / "p.parquet", tmp_path / "scores", options={"bootstrap": 0})
    items = pq.read_table(out / "items.parquet")
    assert items.column_names[len(ITEM_CORE_COLUMNS)] == "truncated"
    assert items.schema.field("truncated").type == pa.bool_()
    flags = dict(zip(items.column("item_id").to_pylist(), items.column("truncated").to_pylist()))
    assert [flags[i] for i in ids[:3]] == [True, False, False] and sum(flags.values()) == 1
    replies = dict(zip(items.column("item_id").to_pylist(), items.column("response").to_pylist()))
    assert replies[ids[0]] == over  # the raw reply is kept whole
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["n_truncated"] == 1


def test_a_failed_aggregation_leaves_no_score_folder_and_no_drawing_thread(
        tmp_path: Path, demo_bench: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-item table is written while the summary is aggregated; when the aggregation fails,
    the half-made folder is dropped, an existing score folder is left as it was, and the
    bootstrap's drawing thread is stopped."""
    import threading

    import biovqa.components.c1.score as c1_score

    pq.write_table(gold_predictions(demo_bench), tmp_path / "p.parquet")
    out = score_predictions(demo_bench, tmp_path / "p.parquet", tmp_path / "scores", options={"bootstrap": 20})
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken_summary(*args: object, **kwargs: object) -> dict:
        raise RuntimeError("aggregation broke")

    monkeypatch.setattr(c1_score, "summarize", broken_summary)
    with pytest.raises(RuntimeError, match="aggregation broke"):
        score_predictions(demo_bench, tmp_path / "p.parquet", tmp_path / "scores", options={"bootstrap": 500})
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []
    assert not [t for t in threading.enumerate() if t.name.startswith(("bootstrap-draws", "write-scores"))]


def test_a_scorer_that_returns_something_else_is_named(
        tmp_path: Path, demo_bench: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import biovqa.components.c1.score as c1_score
    from biovqa.errors import BiovqaError

    pq.write_table(gold_predictions(demo_bench), tmp_path / "p.parquet")
    monkeypatch.setattr(c1_score, "score", lambda bench, predictions, options: (predictions, {}))

    def unwanted_prepare(bench, options):  # a scorer that takes no ``prepared`` is not prepared for
        raise AssertionError("prepared for a scorer that takes no prepared")

    monkeypatch.setattr(c1_score, "prepare", unwanted_prepare)
    with pytest.raises(BiovqaError, match="scorer of component 'c1' returned a tuple, not a ScoreResult"):
        score_predictions(demo_bench, tmp_path / "p.parquet", tmp_path / "scores")
    assert not (tmp_path / "scores").exists()


def _wait_until(condition, seconds: float = 10.0) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_the_preparation_runs_beside_the_alignment_and_reaches_the_scorer(
        tmp_path: Path, demo_bench: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A component's preparer (its scorer's work on the benchmark alone) runs on a worker thread
    while the predictions are aligned, and the scorer gets what it made; the scores are those of
    the scorer preparing for itself."""
    import threading

    import biovqa.components.c1.score as c1_score

    pq.write_table(gold_predictions(demo_bench), tmp_path / "p.parquet")
    seen: dict[str, object] = {}
    original_prepare, original_score = c1_score.prepare, c1_score.score

    def recording_prepare(bench, options):
        seen["thread"] = threading.current_thread().name
        seen["made"] = original_prepare(bench, options)
        return seen["made"]

    def recording_score(bench, predictions, options, *, prepared=None):
        seen["given"] = prepared
        return original_score(bench, predictions, options, prepared=prepared)

    monkeypatch.setattr(c1_score, "prepare", recording_prepare)
    monkeypatch.setattr(c1_score, "score", recording_score)
    out = score_predictions(demo_bench, tmp_path / "p.parquet", tmp_path / "prepared", options={"bootstrap": 50})
    assert str(seen["thread"]).startswith("prepare-scoring") and seen["given"] is seen["made"]
    monkeypatch.undo()
    from biovqa.components.registry import get_component

    component = get_component("c1")
    aligned = align_predictions(open_bench(demo_bench), read_predictions(tmp_path / "p.parquet"))
    with component.load("scorer")(open_bench(demo_bench), aligned, {"bootstrap": 50}) as unprepared:
        expected = unprepared.summary
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tasks"] == json.loads(json.dumps(expected["tasks"]))


def test_what_was_prepared_is_closed_when_the_alignment_fails(
        tmp_path: Path, demo_bench: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Predictions that do not fit the benchmark fail in the alignment, while the preparation
    runs: the alignment's error is reported and the bootstrap draws it started are stopped."""
    import biovqa.components.c1.score as c1_score

    table = gold_predictions(demo_bench).slice(0, 3)
    extra = pa.table({"item_id": ["c1:not-a-uuid:phylum"], "response": ["Chordata"]})
    pq.write_table(pa.concat_tables([table, extra]), tmp_path / "p.parquet")
    closed = []
    original_close = c1_score.PreparedItems.close

    def recording_close(self) -> None:
        original_close(self)
        closed.append(self)

    monkeypatch.setattr(c1_score.PreparedItems, "close", recording_close)
    with pytest.raises(InputFormatError, match="not in the benchmark"):
        score_predictions(demo_bench, tmp_path / "p.parquet", tmp_path / "scores", options={"bootstrap": 5000})
    assert _wait_until(lambda: bool(closed)) and not closed[0].draws._worker.is_alive()
    assert not (tmp_path / "scores").exists()


def test_a_preparation_error_comes_after_the_alignments_own(
        tmp_path: Path, demo_bench: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The alignment's checks come first, as when the scorer prepared for itself; with good
    predictions the preparation's error is the one reported."""
    import biovqa.components.c1.score as c1_score

    def failing_prepare(bench, options):
        raise InputFormatError("the items are broken", file="items.parquet", field="task")

    monkeypatch.setattr(c1_score, "prepare", failing_prepare)
    good = tmp_path / "good.parquet"
    pq.write_table(gold_predictions(demo_bench), good)
    with pytest.raises(InputFormatError, match="the items are broken"):
        score_predictions(demo_bench, good, tmp_path / "scores")
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.concat_tables([gold_predictions(demo_bench).slice(0, 3),
                                     pa.table({"item_id": ["c1:not-a-uuid:phylum"], "response": ["x"]})]), bad)
    with pytest.raises(InputFormatError, match="not in the benchmark"):
        score_predictions(demo_bench, bad, tmp_path / "scores")
