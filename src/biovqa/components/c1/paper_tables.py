"""C1's tables in the paper's layout (paper Tables 3, 18–24, 72–82), each a function of the score
summaries of the models (display names and groups from :mod:`.labels`): column names and order as
printed, values rounded half up to the paper's precision, ``attrs["title"]`` and
``attrs["decimals"]`` set (which table is which: :mod:`.report`)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from biovqa.components.c1.hierarchy import HIERARCHICAL_METRICS
from biovqa.components.c1.labels import VLM_GROUP, ModelInfo, Summaries
from biovqa.components.c1.tasks import OPEN_TASKS, TASK_NAMES, TASKS
from biovqa.scoring.schema import estimate_value

#: Short column label per question type: its Table 3 column, ``mcq`` for the MCQ (no Table 3 column).
SHORT: dict[str, str] = {task.name: task.table3 or "mcq" for task in TASKS}
#: Table 19 / 23 row labels and Table 19 order (species epithet after scientific name, MCQ before
#: open common name).
RANK_ROWS: tuple[tuple[str, str], ...] = (
    ("phylum", "phylum"), ("class", "class"), ("order", "order"), ("family", "family"), ("genus", "genus"),
    ("scientific_name", "scientific name"), ("species", "species epithet"),
    ("common_name_mcq", "common name MCQ"), ("common_name", "common name"),
)
RANK_LABEL: dict[str, str] = dict(RANK_ROWS)
#: Table 77 row order (phylum has no tier).
TIER_RANK_ROWS: tuple[str, ...] = ("class", "order", "family", "genus", "species", "scientific_name",
                                   "common_name", "common_name_mcq")
GROUP_SHORT: dict[str, str] = {
    "Amphibians": "Amph", "Angiosperms": "Angio", "Arachnids": "Arach", "Birds": "Birds", "Bryophytes": "Bryo",
    "Fish": "Fish", "Gymnosperms": "Gymno", "Insects": "Insect", "Mammals": "Mamm", "Reptiles": "Rept",
}
TIER_ORDER: tuple[str, ...] = ("Easy", "Medium", "Hard", "Degenerate")
DECIMALS = 3


def _value(block: dict[str, Any] | None, metric: str, part: str = "value") -> float:
    """``part`` of a metric of a summary block (NaN where absent or null)."""
    return estimate_value((block or {}).get(metric), part)


def round_half_up(values: Any, decimals: int) -> Any:
    """Round half away from zero at ``decimals`` (the paper's printing; ``np.round`` rounds half
    to even and misreads ``.3815`` stored as ``0.38149999…``)."""
    array = np.asarray(values, dtype=float)
    factor = 10.0 ** decimals
    scaled = np.abs(array) * factor
    rounded = np.sign(array) * np.floor(scaled + 0.5 + 1e-9 * np.maximum(scaled, 1.0)) / factor
    rounded = rounded + 0.0  # no negative zero
    return float(rounded) if np.ndim(rounded) == 0 else rounded


def _finish(frame: pd.DataFrame, title: str, decimals: dict[str, int] | int = DECIMALS,
            index_name: str | None = None) -> pd.DataFrame:
    """Round float columns (``decimals``: per column, or one for all), set title and precision."""
    frame = frame.copy()
    if index_name is not None:
        frame.index.name = index_name
    places = {c: (decimals.get(c, DECIMALS) if isinstance(decimals, dict) else decimals) for c in frame.columns}
    for column in frame.columns:
        if pd.api.types.is_float_dtype(frame[column]):
            frame[column] = round_half_up(frame[column].to_numpy(), places[column])
    frame.attrs["title"] = title
    frame.attrs["decimals"] = {str(c): places[c] for c in frame.columns
                               if pd.api.types.is_float_dtype(frame[c])}
    return frame


def _frame(rows: dict[str, dict[str, float]], index_name: str, title: str,
           decimals: dict[str, int] | int = DECIMALS) -> pd.DataFrame:
    frame = pd.DataFrame.from_dict(rows, orient="index")
    return _finish(frame.astype(float), title, decimals, index_name)


def _integers(values: Any) -> pd.Series:
    """Whole numbers as an object column (``None`` where missing), so reports print 3, not 3.000."""
    return pd.Series([None if v is None or (isinstance(v, float) and np.isnan(v)) else int(v) for v in values],
                     dtype=object)


def by_type(summaries: Summaries, metric: str, title: str, *, pooled: bool = True) -> pd.DataFrame:
    """``metric`` per question type, one row per model (``pooled``: the pooled value last; Tables 72–74)."""
    rows = {}
    for label, summary in summaries:
        tasks = summary.get("tasks", {})
        row = {SHORT[t]: _value(tasks.get(t), metric) for t in TASK_NAMES}
        if pooled:
            row["pooled"] = _value(summary.get("pooled"), metric)
        rows[label] = row
    return _frame(rows, "model", title)


def _pool(summaries: Summaries, blocks: list[dict[str, Any] | None], metric: str,
          weight: str = "n") -> float:
    """Item-weighted mean of ``metric`` over the models' blocks (weights: the block's ``n``, or
    ``n_severity`` for severity): the value over all models' items pooled."""
    values, weights = [], []
    for block in blocks:
        value = _value(block, metric)
        count = estimate_value((block or {}).get(weight))
        if np.isfinite(value) and np.isfinite(count) and count > 0:
            values.append(value)
            weights.append(count)
    return float(np.average(values, weights=weights)) if values else float("nan")


