"""C1 leaderboard tables and figure from score summaries (paper Tables 3, 18–24, 72–82).

``tables(summaries)`` takes ``[(model label, summary dict), …]`` as written by ``biovqa score``
(see :mod:`biovqa.components.c1.summary` for the summary shape; NaN may arrive as ``None`` from
JSON) and returns named pandas DataFrames in the paper's layout (column names, order, rounding
half up to the paper's printed precision; see docs/c1-report.md). Each frame carries
``attrs["title"]`` (a readable title) and ``attrs["decimals"]`` (printed decimals per column).

Model groups: a label's tags set its group, family and size (:mod:`.labels`). Tables that
compare groups (18, 19, 20, 81) treat every model not in group ``vlm`` as a non-generalist
configuration.

Tables:

* ``table3`` — EM at the 8 open question types, one row per model, then the ``Floor`` row;
* ``table18_pooled`` — pooled leaderboard: rank (generalists only), Img, Ques, EM, EM_soft, wup,
  lin; non-generalists first, then generalists, each sorted by EM_soft; ``table18_intervals`` —
  the same estimates with their 95% bounds;
* ``table19_per_rank`` — mean EM per rank and the step from the row above, over all models
  (``EM_{n}cfg``) and over the generalists (``EM_{m}vlm``), and their gap;
  ``table19_fall`` — phylum / species epithet fall per block;
* ``table20_recognition_recall`` — open common name, 4-way MCQ, gap and ratio, sorted by gap,
  with mean rows (Tables 20 / 78);
* ``table21_severity`` — severity per question type, pooled, and the unresolved share ``unres``;
* ``table22_by_group`` — EM, severity, unresolved per organismal group, pooled over models;
* ``table23_revision_lag_by_rank`` / ``table23_revision_lag_by_group`` — EM, EM_soft, gap;
* ``table24_group_spearman`` — Spearman between groups (models ranked per group), row means;
* ``table77_em_by_rank_and_tier`` — EM by rank and difficulty tier, pooled over models;
* ``table79_unresolved`` — unresolved share, severity, EM, sorted by unresolved;
* ``table80_em_vs_severity_rank`` — EM rank against severity rank and the shift;
* ``table81_by_size`` — generalists by parameter count: family, params_B, EM, severity;
* ``table82_spearman_with_em`` — Spearman of wup, lin, severity, unresolved with EM;
* ``em_by_type`` / ``em_soft_by_type`` / ``revision_lag_by_type`` / ``unresolved_by_type`` /
  ``wup_by_type`` / ``lin_by_type`` — per question type, pooled last (Tables 72, 73, 74);
* ``em_by_group`` (Table 75), ``em_by_tier`` (Table 76), ``hierarchy`` (HCA family and
  ``hca_scaled`` = HCA / Acc_leaf, pooled).

``figures(summaries, out_dir)`` draws EM per question type with 95% error bars, one bar per model,
the floor marked, into ``out_dir/c1_em_by_rank.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

# each table is built in paper_tables.py, labels are read in labels.py; model_info is re-exported
# here, where callers import it with the tables
from biovqa.components.c1.labels import Summaries, by_display_name, model_info
from biovqa.components.c1.paper_tables import (GROUP_SHORT, SHORT, TIER_ORDER, by_label, by_type, hierarchy_table,
                                               table3, table18, table18_intervals, table19, table19_fall, table20,
                                               table21, table22, table23_by_group, table23_by_rank, table24, table77,
                                               table79, table80, table81, table82)
from biovqa.components.c1.tasks import TASK_NAMES
from biovqa.scoring.schema import estimate_value


def tables(summaries: Summaries) -> dict[str, pd.DataFrame]:
    """Every C1 table (see the module docstring), keyed by name, in the paper's order. Image-blind
    floor runs are left out (never ranked, counted among the configurations or averaged); Table 3
    prints the floor the summaries computed as its Floor row."""
    from biovqa.reporting.leaderboard import without_floors

    named, infos = by_display_name(without_floors(summaries))
    return {
        "table3": table3(named, summaries),
        "table18_pooled": table18(named, infos),
        "table18_intervals": table18_intervals(named, infos),
        "table19_per_rank": table19(named, infos),
        "table19_fall": table19_fall(named, infos),
        "table20_recognition_recall": table20(named, infos),
        "table21_severity": table21(named),
        "table22_by_group": table22(named),
        "table23_revision_lag_by_rank": table23_by_rank(named),
        "table23_revision_lag_by_group": table23_by_group(named),
        "table24_group_spearman": table24(named),
        "em_by_type": by_type(named, "em", "Table 72 — EM by question type"),
        "em_soft_by_type": by_type(named, "em_soft", "Table 73 — EM_soft by question type"),
        "revision_lag_by_type": by_type(named, "revision_lag",
                                         "Table 74 — revision lag (EM_soft − EM) by question type"),
        "unresolved_by_type": by_type(named, "unresolved", "Unresolved share by question type"),
        "wup_by_type": by_type(named, "wup", "Wu–Palmer similarity by question type"),
        "lin_by_type": by_type(named, "lin", "Lin similarity by question type"),
        "em_by_group": by_label(named, "groups", None, "Table 75 — EM by organismal group", GROUP_SHORT),
        "em_by_tier": by_label(named, "tiers", TIER_ORDER, "Table 76 — EM by difficulty tier"),
        "table77_em_by_rank_and_tier": table77(named),
        "table79_unresolved": table79(named),
        "table80_em_vs_severity_rank": table80(named),
        "table81_by_size": table81(named, infos),
        "table82_spearman_with_em": table82(named),
        "hierarchy": hierarchy_table(named),
    }


def figures(summaries: list[tuple[str, dict[str, Any]]], out_dir: Path) -> list[Path]:
    """EM per question type with 95% bootstrap error bars, one bar per model, floor marked."""
    from biovqa.reporting.plots import figure, grouped_bars, legend

    summaries, _ = by_display_name(summaries)
    path = Path(out_dir) / "c1_em_by_rank.png"
    series = []
    for label, summary in summaries:
        tasks = summary.get("tasks", {})
        value, lo, hi = ([estimate_value((tasks.get(t) or {}).get("em"), part) for t in TASK_NAMES]
                         for part in ("value", "lo", "hi"))
        series.append((label, value, lo, hi))
    with figure(path, (max(8.0, 1.1 * len(TASK_NAMES) + 0.3 * len(summaries)), 4.5)) as (_, axes):
        positions = grouped_bars(axes, [SHORT[t] for t in TASK_NAMES], series)
        if summaries:
            tasks = summaries[0][1].get("tasks", {})
            floors = [estimate_value((tasks.get(t) or {}).get("floor")) for t in TASK_NAMES]
            axes.hlines(floors, positions - 0.42, positions + 0.42, colors="black", linestyles="dashed",
                        label="floor (most frequent taxon)")
        axes.set_ylim(0, 1)
        axes.set_ylabel("exact match (95% CI)")
        axes.set_title("C1: accuracy by question type")
        legend(axes, len(summaries) + 1 if summaries else 0, columns=4, below=True)
    return [path]


__all__ = ["figures", "model_info", "tables"]
