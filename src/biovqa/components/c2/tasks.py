"""The ten C2 question families, one record each (paper Table 7, App. K.2, App. C.4).

A :class:`Family` holds everything the stages need to know about one family: its category and
Table 3 column, its question stem and instruction, how its reply is parsed (multiple choice or
open), its similarity kernel, how its chance baseline is drawn, its floor rule, and the paper's
item count. Every tuple and table of the component is derived from :data:`TASKS`: the family
names the items carry (:data:`FAMILIES`), the multiple-choice / open split, the categories and
Table 3's C2 block (:data:`TABLE3_COLUMNS`).

Adding a family is one record here (its stem and instruction in :mod:`.prompts`), its generator
in :mod:`.questions`, its kernel in :mod:`.similarity` under the family's name and its routing phrase in
:data:`.parse.ROUTES` (the parser's step 5 checks every question routes to its stored family); a
family is scored as multiple choice when its items offer options.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from biovqa.components.c2.prompts import MCQ_INSTRUCTION, TEMPLATES, open_instruction

#: What every C2 family reports as its headline (paper Eq. 12, App. C.4).
HEADLINE_METRIC = "cags"
#: What the C2 intervals resample (paper App. L.3: a 95 % percentile bootstrap over items).
CLUSTER_UNIT = "item"
#: The chance baseline of a multiple-choice item: the mean kernel over its own distractors.
DISTRACTOR_BASELINE = "mean similarity of the item's own distractors to the gold"
#: The chance baseline of an open item: the mean kernel over a fixed sample of 40 other golds.
GOLD_POOL_BASELINE = "mean similarity of 40 other golds of the family (fixed-seed sample) to the gold"
MCQ_FLOOR = "the option most often gold among the family's items with the same question stem"
OPEN_FLOOR = "the family's most frequent gold answer"


@dataclass(frozen=True)
class Category:
    """One of the four C2 categories and its Table 3 column (paper Table 3, Table 7)."""

    name: str
    table3_column: str
    title: str


#: The categories in Table 3's column order (sal, mrp, loc, nam).
CATEGORY_SPECS: tuple[Category, ...] = (
    Category("relative_salience", "sal", "relative salience"),
    Category("morphological", "mrp", "morphological"),
    Category("anatomical", "loc", "anatomical"),
    Category("naming", "nam", "naming"),
)
_CATEGORY = {c.name: c for c in CATEGORY_SPECS}


@dataclass(frozen=True)
class Family:
    """One C2 question family.

    ``answer_format`` picks the parser branch (paper App. K.5): ``mcq`` resolves a reply to one
    of the item's options (letter, verbatim text, reconciliation, fuzzy match), ``open`` keeps the
    cleaned first line. :attr:`kernel` is the family's graded similarity: for ``mcq`` a
    :data:`.similarity.OptionKernel` (s of every option against the gold, per item), for ``open``
    a :data:`.similarity.PairKernel` (s of one normalized prediction against one gold)."""

    name: str
    #: the family's column label in the per-family tables (paper Tables 33, 34, 83, 84)
    short: str
    category: str
    template: str
    instruction: str
    answer_format: Literal["mcq", "open"]
    #: Table 7's item count on the full CUB-200-2011
    paper_count: int
    baseline: str
    floor_rule: str
    headline_metric: str = HEADLINE_METRIC
    cluster_unit: str = CLUSTER_UNIT
    #: the summary section that holds the family's block (``families.<name>``)
    summary_section: str = "families"

    @property
    def table3_column(self) -> str:
        return _CATEGORY[self.category].table3_column

    @property
    def is_open(self) -> bool:
        return self.answer_format == "open"

    @cached_property
    def kernel(self) -> Callable[..., Any]:
        """The function of :mod:`.similarity` named after the family, imported on first use: the
        records stay free of numpy and pyarrow, so the component's declaration (which ``biovqa
        --help`` reads) costs nothing to import."""
        from biovqa.components.c2 import similarity

        kernel: Callable[..., Any] = getattr(similarity, self.name)
        return kernel


def _mcq(name: str, short: str, category: str, paper_count: int) -> Family:
    return Family(name, short, category, TEMPLATES[name], MCQ_INSTRUCTION, "mcq", paper_count,
                  DISTRACTOR_BASELINE, MCQ_FLOOR)


def _open(name: str, short: str, paper_count: int) -> Family:
    return Family(name, short, "naming", TEMPLATES[name], open_instruction(name), "open", paper_count,
                  GOLD_POOL_BASELINE, OPEN_FLOOR)


#: The ten families in benchmark order (items are written family by family in this order).
TASKS: tuple[Family, ...] = (
    _mcq("attr_bare_value", "attr_bare", "morphological", 280_433),
    _mcq("attr_group_value", "attr_group", "relative_salience", 321_073),
    _mcq("marker_localization", "marker", "anatomical", 11_788),
    _mcq("visibility_partset", "vis_set", "anatomical", 117_880),
    _mcq("visibility_side", "vis_side", "anatomical", 35_364),
    _mcq("category_mcq", "cat_mcq", "naming", 11_191),
    _open("open_common_name", "common", 11_788),
    _open("open_scientific_name", "sci", 11_668),
    _open("open_genus", "genus", 11_728),
    _open("open_kind_of", "kind_of", 11_191),
)

FAMILY: dict[str, Family] = {family.name: family for family in TASKS}
FAMILIES: tuple[str, ...] = tuple(FAMILY)
MCQ_FAMILIES: tuple[str, ...] = tuple(f.name for f in TASKS if not f.is_open)
OPEN_FAMILIES: tuple[str, ...] = tuple(f.name for f in TASKS if f.is_open)
#: The categories in the order their first family appears (morphological, relative_salience,
#: anatomical, naming).
CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(f.category for f in TASKS))
CATEGORY_OF: dict[str, str] = {f.name: f.category for f in TASKS}
#: Table 7's counts per family [PAPER] (824 104 items in all).
PAPER_COUNTS: dict[str, int] = {f.name: f.paper_count for f in TASKS}
#: Table 3's C2 block: column → category, in Table 3's order.
TABLE3_COLUMNS: dict[str, str] = {c.table3_column: c.name for c in CATEGORY_SPECS
                                  if any(f.category == c.name for f in TASKS)}
TABLE3: tuple[str, ...] = tuple(TABLE3_COLUMNS)