def _rank(values: pd.Series, *, ascending: bool) -> pd.Series:
    return values.rank(ascending=ascending, method="min", na_option="keep")


def table3(summaries: Summaries, floor_from: Summaries | None = None) -> pd.DataFrame:
    """Table 3's C1 block: EM at the 8 open types per model, then the floor row (the floor rule of
    the first of ``floor_from``, default ``summaries``)."""
    rows = {label: {SHORT[t]: _value(s.get("tasks", {}).get(t), "em") for t in OPEN_TASKS} for label, s in summaries}
    floor_from = summaries if floor_from is None else floor_from
    if floor_from:
        tasks = floor_from[0][1].get("tasks", {})
        rows["Floor"] = {SHORT[t]: estimate_value((tasks.get(t) or {}).get("floor")) for t in OPEN_TASKS}
    return _frame(rows, "model", "Table 3 — C1 exact match by open question type, with the image-blind floor")


_POOLED_METRICS: tuple[tuple[str, str], ...] = (("em", "EM"), ("em_soft", "EM_soft"), ("wup", "wup"), ("lin", "lin"))


def _leaderboard_order(summaries: Summaries, infos: dict[str, ModelInfo]) -> list[str]:
    """Non-generalists first, then generalists; each by EM_soft then EM, descending."""
    keyed = [(infos[label].group == VLM_GROUP, -np.nan_to_num(_value(s.get("pooled"), "em_soft"), nan=-1.0),
              -np.nan_to_num(_value(s.get("pooled"), "em"), nan=-1.0), position, label)
             for position, (label, s) in enumerate(summaries)]
    return [entry[-1] for entry in sorted(keyed)]


def table18(summaries: Summaries, infos: dict[str, ModelInfo]) -> pd.DataFrame:
    """Table 18: pooled leaderboard; rank counts generalists only (specialists unranked, first)."""
    order = _leaderboard_order(summaries, infos)
    by_label = dict(summaries)
    rows = {}
    for label in order:
        summary = by_label[label]
        pooled = summary.get("pooled", {})
        rows[label] = {"Img": summary.get("n_images"), "Ques": (pooled or {}).get("n", summary.get("n_items")),
                       **{name: _value(pooled, metric) for metric, name in _POOLED_METRICS}}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=["Img", "Ques", "EM", "EM_soft", "wup", "lin"])
    ranks: list[int | None] = []
    next_rank = 1
    for label in order:
        if infos[label].group == VLM_GROUP:
            ranks.append(next_rank)
            next_rank += 1
        else:
            ranks.append(None)
    frame.insert(0, "rank", _integers(ranks).to_numpy())
    frame["Img"] = _integers(frame["Img"].tolist()).to_numpy()
    frame["Ques"] = _integers(frame["Ques"].tolist()).to_numpy()
    for column in ("EM", "EM_soft", "wup", "lin"):
        frame[column] = frame[column].astype(float)
    return _finish(frame, "Table 18 — C1 pooled leaderboard (item-weighted over the 9 question types, "
                          "sorted by EM_soft; rank counts generalists only)", index_name="model")


