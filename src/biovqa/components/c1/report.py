"""C1 leaderboard tables and figure from score summaries (paper Tables 3, 18–21, 72–76, 79).

``tables(summaries)`` takes ``[(model label, summary dict), …]`` as written by ``biovqa score``
(see :mod:`biovqa.components.c1.score` for the summary shape; NaN may arrive as ``None`` from JSON) and
returns named pandas DataFrames, values rounded to 3 decimals:

* ``table3`` — EM at the 8 open question types (phy cls ord fam gen spc sci com), one row per
  model in the given order, then the ``Floor`` row (most-frequent-taxon rule; Table 3 C1 block);
* ``table18_pooled`` — pooled EM, EM_soft, Wu–Palmer, Lin (item-weighted over the 9 types) with
  95% bounds, sorted by EM_soft (Table 18);
* ``table19_per_rank`` — mean EM per question type over the models and the step from the rank
  above (Table 19's 18-VLM columns);
* ``table20_recognition_recall`` — open common name, 4-way MCQ, gap and ratio, sorted by gap, with
  the mean row (Tables 20 / 78);
* ``em_by_type`` / ``em_soft_by_type`` / ``revision_lag_by_type`` / ``severity_by_type`` /
  ``wup_by_type`` / ``lin_by_type`` — per question type, pooled last (Tables 72, 73, 74, 21);
* ``unresolved_severity`` — pooled unresolved share, severity and EM (Table 79);
* ``em_by_group`` (Table 75), ``em_by_tier`` (Table 76), ``hierarchy`` (HCA family, pooled).

``figures(summaries, out_dir)`` draws EM per question type with 95% error bars, one bar per model,
the floor marked, into ``out_dir/c1_em_by_rank.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biovqa.components.c1.tasks import OPEN_TASKS, TASKS
from biovqa.components.c1.hierarchy import HIERARCHICAL_METRICS

#: Table 3 column labels of the open question types.
SHORT: dict[str, str] = {
    "phylum": "phy", "class": "cls", "order": "ord", "family": "fam", "genus": "gen", "species": "spc",
    "scientific_name": "sci", "common_name": "com", "common_name_mcq": "mcq",
}
#: Table 19 row labels and order (species epithet after scientific name, MCQ before open common name).
RANK_ROWS: tuple[tuple[str, str], ...] = (
    ("phylum", "phylum"), ("class", "class"), ("order", "order"), ("family", "family"), ("genus", "genus"),
    ("scientific_name", "scientific name"), ("species", "species epithet"),
    ("common_name_mcq", "common name MCQ"), ("common_name", "common name"),
)
GROUP_SHORT: dict[str, str] = {
    "Amphibians": "Amph", "Angiosperms": "Angio", "Arachnids": "Arach", "Birds": "Birds", "Bryophytes": "Bryo",
    "Fish": "Fish", "Gymnosperms": "Gymno", "Insects": "Insect", "Mammals": "Mamm", "Reptiles": "Rept",
}
TIER_ORDER: tuple[str, ...] = ("Easy", "Medium", "Hard", "Degenerate")
DECIMALS = 3


def _number(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _value(block: dict[str, Any] | None, metric: str, part: str = "value") -> float:
    """A metric of a summary block (NaN where absent or null)."""
    if not block or metric not in block or block[metric] is None:
        return float("nan")
    entry = block[metric]
    return _number(entry.get(part)) if isinstance(entry, dict) else _number(entry)


def _by_type(summaries: list[tuple[str, dict[str, Any]]], metric: str, *, pooled: bool = True) -> pd.DataFrame:
    rows = {}
    for label, summary in summaries:
        tasks = summary.get("tasks", {})
        row = {SHORT[t]: _value(tasks.get(t), metric) for t in TASKS}
        if pooled:
            row["pooled"] = _value(summary.get("pooled"), metric)
        rows[label] = row
    return _frame(rows, "model")


def _frame(rows: dict[str, dict[str, float]], index_name: str) -> pd.DataFrame:
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = index_name
    return frame.astype(float).round(DECIMALS)


def table3(summaries: list[tuple[str, dict[str, Any]]]) -> pd.DataFrame:
    """Table 3's C1 block: EM at the 8 open types per model, then the floor row."""
    rows = {label: {SHORT[t]: _value(s.get("tasks", {}).get(t), "em") for t in OPEN_TASKS} for label, s in summaries}
    if summaries:
        tasks = summaries[0][1].get("tasks", {})
        rows["Floor"] = {SHORT[t]: _number((tasks.get(t) or {}).get("floor")) for t in OPEN_TASKS}
    return _frame(rows, "model")


def table18(summaries: list[tuple[str, dict[str, Any]]]) -> pd.DataFrame:
    rows = {}
    for label, summary in summaries:
        pooled = summary.get("pooled", {})
        row = {}
        for metric, name in (("em", "EM"), ("em_soft", "EM_soft"), ("wup", "wup"), ("lin", "lin")):
            row[name] = _value(pooled, metric)
            row[f"{name}_lo"] = _value(pooled, metric, "lo")
            row[f"{name}_hi"] = _value(pooled, metric, "hi")
        rows[label] = row
    frame = _frame(rows, "model")
    if len(frame):
        frame = frame.sort_values(["EM_soft", "EM"], ascending=False, kind="stable")
        frame.insert(0, "rank", np.arange(1, len(frame) + 1))
    return frame


#: Table 19's step column: the change from the row named second.
STEP_FROM: dict[str, str] = {
    "class": "phylum", "order": "class", "family": "order", "genus": "family", "scientific_name": "genus",
    "species": "scientific_name", "common_name": "common_name_mcq",
}


