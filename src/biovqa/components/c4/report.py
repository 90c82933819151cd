"""C4 leaderboard tables and figure from score summaries (paper Table 3 C4 block, Tables 49–55,
85–87).

``tables(summaries)`` takes ``[(model label, summary dict), …]`` as written by ``biovqa score``
(shape in :mod:`biovqa.components.c4.score`) and returns:

* ``table3`` — random condition pooled over datasets: dprime, acc; then the floor (0, .500);
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
* ``table3`` carries ``scored_on``: ``all``, or the species a run was scored on (a specialist
  run on Grevy's zebra only, as in the paper, is scored on that subset, not counted wrong elsewhere);
* ``table53_specialist`` — specialist runs (labelled ``[specialist]`` or whose replies carry their
  similarity): per condition the AUC, d′ = √2·z(AUC) and the thresholded accuracy, as Table 53;
  specialists are left out of the VLM tables 49–52, 55, 85–87;
* ``table54_dinov2_auc`` — the DINOv2 construction check per dataset × condition (from the first
  summary: it depends on the benchmark only) and the random-condition similarity margin;
* ``table55_sign_flip`` — random vs hard d′ per model.

``figures(summaries, out_dir)`` draws d′ (top row) and criterion c (bottom row), one panel per
condition with the datasets and the pooled value on its x axis, one series per run with the 95%
interval its summary holds as error bars (specialists hollow diamonds, floor runs grey crosses),
into ``out_dir/c4_dprime_c.png`` (:func:`draw_dprime_c` draws it into given axes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biovqa.components.c4.tasks import CONDITIONS, DATASETS
from biovqa.scoring.schema import estimate_value
from biovqa.sources.wildlife import CATALOG_SPECIES

DECIMALS = 3
#: catalog → its species as the report tables name it (Tables 52, 86): the reader's species, capitalised
SPECIES_LABEL: dict[str, str] = {name: CATALOG_SPECIES[name][:1].upper() + CATALOG_SPECIES[name][1:]
                                 for name in DATASETS}



def _datasets(summaries: list[tuple[str, dict]]) -> list[str]:
    seen: set[str] = set()
    for _, summary in summaries:
        seen.update(summary.get("cells", {}))
    return [d for d in DATASETS if d in seen] + sorted(seen - set(DATASETS))


def _is_specialist(label: str, summary: dict | None = None) -> bool:
    """A specialist run: labelled ``[specialist]``, or its replies carried their decision variable."""
    from biovqa.reporting.leaderboard import SPECIALIST, read_label

    return read_label(label)[1] == SPECIALIST or bool((summary or {}).get("decision_variable"))


def _scored_on(summary: dict, datasets: list[str]) -> str:
    """``all`` when the run was scored on every dataset of the report, else the species it was
    scored on (the paper runs MegaDescriptor on Grevy's zebra only)."""
    own = [d for d in datasets if d in summary.get("cells", {})]
    if set(own) == set(datasets):
        return "all"
    return ", ".join(SPECIES_LABEL.get(d, d) for d in own) + " only"


def _plain(label: str) -> str:
    from biovqa.reporting.leaderboard import parse_label

    return parse_label(label).name


def tables(summaries: list[tuple[str, dict]]) -> dict[str, pd.DataFrame]:
    """The C4 report tables (see the module docstring)."""
    out: dict[str, pd.DataFrame] = {}
    datasets = _datasets(summaries)

    rows = [{"model": _plain(label), "dprime": estimate_value(s.get("table3", {}).get("dprime")),
             "acc": estimate_value(s.get("table3", {}).get("acc")), "scored_on": _scored_on(s, datasets)}
            for label, s in summaries]
    rows.append({"model": "Floor", "dprime": 0.0, "acc": 0.5, "scored_on": "all"})
    frame = pd.DataFrame(rows, columns=["model", "dprime", "acc", "scored_on"]).round(DECIMALS)
    frame.attrs["title"] = ("Table 3, C4 — random condition pooled over the datasets a run was scored on "
                            "(scored_on); a specialist's d′ is √2·z(AUC), every other run's the d′ of its Yes/No replies")
    out["table3"] = frame

    # Tables 49-52 and 55 compare the VLMs; the specialist has its own Table 53
    models = [(label, s) for label, s in summaries if not _is_specialist(label, s)]
    rows = []
    for label, s in models:
        pooled = s.get("pooled", {})
        rows.append({"model": _plain(label), **{c: estimate_value(pooled.get(c, {}).get("dprime")) for c in CONDITIONS},
                     "verdict": s.get("verdict")})
    frame = pd.DataFrame(rows, columns=["model", *CONDITIONS, "verdict"])
    out["table49_dprime"] = frame.sort_values("random", ascending=False, kind="stable").reset_index(drop=True).round(DECIMALS)

    for name, key in (("table50_criterion_mean_species", "c_mean_species"), ("table85_criterion_pooled", "c")):
        rows = []
        for label, s in models:
            pooled = s.get("pooled", {})
            rows.append({"model": _plain(label), **{f"c_{c}": estimate_value(pooled.get(c, {}).get(key)) for c in CONDITIONS}})
        out[name] = pd.DataFrame(rows, columns=["model", *(f"c_{c}" for c in CONDITIONS)]).round(DECIMALS)

    rows = []
    for label, s in models:
        pooled = s.get("pooled", {})
        diff = s.get("ordering", {}).get("easy_minus_hard_acc") or {}
        rows.append({"model": _plain(label), "acc_easy": estimate_value(pooled.get("easy", {}).get("acc")),
                     "acc_hard": estimate_value(pooled.get("hard", {}).get("acc")), "difference": estimate_value(diff.get("difference")),
                     "ci95_lo": estimate_value(diff.get("lo")), "ci95_hi": estimate_value(diff.get("hi"))})
    frame = pd.DataFrame(rows, columns=["model", "acc_easy", "acc_hard", "difference", "ci95_lo", "ci95_hi"])
    frame = frame.sort_values("difference", ascending=False, kind="stable").reset_index(drop=True).round(DECIMALS)
    frame.attrs["title"] = ("Tables 51/88 — easy − hard accuracy with its Wald 95% interval "
                            "(fractions; the paper prints percentage points)")
    out["table51_easy_minus_hard"] = frame

    rows = []
    for dataset in datasets:
        means = {}
        for condition in CONDITIONS:
            values = [estimate_value(s.get("cells", {}).get(dataset, {}).get(condition, {}).get("dprime")) for _, s in models]
            values = [v for v in values if not np.isnan(v)]
            means[condition] = float(np.mean(values)) if values else float("nan")
        rows.append({"species": SPECIES_LABEL.get(dataset, dataset), **means,
                     "easy_minus_hard": means["easy"] - means["hard"]})
    out["table52_dprime_by_species"] = pd.DataFrame(
        rows, columns=["species", *CONDITIONS, "easy_minus_hard"]).round(DECIMALS)

    rows = []
    for label, s in models:
        cells = s.get("cells", {})
        rows.append({"model": _plain(label), **{d: estimate_value(cells.get(d, {}).get("random", {}).get("dprime"))
                                                 for d in datasets}})
    out["table86_dprime_random_by_species"] = pd.DataFrame(rows, columns=["model", *datasets]).round(DECIMALS)

    rows = []
    for label, s in models:
        cells = s.get("cells", {})
        row: dict[str, Any] = {"model": _plain(label)}
        for stat, column in (("acc", "acc"), ("balanced_acc", "balanced_acc"), ("mcc", "MCC"), ("kappa", "cohen_kappa")):
            values = [estimate_value(cells.get(d, {}).get("random", {}).get(stat)) for d in datasets]
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
                         "AUC": estimate_value(cell.get("auc")), "dprime": estimate_value(cell.get("dprime_auc")),
                         "acc": estimate_value(cell.get("acc"))})
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
                     **{f"dinov2_{c}_AUC": estimate_value(entry.get(c, {}).get("auc")) for c in CONDITIONS},
                     "random_margin": estimate_value(entry.get("random", {}).get("margin"))})
    out["table54_dinov2_auc"] = pd.DataFrame(
        rows, columns=["species", *(f"dinov2_{c}_AUC" for c in CONDITIONS), "random_margin"]).round(4)

    rows = []
    for label, s in models:
        pooled = s.get("pooled", {})
        r, h = estimate_value(pooled.get("random", {}).get("dprime")), estimate_value(pooled.get("hard", {}).get("dprime"))
        rows.append({"model": _plain(label), "dprime_random": r, "dprime_hard": h,
                     "abs_range": f"{abs(r):.2f} to {abs(h):.2f}" if not (np.isnan(r) or np.isnan(h)) else ""})
    out["table55_sign_flip"] = pd.DataFrame(rows, columns=["model", "dprime_random", "dprime_hard", "abs_range"]).round(DECIMALS)
    return out


