"""C3 scoring: parse every reply with its task's parser (Table 14) and score it with its task's
per-item kernel (the paper's Appendix C), both held by the task's spec record (:mod:`.tasks`),
then summarise (:mod:`.summary`).

Per-item table: the schema's core columns (``parsed`` = the recovered answer as text, ``score`` =
the item's value of its task's headline metric: counting cas, relative counting / distance /
position correct, absolute distance hit@20, localization IoU under the model's detected box
convention (unparsed = 0), viewpoint credit v, OCR exact match), then ``subset, dataset, tier,
condition, measure, cluster, gold, parse_status, correct, cas, pred_number, hit20, rel_err, iou,
box_convention, vas, steps, ang_err, char_acc, suffix_char_acc``.

``parse_status``: ``parsed``, ``unparsed`` (a reply the parser rejected), ``failed`` (the request
failed), ``missing`` (no reply). Every non-parsed item scores 0 on the headline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.bench.folder import Bench
from biovqa.bench.layout import REBUILD_HINT
from biovqa.components.registry import ScoreResult
from biovqa.components.c3.kernels import ScoreColumns, TaskRows
from biovqa.components.c3.summary import ITEM_COLUMNS, draw_ahead, summarize
from biovqa.components.c3.tasks import TASKS, TaskSpec
from biovqa.errors import BiovqaError
from biovqa.scoring.schema import core_columns
from biovqa.stats.draws import CountsDrawnAhead


_UNSEEN = object()
#: item columns copied into the score table as text (what the summary and report group by)
DESCRIPTIVE_COLUMNS = ("subset", "dataset", "tier", "condition", "measure", "cluster")


def score_items(items: pa.Table, predictions: pa.Table, options: Mapping[str, Any],
                tasks: Sequence[TaskSpec] = TASKS) -> pa.Table:
    """The per-item score table of ``predictions`` aligned with ``items`` under resolved
    ``options``; each task's rows go through its spec's parser and kernel (``tasks``: the C3 tasks;
    a task an item names that no spec declares stays unparsed and scores 0)."""
    by_name = {spec.name: spec for spec in tasks}
    n = items.num_rows
    item_tasks = items.column("task").to_pylist()
    answers = items.column("answer").to_pylist()
    gold_numbers = np.asarray(items.column("gold_number").cast(pa.float64()).to_numpy(zero_copy_only=False),
                              dtype=np.float64)
    responses = predictions.column("response").to_pylist()
    statuses = predictions.column("status").to_pylist()
    rows_of: dict[str, list[int]] = {}
    for i, task in enumerate(item_tasks):
        rows_of.setdefault(task, []).append(i)
    out = ScoreColumns(n)
    for task, task_rows in rows_of.items():
        spec = by_name.get(task)
        parse = None if spec is None else (lambda reply, _p=spec.parse: _p(reply, options))
        parsed = _parse_all(parse, task_rows, responses, statuses, out)
        if spec is None:
            continue
        rows = np.asarray(task_rows, dtype=np.int64)
        spec.kernel(TaskRows(rows, parsed, [answers[i] for i in task_rows], gold_numbers[rows], items, options), out)
    out.valid["score"][:] = True  # every item has a headline value (0 where nothing was parsed)
    core = core_columns(items, predictions, component="c3", parsed=pa.array(out.parsed, pa.string()),
                        score=out.array("score"))
    columns: dict[str, Any] = dict(core)
    for name in DESCRIPTIVE_COLUMNS:
        columns[name] = _text_column(items.column(name))
    columns["gold"] = _text_column(items.column("answer"))
    columns["parse_status"] = pa.array(out.parse_status, pa.string())
    for name in (name for name in ScoreColumns.FLOATS if name != "score"):  # score is a core column
        columns[name] = out.array(name)
    columns["box_convention"] = pa.array(out.box_convention, pa.string())
    columns["steps"] = pa.array(out.steps, pa.int8())
    return pa.table(columns)


def _parse_all(parse: Callable[[str], Any] | None, rows: list[int], responses: list[str | None],
               statuses: list[str | None], out: ScoreColumns) -> list[Any]:
    """Each row's parsed reply (None when not parsed); writes every row's ``parse_status``. The
    parsers are pure, so each distinct reply is parsed once."""
    seen: dict[str, Any] = {}
    parsed: list[Any] = []
    for i in rows:
        status = statuses[i]
        reply = responses[i] if status == "ok" else None
        value = None
        if reply is not None and parse is not None:
            value = seen.get(reply, _UNSEEN)
            if value is _UNSEEN:
                value = seen[reply] = parse(reply)
        parsed.append(value)
        out.parse_status[i] = "parsed" if value is not None else status if status in ("failed", "missing") \
            else "unparsed"
    return parsed


def _text_column(column: pa.ChunkedArray) -> pa.Array:
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return column.cast(pa.string()).combine_chunks()


@dataclass(frozen=True, eq=False)
class PreparedItems:
    """C3 scoring's work on the benchmark alone (:func:`prepare`): the items' scoring columns and
    the bootstrap's resampled counts, drawn on a worker thread from the items' clusters.
    :meth:`close` stops the draws where no score follows (a score's result closes them)."""

    items: pa.Table
    draws: CountsDrawnAhead

    def close(self) -> None:
        self.draws.close()


def prepare(bench: Bench, options: Mapping[str, Any], tasks: Sequence[TaskSpec] = TASKS) -> PreparedItems:
    """Read and check the items' scoring columns and start the resampled counts (C3's preparer:
    ``biovqa score`` runs it on a worker thread while it reads and aligns the replies)."""
    items = bench.item_columns(scoring_columns(tasks))
    if "condition" not in items.column_names:
        raise BiovqaError("this C3 benchmark has no 'condition' column: it was built when relative "
                          "counting's same/different condition was stored as its 'tier'", file=bench.items_path,
                          field="condition", hint=REBUILD_HINT)
    return PreparedItems(items=items, draws=draw_ahead(items, options, tasks))


def score(bench: Bench, predictions: pa.Table, options: Mapping[str, Any], *,
          prepared: PreparedItems | None = None) -> ScoreResult:
    """Score C3 predictions (aligned with ``bench.items``) under ``options``, the score options the
    registry resolved (:meth:`~biovqa.components.registry.Component.load` wraps the scorer):
    per-item table + summary. ``prepared``: what :func:`prepare` made of the benchmark, else it
    is prepared here."""
    prepared = prepared if prepared is not None else prepare(bench, options)
    return _scored(prepared.items, predictions, options, TASKS, prepared.draws)


def scoring_columns(tasks: Sequence[TaskSpec] = TASKS) -> list[str]:
    """The item columns scoring reads (the question texts, images and payloads stay on disk):
    the core and descriptive columns, the golds the kernels and sections compare with, and each
    task's cluster column."""
    return list(dict.fromkeys(("item_id", "component", "task", "answer", *DESCRIPTIVE_COLUMNS, *ITEM_COLUMNS,
                               *(spec.cluster for spec in tasks))))


def scored(items: pa.Table, predictions: pa.Table, options: Mapping[str, Any],
           tasks: Sequence[TaskSpec] = TASKS) -> ScoreResult:
    """Per-item scores of C3 ``predictions`` aligned with ``items`` under resolved ``options``
    (``COMPONENT.resolve_score_options``; ``tasks``: the C3 tasks), the summary aggregated when
    first read. The bootstrap's resampled counts depend on the items alone, so they are drawn on
    a second thread while the items are scored (the engine gives BLAS one thread meanwhile:
    :func:`biovqa.stats.bootstrap.one_blas_thread`)."""
    return _scored(items, predictions, options, tasks, draw_ahead(items, options, tasks))


def _scored(items: pa.Table, predictions: pa.Table, options: Mapping[str, Any], tasks: Sequence[TaskSpec],
            draws: CountsDrawnAhead) -> ScoreResult:
    with draws.closed_on_error():
        table = score_items(items, predictions, options, tasks)
    return ScoreResult(items=table, aggregate=lambda: summarize(table, items, options, draws, tasks),
                       release=draws.close)


def score_tables(items: pa.Table, predictions: pa.Table, options: Mapping[str, Any],
                 tasks: Sequence[TaskSpec] = TASKS) -> tuple[pa.Table, dict[str, Any]]:
    """(per-item scores, summary) of :func:`scored`."""
    with scored(items, predictions, options, tasks) as result:
        return result.items, result.summary


__all__ = ["score", "score_items", "score_tables", "scored"]