def table18_intervals(summaries: Summaries, infos: dict[str, ModelInfo]) -> pd.DataFrame:
    """Table 18's estimates with their 95% image-cluster bootstrap bounds."""
    by_label = dict(summaries)
    rows = {}
    for label in _leaderboard_order(summaries, infos):
        pooled = by_label[label].get("pooled", {})
        row = {}
        for metric, name in _POOLED_METRICS:
            row[name] = _value(pooled, metric)
            row[f"{name}_lo"] = _value(pooled, metric, "lo")
            row[f"{name}_hi"] = _value(pooled, metric, "hi")
        rows[label] = row
    return _frame(rows, "model", "Table 18 — pooled estimates with 95% bootstrap intervals (images resampled)")


#: Table 19's step column: the change from the row above.
STEP_FROM: dict[str, str] = {
    "class": "phylum", "order": "class", "family": "order", "genus": "family", "scientific_name": "genus",
    "species": "scientific_name", "common_name": "common_name_mcq",
}


def _rank_means(summaries: Summaries) -> dict[str, float]:
    """Mean EM per question type over the models, rounded to the printed 3 decimals."""
    means = {}
    for task, _ in RANK_ROWS:
        values = np.array([_value(s.get("tasks", {}).get(task), "em") for _, s in summaries], dtype=float)
        means[task] = round_half_up(float(np.nanmean(values)), DECIMALS) if np.isfinite(values).any() \
            else float("nan")
    return means


def _blocks(summaries: Summaries, infos: dict[str, ModelInfo]) -> tuple[tuple[str, str, Summaries], ...]:
    """(column suffix, caption, members): all configurations, then the generalists."""
    vlms = [(label, s) for label, s in summaries if infos[label].group == VLM_GROUP]
    return ((f"{len(summaries)}cfg", f"{len(summaries)} configurations", summaries),
            (f"{len(vlms)}vlm", f"{len(vlms)} VLMs", vlms))


def table19(summaries: Summaries, infos: dict[str, ModelInfo]) -> pd.DataFrame:
    """Table 19: mean EM per rank and the step from the row above, over every configuration and
    over the generalists, and the gap between the two blocks. As printed in the paper, steps and
    the gap are differences of the rounded means."""
    (all_suffix, _, everyone), (vlm_suffix, _, vlms) = _blocks(summaries, infos)
    columns: dict[str, dict[str, float]] = {}
    means_by_block = {}
    for suffix, members in ((all_suffix, everyone), (vlm_suffix, vlms)):
        means = _rank_means(members)
        means_by_block[suffix] = means
        columns[f"EM_{suffix}"] = {label: means[task] for task, label in RANK_ROWS}
        columns[f"step_{suffix}"] = {label: means[task] - means[STEP_FROM[task]] if task in STEP_FROM
                                     else float("nan") for task, label in RANK_ROWS}
    columns["gap"] = {label: means_by_block[all_suffix][task] - means_by_block[vlm_suffix][task]
                      for task, label in RANK_ROWS}
    frame = pd.DataFrame(columns, index=[label for _, label in RANK_ROWS], dtype=float)
    return _finish(frame, f"Table 19 — mean EM per rank over all {len(everyone)} configurations and over the "
                          f"{len(vlms)} VLMs; step = change from the row above, gap = all − VLMs",
                   index_name="rank")


def table19_fall(summaries: Summaries, infos: dict[str, ModelInfo]) -> pd.DataFrame:
    """How many times EM falls from phylum to species epithet in each Table 19 block."""
    rows = {}
    for _, caption, members in _blocks(summaries, infos):
        means = _rank_means(members)
        top, bottom = means["phylum"], means["species"]
        rows[caption] = {"phylum": top, "species epithet": bottom,
                         "fall": top / bottom if bottom > 0 else float("nan")}
    return _frame(rows, "block", "Table 19 — fall of EM from phylum to species epithet (×)",
                  {"phylum": 3, "species epithet": 3, "fall": 1})


