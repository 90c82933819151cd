"""The per-task stratified sample: Bio-VQA-Lite's items (``biovqa lite``) and ``biovqa run --limit``'s.

Each component's declaration names its strata (``Component.lite_strata``: item columns, absent ones
skipped; ``n_options`` counts an item's answer options); a component that names none, or that is
not registered, is stratified by task alone. Each task's quota is split over its strata in
proportion to their sizes by largest remainder (:func:`largest_remainder`); inside a stratum the
items whose ``sha256(seed:item_id)`` sorts first are taken. The sample is deterministic and does
not depend on row order, so a ``--limit N`` run asks exactly the items of a Lite bench of ``N``
per task.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pyarrow as pa

from biovqa.errors import BiovqaError

#: The pseudo-column of a stratum that counts an item's answer options (C2's option count).
N_OPTIONS = "n_options"
#: Seed of the sample's item ranks [DEFAULT].
SEED = 42
#: A stratum's value where the item has none.
MISSING = "(none)"

Key = TypeVar("Key", bound=Hashable)


def largest_remainder(sizes: Mapping[Key, int], n: int) -> dict[Key, int]:
    """Split ``n`` over strata in proportion to ``sizes`` (Hamilton's method): each stratum gets
    the floor of its exact quota ``n · size / total``, and the units left go to the largest
    remainders (ties: the stratum whose key sorts first). Exact integer arithmetic; asking for
    more than there is gives every stratum all it has."""
    total = sum(sizes.values())
    n = min(n, total)
    if total == 0:
        return {key: 0 for key in sizes}
    share = {key: (n * size) // total for key, size in sizes.items()}
    by_remainder = sorted(sizes, key=lambda key: (-((n * sizes[key]) % total), key))
    for key in by_remainder[: n - sum(share.values())]:
        share[key] += 1
    return share


@dataclass(frozen=True, slots=True)
class Stratum:
    """One stratum of a task and how many of its items the sample took."""

    #: one value per stratum column (``(none)`` where an item has none)
    values: tuple[str, ...]
    #: items of the task in the stratum
    available: int
    #: of those, the items in the sample (its largest-remainder share)
    selected: int


@dataclass(frozen=True, slots=True)
class TaskSample:
    """How one task of one component was sampled: the stratum columns used and, for each
    stratum, the items available and selected (what a Lite bench's manifest records)."""

    component: str
    task: str
    #: the stratum columns used (the declaration's that the items have)
    columns: tuple[str, ...]
    #: every stratum of the task, in sorted order of its values
    strata: tuple[Stratum, ...]

    @property
    def available(self) -> int:
        return sum(stratum.available for stratum in self.strata)

    @property
    def selected(self) -> int:
        return sum(stratum.selected for stratum in self.strata)


@dataclass(frozen=True, slots=True)
class PerTaskSample:
    """The rows a per-task sample keeps (ascending row numbers) and how each task was sampled."""

    rows: tuple[int, ...]
    tasks: tuple[TaskSample, ...]


def stratum_columns(component: str, available: list[str]) -> tuple[str, ...]:
    """The strata ``component``'s declaration names that an items table with columns ``available``
    has (``n_options`` wherever there are ``options``)."""
    from biovqa.components.registry import find_component

    declared = find_component(component)
    strata = declared.lite_strata if declared is not None else ()
    return tuple(c for c in strata if c in available or c == N_OPTIONS and "options" in available)


def _stratum_values(items: pa.Table, columns: tuple[str, ...]) -> list[tuple[str, ...]]:
    values: list[list[str]] = []
    for column in columns:
        if column == N_OPTIONS:
            values.append([str(len(o)) if o else "0" for o in items.column("options").to_pylist()])
        else:
            values.append([MISSING if v is None else str(v) for v in items.column(column).to_pylist()])
    return list(zip(*values)) if values else [()] * items.num_rows


def item_ranks(item_ids: list[str], seed: int) -> np.ndarray:
    """The seeded, order-independent rank of each item inside its stratum (smallest first): the
    first 8 bytes of ``sha256(seed:item_id)``."""
    return np.array([int.from_bytes(hashlib.sha256(f"{seed}:{i}".encode()).digest()[:8], "big")
                     for i in item_ids], dtype=np.uint64)


def sample_per_task(items: pa.Table, per_task: int, seed: int = SEED, *,
                    field: str = "--limit") -> PerTaskSample:
    """At most ``per_task`` items of each (component, task), stratified as the module docstring
    says. ``field`` names the option that gave ``per_task`` in the error for a value below 1."""
    if per_task < 1:
        raise BiovqaError(f"{field} must be at least 1", field=field)
    components = [str(c) for c in items.column("component").to_pylist()]
    tasks = [str(t) for t in items.column("task").to_pylist()]
    ranks = item_ranks([str(i) for i in items.column("item_id").to_pylist()], seed)
    columns = {name: stratum_columns(name, items.column_names) for name in sorted(set(components))}
    values = {name: _stratum_values(items, used) for name, used in columns.items()}
    cells: dict[tuple[str, str], dict[tuple[str, ...], list[int]]] = {}
    for row, (component, task) in enumerate(zip(components, tasks)):
        cells.setdefault((component, task), {}).setdefault(values[component][row], []).append(row)
    kept: list[int] = []
    sampled: list[TaskSample] = []
    for (component, task), strata in sorted(cells.items()):
        quota = largest_remainder({label: len(rows) for label, rows in strata.items()}, per_task)
        record = []
        for stratum in sorted(strata):
            rows = np.array(strata[stratum], dtype=np.int64)
            taken = rows[np.lexsort((rows, ranks[rows]))[: quota[stratum]]]
            kept.extend(taken.tolist())
            record.append(Stratum(values=stratum, available=len(rows), selected=len(taken)))
        sampled.append(TaskSample(component=component, task=task, columns=columns[component],
                                  strata=tuple(record)))
    return PerTaskSample(rows=tuple(sorted(kept)), tasks=tuple(sampled))


__all__ = ["MISSING", "N_OPTIONS", "SEED", "PerTaskSample", "Stratum", "TaskSample", "item_ranks",
           "largest_remainder", "sample_per_task", "stratum_columns"]
