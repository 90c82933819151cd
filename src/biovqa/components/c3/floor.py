"""C3 image-blind floor replies (the ``baseline`` backend): the paper's floors (Sec. C.6, Eq. 24),
one reply per item from its task's floor rule (:attr:`~biovqa.components.c3.tasks.TaskSpec.floor`,
fitted on the gold answers of that task's items): counting → the subset's modal count; relative
counting/distance → a letter by item hash (uniform chance); relative position → one of the offered
options by item hash; absolute distance → the per-type constant of the sliding window;
localization → the mean normalised gold box as [x, y, w, h]; viewpoint → the majority label; OCR →
the gold prefix plus the per-position modal suffix."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from biovqa.components.c3.tasks import TASKS, TaskSpec

#: the items-table columns the floor rules read
FLOOR_COLUMNS = ("item_id", "task", "subset", "measure", "answer", "gold_number", "options", "image_width",
                 "image_height", "gold_box")


def floor_responses(items: pa.Table, tasks: Sequence[TaskSpec] = TASKS) -> pa.Array:
    """The image-blind reply to every item (``tasks``: the C3 tasks; an empty reply for a task no
    spec declares)."""
    by_name = {spec.name: spec for spec in tasks}
    rows = items.select(list(FLOOR_COLUMNS)).to_pylist()
    replies: list[str | None] = [None] * len(rows)
    by_task: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_task.setdefault(row["task"], []).append(i)
    for task, index in by_task.items():
        spec = by_name.get(task)
        out = spec.floor([rows[i] for i in index]) if spec is not None else [""] * len(index)
        for i, reply in zip(index, out):
            replies[i] = reply
    return pa.array(replies, type=pa.string())


__all__ = ["FLOOR_COLUMNS", "floor_responses"]