def table20(summaries: Summaries, infos: dict[str, ModelInfo]) -> pd.DataFrame:
    """Tables 20 / 78: recognition (4-way MCQ) against recall (open common name), sorted by gap,
    then the mean over all configurations and, where groups differ, over the generalists."""
    rows = {}
    for label, summary in summaries:
        block = summary.get("recognition_recall", {})
        rows[label] = {"open_ended": _value(block, "open"), "mcq4": _value(block, "mcq"),
                       "gap": _value(block, "gap"), "gap_lo": _value(block, "gap", "lo"),
                       "gap_hi": _value(block, "gap", "hi"), "ratio": _value(block, "ratio")}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=["open_ended", "mcq4", "gap", "gap_lo",
                                                                   "gap_hi", "ratio"]).astype(float)
    if len(frame):
        frame = frame.sort_values("gap", ascending=False, kind="stable")
        blocks = [("mean", list(frame.index))]
        vlms = [label for label in frame.index if infos[label].group == VLM_GROUP]
        if vlms and len(vlms) < len(frame):
            blocks = [(f"{len(vlms)}-VLM mean", vlms), (f"{len(frame)}-configuration mean", list(frame.index))]
        for name, members in blocks:
            # as printed: the gap of the rounded means (.645 − .039 = .606), the ratio of the
            # unrounded ones (16.4×; .645 / .039 would give 16.5×)
            mean_open = float(frame.loc[members, "open_ended"].mean())
            mean_mcq = float(frame.loc[members, "mcq4"].mean())
            shown_open, shown_mcq = round_half_up(mean_open, DECIMALS), round_half_up(mean_mcq, DECIMALS)
            frame.loc[name] = {"open_ended": shown_open, "mcq4": shown_mcq, "gap": shown_mcq - shown_open,
                               "gap_lo": np.nan, "gap_hi": np.nan,
                               "ratio": mean_mcq / mean_open if mean_open > 0 else np.nan}
    return _finish(frame, "Table 20 — recognition (4-way MCQ) vs recall (open-ended) on the common name, "
                          "sorted by gap", {"ratio": 1}, index_name="model")


def table21(summaries: Summaries) -> pd.DataFrame:
    """Table 21: severity per question type (2 decimals), pooled (3), and the unresolved share."""
    rows = {}
    for label, summary in summaries:
        tasks = summary.get("tasks", {})
        rows[label] = {**{SHORT[t]: _value(tasks.get(t), "severity") for t in TASK_NAMES},
                       "pooled": _value(summary.get("pooled"), "severity"),
                       "unres": _value(summary.get("pooled"), "unresolved")}
    return _frame(rows, "model", "Table 21 — mistake severity by question type (ranks between the answer and "
                                 "the gold; wrong, resolved answers only; lower is better) and the unresolved share",
                  {**{SHORT[t]: 2 for t in TASK_NAMES}, "pooled": 3, "unres": 3})


def table22(summaries: Summaries) -> pd.DataFrame:
    """Table 22: EM, severity and unresolved share per organismal group, pooled over every
    configuration's items, sorted by EM (ascending, as printed)."""
    groups = sorted({g for _, s in summaries for g in s.get("groups", {})})
    rows = {}
    for group in groups:
        blocks = [s.get("groups", {}).get(group) for _, s in summaries]
        rows[group] = {"EM": _pool(summaries, blocks, "em"),
                       "severity": _pool(summaries, blocks, "severity", "n_severity"),
                       "unresolved": _pool(summaries, blocks, "unresolved")}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=["EM", "severity", "unresolved"]).astype(float)
    frame = frame.sort_values("EM", kind="stable")
    return _finish(frame, f"Table 22 — EM, severity and unresolved share by organismal group, pooled over "
                          f"{len(summaries)} configurations", index_name="group")


