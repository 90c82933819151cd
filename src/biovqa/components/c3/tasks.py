"""The C3 tasks: one frozen spec record per task, the one place a task is declared.

Each :class:`TaskSpec` holds what the stages need to know about its task: the name items carry,
its Table 3 column, the answer-format instruction of Table 70, the reply parser of Table 14, the
per-item kernel, the floor rule, the bootstrap cluster, the headline metric of its summary section
and the rank bootstrap's macro groups. Every task-keyed tuple and table of the component is derived
from :data:`TASKS` (the declaration's task names and Table 3 columns, the scorer's dispatch, the
floor replies, the summary's sections and Table 3, the report's columns, the rank inputs), so
adding a task is one record here plus its parser (:mod:`.parse`), its kernel (:mod:`.kernels`) and,
unless an existing one fits, its summary section (:mod:`.sections`; docs/c3.md, "Adding a task").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from biovqa.components.c3 import kernels as K
from biovqa.components.c3 import parse as P
from biovqa.components.c3 import prompts as Q
from biovqa.components.c3 import sections as S

#: what the bootstrap resamples for a task whose items share source photographs / plates
SOURCE_CLUSTER = "cluster"
#: what it resamples for a task whose items are independent
ITEM_CLUSTER = "item_id"


@dataclass(frozen=True, slots=True)
class Table38Row:
    """The task's row of Table 38 (the best model on each task): its title, the summary metric
    compared, the floor key inside the section's ``floor`` and how the floor rule is named."""

    title: str
    metric: str
    floor: str
    floor_rule: str


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """One C3 task.

    ``parse(reply, options)`` recovers the answer of one reply (None: unparsed) under the resolved
    score options; ``kernel(rows, out)`` scores every row of the task at once
    (:class:`~biovqa.components.c3.kernels.TaskRows` → :class:`~biovqa.components.c3.kernels.ScoreColumns`);
    ``floor(rows)`` is the image-blind reply to each item (the ``baseline`` backend);
    ``section(rows, parsed, boot, clusters, settings)`` is the task's summary section
    (:mod:`.sections`). ``headline`` is the key of the summary section's Table 3 metric and
    ``metric`` how the figure labels it; ``paper_count`` the task's items in the paper (Table 9).
    Then what most tasks share: ``cluster`` is the items-table column the bootstrap resamples (the
    source photograph / plate where items share one; by default the item); ``floor_metric`` the
    key inside the section's ``floor`` printed on Table 3's Floor row (by default the headline's);
    ``macro_over`` the score-table column whose groups the headline macro-averages, which the rank
    bootstrap recomputes (by default none: a plain mean)."""

    name: str
    column: str
    instruction: str
    parse: Callable[[str | None, Mapping[str, Any]], Any]
    kernel: Callable[[K.TaskRows, K.ScoreColumns], None]
    floor: Callable[[Sequence[Mapping[str, Any]]], list[str]]
    section: Callable[..., dict[str, Any]]
    headline: str
    metric: str
    table38: Table38Row
    paper_count: int
    cluster: str = ITEM_CLUSTER
    floor_metric: str = ""  # "": the headline's key
    macro_over: str | None = None

    def __post_init__(self) -> None:
        if not self.floor_metric:
            object.__setattr__(self, "floor_metric", self.headline)

    @property
    def clustered(self) -> bool:
        """True when the bootstrap resamples source photographs / plates, not items."""
        return self.cluster == SOURCE_CLUSTER

    @property
    def cluster_unit(self) -> str:
        """What the bootstrap resamples, in words (the summary's ``bootstrap.cluster``)."""
        return "source photograph / plate" if self.clustered else "item"


def letter_choice(name: str, column: str, instruction: str, noun: str, section: Callable[..., dict[str, Any]],
                  table38: Table38Row, *, paper_count: int) -> TaskSpec:
    """A task answered by the letter of one of four panels (``noun`` A … D: relative counting's
    images, relative distance's beetles): the letter parser, the choice kernel, a letter floor, and
    the balanced accuracy over the gold letters as headline."""
    return TaskSpec(name, column, instruction, parse=lambda reply, options: P.parse_letter(reply, noun),
                    kernel=K.score_choice, floor=K.floor_letter, section=section, headline="balanced_accuracy",
                    metric="bal. acc.", macro_over="gold", table38=table38, paper_count=paper_count)


