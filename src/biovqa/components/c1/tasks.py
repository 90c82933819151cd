"""C1 question types (paper Table 6 order), one frozen :class:`C1Task` record each.

Every C1 tuple and table is derived from :data:`TASKS`: the task names items carry, the Table 3
columns, the open / MCQ split, the hierarchical-consistency path, the asked rank of each type.
Adding a question type is one record here, plus its template (:mod:`.prompts`) and, where its
reply needs one, a parse rule (:mod:`.parse`).
"""

from __future__ import annotations

from dataclasses import dataclass

from biovqa.components.c1.prompts import INSTRUCTIONS

#: How a reply is read (:func:`biovqa.components.c1.parse.score_replies`): ``name`` — the
#: normalized reply is a taxon name; ``epithet`` — the species question: the reply's last word,
#: read with the gold genus as a binomial (paper App. K.1); ``common_name`` — a vernacular name;
#: ``option`` — the option of the four the reply names.
PARSERS: tuple[str, ...] = ("name", "epithet", "common_name", "option")
#: How the image-blind floor answers (:mod:`.floor`, paper §2.10): ``most_frequent_gold`` — the
#: type's most frequent gold answer; ``most_frequent_option`` — the option naming the most
#: frequent gold common name.
FLOOR_RULES: tuple[str, ...] = ("most_frequent_gold", "most_frequent_option")


@dataclass(frozen=True, slots=True)
class C1Task:
    """One C1 question type and everything the component does differently for it."""

    #: the task name items carry (``task`` column)
    name: str
    #: Table 3 short column; None where Table 3 has no column (the MCQ)
    table3: str | None
    #: the answer instruction sent with the question (paper App. K.1)
    instruction: str
    #: how the reply is read (one of :data:`PARSERS`)
    parser: str
    #: depth of the asked rank in the benchmark tree (phylum 1 … species 6); None for common names
    asked_depth: int | None
    #: position on the hierarchical-consistency path phylum … species (HCA paper §2.2); None off it
    hierarchy_level: int | None
    #: image-blind floor rule (one of :data:`FLOOR_RULES`)
    floor_rule: str = "most_frequent_gold"
    #: per-item kernel behind the headline: exact match of the normalized reply (Eq. 5) or of the
    #: chosen option; EM_soft, severity, Wu–Palmer and Lin are computed for every type
    kernel: str = "exact_match"
    #: the summary metric Table 3 reports
    headline: str = "em"
    #: the item column the bootstrap resamples (paper App. L.3: images, not questions)
    cluster: str = "source_id"
    #: the summary section holding this type's block
    section: str = "tasks"

    @property
    def is_mcq(self) -> bool:
        return self.parser == "option"


def _task(name: str, table3: str | None, parser: str, asked_depth: int | None, hierarchy_level: int | None,
          floor_rule: str = "most_frequent_gold") -> C1Task:
    kernel = "option_match" if parser == "option" else "exact_match"
    return C1Task(name=name, table3=table3, instruction=INSTRUCTIONS[name], parser=parser,
                  asked_depth=asked_depth, hierarchy_level=hierarchy_level, floor_rule=floor_rule, kernel=kernel)


#: The nine question types, in Table 6 order (the order items are asked per image).
TASKS: tuple[C1Task, ...] = (
    _task("phylum", "phy", "name", 1, 0),
    _task("class", "cls", "name", 2, 1),
    _task("order", "ord", "name", 3, 2),
    _task("family", "fam", "name", 4, 3),
    _task("genus", "gen", "name", 5, 4),
    _task("species", "spc", "epithet", 6, 5),
    _task("scientific_name", "sci", "name", 6, None),
    _task("common_name", "com", "common_name", None, None),
    _task("common_name_mcq", None, "option", None, None, floor_rule="most_frequent_option"),
)
#: Task names, in :data:`TASKS` order (what the ``task`` column holds).
TASK_NAMES: tuple[str, ...] = tuple(task.name for task in TASKS)
TASK_BY_NAME: dict[str, C1Task] = {task.name: task for task in TASKS}
OPEN_TASKS: tuple[str, ...] = tuple(task.name for task in TASKS if not task.is_mcq)
MCQ_TASKS: tuple[str, ...] = tuple(task.name for task in TASKS if task.is_mcq)
MCQ_TASK = MCQ_TASKS[0]
OPEN_COMMON_TASK = next(task.name for task in TASKS if task.parser == "common_name")
SPECIES_TASK = next(task.name for task in TASKS if task.parser == "epithet")
#: Levels of the hierarchical-consistency path: phylum … species (epithet), scored by EM (the
#: benchmark tree's ranks, :data:`biovqa.records.TREE_RANKS`; a test pins that).
HIERARCHY_TASKS: tuple[str, ...] = tuple(sorted((task.name for task in TASKS if task.hierarchy_level is not None),
                                                key=lambda name: TASK_BY_NAME[name].hierarchy_level or 0))
#: Table 3's short column names → question type, in Table 3 order.
TABLE3_COLUMNS: dict[str, str] = {task.table3: task.name for task in TASKS if task.table3 is not None}
#: Question type → depth of the asked rank in the benchmark tree (common names have none).
ASKED_DEPTH: dict[str, int] = {task.name: task.asked_depth for task in TASKS if task.asked_depth is not None}
