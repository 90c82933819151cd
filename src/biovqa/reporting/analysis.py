"""Cross-component analysis (paper Supplement J; paper App. J, paper App. J).

The model × task matrix holds, for every generalist model, the Table 3 estimate of every task
column (the OCR control left out by default, as the paper does). From it:

* task-pair Spearman ρ (average ranks) over the models;
* mean ρ within components vs across, and the label-permutation p of the gap
  (``(1 + #{gap_perm ≥ gap})/(B + 1)``, block sizes kept);
* per component: internal ρ (mean within-block ρ) and standardized α ``k·r̄/(1+(k−1)·r̄)`` with
  r̄ = internal ρ (the paper's printed α follow this: C1 .981 = α(.841, 10)); also with r̄ = the
  mean Pearson r of the columns (``alpha_std_pearson``, the reading of the Table 4 reconstruction's
  reconstruction table);
* component scores (mean of the z-scored task columns, ddof = 1), Spearman between components,
  two-sided t-approximation p, Holm over the pairs, Fisher-z (Bonett–Wright) intervals;
* PCA of the z-scored matrix: PC1 share and loadings.

Missing cells are imputed with the column median of the other models; the sensitivity run drops
every model with a missing cell and reports how much the within − across gap moves.

Two designs of the matrix (``design``):

* ``paper27`` (the default) — the paper's 27 tasks (paper App. J.1), read from the
  score summaries: C1 EM of the 10 organismal groups (``groups.<group>.em``, Table 75), C2 cags
  of the five attribute/anatomy families (``families.<family>.cags``: attr_bare_value,
  attr_group_value, marker_localization, visibility_partset, visibility_side; Table 33), the 7
  C3 spatial tasks as Table 3 scores them (``table3``: cnt, rcnt, adst, rdst, lcl, rpos, view; OCR
  is the negative control), and C4 random-pairing d′ per species (``cells.<dataset>.random.dprime``,
  Table 86). The paper does not say which C3 headline and which C4 per-species metric it used;
  these are biovqa's recorded choices (the Table 4 reconstruction);
* ``table3`` — Table 3's columns (OCR left out): the numbers the paper's text gives for "Table 3 only"
  (e.g. C2–C3 .959, PC1 .598 over all 22 columns).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from biovqa.reporting.leaderboard import GENERALIST, Run, build_leaderboard
from biovqa.stats.inference import alpha_std, fisher_ci, holm, pca_share, permutation_gap_p, within_across_gap
from biovqa.stats.ranks import spearman_matrix, spearman_p
from biovqa.scoring.schema import estimate_value

MIN_MODELS = 4
DESIGNS: tuple[str, ...] = ("paper27", "table3")


def paper27_tasks(*, include_controls: bool = False) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Supplement J's 27 tasks: task label → (component, path of the estimate in its
    summary.json), in component order, as each component's declaration lists them
    (``Component.analysis_columns``); ``include_controls`` adds the negative controls (C3's OCR)."""
    from biovqa.components.registry import list_components

    return {column.label: (component.name, column.path) for component in list_components()
            for column in component.analysis_columns if include_controls or not column.control}


def control_tasks() -> tuple[str, ...]:
    """The negative-control task columns the analysis leaves out unless asked (paper App. J.1:
    C3's OCR), from the components' declarations."""
    from biovqa.components.registry import list_components

    return tuple(column.label for component in list_components() for column in component.analysis_columns
                 if column.control)


@dataclass(frozen=True)
class Analysis:
    matrix: pd.DataFrame            # models × tasks, imputed
    imputed: pd.DataFrame           # bool, which cells were imputed
    blocks: dict[str, str]          # task → component
    rho: pd.DataFrame               # task × task Spearman
    within: float
    across: float
    p_gap: float
    components: pd.DataFrame        # per component: k, internal rho, alpha
    pairs: pd.DataFrame             # per component pair: rho, lo, hi, p, p_holm, significant
    pc1_share: float
    loadings: pd.Series
    sensitivity_gap: float          # within − across after dropping models with missing cells
    dropped: tuple[str, ...]


