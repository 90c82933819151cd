"""The per-task stratified sample shared by Bio-VQA-Lite and ``biovqa run --limit``."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from biovqa.bench.strata import largest_remainder, sample_per_task, stratum_columns
from biovqa.errors import BiovqaError

sys.path.insert(0, str(Path(__file__).parents[1]))
from fixtures.engine_helpers import make_items


@pytest.mark.parametrize("sizes, n, expected", [
    ({"a": 5, "b": 3, "c": 2}, 5, {"a": 3, "b": 1, "c": 1}),    # quotas 2.5, 1.5, 1.0: the .5 tie goes to "a"
    ({"a": 5, "b": 3, "c": 2}, 10, {"a": 5, "b": 3, "c": 2}),   # exact
    ({"a": 5, "b": 3, "c": 2}, 7, {"a": 4, "b": 2, "c": 1}),    # quotas 3.5, 2.1, 1.4
    ({"a": 10, "b": 10, "c": 10}, 10, {"a": 4, "b": 3, "c": 3}),
    ({"a": 1, "b": 1, "c": 98}, 10, {"a": 0, "b": 0, "c": 10}),  # quotas .1, .1, 9.8
    ({"x": 1, "y": 1, "z": 1}, 2, {"x": 1, "y": 1, "z": 0}),    # equal remainders: the key that sorts first
    ({"x": 1, "y": 4}, 50, {"x": 1, "y": 4}),                   # more asked than there is: everything
    ({"x": 0}, 3, {"x": 0}),
])
def test_largest_remainder(sizes: dict[str, int], n: int, expected: dict[str, int]) -> None:
    assert largest_remainder(sizes, n) == expected


@given(st.lists(st.integers(0, 50), min_size=1, max_size=12), st.integers(0, 400))
def test_largest_remainder_properties(sizes: list[int], n: int) -> None:
    alloc = largest_remainder(dict(enumerate(sizes)), n)
    total = sum(sizes)
    assert sum(alloc.values()) == min(n, total)
    assert all(0 <= alloc[i] <= size for i, size in enumerate(sizes))
    if total:
        assert all(abs(alloc[i] - min(n, total) * size / total) < 1 for i, size in enumerate(sizes))


def test_strata_come_from_the_declaration() -> None:
    columns = ["item_id", "component", "task", "group", "tier", "options", "family", "category"]
    assert stratum_columns("c1", columns) == ("group", "tier")
    assert stratum_columns("c2", columns) == ("category", "family", "n_options")
    assert stratum_columns("c2", ["item_id", "task"]) == ()  # absent columns are skipped
    assert stratum_columns("not-registered", columns) == ()  # stratified by task alone


def test_the_sample_is_per_component_and_task_and_order_free() -> None:
    items = pa.concat_tables([make_items(n_images=30), make_items(n_images=12, component="c2")])
    sample = sample_per_task(items, 9, seed=42)
    kept = items.take(pa.array(sample.rows, pa.int64()))
    assert Counter(zip(kept.column("component").to_pylist(), kept.column("task").to_pylist())) == {
        (c, t): 9 for c in ("c1", "c2") for t in ("order", "family", "species")}
    by_task = {(t.component, t.task): t for t in sample.tasks}
    assert by_task["c1", "order"].columns == ("group", "tier")
    # C2 declares category × family × option count: these items have only the options
    assert by_task["c2", "species"].columns == ("n_options",)
    assert [s.values for s in by_task["c2", "species"].strata] == [("2",)]
    assert by_task["c1", "order"].available == 30 and by_task["c1", "order"].selected == 9
    reversed_rows = items.take(pa.array(range(items.num_rows - 1, -1, -1), pa.int64()))
    again = reversed_rows.take(pa.array(sample_per_task(reversed_rows, 9, seed=42).rows, pa.int64()))
    assert sorted(again.column("item_id").to_pylist()) == sorted(kept.column("item_id").to_pylist())


def test_a_quota_below_one_names_the_option() -> None:
    with pytest.raises(BiovqaError) as info:
        sample_per_task(make_items(n_images=2), 0, field="--per-task")
    assert info.value.field == "--per-task" and "--per-task must be at least 1" in str(info.value)
