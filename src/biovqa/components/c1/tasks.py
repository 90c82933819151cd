"""C1 question types (Table 6 order) and the groups they fall into."""

from __future__ import annotations

from biovqa.components.c1.tiers import MCQ_TASKS
from biovqa.records import TREE_RANKS

TASKS: tuple[str, ...] = ("phylum", "class", "order", "family", "genus", "species", "scientific_name",
                          "common_name", "common_name_mcq")
OPEN_TASKS: tuple[str, ...] = tuple(t for t in TASKS if t not in MCQ_TASKS)
MCQ_TASK = "common_name_mcq"
OPEN_COMMON_TASK = "common_name"
#: Levels of the hierarchical-consistency path: phylum … species (epithet), scored by EM.
HIERARCHY_TASKS: tuple[str, ...] = TREE_RANKS
#: Table 3's short column names of the open question types.
TABLE3_COLUMNS: dict[str, str] = {
    "phy": "phylum", "cls": "class", "ord": "order", "fam": "family", "gen": "genus",
    "spc": "species", "sci": "scientific_name", "com": "common_name",
}
