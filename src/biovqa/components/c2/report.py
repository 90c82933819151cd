"""C2 leaderboard tables and figure from score summaries (paper Table 3 C2 block, Tables 30–35,
83–84).

``tables(summaries)`` takes ``[(model label, summary dict), …]`` as written by ``biovqa score``
(shape documented in :mod:`biovqa.components.c2.score`; NaN may arrive as ``None`` from JSON) and returns
named pandas DataFrames:

* ``table3`` — cags of the four categories in Table 3's order: sal (relative salience), mrp
  (morphological), loc (anatomical), nam (naming); models in the given order, then the floor (0);
* ``table30_leaderboard`` — EM, GS_raw, pooled cags with its 95 % CI and severity, ranked by cags;
* ``table31_em_format`` — EM over all / MCQ / open items, parse rate, letter–text mismatch rate,
  choose-A rate, ranked by EM;
* ``table32_categories`` — cags per category (4 decimals, as printed);
* ``table33_cags_by_family`` / ``table34_em_by_family`` / ``table83_severity_by_family`` /
  ``table84_gs_raw_by_family`` — one column per family, the ``mean`` row last;
* ``table35_family_difficulty`` — per family the mean, min and max cags over the models, easiest
  last (ascending mean).

Every rate is a fraction in [0, 1] printed with 3 decimals, as in every other report table (the
paper prints Tables 31 and 34 in percent).

``figures(summaries, out_dir)`` draws cags per category (``c2_cags_by_category.png``, Table 3's C2
block) and per family (``c2_cags_by_family.png``), one bar per model with 95 % CI whiskers
(:mod:`biovqa.reporting.plots`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biovqa.scoring.schema import estimate_value
from biovqa.components.c2.tasks import CATEGORY_SPECS, FAMILIES, MCQ_FAMILIES, TASKS

#: Table 33/34 column labels of the families.
FAMILY_SHORT: dict[str, str] = {f.name: f.short for f in TASKS}
#: Table 33's column order (alphabetical, as printed).
FAMILY_COLUMNS: tuple[str, ...] = tuple(sorted(FAMILIES))
#: Table 3's C2 block: label → category.
TABLE3_COLUMNS: tuple[tuple[str, str], ...] = tuple((c.table3_column, c.name) for c in CATEGORY_SPECS)
#: Category names as the paper's Table 7 spells them (figure labels).
CATEGORY_TITLE: dict[str, str] = {c.name: f"{c.title}\n({c.table3_column})" for c in CATEGORY_SPECS}
TABLE32_COLUMNS: tuple[tuple[str, str], ...] = (
    ("anatomical", "anatomical"), ("morphological", "morphological"), ("salience", "relative_salience"),
    ("naming", "naming"),
)
#: Table 31's columns: EM over all / MCQ / open items, then the format diagnostics (all fractions)
TABLE31_COLUMNS: tuple[str, ...] = ("acc_all", "acc_mcq", "acc_open", "parse_rate", "mismatch_rate", "choose_A_rate")
DECIMALS = 3


def _read(block: dict[str, Any] | None, key: str, part: str = "value") -> float:
    """``part`` of the estimate (or number) ``block[key]``; NaN where the block or entry is absent."""
    return estimate_value((block or {}).get(key), part)


def _family_frame(summaries: list[tuple[str, dict]], metric: str) -> pd.DataFrame:
    rows = []
    for label, summary in summaries:
        families = summary.get("families", {})
        row: dict[str, Any] = {"model": label}
        for family in FAMILY_COLUMNS:
            row[FAMILY_SHORT[family]] = _read(families.get(family), metric)
        rows.append(row)
    frame = pd.DataFrame(rows, columns=["model", *(FAMILY_SHORT[f] for f in FAMILY_COLUMNS)])
    if len(frame):
        mean = {"model": "mean", **{c: frame[c].mean() for c in frame.columns[1:]}}
        frame = pd.concat([frame, pd.DataFrame([mean])], ignore_index=True)
    return frame.round(DECIMALS)


def tables(summaries: list[tuple[str, dict]]) -> dict[str, pd.DataFrame]:
    """The C2 report tables (see the module docstring). Image-blind floor runs appear in
    ``table3`` only, below the models; every other table ranks and averages models only."""
    from biovqa.reporting.leaderboard import without_floors

    out: dict[str, pd.DataFrame] = {}
    models = without_floors(summaries)
    floors = [entry for entry in summaries if entry not in models]

    rows = []
    for label, summary in [*models, *floors]:
        categories = summary.get("categories", {})
        rows.append({"model": label, **{short: _read(categories.get(cat), "cags") for short, cat in TABLE3_COLUMNS}})
    summaries = models
    # The paper's Table 3 floor row for C2 is 0: cags is chance-corrected, so a uniform guesser
    # scores 0 by construction. An image-blind prior (the baseline backend) can do better; its
    # own score folder is the measured floor the leaderboard shows.
    rows.append({"model": "Chance (cags = 0 by construction)", **{short: 0.0 for short, _ in TABLE3_COLUMNS}})
    out["table3"] = pd.DataFrame(rows, columns=["model", *(s for s, _ in TABLE3_COLUMNS)]).round(DECIMALS)

    rows = []
    for label, summary in summaries:
        pooled = summary.get("pooled", {})
        rows.append({"model": label, "EM": _read(pooled, "em"), "GS_raw": _read(pooled, "gs_raw"),
                     "cags": _read(pooled, "cags"), "ci95_lo": _read(pooled, "cags", "lo"), "ci95_hi": _read(pooled, "cags", "hi"),
                     "severity": _read(pooled, "severity")})
    frame = pd.DataFrame(rows, columns=["model", "EM", "GS_raw", "cags", "ci95_lo", "ci95_hi", "severity"])
    frame = frame.sort_values("cags", ascending=False, kind="stable").reset_index(drop=True)
    frame.insert(0, "rank", np.arange(1, len(frame) + 1))
    out["table30_leaderboard"] = frame.round(DECIMALS)

    rows = []
    for label, summary in summaries:
        pooled = summary.get("pooled", {})
        fmt = summary.get("format", {})
        rows.append({"model": label, "acc_all": _read(pooled, "em"), "acc_mcq": _read(fmt, "em_mcq"),
                     "acc_open": _read(fmt, "em_open"), "parse_rate": _read(fmt, "parse_rate"),
                     "mismatch_rate": _read(fmt, "mismatch_rate"),
                     "choose_A_rate": _read(fmt, "choose_a_rate")})
    frame = pd.DataFrame(rows, columns=["model", *TABLE31_COLUMNS])
    frame = frame.sort_values("acc_all", ascending=False, kind="stable").reset_index(drop=True).round(DECIMALS)
    frame.attrs["title"] = "Table 31 — EM and format diagnostics (fractions; the paper prints %)"
    out["table31_em_format"] = frame

    rows = []
    for label, summary in summaries:
        categories = summary.get("categories", {})
        rows.append({"model": label, **{name: _read(categories.get(cat), "cags") for name, cat in TABLE32_COLUMNS}})
    out["table32_categories"] = pd.DataFrame(rows, columns=["model", *(n for n, _ in TABLE32_COLUMNS)]).round(4)

    out["table33_cags_by_family"] = _family_frame(summaries, "cags")
    out["table34_em_by_family"] = _family_frame(summaries, "em")
    out["table34_em_by_family"].attrs["title"] = "Table 34 — EM by family (fractions; the paper prints %)"
    out["table83_severity_by_family"] = _family_frame(summaries, "severity")
    out["table84_gs_raw_by_family"] = _family_frame(summaries, "gs_raw")

    rows = []
    for family in FAMILIES:
        values = [_read(summary.get("families", {}).get(family), "cags") for _, summary in summaries]
        values = [v for v in values if not np.isnan(v)]
        if values:
            rows.append({"family": family, "mean": float(np.mean(values)), "min": float(np.min(values)),
                         "max": float(np.max(values)), "format": "MCQ" if family in MCQ_FAMILIES else "open"})
    frame = pd.DataFrame(rows, columns=["family", "mean", "min", "max", "format"])
    out["table35_family_difficulty"] = frame.sort_values("mean", kind="stable").reset_index(drop=True).round(DECIMALS)
    return out


def _cags_series(summaries: list[tuple[str, dict]], section: str, keys: Sequence[str]
                 ) -> list[tuple[str, list[float], list[float], list[float]]]:
    """Per model: (label, cags, lo, hi) of each key of ``summary[section]`` (families or categories)."""
    out = []
    for label, summary in summaries:
        blocks = [summary.get(section, {}).get(key) for key in keys]
        out.append((label, [_read(block, "cags") for block in blocks], [_read(b, "cags", "lo") for b in blocks],
                    [_read(b, "cags", "hi") for b in blocks]))
    return out


def figures(summaries: list[tuple[str, dict]], out_dir: str | Path) -> list[Path]:
    """cags per category (Table 3's C2 block) and per family, one bar per model with 95 % CI
    whiskers; returns the written PNG paths."""
    from biovqa.reporting.plots import figure, grouped_bars, legend

    n_models = max(1, len(summaries))
    categories = _cags_series(summaries, "categories", [category for _, category in TABLE3_COLUMNS])
    path_categories = Path(out_dir) / "c2_cags_by_category.png"
    with figure(path_categories, (max(7.0, 1.6 * len(TABLE3_COLUMNS) + 0.3 * n_models), 4.2)) as (_, ax):
        grouped_bars(ax, [CATEGORY_TITLE[category] for _, category in TABLE3_COLUMNS], categories)
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_ylabel("cags (0 = chance), 95% CI")
        ax.set_title("C2 cags by category (Table 3)")
        legend(ax, len(summaries), below=True)
    families = _cags_series(summaries, "families", FAMILY_COLUMNS)
    path_families = Path(out_dir) / "c2_cags_by_family.png"
    with figure(path_families, (max(8.0, 1.1 * len(FAMILY_COLUMNS) + 0.3 * n_models), 4.5)) as (_, ax):
        grouped_bars(ax, [FAMILY_SHORT[f] for f in FAMILY_COLUMNS], families, rotation=30)
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_ylabel("cags (0 = chance)")
        ax.set_title("C2 cags by family")
        legend(ax, len(summaries), below=True)
    return [path_categories, path_families]
