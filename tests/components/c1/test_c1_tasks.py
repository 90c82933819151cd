"""C1's question types are one record each (tasks.TASKS): the declaration, the builder and the
scorer's tuples all follow the records."""

from __future__ import annotations

from pathlib import Path

from biovqa.bench import open_bench
from biovqa.components.c1 import COMPONENT
from biovqa.components.c1.tasks import (
    ASKED_DEPTH,
    FLOOR_RULES,
    HIERARCHY_TASKS,
    MCQ_TASKS,
    OPEN_TASKS,
    PARSERS,
    TABLE3_COLUMNS,
    TASK_BY_NAME,
    TASK_NAMES,
    TASKS,
)
from biovqa.components.registry import get_component
from biovqa.records import TREE_RANKS


def test_declaration_and_tuples_follow_the_records() -> None:
    assert COMPONENT.tasks == TASK_NAMES == tuple(task.name for task in TASKS)
    assert get_component("c1").table3 == tuple(t.table3 for t in TASKS if t.table3) == tuple(TABLE3_COLUMNS)
    assert list(TABLE3_COLUMNS) == ["phy", "cls", "ord", "fam", "gen", "spc", "sci", "com"]  # Table 3 order
    assert HIERARCHY_TASKS == TREE_RANKS  # the consistency path is the tree's ranks, phylum … species
    assert MCQ_TASKS == ("common_name_mcq",) and set(OPEN_TASKS) | set(MCQ_TASKS) == set(TASK_NAMES)
    assert ASKED_DEPTH == {"phylum": 1, "class": 2, "order": 3, "family": 4, "genus": 5, "species": 6,
                           "scientific_name": 6}
    for task in TASKS:
        assert task.parser in PARSERS and task.floor_rule in FLOOR_RULES, task.name
        assert task.cluster == "source_id" and task.headline == "em" and task.section == "tasks"
        assert (task.table3 is None) == task.is_mcq


def test_built_items_carry_each_records_instruction(demo_bench: Path) -> None:
    items = open_bench(demo_bench).items
    pairs = set(zip(items.column("task").to_pylist(), items.column("instruction").to_pylist()))
    assert pairs == {(task, TASK_BY_NAME[task].instruction) for task in {t for t, _ in pairs}}
    assert {t for t, _ in pairs} == set(TASK_NAMES)
