"""Hierarchical VQA tables from score summaries (hierarchy.md §6, §8; checklist §11.5).

``tables(summaries)`` returns:

* ``hierarchy`` — per score folder: kind (visual/text), HCA, Acc_leaf, POR, S-POR (paper),
  S-POR (prefix, reference code), TOR in percent, and text HCA without the genus level when the
  entity gives the genus away;
* ``levels`` — per-level accuracy (%) per score folder;
* ``text_vs_visual`` — for each model with both a visual and a text score (same label, or the
  label plus `` [text]``): visual HCA,
  Acc_leaf, Acc_leaf-scaled HCA (%), text HCA; and ``correlation`` — Pearson's r between text HCA
  and scaled visual HCA across those models (needs at least 3; the paper's r = 0.9116).
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from biovqa.stats.hierarchy import pearson_r, scaled_hca

DECIMALS = 2
COLUMNS: dict[str, str] = {"hca": "HCA", "acc_leaf": "Acc_leaf", "por": "POR", "spor": "S-POR",
                           "spor_prefix": "S-POR (prefix)", "tor": "TOR"}


def _percent(value: Any) -> float:
    if isinstance(value, dict):
        value = value.get("value")
    return float("nan") if value is None else 100.0 * float(value)


def _model_key(label: str) -> str:
    """The model a score folder belongs to: its label without the `` (2)`` the report adds to a
    repeated label and without a `` [text]`` / `` [visual]`` marker."""
    return re.sub(r"( \((\d+)\))?$", "", re.sub(r" \[(text|visual)\]$", "", label)).strip()


def tables(summaries: list[tuple[str, dict]]) -> dict[str, pd.DataFrame]:
    rows = []
    for label, summary in summaries:
        row: dict[str, Any] = {"model": label, "kind": summary.get("kind")}
        row.update({title: _percent(summary["metrics"][key]) for key, title in COLUMNS.items()})
        if "without_genus" in summary:
            row["HCA without genus"] = _percent(summary["without_genus"]["hca"])
        rows.append(row)
    out = {"hierarchy": pd.DataFrame(rows).round(DECIMALS)}
    levels = pd.DataFrame({f"{label} ({summary.get('kind')})": {k: _percent(v) for k, v in summary["levels"].items()}
                           for label, summary in summaries})
    out["levels"] = levels.round(DECIMALS).rename_axis("level").reset_index()
    visual = {_model_key(label): s for label, s in summaries if s.get("kind") == "visual"}
    text = {_model_key(label): s for label, s in summaries if s.get("kind") == "text"}
    paired = []
    for label in sorted(set(visual) & set(text)):
        v, t = visual[label]["metrics"], text[label]["metrics"]
        paired.append({"model": label, "visual HCA": _percent(v["hca"]), "Acc_leaf": _percent(v["acc_leaf"]),
                       "scaled HCA": 100.0 * scaled_hca(_percent(v["hca"]), _percent(v["acc_leaf"])),
                       "text HCA": _percent(t["hca"])})
    if paired:
        frame = pd.DataFrame(paired)
        out["text_vs_visual"] = frame.round(DECIMALS)
        r = pearson_r(frame["text HCA"], frame["scaled HCA"]) if len(frame) >= 3 else float("nan")
        out["correlation"] = pd.DataFrame([{"models": len(frame), "pearson_r": round(r, 4)}])
    return out