def table23_by_rank(summaries: Summaries) -> pd.DataFrame:
    """Table 23 (left): revision lag per rank, pooled over models, sorted by gap; all ranks last."""
    rows = {}
    for task, label in RANK_ROWS:
        blocks = [s.get("tasks", {}).get(task) for _, s in summaries]
        em, soft = _pool(summaries, blocks, "em"), _pool(summaries, blocks, "em_soft")
        rows[label] = {"EM": em, "EM_soft": soft, "gap": soft - em}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=["EM", "EM_soft", "gap"]).astype(float)
    frame = frame.sort_values("gap", ascending=False, kind="stable")
    blocks = [s.get("pooled") for _, s in summaries]
    em, soft = _pool(summaries, blocks, "em"), _pool(summaries, blocks, "em_soft")
    frame.loc["all ranks"] = {"EM": em, "EM_soft": soft, "gap": soft - em}
    return _finish(frame, f"Table 23 — taxonomic revision lag by rank (gap = EM_soft − EM), pooled over "
                          f"{len(summaries)} configurations", index_name="rank")


def table23_by_group(summaries: Summaries) -> pd.DataFrame:
    """Table 23 (right): revision lag per organismal group, pooled over models, sorted by gap."""
    groups = sorted({g for _, s in summaries for g in s.get("groups", {})})
    rows = {}
    for group in groups:
        blocks = [s.get("groups", {}).get(group) for _, s in summaries]
        em, soft = _pool(summaries, blocks, "em"), _pool(summaries, blocks, "em_soft")
        rows[group] = {"EM": em, "EM_soft": soft, "gap": soft - em}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=["EM", "EM_soft", "gap"]).astype(float)
    frame = frame.sort_values("gap", ascending=False, kind="stable")
    return _finish(frame, f"Table 23 — taxonomic revision lag by organismal group, pooled over "
                          f"{len(summaries)} configurations", index_name="group")


def _group_em(summaries: Summaries) -> pd.DataFrame:
    groups = sorted({g for _, s in summaries for g in s.get("groups", {})})
    return pd.DataFrame({group: [_value(s.get("groups", {}).get(group), "em") for _, s in summaries]
                         for group in groups}, index=[label for label, _ in summaries], dtype=float)


def table24(summaries: Summaries) -> pd.DataFrame:
    """Table 24: Spearman correlation between organismal groups of the models' EM (models ranked
    per group; at least 3 models per pair), and the mean of each row's off-diagonal cells."""
    em = _group_em(summaries)
    matrix = em.corr(method="spearman", min_periods=3)
    off = matrix.to_numpy(copy=True)
    np.fill_diagonal(off, np.nan)
    with np.errstate(invalid="ignore"):
        counts = np.isfinite(off).sum(axis=1)
        mean = np.where(counts > 0, np.nansum(off, axis=1) / np.maximum(counts, 1), np.nan)
    frame = matrix.rename(columns=GROUP_SHORT)
    frame["mean"] = mean
    return _finish(frame, f"Table 24 — Spearman rank correlation between organismal groups "
                          f"({len(summaries)} models ranked per group); mean = off-diagonal mean of the row",
                   {**{c: 2 for c in frame.columns}, "mean": 3}, index_name="group")


def table77(summaries: Summaries) -> pd.DataFrame:
    """Table 77: EM by rank and difficulty tier, pooled over every configuration's items."""
    tiers = [t for t in TIER_ORDER if t != "Degenerate"
             and any(t in cells for _, s in summaries for cells in s.get("task_tier", {}).values())]
    rows = {}
    for task in TIER_RANK_ROWS:
        cells = [s.get("task_tier", {}).get(task, {}) for _, s in summaries]
        if not any(cells):
            continue
        rows[RANK_LABEL[task]] = {tier: _pool(summaries, [c.get(tier) for c in cells], "em") for tier in tiers}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=tiers).astype(float)
    return _finish(frame, f"Table 77 — mean EM by rank and difficulty tier, pooled over {len(summaries)} "
                          "configurations (phylum has no tier)", index_name="rank")