def _dig(summary: Mapping[str, object], path: Sequence[str]) -> float:
    node: object = summary
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return math.nan
        node = node[key]
    return estimate_value(node)


def paper27_matrix(runs: Sequence[Run], *, include_ocr: bool = False) -> tuple[pd.DataFrame, dict[str, str]]:
    """Generalist models × the 27 tasks of :func:`paper27_tasks` (NaN where a summary lacks a
    task), models in the Table 3 order; ``include_ocr`` adds the negative controls (C3's OCR) as
    further tasks."""
    from biovqa.components.registry import get_component

    columns = {name: list(get_component(name).table3) for name in sorted({r.component for r in runs})
               if get_component(name).table3}
    board = build_leaderboard(runs, columns)
    models = [r for r in board.value.index if board.kind[r] == GENERALIST]
    tasks = paper27_tasks(include_controls=include_ocr)
    matrix = pd.DataFrame(math.nan, index=pd.Index(models, name="model"), columns=list(tasks))
    for run in runs:
        if run.name not in matrix.index:
            continue
        for task, (component, path) in tasks.items():
            if component == run.component and math.isnan(matrix.loc[run.name, task]):
                matrix.loc[run.name, task] = _dig(run.summary, path)
    return matrix, {task: component.upper() for task, (component, _) in tasks.items()}


def paper27_availability(runs: Sequence[Run]) -> pd.DataFrame:
    """Per task of the 27: its component, where the summaries hold it, and how many generalist
    score folders have a value for it."""
    matrix, _ = paper27_matrix(runs)
    tasks = paper27_tasks()
    frame = pd.DataFrame({"component": [tasks[t][0].upper() for t in tasks],
                          "summary_path": [".".join(tasks[t][1]) for t in tasks],
                          "models_with_value": [int(matrix[t].notna().sum()) for t in tasks]},
                         index=pd.Index(list(tasks), name="task"))
    frame.attrs["title"] = "Supplement J's 27 tasks: where each is read from and how many models have it"
    return frame


def task_matrix(runs: Sequence[Run], columns: Mapping[str, Sequence[str]],
                exclude: Sequence[str] | None = None) -> tuple[pd.DataFrame, dict[str, str]]:
    """Generalist models × Table 3 task columns (values; NaN where a model lacks a task);
    ``exclude`` defaults to the negative controls (:func:`control_tasks`)."""
    exclude = control_tasks() if exclude is None else exclude
    board = build_leaderboard(runs, columns)
    rows = [r for r in board.value.index if board.kind[r] == GENERALIST]
    blocks = {c: comp.upper() for comp, cols in columns.items() for c in cols if c not in exclude}
    return board.value.loc[rows, list(blocks)], blocks


