"""C4's tasks as records: the three difficulty conditions (paper §3.4, "C4: Individual
re-identification"; appendix H.7), and the names of the five re-identification catalogs (Table 2).

Every C4 item is one pair of photographs asked the same Yes/No question; the condition decides
only how its partner was drawn. So the conditions share the instruction, the parser, the per-item
kernel, the resampling unit and the floor, and differ in their pair rules and in which Table 3
columns they feed (the random condition, pooled over the datasets). Every condition is reported by
the same statistics (d′ first, Table 49) in the summary's ``pooled`` and ``cells`` sections. The
component's task tuple (``COMPONENT.tasks``), its Table 3 columns and :data:`CONDITIONS` are read
from :data:`TASKS`; the catalog names are :data:`DATASETS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from biovqa.components.c4.parse import parse_reply
from biovqa.components.c4.prompts import C4_INSTRUCTION


def yes_no_correct(answer: str | None, same: bool) -> bool:
    """The per-item kernel: the parsed answer names the pair's truth (an unparsed reply is wrong)."""
    return answer is not None and answer == ("yes" if same else "no")


@dataclass(frozen=True, slots=True)
class Condition:
    """One C4 difficulty condition: a task name items carry (``task`` and ``condition``)."""

    name: str
    #: how the anchor's same-individual partner is drawn
    same_partner: str
    #: how its different-individual partner is drawn
    different_partner: str
    #: the Table 3 columns this condition gives, pooled over datasets (empty: none)
    table3: tuple[str, ...] = ()
    instruction: str = C4_INSTRUCTION
    #: reply → (answer ``yes``/``no`` or None, parse status)
    parser: Callable[[str | None], tuple[str | None, str]] = parse_reply
    kernel: Callable[[str | None, bool], bool] = yes_no_correct
    #: what the interval bootstrap resamples
    cluster: str = "items within dataset × condition"
    #: the image-blind reply of the floor (accuracy .500, d′ 0: the paper's C4 floor)
    floor_reply: str = "Yes"


TASKS: tuple[Condition, ...] = (
    Condition("easy", same_partner="the anchor's most similar same-individual annotation",
              different_partner="the least similar different-individual annotation"),
    Condition("random", same_partner="a uniform same-individual annotation",
              different_partner="a uniform other individual, then a uniform annotation of it",
              table3=("dprime", "acc")),
    Condition("hard", same_partner="the least similar same-individual annotation",
              different_partner="the nearest different-individual neighbour"),
)
#: The condition names, in report order (easy, random, hard).
CONDITIONS: tuple[str, ...] = tuple(task.name for task in TASKS)
#: Table 3's C4 columns, in order, and the condition each is read from.
TABLE3: dict[str, str] = {column: task.name for task in TASKS for column in task.table3}

#: The re-identification catalogs C4 pairs (``--catalog NAME=PATH``), in report order (Table 2); the
#: species each shows is the catalog reader's (:data:`biovqa.sources.wildlife.CATALOG_SPECIES`).
DATASETS: tuple[str, ...] = ("whaleshark", "hyena", "leopard", "gzcd", "beluga")


def task(name: str | None) -> Condition:
    """The condition record named ``name``; a bench of another condition name is scored by the
    first one's rules (every C4 condition shares its parser, kernel and floor)."""
    return next((spec for spec in TASKS if spec.name == name), TASKS[0])


__all__ = ["CONDITIONS", "DATASETS", "TABLE3", "TASKS", "Condition", "task", "yes_no_correct"]
