"""BAGEL's question types as records: its four domains (tracks), in the BAGEL paper's Table 4
column order (Shen et al. 2026, "BAGEL: Benchmarking Animal Knowledge Expertise in Language Models").

Every domain asks four-option multiple-choice questions in the same evaluation prompt, read by the
same strict letter parser, scored by exact letter match (accuracy, the summary's ``domains``
section) and floored by the same seeded random letter (:mod:`.floor`); they differ in their name,
their aliases in the released files, their Table 3 / Table 4 columns and their released size. The
component's task tuple (``COMPONENT.tasks``) and Table 3 columns (``bagel`` = every domain, item
weighted, then one per domain) are read from :data:`TASKS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable

from biovqa.components.bagel.parse import parse_letter


def letter_correct(answer: str | None, gold: str) -> bool:
    """The per-item kernel: the parsed letter is the gold letter (an unparsed reply is wrong)."""
    return answer is not None and answer == gold


@dataclass(frozen=True, slots=True)
class Domain:
    """One BAGEL domain: the ``task`` (and ``domain``) its items carry."""

    name: str
    #: its Table 3 column (biovqa's leaderboard)
    table3: str
    #: its column in the BAGEL paper's Table 4
    table4: str
    #: questions in the released benchmark (the BAGEL paper's dataset statistics)
    size: int
    #: lower-case spellings the released files use for it
    aliases: tuple[str, ...] = ()
    #: reply, the four option texts → the letter chosen, or None
    parser: Callable[[str | None, Sequence[str]], str | None] = parse_letter
    kernel: Callable[[str | None, str], bool] = letter_correct
    #: what the interval bootstrap resamples
    cluster: str = "items"


TASKS: tuple[Domain, ...] = (
    Domain("GloBI", table3="globi", table4="GloBI", size=3500, aliases=("globi",)),
    Domain("Wikipedia", table3="wiki", table4="Wiki", size=1927, aliases=("wiki", "wikipedia")),
    Domain("bioRxiv", table3="biorxiv", table4="bioRxiv", size=2183, aliases=("biorxiv",)),
    Domain("Xeno-canto", table3="xeno", table4="Xeno-canto", size=4242,
           aliases=("xeno-canto", "xeno_canto", "xenocanto")),
)
#: The domain names, in Table 4 order.
DOMAINS: tuple[str, ...] = tuple(domain.name for domain in TASKS)
#: Table 3's BAGEL column of the overall (item-weighted) accuracy.
OVERALL_COLUMN = "bagel"
#: Table 3's BAGEL columns, in order: the overall accuracy, then one per domain.
TABLE3: tuple[str, ...] = (OVERALL_COLUMN, *(domain.table3 for domain in TASKS))


__all__ = ["DOMAINS", "OVERALL_COLUMN", "TABLE3", "TASKS", "Domain", "letter_correct"]
