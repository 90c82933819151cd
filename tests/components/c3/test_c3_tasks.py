"""The C3 task spec records: every task-keyed tuple and table of the package is derived from
``tasks.TASKS``, and a task added as one more spec record (with its parser and kernel) is parsed,
scored, floored, summarised and reported by the same code as the eight of the paper."""

from __future__ import annotations

import pyarrow as pa
import pytest

from biovqa.components.c3 import COMPONENT
from biovqa.components.c3 import kernels as K
from biovqa.components.c3 import report as R
from biovqa.components.c3 import sections as S
from biovqa.components.c3.build.items import items_table, payload
from biovqa.components.c3.floor import floor_responses
from biovqa.components.c3.report import tables
from biovqa.components.c3.score import score_items, score_tables
from biovqa.components.c3.tasks import ITEM_CLUSTER, TABLE3, TASK_NAMES, TASKS, Table38Row, TaskSpec, letter_choice


def test_the_declaration_and_every_task_keyed_table_follow_the_spec_records() -> None:
    assert COMPONENT.tasks == TASK_NAMES == tuple(t.name for t in TASKS)
    assert COMPONENT.table3 == tuple(TABLE3) == tuple(t.column for t in TASKS)
    assert len(set(TASK_NAMES)) == len(TASKS) and len(set(TABLE3)) == len(TASKS)
    assert all(t.cluster in ("cluster", "item_id") for t in TASKS)
    # the paper's Table 9 counts, one per record
    assert sum(t.paper_count for t in TASKS) == 132504
    frame = tables([("m", {"table3": {t.column: {"value": 0.5} for t in TASKS}})])["table3"]
    assert list(frame.columns) == ["model", *TABLE3]


def _yes_no(reply: str | None, options: object) -> str | None:
    """The extra task's parser: a reply that is yes or no (any case, a trailing period)."""
    word = (reply or "").strip().rstrip(".").lower()
    return word if word in ("yes", "no") else None


#: a ninth task, declared the way the eight are: a yes/no question scored by the choice kernel
#: and floored by the majority answer
PRESENCE = TaskSpec(
    "presence", "prs", "Answer yes or no.", parse=_yes_no, kernel=K.score_choice, floor=K.floor_majority,
    section=S.relative_distance_section, headline="balanced_accuracy", metric="bal. acc.", macro_over="gold",
    table38=Table38Row("Presence", "accuracy", "balanced_accuracy", "chance"), paper_count=0)


def test_what_a_record_leaves_out_takes_the_shared_default() -> None:
    """The item as bootstrap cluster, the headline's key as floor metric; a letter-choice task
    reads its panels' noun and is headlined by balanced accuracy over the gold letters."""
    assert (PRESENCE.cluster, PRESENCE.floor_metric, PRESENCE.clustered) == (ITEM_CLUSTER, "balanced_accuracy", False)
    task = letter_choice("which_nest", "nest", "Answer with the nest's letter.", "nest", S.relative_distance_section,
                         Table38Row("Nest", "accuracy", "balanced_accuracy", "chance"), paper_count=0)
    assert task.parse("Nest C is closest.", {}) == "C" and task.parse("beetle C", {}) is None
    assert (task.kernel, task.floor, task.headline, task.floor_metric, task.macro_over) == (
        K.score_choice, K.floor_letter, "balanced_accuracy", "balanced_accuracy", "gold")


def _items(rows: list[dict[str, object]]) -> pa.Table:
    return items_table([{"item_id": f"c3-{r['task']}-{k}", "question": "q", "instruction": "i",
                         "image": f"x{k}.png", "image_sha256": "0" * 64, "source_id": f"s{k}", "cluster": f"s{k}",
                         "answer_payload": payload({}), **r} for k, r in enumerate(rows)])


def _predictions(replies: list[str | None]) -> pa.Table:
    return pa.table({"response": pa.array(replies, pa.string()),
                     "status": ["ok" if r is not None else "missing" for r in replies]})


def test_a_task_added_as_one_spec_record_is_parsed_scored_and_floored() -> None:
    rows = [{"task": "presence", "answer": "yes"}, {"task": "presence", "answer": "yes"},
            {"task": "presence", "answer": "no"}, {"task": "presence", "answer": "no"},
            {"task": "viewpoint", "answer": "left", "tier": "red_box"}]
    replies = ["Yes.", "no", "maybe", None, "left"]
    items = _items(rows)
    extended = (*TASKS, PRESENCE)
    table = score_items(items, _predictions(replies), COMPONENT.resolve_score_options({}), tasks=extended)
    assert table.column("parse_status").to_pylist() == ["parsed", "parsed", "unparsed", "missing", "parsed"]
    assert table.column("parsed").to_pylist() == ["yes", "no", None, None, "left"]
    assert table.column("score").to_pylist() == [1.0, 0.0, 0.0, 0.0, 1.0]
    # the eight tasks alone do not know it: its rows stay unparsed and score 0
    plain = score_items(items, _predictions(replies), COMPONENT.resolve_score_options({}))
    assert plain.column("parse_status").to_pylist()[:3] == ["unparsed"] * 3
    assert plain.column("score").to_pylist()[:2] == [0.0, 0.0]
    # its floor rule gives every item the majority answer (ties: the smaller label)
    assert floor_responses(items, tasks=extended).to_pylist()[:4] == ["no"] * 4
    assert floor_responses(items).to_pylist()[:4] == [""] * 4


@pytest.mark.parametrize("spec", TASKS, ids=TASK_NAMES)
def test_every_parser_reads_only_declared_options(spec: TaskSpec) -> None:
    """Each spec's parser runs under the resolved score options (an option a parser reads that the
    declaration lacks would be a KeyError here) and leaves a missing reply unparsed."""
    options = COMPONENT.resolve_score_options({})
    assert spec.parse(None, options) is None
    assert spec.parse("", options) is None


def test_a_task_added_as_one_spec_record_is_summarised_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [{"task": "presence", "answer": a} for a in ("yes", "yes", "yes", "no")]
    items = _items(rows)
    extended = (*TASKS, PRESENCE)
    _, summary = score_tables(items, _predictions(["yes", "no", "yes", "no"]),
                              COMPONENT.resolve_score_options({"bootstrap": 50}), tasks=extended)
    section = summary["presence"]
    assert section["accuracy"]["value"] == 0.75
    assert section["balanced_accuracy"]["value"] == (2 / 3 + 1) / 2  # recall of yes, recall of no
    assert summary["table3"]["prs"] == section["balanced_accuracy"]  # its headline, under its column
    assert summary["format"]["presence"]["n_parsed"] == 4
    assert summary["bootstrap"]["cluster"]["presence"] == "item" and summary["bootstrap"]["B"] == 50
    assert summary["table3"]["cnt"]["value"] is None  # the eight keep their columns, empty here
    # the report takes its columns and floor row from the records
    monkeypatch.setattr(R, "TASKS", extended)
    frame = R.tables([("m", summary)])["table3"]
    assert list(frame.columns) == ["model", *TABLE3, "prs"]
    assert frame.loc[0, "prs"] == round(section["balanced_accuracy"]["value"], 3)
    assert frame.loc[1, "model"] == "Floor" and frame.loc[1, "prs"] == 0.25