def table19(summaries: list[tuple[str, dict[str, Any]]]) -> pd.DataFrame:
    """Mean EM per question type over the models and the step from the rank above (Table 19)."""
    means = {}
    for task, _ in RANK_ROWS:
        values = np.array([_value(s.get("tasks", {}).get(task), "em") for _, s in summaries], dtype=float)
        means[task] = float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
    rows = {label: {"EM": means[task], "step": means[task] - means[STEP_FROM[task]] if task in STEP_FROM
                    else float("nan")} for task, label in RANK_ROWS}
    return _frame(rows, "rank")


def table20(summaries: list[tuple[str, dict[str, Any]]]) -> pd.DataFrame:
    rows = {}
    for label, summary in summaries:
        block = summary.get("recognition_recall", {})
        rows[label] = {"open_ended": _value(block, "open"), "mcq4": _value(block, "mcq"),
                       "gap": _value(block, "gap"), "gap_lo": _value(block, "gap", "lo"),
                       "gap_hi": _value(block, "gap", "hi"), "ratio": _value(block, "ratio")}
    frame = pd.DataFrame.from_dict(rows, orient="index").astype(float)
    if len(frame):
        frame = frame.sort_values("gap", ascending=False, kind="stable")
        mean_open, mean_mcq = frame["open_ended"].mean(), frame["mcq4"].mean()
        frame.loc["mean"] = {"open_ended": mean_open, "mcq4": mean_mcq, "gap": mean_mcq - mean_open,
                             "gap_lo": np.nan, "gap_hi": np.nan,
                             "ratio": mean_mcq / mean_open if mean_open > 0 else np.nan}
    frame.index.name = "model"
    return frame.round(DECIMALS)


def _by_label(summaries: list[tuple[str, dict[str, Any]]], key: str, order: tuple[str, ...] | None,
              short: dict[str, str] | None = None) -> pd.DataFrame:
    labels: list[str] = []
    for _, summary in summaries:
        for name in summary.get(key, {}):
            if name not in labels:
                labels.append(name)
    if order is not None:
        labels = [t for t in order if t in labels] + sorted(t for t in labels if t not in order)
    else:
        labels = sorted(labels)
    rows = {label: {(short or {}).get(name, name): _value(summary.get(key, {}).get(name), "em") for name in labels}
            for label, summary in summaries}
    return _frame(rows, "model")


def hierarchy_table(summaries: list[tuple[str, dict[str, Any]]]) -> pd.DataFrame:
    rows = {label: {metric: _value(summary.get("hierarchy", {}).get("pooled"), metric)
                    for metric in HIERARCHICAL_METRICS} for label, summary in summaries}
    return _frame(rows, "model")


def tables(summaries: list[tuple[str, dict[str, Any]]]) -> dict[str, pd.DataFrame]:
    """Every C1 table (see the module docstring), keyed by name."""
    unresolved = {label: {"unresolved": _value(s.get("pooled"), "unresolved"),
                          "severity": _value(s.get("pooled"), "severity"), "EM": _value(s.get("pooled"), "em")}
                  for label, s in summaries}
    return {
        "table3": table3(summaries),
        "table18_pooled": table18(summaries),
        "table19_per_rank": table19(summaries),
        "table20_recognition_recall": table20(summaries),
        "em_by_type": _by_type(summaries, "em"),
        "em_soft_by_type": _by_type(summaries, "em_soft"),
        "revision_lag_by_type": _by_type(summaries, "revision_lag"),
        "severity_by_type": _by_type(summaries, "severity"),
        "wup_by_type": _by_type(summaries, "wup"),
        "lin_by_type": _by_type(summaries, "lin"),
        "unresolved_severity": _frame(unresolved, "model").sort_values("unresolved", ascending=False,
                                                                        kind="stable"),
        "em_by_group": _by_label(summaries, "groups", None, GROUP_SHORT),
        "em_by_tier": _by_label(summaries, "tiers", TIER_ORDER),
        "hierarchy": hierarchy_table(summaries),
    }


def figures(summaries: list[tuple[str, dict[str, Any]]], out_dir: Path) -> list[Path]:
    """EM per question type with 95% bootstrap error bars, one bar per model, floor marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    positions = np.arange(len(TASKS))
    width = 0.8 / max(len(summaries), 1)
    figure, axes = plt.subplots(figsize=(max(8.0, 1.1 * len(TASKS) + 0.3 * len(summaries)), 4.5))
    for k, (label, summary) in enumerate(summaries):
        tasks = summary.get("tasks", {})
        value = np.array([_value(tasks.get(t), "em") for t in TASKS])
        lo = np.array([_value(tasks.get(t), "em", "lo") for t in TASKS])
        hi = np.array([_value(tasks.get(t), "em", "hi") for t in TASKS])
        errors = np.vstack([np.nan_to_num(value - lo), np.nan_to_num(hi - value)]).clip(min=0)
        axes.bar(positions - 0.4 + width * (k + 0.5), np.nan_to_num(value), width, yerr=errors, capsize=2,
                 label=label)
    if summaries:
        tasks = summaries[0][1].get("tasks", {})
        floors = [_number((tasks.get(t) or {}).get("floor")) for t in TASKS]
        axes.hlines(floors, positions - 0.42, positions + 0.42, colors="black", linestyles="dashed",
                    label="floor (most frequent taxon)")
    axes.set_xticks(positions, [SHORT[t] for t in TASKS])
    axes.set_ylim(0, 1)
    axes.set_ylabel("exact match (95% CI)")
    axes.set_title("C1: accuracy by question type")
    axes.legend(fontsize="small", ncol=min(4, len(summaries) + 1), frameon=False, loc="upper center",
                bbox_to_anchor=(0.5, -0.08))
    figure.tight_layout()
    path = out_dir / "c1_em_by_rank.png"
    figure.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(figure)
    return [path]
