"""The hierarchical VQA's tasks and path metrics as records (HCA paper, Tan, Qing, Gong 2025: §2.2,
§3.3.1, App. B.2).

Its questions are asked per image and taxonomy level; the levels themselves come from the bench's
taxonomy (CUB: order … species; iNat: kingdom … species), so they are data, not records. What is
fixed is the two tasks — the visual questions and their text-only control (the image replaced by
the leaf label) — and the path metrics every score reports. The component's task tuple
(``COMPONENT.tasks``) and Table 3 columns are read from :data:`TASKS` and :data:`PATH_METRICS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable

from biovqa.components.hca.parse import binary_level_correct, parse_choice, parse_cot_choice, parse_yes_no
from biovqa.components.hca.prompts import TEXT_CLOSING, TEXT_SYSTEM_PROMPT, VISUAL_CLOSING, VISUAL_SYSTEM_PROMPT


@dataclass(frozen=True, slots=True)
class HierarchyTask:
    """One task of the hierarchical VQA: the ``task`` its items carry."""

    name: str
    #: the closing line of the user text (the answer-format instruction)
    instruction: str
    system_prompt: str
    #: whether the leaf level of every path counts as right without being asked (the text control
    #: names the leaf, §3.3.1)
    leaf_autocorrect: bool = False
    #: reply, options → the letter chosen (plain and taxonomy-in-context prompts)
    parser: Callable[[str | None, Sequence[str]], str | None] = parse_choice
    #: the same for chain-of-thought prompts (App. C.1.2): the final stated answer
    cot_parser: Callable[[str | None, Sequence[str]], str | None] = parse_cot_choice
    #: reply → "Yes"/"No" for a binary statement (App. C.1.4)
    statement_parser: Callable[[str | None], str | None] = parse_yes_no
    #: a level asked as statements: the answers to its options, the gold index → right or wrong
    statement_kernel: Callable[[Sequence[str | None], int], bool] = binary_level_correct
    #: what the interval bootstrap resamples (a path is one image)
    cluster: str = "images"
    #: the image-blind floor: always the first option
    floor_reply: str = "A"


@dataclass(frozen=True, slots=True)
class PathMetric:
    """One whole-path metric (App. B.2): its summary key, report title and Table 3 column."""

    metric: str
    title: str
    #: its Table 3 column (None: reported, not on the leaderboard)
    table3: str | None


TASKS: tuple[HierarchyTask, ...] = (
    HierarchyTask("visual", instruction=VISUAL_CLOSING, system_prompt=VISUAL_SYSTEM_PROMPT),
    HierarchyTask("text", instruction=TEXT_CLOSING, system_prompt=TEXT_SYSTEM_PROMPT, leaf_autocorrect=True),
)
#: The path metrics in the order of :data:`biovqa.stats.hierarchy.HIERARCHICAL_METRICS`.
PATH_METRICS: tuple[PathMetric, ...] = (
    PathMetric("hca", "HCA", "hca"),
    PathMetric("acc_leaf", "Acc_leaf", "leaf"),
    PathMetric("por", "POR", "por"),
    PathMetric("spor", "S-POR", "spor"),
    PathMetric("spor_prefix", "S-POR (prefix)", None),
    PathMetric("tor", "TOR", "tor"),
)
#: Table 3 column → path metric, in order.
TABLE3: dict[str, str] = {m.table3: m.metric for m in PATH_METRICS if m.table3 is not None}


def task(name: str | None) -> HierarchyTask:
    """The task record named ``name`` (the visual one for an unknown name)."""
    return next((spec for spec in TASKS if spec.name == name), TASKS[0])


__all__ = ["PATH_METRICS", "TABLE3", "TASKS", "HierarchyTask", "PathMetric", "task"]