def analyze_matrix(raw: pd.DataFrame, blocks: dict[str, str], *, B: int = 2000, seed: int = 42) -> Analysis | None:
    """The analysis of a models × tasks matrix; None when it has too few models or tasks."""
    raw = raw.loc[:, [c for c in raw.columns if raw[c].notna().sum() >= 2]]
    if raw.shape[0] < MIN_MODELS or raw.shape[1] < 2:
        return None
    imputed = raw.isna()
    matrix = raw.fillna(raw.median(axis=0))
    # a task with no spread over the models has no rank correlation; leave it out
    matrix = matrix.loc[:, matrix.std(axis=0, ddof=1) > 0]
    tasks = list(matrix.columns)
    if len(tasks) < 2:
        return None
    labels = [blocks[t] for t in tasks]
    rho = pd.DataFrame(spearman_matrix(matrix.to_numpy()), index=tasks, columns=tasks)
    within, across = within_across_gap(rho.to_numpy(), labels)
    p_gap = permutation_gap_p(rho.to_numpy(), labels, B=B, seed=seed) if len(set(labels)) > 1 else math.nan

    comp_rows = []
    for comp in sorted(set(labels)):
        cols = [t for t in tasks if blocks[t] == comp]
        k = len(cols)
        sub = rho.loc[cols, cols].to_numpy()
        r_bar = float(sub[np.triu_indices(k, 1)].mean()) if k > 1 else math.nan
        pearson = np.atleast_2d(np.corrcoef(matrix[cols].to_numpy(), rowvar=False))
        p_bar = float(pearson[np.triu_indices(k, 1)].mean()) if k > 1 else math.nan
        comp_rows.append({"component": comp, "tasks": k, "internal_rho": r_bar,
                          "alpha_std": alpha_std(r_bar, k) if k > 1 else math.nan,
                          "alpha_std_pearson": alpha_std(p_bar, k) if k > 1 else math.nan})
    components = pd.DataFrame(comp_rows).set_index("component")

    z = (matrix - matrix.mean(axis=0)) / matrix.std(axis=0, ddof=1)
    scores = pd.DataFrame({comp: z[[t for t in tasks if blocks[t] == comp]].mean(axis=1)
                           for comp in sorted(set(labels))})
    n = len(scores)
    pair_rows = []
    comps = list(scores.columns)
    for i, a in enumerate(comps):
        for b in comps[i + 1:]:
            r = float(spearman_matrix(scores[[a, b]].to_numpy())[0, 1])
            lo, hi = fisher_ci(r, n)
            pair_rows.append({"pair": f"{a}-{b}", "rho": r, "lo": lo, "hi": hi, "p": spearman_p(r, n)})
    pairs = pd.DataFrame(pair_rows, columns=["pair", "rho", "lo", "hi", "p"]).set_index("pair")
    if len(pairs):
        adjusted, rejected = holm(pairs["p"].to_numpy())
        pairs["p_holm"] = adjusted
        pairs["significant"] = ["yes" if r else "no †" for r in rejected]

    share, loadings = pca_share(matrix.to_numpy())
    dropped = tuple(str(m) for m in raw.index[imputed.any(axis=1)])
    sensitivity = math.nan
    kept = raw.drop(index=list(dropped))[tasks]
    if dropped and len(kept) >= MIN_MODELS and (kept.std(axis=0, ddof=1) > 0).all():
        w, a = within_across_gap(spearman_matrix(kept.to_numpy()), labels)
        sensitivity = w - a
    return Analysis(matrix, imputed[tasks], {t: blocks[t] for t in tasks}, rho, within, across, p_gap,
                    components, pairs, share, pd.Series(loadings, index=tasks), sensitivity, dropped)


def cross_component(runs: Sequence[Run], *, B: int = 2000, seed: int = 42,
                    exclude: Sequence[str] | None = None, design: str = "paper27") -> Analysis | None:
    """The analysis over the generalists of ``runs`` (``design``: ``paper27`` or ``table3``);
    None with fewer than four models or with tasks from fewer than two columns. ``exclude``
    (default: the negative controls) names task columns left out."""
    from biovqa.components.registry import get_component

    if design not in DESIGNS:
        raise ValueError(f"unknown analysis design {design!r}; choose one of {', '.join(DESIGNS)}")
    exclude = control_tasks() if exclude is None else exclude
    if design == "paper27":
        matrix, blocks = paper27_matrix(runs, include_ocr=not set(control_tasks()) <= set(exclude))
        return analyze_matrix(matrix, blocks, B=B, seed=seed)
    columns = {name: list(get_component(name).table3) for name in sorted({r.component for r in runs})
               if get_component(name).table3}
    matrix, blocks = task_matrix(runs, columns, exclude)
    return analyze_matrix(matrix, blocks, B=B, seed=seed)


