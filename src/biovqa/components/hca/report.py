"""Hierarchical VQA tables from score summaries (Tan, Qing, Gong 2025, "Vision LLMs Are Bad at Hierarchical Visual Understanding", §2.2, §3.3.1, Table 3, App. C.4).

Every table is keyed by (model, dataset): a score folder's dataset is the bench's (``biovqa build
hca --dataset``, by default the source file's name; a text control inherits its visual bench's),
so two datasets in one report never mix. ``tables(summaries)`` returns:

* ``hierarchy`` — per score folder: model, dataset, kind (visual/text), HCA, Acc_leaf, POR, S-POR
  (paper), S-POR (prefix, reference code), TOR as fractions (the HCA paper prints percent; the
  report's one unit convention is fractions with 3 decimals), and text HCA without the genus level
  when the entity gives the genus away;
* ``levels`` — per-level accuracy (fraction) per score folder (a level asked but not scored is marked);
* ``depth`` — HCA at depth k (fraction) per score folder: every path truncated to its levels ≤ k
  (App. C.4; the deepest k is HCA itself);
* ``text_vs_visual`` — for each (model, dataset) with both a visual and a text score (same label,
  or the label plus `` [text]``): visual HCA, Acc_leaf, Acc_leaf-scaled HCA, text HCA (fractions);
* ``correlation`` — per dataset, Pearson's r between text HCA and scaled visual HCA across the
  models scored on it (at least 3 models, else empty);
* ``correlation_per_model`` — the paper's Table 3 last column: per model, r between text HCA and
  scaled visual HCA across the datasets it was scored on (defined from 3 datasets; the paper
  reports up to 0.9116).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from biovqa.components.hca.tasks import PATH_METRICS
from biovqa.scoring.schema import estimate_value
from biovqa.stats.hierarchy import pearson_r, scaled_hca

DECIMALS = 3
#: Fewest points a correlation is reported from (two points always give ±1).
MIN_CORRELATION_POINTS = 3
COLUMNS: dict[str, str] = {m.metric: m.title for m in PATH_METRICS}
NO_DATASET = "-"



def _dataset(summary: dict) -> str:
    return str(summary.get("dataset") or NO_DATASET)


def _column_name(label: str, summary: dict) -> str:
    return f"{label} ({summary.get('kind')}, {_dataset(summary)})"


def _r(x: pd.Series, y: pd.Series) -> float:
    r = pearson_r(x, y) if len(x) >= MIN_CORRELATION_POINTS else float("nan")
    return r if math.isnan(r) else round(r, 4)


def tables(summaries: list[tuple[str, dict]]) -> dict[str, pd.DataFrame]:
    rows = []
    for label, summary in summaries:
        row: dict[str, Any] = {"model": label, "dataset": _dataset(summary), "kind": summary.get("kind")}
        row.update({title: estimate_value(summary["metrics"][key]) for key, title in COLUMNS.items()})
        if "without_genus" in summary:
            row["HCA without genus"] = estimate_value(summary["without_genus"]["hca"])
        rows.append(row)
    out = {"hierarchy": pd.DataFrame(rows).round(DECIMALS)}

    def level_key(summary: dict, key: str) -> str:
        unscored = {str(level) for level in summary.get("unscored_levels") or []}
        return f"{key} (asked, not scored)" if key.split()[0] in unscored else key

    levels = pd.DataFrame({_column_name(label, summary): {level_key(summary, k): estimate_value(v)
                                                          for k, v in summary["levels"].items()}
                           for label, summary in summaries})
    out["levels"] = levels.round(DECIMALS).rename_axis("level").reset_index()
    depth = pd.DataFrame({_column_name(label, summary): {int(k): estimate_value(v) for k, v in summary["depth"].items()}
                          for label, summary in summaries if summary.get("depth")})
    if not depth.empty:
        out["depth"] = depth.sort_index().round(DECIMALS).rename_axis("depth").reset_index()

    from biovqa.reporting.leaderboard import model_name

    # a model's visual run and its text-only control meet under the model's name (one label reader)
    by_kind: dict[str, dict[tuple[str, str], dict]] = {"visual": {}, "text": {}}
    for label, summary in summaries:
        if summary.get("kind") in by_kind:
            by_kind[summary["kind"]].setdefault((model_name(label), _dataset(summary)), summary)
    paired = []
    for model, dataset in sorted(set(by_kind["visual"]) & set(by_kind["text"])):
        v, t = by_kind["visual"][(model, dataset)]["metrics"], by_kind["text"][(model, dataset)]["metrics"]
        paired.append({"model": model, "dataset": dataset, "visual HCA": estimate_value(v["hca"]),
                       "Acc_leaf": estimate_value(v["acc_leaf"]),
                       "scaled HCA": scaled_hca(estimate_value(v["hca"]), estimate_value(v["acc_leaf"])),
                       "text HCA": estimate_value(t["hca"])})
    if paired:
        frame = pd.DataFrame(paired)
        out["text_vs_visual"] = frame.round(DECIMALS)
        out["correlation"] = pd.DataFrame(
            [{"dataset": dataset, "models": len(group), "pearson_r": _r(group["text HCA"], group["scaled HCA"])}
             for dataset, group in frame.groupby("dataset", sort=True)])
        per_model = [{"model": model, "datasets": len(group), "pearson_r": _r(group["text HCA"], group["scaled HCA"])}
                     for model, group in frame.groupby("model", sort=True)]
        out["correlation_per_model"] = pd.DataFrame(per_model)
    return out