COUNTING = TaskSpec(
    "counting", "cnt", Q.INSTRUCTION_COUNTING,
    parse=lambda reply, options: P.parse_integer(reply, number_words=bool(options["number_words"])),
    kernel=K.score_count, floor=K.floor_modal_count, section=S.counting_section,
    headline="macro_cas", metric="macro cas", cluster=SOURCE_CLUSTER, floor_metric="cas", macro_over="subset",
    table38=Table38Row("Counting", "macro_cas", "cas", "modal count"), paper_count=53498)
RELATIVE_COUNTING = letter_choice(
    "relative_counting", "rcnt", Q.INSTRUCTION_RELATIVE_COUNTING, "image", S.relative_counting_section,
    Table38Row("Relative counting", "margin", "balanced_accuracy", "chance .250"), paper_count=42412)
ABSOLUTE_DISTANCE = TaskSpec(
    "absolute_distance", "adst", Q.INSTRUCTION_ABSOLUTE_DISTANCE,
    parse=lambda reply, options: P.parse_centimetres(reply, unit_words=bool(options["unit_words"])),
    kernel=K.score_distance, floor=K.floor_constant_length, section=S.absolute_distance_section,
    headline="acc20", metric="acc@20", cluster=SOURCE_CLUSTER,
    table38=Table38Row("Absolute distance", "rho_within", "acc20", "per-type constant (acc@20)"),
    paper_count=14108)
RELATIVE_DISTANCE = letter_choice(
    "relative_distance", "rdst", Q.INSTRUCTION_RELATIVE_DISTANCE, "beetle", S.relative_distance_section,
    Table38Row("Relative distance", "balanced_accuracy", "balanced_accuracy", "chance"), paper_count=3976)
LOCALIZATION = TaskSpec(
    "localization", "lcl", Q.INSTRUCTION_LOCALIZATION,
    parse=lambda reply, options: P.parse_box(reply),
    kernel=K.score_box, floor=K.floor_mean_box, section=S.localization_section,
    headline="miou_all", metric="mean IoU", floor_metric="miou",
    table38=Table38Row("Localization", "miou_all", "miou", "mean gold box"), paper_count=3988)
RELATIVE_POSITION = TaskSpec(
    "relative_position", "rpos", Q.INSTRUCTION_RELATIVE_POSITION,
    parse=lambda reply, options: P.parse_direction(reply, synonyms=bool(options["direction_synonyms"])),
    kernel=K.score_direction, floor=K.floor_option, section=S.relative_position_section,
    headline="balanced_accuracy", metric="bal. acc.", floor_metric="chance", macro_over="gold",
    table38=Table38Row("Relative position", "accuracy", "majority8", "majority direction"), paper_count=1000)
VIEWPOINT = TaskSpec(
    "viewpoint", "view", Q.INSTRUCTION_VIEWPOINT,
    parse=lambda reply, options: P.parse_viewpoint(reply, synonyms=bool(options["viewpoint_synonyms"])),
    kernel=K.score_view, floor=K.floor_majority, section=S.viewpoint_section,
    headline="macro_vas", metric="macroVAS", macro_over="gold",
    table38=Table38Row("Viewpoint", "kappa_vas", "em", "majority, kappa_VAS 0"), paper_count=13000)
OCR = TaskSpec(
    "ocr", "ocr", Q.INSTRUCTION_OCR,
    parse=lambda reply, options: P.parse_code(reply),
    kernel=K.score_code, floor=K.floor_constant_code, section=S.ocr_section,
    headline="em", metric="EM",
    table38=Table38Row("OCR (control)", "suffix_char_acc", "suffix_char_acc", "constant string"), paper_count=522)

#: every C3 task, in the order of Table 3's C3 columns (and of the items table)
TASKS: tuple[TaskSpec, ...] = (COUNTING, RELATIVE_COUNTING, ABSOLUTE_DISTANCE, RELATIVE_DISTANCE, LOCALIZATION,
                               RELATIVE_POSITION, VIEWPOINT, OCR)
#: the task names items carry, in :data:`TASKS` order
TASK_NAMES: tuple[str, ...] = tuple(t.name for t in TASKS)
#: Table 3's C3 columns → task name
TABLE3: dict[str, str] = {t.column: t.name for t in TASKS}
#: task name → its spec
BY_NAME: dict[str, TaskSpec] = {t.name: t for t in TASKS}

__all__ = ["ABSOLUTE_DISTANCE", "BY_NAME", "COUNTING", "ITEM_CLUSTER", "LOCALIZATION", "OCR", "RELATIVE_COUNTING",
           "RELATIVE_DISTANCE", "RELATIVE_POSITION", "SOURCE_CLUSTER", "TABLE3", "TASKS", "TASK_NAMES", "TaskSpec",
           "Table38Row", "VIEWPOINT", "letter_choice"]