#: the estimate each panel row plots, its axis label (the metric's name and how to read it)
PANELS: tuple[tuple[str, str], ...] = (("dprime", "d′ (sensitivity; 0 = chance)"),
                                       ("c", "criterion c (< 0: bias to “Yes”)"))


def _series_style(label: str, summary: dict, k: int, datasets: list[str]) -> tuple[str, dict[str, Any]]:
    """(legend label, errorbar style) of one run: generalists as filled circles in their own
    colour, a specialist as hollow diamonds, a floor run as grey crosses, each named by its kind
    (and the species it was scored on, when not all), so that no reference run reads as a model."""
    from biovqa.reporting.leaderboard import FLOOR, read_label

    colour = f"C{k % 10}"
    name, kind = read_label(label, summary)
    scored_on = _scored_on(summary, datasets)
    where = "" if scored_on == "all" else f", {scored_on}"
    if kind == FLOOR:
        return f"{name} (floor{where})", {"fmt": "x", "color": "0.45", "markersize": 7}
    if _is_specialist(label, summary):
        return f"{name} (specialist{where})", {"fmt": "D", "color": colour, "markerfacecolor": "none",
                                                "markersize": 6}
    return f"{name} ({scored_on})" if where else name, {"fmt": "o", "color": colour, "markersize": 5}