def table79(summaries: Summaries) -> pd.DataFrame:
    """Table 79: unresolved share, severity and EM per configuration, sorted by unresolved."""
    rows = {label: {"unresolved": _value(s.get("pooled"), "unresolved"),
                    "severity": _value(s.get("pooled"), "severity"), "EM": _value(s.get("pooled"), "em")}
            for label, s in summaries}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=["unresolved", "severity", "EM"]).astype(float)
    frame = frame.sort_values("unresolved", ascending=False, kind="stable")
    return _finish(frame, "Table 79 — unresolved share, severity and EM, sorted by unresolved",
                   index_name="model")


def table80(summaries: Summaries) -> pd.DataFrame:
    """Table 80: EM rank (1 = highest EM) against severity rank (1 = lowest severity) over every
    configuration; shift = EM rank − severity rank (positive: better on severity)."""
    em = pd.Series({label: _value(s.get("pooled"), "em") for label, s in summaries}, dtype=float)
    severity = pd.Series({label: _value(s.get("pooled"), "severity") for label, s in summaries}, dtype=float)
    em_rank = _rank(em, ascending=False)
    sev_rank = _rank(severity, ascending=True)
    frame = pd.DataFrame({"EM": em, "severity": severity})
    frame["EM_rank"] = _integers(em_rank.tolist()).to_numpy()
    frame["sev_rank"] = _integers(sev_rank.tolist()).to_numpy()
    frame["shift"] = _integers((em_rank - sev_rank).tolist()).to_numpy()
    order = em.sort_values(ascending=False, kind="stable", na_position="last").index
    return _finish(frame.loc[order], "Table 80 — EM rank against severity rank (shift = EM rank − severity "
                                     "rank; positive: ranks better on severity)", index_name="model")


def table81(summaries: Summaries, infos: dict[str, ModelInfo]) -> pd.DataFrame:
    """Table 81: the generalists by parameter count (ties in the given order), pooled EM and
    severity."""
    rows = {label: {"family": infos[label].family, "params_B": infos[label].params,
                    "EM": _value(s.get("pooled"), "em"), "severity": _value(s.get("pooled"), "severity")}
            for label, s in summaries if infos[label].group == VLM_GROUP}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=["family", "params_B", "EM", "severity"])
    frame["family"] = frame["family"].astype(object)
    for column in ("params_B", "EM", "severity"):
        frame[column] = frame[column].astype(float)
    frame = frame.sort_values("params_B", kind="stable", na_position="last")
    return _finish(frame, f"Table 81 — parameters against pooled EM and severity for the {len(frame)} VLMs",
                   {"params_B": 1}, index_name="model")


def table82(summaries: Summaries) -> pd.DataFrame:
    """Table 82: Spearman correlation of each pooled C1 metric with pooled EM over every
    configuration (NaN with fewer than 3)."""
    pooled = pd.DataFrame({metric: [_value(s.get("pooled"), metric) for _, s in summaries]
                           for metric in ("em", "wup", "lin", "severity", "unresolved")}, dtype=float)
    with warnings.catch_warnings():  # a constant column has no correlation: NaN, not a warning
        warnings.simplefilter("ignore")
        rows = {metric: {"rho_with_EM": pooled["em"].corr(pooled[metric], method="spearman", min_periods=3)}
                for metric in ("wup", "lin", "severity", "unresolved")}
    return _frame(rows, "metric", f"Table 82 — Spearman correlation of each C1 metric with EM over "
                                  f"{len(summaries)} configurations")


def by_label(summaries: Summaries, key: str, order: tuple[str, ...] | None, title: str,
             short: dict[str, str] | None = None) -> pd.DataFrame:
    """EM per entry of the summaries' ``key`` section (groups, tiers), one row per model, columns in
    ``order`` (default: as first seen), renamed by ``short`` (Tables 75, 76)."""
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
    return _frame(rows, "model", title)


def hierarchy_table(summaries: Summaries) -> pd.DataFrame:
    rows = {label: {metric: _value(summary.get("hierarchy", {}).get("pooled"), metric)
                    for metric in (*HIERARCHICAL_METRICS, "hca_scaled")} for label, summary in summaries}
    return _frame(rows, "model", "Hierarchical consistency (HCA, Acc_leaf, POR, S-POR, TOR per image, mean; "
                                 "hca_scaled = HCA / Acc_leaf)")
