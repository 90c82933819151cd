"""C3 report tables and the floor plot (paper Table 3 C3 block, Tables 38–45, paper App. G).

``tables(summaries)`` → ``table3`` (models, then the Floor row: the floors fitted on the first
summary's parsed rows), ``table38_headline`` (best model per task on the Table 38 metric),
``table39_counting_tiers`` (per model easy/medium/hard macro cas and drops, plus mean/SD/positive
count rows), ``table40_viewpoint`` (EM, κ_VAS, ranks, shift), ``table41_viewpoint_steps``,
``table42_absolute_distance``, ``table43_localization`` (with the mean-gold-box row),
``table44_relative_counting`` (lift printed as balAcc − .250), ``table45_relative_position`` (lift
printed as acc − majority), ``table47_ocr``. ``figures(summaries, out_dir)`` draws every model's
Table 3 score against its own floor per task (``c3_model_vs_floor.png``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biovqa.components.c3.tasks import (ABSOLUTE_DISTANCE, COUNTING, LOCALIZATION, OCR, RELATIVE_COUNTING,
                                        RELATIVE_DISTANCE, RELATIVE_POSITION, TASKS, VIEWPOINT, TaskSpec)
from biovqa.scoring.schema import estimate_value

DECIMALS = 3
#: the paper's row order of Table 38 (a task not listed comes after these)
TABLE38_ORDER: tuple[TaskSpec, ...] = (COUNTING, VIEWPOINT, ABSOLUTE_DISTANCE, RELATIVE_DISTANCE, RELATIVE_COUNTING,
                                       LOCALIZATION, RELATIVE_POSITION, OCR)


def _get(summary: dict[str, Any], *path: str) -> float:
    """The float at ``path`` inside a summary (NaN where absent or null)."""
    node: Any = summary
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return math.nan
        node = node[key]
    return estimate_value(node)


def floor_value(summary: dict[str, Any], column: str) -> float:
    """The floor a summary fitted for the task of Table 3 ``column`` (the Floor row's entry)."""
    spec = next(t for t in TASKS if t.column == column)
    return _get(summary, spec.name, "floor", spec.floor_metric)


def tables(summaries: list[tuple[str, dict]]) -> dict[str, pd.DataFrame]:
    from biovqa.reporting.leaderboard import without_floors

    out: dict[str, pd.DataFrame] = {}
    # floor runs are not models: never a row, a rank or the best model; the Floor rows come from
    # the floors each summary fitted
    floor_source = summaries[0][1] if summaries else {}
    summaries = without_floors(summaries)
    columns = [t.column for t in TASKS]
    rows = [{"model": label, **{c: estimate_value((s.get("table3") or {}).get(c)) for c in columns}}
            for label, s in summaries]
    if floor_source:
        rows.append({"model": "Floor", **{c: floor_value(floor_source, c) for c in columns}})
    out["table3"] = pd.DataFrame(rows, columns=["model", *columns]).round(DECIMALS)

    rows = []
    for spec in sorted(TASKS, key=lambda t: TABLE38_ORDER.index(t) if t in TABLE38_ORDER else len(TABLE38_ORDER)):
        row = spec.table38
        scored = [(label, _get(s, spec.name, row.metric)) for label, s in summaries]
        scored = [(label, v) for label, v in scored if not math.isnan(v)]
        if not scored:
            continue
        best = max(scored, key=lambda e: e[1])
        rows.append({"task": row.title, "best_model": best[0], "score": best[1], "metric": row.metric,
                     "floor": _get(floor_source, spec.name, "floor", row.floor), "floor_rule": row.floor_rule})
    out["table38_headline"] = pd.DataFrame(rows, columns=["task", "best_model", "score", "metric", "floor",
                                                          "floor_rule"]).round(DECIMALS)

    rows = []
    for label, s in summaries:
        tiers = {t: _get(s, COUNTING.name, "tiers", t, "macro_cas") for t in ("easy", "medium", "hard")}
        rows.append({"model": label, **tiers, "easy_to_medium": tiers["easy"] - tiers["medium"],
                     "medium_to_hard": tiers["medium"] - tiers["hard"]})
    frame = pd.DataFrame(rows, columns=["model", "easy", "medium", "hard", "easy_to_medium", "medium_to_hard"])
    if len(frame) > 0:
        extra = []
        for name, fn in (("mean", lambda c: frame[c].mean()), ("sd", lambda c: frame[c].std(ddof=1)),
                         ("models_with_positive_drop", lambda c: float((frame[c] > 0).sum()))):
            extra.append({"model": name, **{c: fn(c) for c in ("easy_to_medium", "medium_to_hard")}})
        frame = pd.concat([frame, pd.DataFrame(extra)], ignore_index=True)
    out["table39_counting_tiers"] = frame.round(DECIMALS)

    rows = [{"model": label, "EM": _get(s, VIEWPOINT.name, "em"), "kappa_VAS": _get(s, VIEWPOINT.name, "kappa_vas"),
             "macroVAS": _get(s, VIEWPOINT.name, "macro_vas"), "VAS": _get(s, VIEWPOINT.name, "vas"),
             "ang_err_deg": _get(s, VIEWPOINT.name, "ang_err"), "over_share": _get(s, VIEWPOINT.name, "over_share")}
            for label, s in summaries]
    frame = pd.DataFrame(rows, columns=["model", "EM", "kappa_VAS", "macroVAS", "VAS", "ang_err_deg", "over_share"])
    frame.insert(2, "EM_rank", frame["EM"].rank(ascending=False))
    frame.insert(4, "kappa_rank", frame["kappa_VAS"].rank(ascending=False))
    frame["shift"] = frame["EM_rank"] - frame["kappa_rank"]
    out["table40_viewpoint"] = frame.round(DECIMALS)

    rows = []
    for label, s in summaries:
        steps = (s.get(VIEWPOINT.name) or {}).get("steps") or {}
        total = sum(steps.values()) or 1
        rows.append({"model": label, **{f"steps_{k}": steps.get(str(k), 0) / total for k in range(5)}})
    out["table41_viewpoint_steps"] = pd.DataFrame(rows, columns=["model", *(f"steps_{k}" for k in range(5))]).round(DECIMALS)

    rows = [{"model": label, "rho_within": _get(s, ABSOLUTE_DISTANCE.name, "rho_within"),
             "acc20": _get(s, ABSOLUTE_DISTANCE.name, "acc20"),
             "acc20_calibrated": _get(s, ABSOLUTE_DISTANCE.name, "acc20_calibrated"),
             "kappa": _get(s, ABSOLUTE_DISTANCE.name, "kappa"), "mre": _get(s, ABSOLUTE_DISTANCE.name, "mre"),
             "floor_acc20": _get(s, ABSOLUTE_DISTANCE.name, "floor", "acc20")} for label, s in summaries]
    frame = pd.DataFrame(rows, columns=["model", "rho_within", "acc20", "acc20_calibrated", "kappa", "mre", "floor_acc20"])
    frame["diagnosis"] = [_diagnosis(r) for r in frame.itertuples()]
    out["table42_absolute_distance"] = frame.round(DECIMALS)

    rows = [{"model": label, "IoU_all": _get(s, LOCALIZATION.name, "miou_all"),
             **{f"acc{t}": _get(s, LOCALIZATION.name, f"acc{t}") for t in (25, 50, 75, 90)},
             "parse": _get(s, LOCALIZATION.name, "parse_rate"),
             "convention": (s.get(LOCALIZATION.name) or {}).get("convention")} for label, s in summaries]
    frame = pd.DataFrame(rows, columns=["model", "IoU_all", "acc25", "acc50", "acc75", "acc90", "parse", "convention"])
    frame = frame.sort_values("IoU_all", ascending=False, kind="stable").reset_index(drop=True)
    if floor_source:
        s0 = floor_source
        frame = pd.concat([frame, pd.DataFrame([{"model": "mean gold box",
                                                 "IoU_all": _get(s0, LOCALIZATION.name, "floor", "miou"),
                                                 **{f"acc{t}": _get(s0, LOCALIZATION.name, "floor", f"acc{t}")
                                                    for t in (25, 50, 75, 90)}}])], ignore_index=True)
    out["table43_localization"] = frame.round(DECIMALS)

    rows = []
    for label, s in summaries:
        bal = _get(s, RELATIVE_COUNTING.name, "balanced_accuracy")
        rows.append({"model": label, "lift": bal - 0.25, "balAcc": bal, "acc": _get(s, RELATIVE_COUNTING.name, "accuracy"),
                     "posBias": _get(s, RELATIVE_COUNTING.name, "pos_bias"),
                     "balAcc_same": _get(s, RELATIVE_COUNTING.name, "conditions", "same", "balanced_accuracy"),
                     "balAcc_different": _get(s, RELATIVE_COUNTING.name, "conditions", "different", "balanced_accuracy")})
    frame = pd.DataFrame(rows, columns=["model", "lift", "balAcc", "acc", "posBias", "balAcc_same", "balAcc_different"])
    out["table44_relative_counting"] = frame.sort_values("balAcc", ascending=False, kind="stable").reset_index(drop=True).round(DECIMALS)

    rows = [{"model": label, "acc": _get(s, RELATIVE_POSITION.name, "accuracy"),
             "lift": _get(s, RELATIVE_POSITION.name, "margin_table45"),
             "angErr_deg": _get(s, RELATIVE_POSITION.name, "ang_err"), "within45": _get(s, RELATIVE_POSITION.name, "within45")}
            for label, s in summaries]
    frame = pd.DataFrame(rows, columns=["model", "acc", "lift", "angErr_deg", "within45"])
    out["table45_relative_position"] = frame.sort_values("acc", ascending=False, kind="stable").reset_index(drop=True).round(DECIMALS)

    rows = [{"model": label, "EM": _get(s, OCR.name, "em"), "charAcc": _get(s, OCR.name, "char_acc"),
             "suffixCharAcc": _get(s, OCR.name, "suffix_char_acc"), "inflation": _get(s, OCR.name, "inflation")}
            for label, s in summaries]
    out["table47_ocr"] = pd.DataFrame(rows, columns=["model", "EM", "charAcc", "suffixCharAcc", "inflation"]).round(DECIMALS)
    return out


def _diagnosis(row: Any) -> str:
    measures = not math.isnan(row.rho_within) and row.rho_within >= 0.5
    calibrates = not math.isnan(row.acc20) and not math.isnan(row.floor_acc20) and row.acc20 > row.floor_acc20
    if measures and calibrates:
        return "measures and calibrates"
    if measures:
        return "measures, no calibration"
    return "calibrates only" if calibrates else "neither"




def figures(summaries: list[tuple[str, dict]], out_dir: str | Path) -> list[Path]:
    """Each model's Table 3 score (a dot with its 95% interval) against its own image-blind floor
    (a bar in the same colour, fitted on that model's parsed replies) for every C3 task; floor runs
    are not models and get no dot."""
    from biovqa.reporting.leaderboard import without_floors
    from biovqa.reporting.plots import figure, legend, series_offsets, whiskers

    models = without_floors(summaries) or summaries
    path = Path(out_dir) / "c3_model_vs_floor.png"
    columns = [t.column for t in TASKS]
    x = np.arange(len(columns))
    offsets, width = series_offsets(len(models))
    with figure(path, (max(9.0, 0.9 * len(columns) + 0.35 * len(models)), 4.8), dpi=110) as (_, ax):
        for k, (offset, (label, s)) in enumerate(zip(offsets, models)):
            colour = f"C{k % 10}"
            t3 = s.get("table3") or {}
            scores = [estimate_value(t3.get(c)) for c in columns]
            lo = [estimate_value(t3.get(c), "lo") if isinstance(t3.get(c), dict) else math.nan for c in columns]
            hi = [estimate_value(t3.get(c), "hi") if isinstance(t3.get(c), dict) else math.nan for c in columns]
            floor = [floor_value(s, c) for c in columns]
            ax.bar(x + offset, np.nan_to_num(floor), width, color=colour, alpha=0.25, edgecolor=colour,
                   label=f"{label}: its floor φ (bar)")
            ax.errorbar(x + offset, scores, yerr=whiskers(scores, lo, hi), fmt="o", color=colour, markersize=4,
                        capsize=2, zorder=3, label=f"{label}: score, 95% CI (dot)")
        ax.set_xticks(x)
        ax.set_xticklabels([f"{t.column}\n{t.metric}" for t in TASKS], fontsize="small")
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("score on the task's Table 3 metric (tick label)")
        ax.set_title("C3: each model against its own image-blind floor")
        legend(ax, 2 * len(models), columns=2, below=True)
    return [path]