#: the legend entry of a specialist's cells whose AUC is 1 (√2·z(AUC) is not finite)
PERFECT_AUC_LABEL = "at the top edge: AUC = 1, no finite d′"


def _mark_perfect_auc(ax: Any, xs: np.ndarray, groups: list[str], summary: dict, condition: str,
                      colour: str) -> bool:
    """A specialist whose similarity separates the pairs perfectly (AUC = 1) has no finite
    √2·z(AUC): an open triangle at the panel's top edge says so instead of no point. Whether any
    was drawn."""
    drawn = False
    for x, group in zip(xs, groups):
        block = summary.get("pooled", {}) if group == "pooled" else summary.get("cells", {}).get(group, {})
        cell = block.get(condition, {})
        if estimate_value(cell.get("auc")) == 1.0 and np.isnan(estimate_value(cell.get("dprime_auc"))):
            ax.plot([x], [0.97], marker="^", markerfacecolor="none", color=colour, linestyle="none",
                    transform=ax.get_xaxis_transform(), clip_on=False)
            drawn = True
    return drawn


def draw_dprime_c(axes: Any, summaries: list[tuple[str, dict]]) -> list[str]:
    """Draw C4's d′ (top row) and criterion c (bottom row) into a 2 × 3 grid of ``axes``, one
    column per condition (easy, random, hard; Tables 49/50), each dataset and the pooled value on
    the x axis, one series per run with its 95% interval from the summary as error bars (a
    specialist's d′ is √2·z(AUC), Table 53; AUC = 1, no finite d′, is marked at the top edge).
    Both rows share one y scale across conditions. Returns the x tick labels."""
    from biovqa.reporting.plots import series_offsets, whiskers

    datasets = _datasets(summaries)
    groups = [*datasets, "pooled"]
    ticks = [SPECIES_LABEL.get(g, g) if g != "pooled" else "Pooled" for g in groups]
    x = np.arange(len(groups))
    offsets, _ = series_offsets(len(summaries), slot=0.7)
    perfect: dict[str, str] = {}
    for k, ((label, s), offset) in enumerate(zip(summaries, offsets)):
        name, style = _series_style(label, s, k, datasets)
        specialist = _is_specialist(label, s)
        for row, (key, _) in enumerate(PANELS):
            for column, condition in enumerate(CONDITIONS):
                estimates = []
                for group in groups:
                    block = s.get("pooled", {}) if group == "pooled" else s.get("cells", {}).get(group, {})
                    cell = block.get(condition, {})
                    estimate = cell.get("dprime_auc") if specialist and key == "dprime" else None
                    estimates.append(estimate if isinstance(estimate, dict) else cell.get(key))
                values = [estimate_value(e) for e in estimates]
                lo = [estimate_value((e or {}).get("lo")) if isinstance(e, dict) else float("nan") for e in estimates]
                hi = [estimate_value((e or {}).get("hi")) if isinstance(e, dict) else float("nan") for e in estimates]
                ax = axes[row][column]
                ax.errorbar(x + offset, values, yerr=whiskers(values, lo, hi), capsize=2, elinewidth=0.9,
                            linestyle="none", label=name if (row, column) == (0, len(CONDITIONS) - 1) else None,
                            **style)
                if specialist and key == "dprime" and _mark_perfect_auc(ax, x + offset, groups, s, condition,
                                                                       style["color"]):
                    perfect[name] = style["color"]
    for name, colour in perfect.items():  # a legend entry (no data), last: what a top-edge triangle means
        axes[0][len(CONDITIONS) - 1].errorbar([], [], fmt="^", markerfacecolor="none", color=colour,
                                              label=f"{PERFECT_AUC_LABEL} ({name.split(' (')[0]})")
    for row in range(len(PANELS)):  # one y scale per row: the conditions compare at a glance
        limits = [axes[row][column].get_ylim() for column in range(len(CONDITIONS))]
        for column in range(len(CONDITIONS)):
            axes[row][column].set_ylim(min(a for a, _ in limits), max(b for _, b in limits))
    for row, (_, axis_label) in enumerate(PANELS):
        for column, condition in enumerate(CONDITIONS):
            ax = axes[row][column]
            ax.axhline(0.0, color="black", linewidth=0.8)
            if len(groups) > 1:  # the pooled value apart from the datasets it pools
                ax.axvline(len(groups) - 1.5, color="grey", linewidth=0.5, linestyle=":")
            ax.set_xticks(x)
            ax.set_xticklabels(ticks, rotation=35, ha="right", rotation_mode="anchor", fontsize="small")
            ax.set_xlim(-0.6, len(groups) - 0.4)
            if row == 0:
                ax.set_title(f"{condition} pairs", fontsize="medium")
            if column == 0:
                ax.set_ylabel(axis_label)
    return ticks


def figures(summaries: list[tuple[str, dict]], out_dir: str | Path) -> list[Path]:
    """``c4_dprime_c.png``: d′ and criterion c per condition, dataset and pooled, one series per
    run with its 95% interval (:func:`draw_dprime_c`), the legend to the right of the panels."""
    from biovqa.reporting.plots import figure, legend

    path = Path(out_dir) / "c4_dprime_c.png"
    n_groups = len(_datasets(summaries)) + 1
    width = max(10.0, len(CONDITIONS) * (0.55 * n_groups + 0.25 * len(summaries)) + 3.0)
    with figure(path, (width, 6.8), nrows=len(PANELS), ncols=len(CONDITIONS), sharex=False) as (fig, axes):
        draw_dprime_c(axes, summaries)
        fig.suptitle("C4 individual re-identification: d′ and criterion c (95% intervals)", fontsize="medium")
        legend(axes[0][len(CONDITIONS) - 1], len(summaries))
    return [path]


__all__ = ["draw_dprime_c", "figures", "tables"]
