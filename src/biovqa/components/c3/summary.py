"""The C3 summary of per-item scores: each task's section (:mod:`.sections`, named by the task's
spec record), its parse counts (``format``), Table 3 and the bootstrap settings (the paper's
Appendix C metrics and the bootstrap of L.3).

Top-level keys: one section per task, named as the task (listed in :mod:`.sections`), then::

    table3     each task's Table 3 column → its section's headline metric (the spec's ``headline``)
    format     per task: n, n_replies, n_parsed, n_unparsed, n_failed, n_missing, parse_rate
    bootstrap  B, seed, confidence, cluster{task: what was resampled: source photograph / plate, or item}

Every estimate is ``{value, lo, hi, n}``; bounds from a seeded percentile bootstrap that resamples
each task's clusters (the spec's ``cluster``: source photographs / plates for counting and absolute
distance, items elsewhere). A task without items is absent; its Table 3 column is an estimate with
a null value and n = 0.

The resampled counts depend on the items' clusters alone, so :func:`draw_ahead` starts drawing them
for every task before the first reply is scored (on a second thread, :mod:`biovqa.stats.draws`),
and :func:`summarize` runs the sections in :data:`SUMMARY_ORDER`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.components.c3.kernels import box_conventions, vas_weights
from biovqa.components.c3.sections import Rows, Settings
from biovqa.components.c3.tasks import (ABSOLUTE_DISTANCE, COUNTING, LOCALIZATION, OCR, RELATIVE_COUNTING,
                                        RELATIVE_DISTANCE, RELATIVE_POSITION, TASKS, VIEWPOINT, TaskSpec)
from biovqa.scoring.schema import estimate
from biovqa.stats.bootstrap import Bootstrap

if TYPE_CHECKING:
    from biovqa.stats.draws import CountsDrawnAhead

#: the order the sections are computed and their resampled counts drawn in (the summary lists
#: them in TASKS order): the tasks with many clusters to draw and little to compute go last, so
#: their draws are ready when the sections before them are done (benchmarks/score_c3.py); a task
#: not listed comes last
SUMMARY_ORDER: tuple[TaskSpec, ...] = (COUNTING, ABSOLUTE_DISTANCE, VIEWPOINT, LOCALIZATION, RELATIVE_DISTANCE,
                                       RELATIVE_POSITION, OCR, RELATIVE_COUNTING)
#: the score-table and items-table columns a section may read besides the scores
ITEM_COLUMNS = ("image_width", "image_height", "gold_box", "gold_number")


def _in_summary_order(tasks: Sequence[TaskSpec]) -> list[TaskSpec]:
    return sorted(tasks, key=lambda t: SUMMARY_ORDER.index(t) if t in SUMMARY_ORDER else len(SUMMARY_ORDER))


def cluster_sizes(table: pa.Table, tasks: Sequence[TaskSpec] = TASKS) -> dict[str, int]:
    """Bootstrap clusters per task of a C3 items or scores table (each spec's ``cluster``
    column: source photographs / plates, or items), in :data:`SUMMARY_ORDER`."""
    column = table.column("task")
    sizes = {}
    for task in _in_summary_order(tasks):
        mask = pc.equal(column, task.name)
        sizes[task.name] = len(pc.unique(table.column(task.cluster).filter(mask)))
    return sizes


def draw_ahead(table: pa.Table, options: Mapping[str, Any], tasks: Sequence[TaskSpec] = TASKS
               ) -> CountsDrawnAhead:
    """Start drawing every task's resampled cluster counts for ``options`` (none at B = 0); pass
    the result to :func:`summarize`, and close it afterwards."""
    from biovqa.stats.draws import CountsDrawnAhead

    B = int(options["bootstrap"])
    return CountsDrawnAhead(cluster_sizes(table, tasks) if B > 0 else {}, B=max(B, 0), seed=int(options["seed"]))


def summarize(scored: pa.Table, items: pa.Table, options: Mapping[str, Any],
              draws: CountsDrawnAhead | None = None, tasks: Sequence[TaskSpec] = TASKS) -> dict[str, Any]:
    """The C3 summary of the per-item scores ``scored`` (aligned with ``items``) under resolved
    ``options``. ``draws`` are the resampled counts from :func:`draw_ahead` when the caller started
    them early; otherwise they are drawn here, all tasks ahead of the sections that use them."""
    if draws is not None:
        return _summarize(scored, items, options, draws, tasks)
    with draw_ahead(scored, options, tasks) as own:
        return _summarize(scored, items, options, own, tasks)


def _summarize(scored: pa.Table, items: pa.Table, options: Mapping[str, Any], draws: CountsDrawnAhead | None,
               tasks: Sequence[TaskSpec]) -> dict[str, Any]:
    boot = Bootstrap(int(options["bootstrap"]), int(options["seed"]), float(options["confidence"]), draws)
    settings = Settings(vas_weights(options["vas_weights"]), box_conventions(bool(options["box_yxyx"])))
    task_codes = scored.column("task").to_numpy(zero_copy_only=False)
    extras = items.select(list(ITEM_COLUMNS))

    def section(task: TaskSpec) -> tuple[dict[str, Any], dict[str, Any]] | None:
        index = np.flatnonzero(task_codes == task.name)
        if not len(index):
            return None
        rows = Rows(index, scored, extras)
        status = rows.column("parse_status")
        parsed = pc.equal(status, "parsed").to_numpy(zero_copy_only=False)
        counted = pc.value_counts(status).to_pylist()
        counts = {k: next((c["counts"] for c in counted if c["values"] == k), 0) for k in ("unparsed", "failed", "missing")}
        shape = {"n": len(index), "n_replies": int(parsed.sum()) + counts["unparsed"], "n_parsed": int(parsed.sum()),
                 "n_unparsed": counts["unparsed"], "n_failed": counts["failed"], "n_missing": counts["missing"],
                 "parse_rate": float(parsed.mean())}
        return shape, task.section(rows, parsed, boot.named(task.name), rows[task.cluster], settings)

    done = {task.name: section(task) for task in _in_summary_order(tasks)}
    summary: dict[str, Any] = {"format": {}, "bootstrap": {
        "B": boot.B, "seed": boot.seed, "confidence": boot.confidence, "cluster": {t.name: t.cluster_unit for t in tasks}}}
    table3 = {task.column: estimate(math.nan, n=0) for task in tasks}
    for task in tasks:
        result = done[task.name]
        if result is None:
            continue
        summary["format"][task.name], summary[task.name] = result
        table3[task.column] = summary[task.name][task.headline]
    summary["table3"] = table3
    return summary


__all__ = ["SUMMARY_ORDER", "cluster_sizes", "draw_ahead", "summarize"]
