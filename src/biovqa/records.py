"""Typed records and on-disk schemas shared by every stage.

A benchmark is a table of items (one row per question); a run is a table of predictions (one row
per answered item); a score is a table of per-item quantities plus a JSON summary. The frozen
records below are the one-row views used by the Python API; the Arrow schemas are what the
Parquet files hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

#: Ranks of the C1 benchmark tree, top to bottom; depth = index + 1 (the synthetic root is 0).
TREE_RANKS: tuple[str, ...] = ("phylum", "class", "order", "family", "genus", "species")
#: Lineage columns of the TreeOfLife-200M catalog (paper App. A.5).
LINEAGE_COLUMNS: tuple[str, ...] = ("kingdom", *TREE_RANKS)

#: Columns every items.parquet has, whatever the component.
ITEM_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("item_id", pa.string()),
    ("component", pa.string()),
    ("task", pa.string()),
    ("question", pa.string()),
    ("instruction", pa.string()),
    ("options", pa.list_(pa.string())),
    ("answer", pa.string()),
    ("image", pa.string()),
    ("image_sha256", pa.string()),
    ("source_id", pa.string()),
)

#: Prediction statuses. Only "ok" rows carry a model answer; "failed" rows record a request that
#: finally failed (never scored as an answer, reported as failures).
PREDICTION_STATUSES: tuple[str, ...] = ("ok", "failed")

PREDICTION_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("response", pa.string()),
        ("status", pa.string()),
        ("model", pa.string()),
        ("latency_s", pa.float64()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("error", pa.string()),
    ]
)


@dataclass(frozen=True, slots=True)
class Item:
    """One benchmark question as a model sees it, plus its gold answer."""

    item_id: str
    component: str
    task: str
    question: str
    instruction: str
    answer: str
    image: str
    source_id: str
    options: tuple[str, ...] | None = None
    image_sha256: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def prompt(self) -> str:
        """The user-turn text: question, newline, answer-format instruction (paper App. B.2)."""
        return f"{self.question}\n{self.instruction}" if self.instruction else self.question


def items_from_table(table: pa.Table) -> list[Item]:  # used by Bench.iter_items
    """Rows of an items table as :class:`Item` records (component columns go to ``extra``)."""
    base = {name for name, _ in ITEM_COLUMNS}
    out = []
    for row in table.to_pylist():
        extra = {k: v for k, v in row.items() if k not in base}
        opts = row.get("options")
        out.append(
            Item(
                item_id=row["item_id"],
                component=row["component"],
                task=row["task"],
                question=row["question"],
                instruction=row["instruction"],
                answer=row["answer"],
                image=row["image"],
                source_id=row["source_id"],
                options=None if opts is None else tuple(opts),
                image_sha256=row.get("image_sha256"),
                extra=extra,
            )
        )
    return out