def analysis_tables(analysis: Analysis) -> dict[str, pd.DataFrame]:
    """The analysis as report tables (name → frame with ``attrs`` title and decimals)."""
    def fmt(value: float, places: int = 4) -> str:
        return "—" if not math.isfinite(value) else f"{value:.{places}f}"

    summary = pd.DataFrame([
        {"statistic": "models", "value": str(len(analysis.matrix))},
        {"statistic": "tasks", "value": str(analysis.matrix.shape[1])},
        {"statistic": "imputed cells", "value": str(int(analysis.imputed.to_numpy().sum()))},
        {"statistic": "mean task-pair rho within components", "value": fmt(analysis.within, 3)},
        {"statistic": "mean task-pair rho across components", "value": fmt(analysis.across, 3)},
        {"statistic": "gap (within - across)", "value": fmt(analysis.within - analysis.across, 3)},
        {"statistic": "permutation p of the gap", "value": fmt(analysis.p_gap)},
        {"statistic": "gap without models that needed imputation", "value": fmt(analysis.sensitivity_gap, 3)},
        {"statistic": "PC1 share of variance", "value": fmt(analysis.pc1_share, 3)},
    ]).set_index("statistic")
    summary.attrs.update(title="Within- vs across-component agreement and PCA")
    components = analysis.components.copy()
    components.attrs.update(title="Internal agreement per component (mean within-component rho; standardized alpha "
                                  "from it and from the mean Pearson r)")
    pairs = analysis.pairs.copy()
    pairs.attrs.update(title="Component correlations (Spearman over models; Fisher-z 95% CI; Holm; † = not significant)",
                       decimals={"p": 4, "p_holm": 4})
    rho = analysis.rho.copy()
    rho.index.name = "task"
    rho.attrs.update(title="Spearman rho between tasks over the models", decimals={c: 2 for c in rho.columns})
    loadings = pd.DataFrame({"component": [analysis.blocks[t] for t in analysis.loadings.index],
                             "pc1_loading": analysis.loadings.to_numpy()},
                            index=pd.Index(analysis.loadings.index, name="task"))
    loadings.attrs.update(title="PC1 loadings of the standardized model × task matrix")
    matrix = analysis.matrix.copy()
    matrix.index.name = "model"
    matrix.attrs.update(title="Model × task matrix (imputed cells = column median)")
    return {"summary": summary, "components": components, "pairs": pairs, "task_rho": rho,
            "pc1_loadings": loadings, "matrix": matrix}


def heatmap(analysis: Analysis, out_dir: Path) -> Path:
    """The task × task Spearman matrix as a heat map, component blocks outlined:
    ``out_dir/analysis_task_rho.png``."""
    from matplotlib.patches import Rectangle

    from biovqa.reporting.plots import figure

    tasks = list(analysis.rho.columns)
    size = max(4.0, 0.32 * len(tasks) + 2.0)
    path = Path(out_dir) / "analysis_task_rho.png"
    with figure(path, (size + 1.0, size), dpi=110) as (fig, axes):
        image = axes.imshow(analysis.rho.to_numpy(), vmin=-1, vmax=1, cmap="RdBu_r")
        axes.set_xticks(range(len(tasks)), tasks, rotation=90, fontsize=8)
        axes.set_yticks(range(len(tasks)), tasks, fontsize=8)
        start = 0
        for comp in dict.fromkeys(analysis.blocks[t] for t in tasks):
            k = sum(1 for t in tasks if analysis.blocks[t] == comp)
            axes.add_patch(Rectangle((start - 0.5, start - 0.5), k, k, fill=False, linewidth=1.5, edgecolor="black"))
            axes.text(start + k / 2 - 0.5, -0.7, comp, ha="center", va="bottom", fontsize=9, fontweight="bold")
            start += k
        fig.colorbar(image, ax=axes, label="Spearman ρ over models")
        axes.set_title("Task-pair rank correlation (boxes: components)", pad=20)
    return path
