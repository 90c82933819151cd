"""The paper's published Table 3 as reference rows of a report (``biovqa report --with-paper``).

The figures are the paper's own, transcribed from Table 3 of "How Finely Can Vision–Language
Models See Biology? Bio-VQA: A Benchmark for Taxonomic, Morphological, Spatial and Individual
Reasoning" (arXiv:2611.05559) into ``biovqa/data/paper/table3.csv``, at the printed precision:
the 18 generalist models in the paper's order, the two specialists (BioCLIP-2 with the full
TreeOfLife-200M label set, C1; MegaDescriptor on Grevy's zebra only, C4), the paper's Mean over the
18 models and its image-blind Floor. They were not re-run: each row is marked ``published`` and
named ``MODEL (published)``; it is never ranked, marked best or averaged with the models of the
report, and carries no interval (the paper's Table 3 prints none).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from dataclasses import dataclass
from importlib import resources

import pandas as pd

from biovqa.reporting.leaderboard import Leaderboard

#: the kind of a published reference row
PUBLISHED = "published"
#: where the figures come from, as the report names it
SOURCE = "the paper's Table 3"
DATA_FILE = "table3.csv"


@dataclass(frozen=True)
class PublishedRow:
    """One row of the paper's Table 3: the model as printed, its kind there (``vlm``,
    ``specialist``, ``mean``, ``floor``), its printed rank (generalists only) and its values."""

    model: str
    kind: str
    rank: int | None
    values: dict[str, float]

    @property
    def name(self) -> str:
        """The row's name in a report: apart from any re-run model of the same name."""
        return f"{self.model} ({PUBLISHED})"


def published_table3() -> list[PublishedRow]:
    """The paper's Table 3 rows, in the paper's order (specialists, the 18 models, Mean, Floor)."""
    text = resources.files("biovqa").joinpath("data", "paper", DATA_FILE).read_text(encoding="utf-8")
    rows = []
    for record in csv.DictReader(io.StringIO(text)):
        values = {key: float(value) for key, value in record.items()
                  if key not in ("rank", "model", "kind") and value not in ("", None)}
        rows.append(PublishedRow(record["model"], record["kind"], int(record["rank"]) if record["rank"] else None,
                                 values))
    return rows


def with_published(board: Leaderboard) -> Leaderboard:
    """``board`` with the paper's Table 3 rows appended below its own (in the paper's order), for
    the columns the board has; a published row with none of them is left out."""
    columns = list(board.value.columns)
    added = [row for row in published_table3() if any(c in row.values for c in columns)]
    if not added:
        return board
    index = pd.Index([row.name for row in added], name=board.value.index.name)
    values = pd.DataFrame([[row.values.get(c, math.nan) for c in columns] for row in added],
                          index=index, columns=columns, dtype=float)
    blank = pd.DataFrame(math.nan, index=index, columns=columns)
    return dataclasses.replace(
        board,
        value=pd.concat([board.value, values]), lo=pd.concat([board.lo, blank]), hi=pd.concat([board.hi, blank]),
        n=pd.concat([board.n, blank]), kind=pd.concat([board.kind, pd.Series(PUBLISHED, index=index)]),
        marks=pd.concat([board.marks, pd.DataFrame("", index=index, columns=columns)]))


__all__ = ["PUBLISHED", "SOURCE", "PublishedRow", "published_table3", "with_published"]
