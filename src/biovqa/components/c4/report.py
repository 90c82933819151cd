"""C4 leaderboard tables and figure from score summaries (paper Table 3 C4 block, Tables 49–55,
85–87).

``tables(summaries)`` takes ``[(model label, summary dict), …]`` as written by ``biovqa score``
(shape in :mod:`biovqa.components.c4.score`) and returns:

* ``table3_c4`` — random condition pooled over datasets: dprime, acc; then the floor (0, .500);
* ``table49_dprime`` — d′ pooled over datasets per condition and the verdict, sorted by random d′;
* ``table50_criterion_mean_species`` — c per condition as the mean of per-dataset c (Table 50's
  reading); ``table85_criterion_pooled`` — c from summed counts (Table 85's);
* ``table51_easy_minus_hard`` — pooled accuracy easy, hard, the difference and its Wald 95 %
  interval, sorted by the difference (fractions, 3 decimals, like every report table; the paper
  prints Tables 51/88 in percent and percentage points);
* ``table52_dprime_by_species`` — per dataset the mean d′ over the models per condition, and
  easy − hard;
* ``table86_dprime_random_by_species`` — per model the random-condition d′ of every dataset;
* ``table87_random_agreement`` — random condition: acc, balanced acc, MCC, κ, each the mean over
  datasets;
* ``table3_c4`` carries ``scored_on``: ``all``, or the species a run was scored on (a specialist
  run on Grevy's zebra only, as in the paper, is scored on that subset, not counted wrong elsewhere);
* ``table53_specialist`` — specialist runs (labelled ``[specialist]`` or whose replies carry their
  similarity): per condition the AUC, d′ = √2·z(AUC) and the thresholded accuracy, as Table 53;
  specialists are left out of the VLM tables 49–52, 55, 85–87;
* ``table54_dinov2_auc`` — the DINOv2 construction check per dataset × condition (from the first
  summary: it depends on the benchmark only) and the random-condition similarity margin;
* ``table55_sign_flip`` — random vs hard d′ per model.

``figures(summaries, out_dir)`` draws d′ (top) and c (bottom) per dataset × condition, one
marker series per model, into ``out_dir/c4_dprime_c.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biovqa.components.c4.pairs import CONDITIONS

SPECIES_LABEL: dict[str, str] = {"whaleshark": "Whale shark", "hyena": "Spotted hyena", "leopard": "Leopard",
                                 "gzcd": "Grevy's zebra", "beluga": "Beluga whale"}
DECIMALS = 3


def _value(value: Any) -> float:
    if isinstance(value, dict):
        value = value.get("value")
    return float("nan") if value is None else float(value)


def _datasets(summaries: list[tuple[str, dict]]) -> list[str]:
    from biovqa.components.c4.build import DATASETS

    seen: set[str] = set()
    for _, summary in summaries:
        seen.update(summary.get("cells", {}))
    return [d for d in DATASETS if d in seen] + sorted(seen - set(DATASETS))


def _is_specialist(label: str, summary: dict | None = None) -> bool:
    """A specialist run: labelled ``[specialist]``, or its replies carried their decision variable."""
    return "[specialist]" in label.lower() or bool((summary or {}).get("decision_variable"))


def _scored_on(summary: dict, datasets: list[str]) -> str:
    """``all`` when the run was scored on every dataset of the report, else the species it was
    scored on (the paper runs MegaDescriptor on Grevy's zebra only)."""
    own = [d for d in datasets if d in summary.get("cells", {})]
    if set(own) == set(datasets):
        return "all"
    return ", ".join(SPECIES_LABEL.get(d, d) for d in own) + " only"


def _plain(label: str) -> str:
    return label.split("[")[0].strip() or label


def tables(summaries: list[tuple[str, dict]]) -> dict[str, pd.DataFrame]:
    """The C4 report tables (see the module docstring)."""
    out: dict[str, pd.DataFrame] = {}
    datasets = _datasets(summaries)

    rows = [{"model": _plain(label), "dprime": _value(s.get("table3", {}).get("dprime")),
             "acc": _value(s.get("table3", {}).get("acc")), "scored_on": _scored_on(s, datasets)}
            for label, s in summaries]
    rows.append({"model": "Floor", "dprime": 0.0, "acc": 0.5, "scored_on": "all"})
    frame = pd.DataFrame(rows, columns=["model", "dprime", "acc", "scored_on"]).round(DECIMALS)
    frame.attrs["title"] = ("Table 3, C4 — random condition pooled over the datasets a run was scored on "
                            "(scored_on); a specialist's d′ is √2·z(AUC), every other run's the d′ of its Yes/No replies")
    out["table3_c4"] = frame

    # Tables 49-52 and 55 compare the VLMs; the specialist has its own Table 53
    models = [(label, s) for label, s in summaries if not _is_specialist(label, s)]
    rows = []
    for label, s in models:
        pooled = s.get("pooled", {})
        rows.append({"model": _plain(label), **{c: _value(pooled.get(c, {}).get("dprime")) for c in CONDITIONS},
                     "verdict": s.get("verdict")})
    frame = pd.DataFrame(rows, columns=["model", *CONDITIONS, "verdict"])
    out["table49_dprime"] = frame.sort_values("random", ascending=False, kind="stable").reset_index(drop=True).round(DECIMALS)

    for name, key in (("table50_criterion_mean_species", "c_mean_species"), ("table85_criterion_pooled", "c")):
        rows = []
        for label, s in models:
            pooled = s.get("pooled", {})
            rows.append({"model": _plain(label), **{f"c_{c}": _value(pooled.get(c, {}).get(key)) for c in CONDITIONS}})
        out[name] = pd.DataFrame(rows, columns=["model", *(f"c_{c}" for c in CONDITIONS)]).round(DECIMALS)

    rows = []
    for label, s in models:
        pooled = s.get("pooled", {})
        diff = s.get("ordering", {}).get("easy_minus_hard_acc") or {}
        rows.append({"model": _plain(label), "acc_easy": _value(pooled.get("easy", {}).get("acc")),
                     "acc_hard": _value(pooled.get("hard", {}).get("acc")), "difference": _value(diff.get("difference")),
                     "ci95_lo": _value(diff.get("lo")), "ci95_hi": _value(diff.get("hi"))})
    frame = pd.DataFrame(rows, columns=["model", "acc_easy", "acc_hard", "difference", "ci95_lo", "ci95_hi"])
    frame = frame.sort_values("difference", ascending=False, kind="stable").reset_index(drop=True).round(DECIMALS)
    frame.attrs["title"] = ("Tables 51/88 — easy − hard accuracy with its Wald 95% interval "
                            "(fractions; the paper prints percentage points)")
    out["table51_easy_minus_hard"] = frame

    rows = []
    for dataset in datasets:
        means = {}
        for condition in CONDITIONS:
            values = [_value(s.get("cells", {}).get(dataset, {}).get(condition, {}).get("dprime")) for _, s in models]
            values = [v for v in values if not np.isnan(v)]
            means[condition] = float(np.mean(values)) if values else float("nan")
        rows.append({"species": SPECIES_LABEL.get(dataset, dataset), **means,
                     "easy_minus_hard": means["easy"] - means["hard"]})
    out["table52_dprime_by_species"] = pd.DataFrame(
        rows, columns=["species", *CONDITIONS, "easy_minus_hard"]).round(DECIMALS)

    rows = []
    for label, s in models:
        cells = s.get("cells", {})
        rows.append({"model": _plain(label), **{d: _value(cells.get(d, {}).get("random", {}).get("dprime"))
                                                 for d in datasets}})
    out["table86_dprime_random_by_species"] = pd.DataFrame(rows, columns=["model", *datasets]).round(DECIMALS)

    rows = []
    for label, s in models:
        cells = s.get("cells", {})
        row: dict[str, Any] = {"model": _plain(label)}
        for stat, column in (("acc", "acc"), ("balanced_acc", "balanced_acc"), ("mcc", "MCC"), ("kappa", "cohen_kappa")):
            values = [_value(cells.get(d, {}).get("random", {}).get(stat)) for d in datasets]
            values = [v for v in values if not np.isnan(v)]
            row[column] = float(np.mean(values)) if values else float("nan")
        rows.append(row)
    out["table87_random_agreement"] = pd.DataFrame(
        rows, columns=["model", "acc", "balanced_acc", "MCC", "cohen_kappa"]).round(DECIMALS)

    rows = []
    for label, s in summaries:
        if not _is_specialist(label, s):
            continue
        for condition in CONDITIONS:
            cell = s.get("pooled", {}).get(condition, {})
            rows.append({"model": _plain(label), "scored_on": _scored_on(s, datasets), "condition": condition,
                         "AUC": _value(cell.get("auc")), "dprime": _value(cell.get("dprime_auc")),
                         "acc": _value(cell.get("acc"))})
    frame = pd.DataFrame(rows, columns=["model", "scored_on", "condition", "AUC", "dprime", "acc"]).round(DECIMALS)
    frame.attrs["title"] = ("Table 53 — specialist: AUC of its similarity, d′ = √2·z(AUC), and the accuracy of "
                            "the threshold fitted on random (easy and hard out of fit)")
    out["table53_specialist"] = frame

    rows = []
    # they depend on the benchmark only: from the summary scored on the most datasets
    checks: dict[str, Any] = max((s.get("construction_checks") or {} for _, s in summaries), key=len, default={})
    for dataset in datasets:
        entry = checks.get(dataset, {})
        rows.append({"species": SPECIES_LABEL.get(dataset, dataset),
                     **{f"dinov2_{c}_AUC": _value(entry.get(c, {}).get("auc")) for c in CONDITIONS},
                     "random_margin": _value(entry.get("random", {}).get("margin"))})
    out["table54_dinov2_auc"] = pd.DataFrame(
        rows, columns=["species", *(f"dinov2_{c}_AUC" for c in CONDITIONS), "random_margin"]).round(4)

    rows = []
    for label, s in models:
        pooled = s.get("pooled", {})
        r, h = _value(pooled.get("random", {}).get("dprime")), _value(pooled.get("hard", {}).get("dprime"))
        rows.append({"model": _plain(label), "dprime_random": r, "dprime_hard": h,
                     "abs_range": f"{abs(r):.2f} to {abs(h):.2f}" if not (np.isnan(r) or np.isnan(h)) else ""})
    out["table55_sign_flip"] = pd.DataFrame(rows, columns=["model", "dprime_random", "dprime_hard", "abs_range"]).round(DECIMALS)
    return out


def figures(summaries: list[tuple[str, dict]], out_dir: str | Path) -> list[Path]:
    """d′ and c per dataset × condition (and pooled), one series per model."""
    from biovqa.reporting.plots import figure, legend

    path = Path(out_dir) / "c4_dprime_c.png"
    datasets = _datasets(summaries)
    groups = [*datasets, "pooled"]
    slots = [(g, c) for g in groups for c in CONDITIONS]
    x = np.arange(len(slots))
    n_models = max(1, len(summaries))
    with figure(path, (max(8.0, 0.45 * len(slots) + 2), 6.5), nrows=2, sharex=True) as (_, axes):
        for k, (label, s) in enumerate(summaries):
            offset = (k - (n_models - 1) / 2) * min(0.12, 0.8 / n_models)
            for ax, key in zip(axes, ("dprime", "c")):
                values = []
                for group, condition in slots:
                    block = s.get("pooled", {}) if group == "pooled" else s.get("cells", {}).get(group, {})
                    values.append(_value(block.get(condition, {}).get(key)))
                ax.plot(x + offset, values, marker="o", linestyle="none", label=label if key == "dprime" else None)
        for ax, name in zip(axes, ("d′ (0 = chance)", "criterion c (< 0: bias to Yes)")):
            ax.axhline(0.0, color="black", linewidth=0.8)
            ax.set_ylabel(name)
            for boundary in range(3, len(slots), 3):
                ax.axvline(boundary - 0.5, color="grey", linewidth=0.5)
        axes[1].set_xticks(x)
        axes[1].set_xticklabels([f"{SPECIES_LABEL.get(g, g)}\n{c}" if c == "random" else c for g, c in slots],
                                rotation=0, fontsize="x-small")
        axes[0].set_title("C4 d′ and criterion c per dataset and condition")
        legend(axes[0], len(summaries))
    return [path]


__all__ = ["figures", "tables"]
