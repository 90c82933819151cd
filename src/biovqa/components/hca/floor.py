"""The hierarchical VQA's image-blind floor (the ``baseline`` backend): always the first option,
i.e. chance on shuffled options."""

from __future__ import annotations

import pyarrow as pa

from biovqa.components.hca.tasks import task


def floor_responses(items: pa.Table) -> pa.Array:
    """One floor reply per item, in order: its task's :attr:`~.tasks.HierarchyTask.floor_reply` ("A")."""
    return pa.array([task(name).floor_reply for name in items.column("task").to_pylist()], pa.string())


__all__ = ["floor_responses"]
