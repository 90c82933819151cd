"""C4's image-blind floor (the ``baseline`` backend): every pair answered with its condition's
floor reply, "Yes" (accuracy .500, d′ 0: the paper's C4 floor)."""

from __future__ import annotations

import pyarrow as pa

from biovqa.components.c4.tasks import task


def floor_responses(items: pa.Table) -> pa.Array:
    """One floor reply per item, in order: its condition's :attr:`~.tasks.Condition.floor_reply`."""
    return pa.array([task(c).floor_reply for c in items.column("condition").to_pylist()], pa.string())


__all__ = ["floor_responses"]
