"""C1 aggregates: every mean of the C1 leaderboards with image-cluster bootstrap intervals
(paper App. K.5), from the per-item score table of :mod:`biovqa.components.c1.score` and the
benchmark items (for the image-blind floors). Aggregation only: every per-item quantity is the
scorer's.

Every estimate has the score schema's form ``{"value", "lo", "hi", "n"}``: the full-sample value,
the percentile bootstrap bounds (B resamples of images, i.e. ``source_id`` clusters, one set of
resamples for all), and the number of items (images for hierarchy metrics) behind it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.components.c1.floor import (
    _floors,
    _mcq_arrays,
    _task_index,
    headroom,
    item_weighted_score,
    mcq_floor,
    recognition_recall_gap,
)
from biovqa.components.c1.hierarchy import (
    HIERARCHICAL_METRICS,
    hierarchical_per_image,
    per_level_accuracy,
    scaled_hca,
)
from biovqa.components.c1.parse import PARSE_STATUSES
from biovqa.components.c1.tasks import HIERARCHY_TASKS, MCQ_TASK, OPEN_COMMON_TASK, TABLE3_COLUMNS, TASK_NAMES
from biovqa.errors import InputFormatError
from biovqa.scoring.schema import estimate as _estimate
from biovqa.text import codes_in, encode_strings
from biovqa.stats.bootstrap import (
    ClusterBootstrapPlan,
    Float32Product,
    bootstrap_replicates,
    percentile_interval,
    ratio,
)
from biovqa.stats.draws import CountsDrawnAhead

#: The name the image counts are drawn under (:class:`~biovqa.stats.draws.CountsDrawnAhead`).
DRAWS_NAME = "images"

@dataclass(frozen=True)
class ItemFacts:
    """What the summary needs of the benchmark items alone: the image-blind floors (score φ and
    reply per question type, :mod:`.floor`) and each item's group, tier and image codes in sorted
    label order (−1 where null). The scorer works them out on a worker thread while it scores the
    replies (:func:`summarize` works them out itself when not given)."""

    floors: dict[str, float]
    floor_replies: dict[str, str]
    group: np.ndarray
    group_labels: list[str]
    tier: np.ndarray
    tier_labels: list[str]
    cluster: np.ndarray
    n_clusters: int

    @classmethod
    def of(cls, items: pa.Table) -> ItemFacts:
        floors, floor_replies = floors_of(items)
        group, group_labels = _sorted_labels(items.column("group"))
        if "tier" in items.column_names:
            tier, tier_labels = _sorted_labels(items.column("tier"))
        else:
            tier, tier_labels = np.full(items.num_rows, -1, dtype=np.int64), []
        cluster, cluster_labels = _sorted_labels(items.column("source_id"))
        return cls(floors=floors, floor_replies=floor_replies, group=group, group_labels=group_labels, tier=tier,
                   tier_labels=tier_labels, cluster=cluster, n_clusters=len(cluster_labels))


@dataclass(frozen=True)
class _ItemArrays:
    """The per-item scores the aggregates are computed from, read off the score table (the items'
    own codes are their :class:`ItemFacts`)."""

    task: np.ndarray
    em: np.ndarray
    em_soft: np.ndarray
    resolved: np.ndarray
    parse_status: np.ndarray
    severity: np.ndarray
    wup: np.ndarray
    lin: np.ndarray

    @classmethod
    def of(cls, scored: pa.Table) -> _ItemArrays:
        def numbers(name: str) -> np.ndarray:  # nulls (severity) read as NaN
            return scored.column(name).to_numpy(zero_copy_only=False).astype(np.float64)

        return cls(task=_task_index(scored.column("task")), em=numbers("em"), em_soft=numbers("em_soft"),
                   resolved=scored.column("resolved").to_numpy(zero_copy_only=False).astype(bool),
                   parse_status=codes_in(scored.column("parse_status"), PARSE_STATUSES),
                   severity=numbers("severity"), wup=numbers("wup"), lin=numbers("lin"))


def _sorted_labels(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Codes in sorted label order (−1 where null) and the sorted labels."""
    codes, labels = encode_strings(column, sort=True)
    return codes, [str(label) for label in labels.to_pylist()]


def floors_of(items: pa.Table) -> tuple[dict[str, float], dict[str, str]]:
    """The image-blind floor score φ and floor reply per question type (:mod:`.floor`)."""
    task_index = _task_index(items.column("task"))
    answers, floors = _floors(task_index, items.column("answer"))
    is_mcq = task_index == TASK_NAMES.index(MCQ_TASK)
    if is_mcq.any():
        mcq_options, _ = _mcq_arrays(items, is_mcq, None)
        floors[MCQ_TASK] = mcq_floor(items.column("answer").take(pa.array(np.flatnonzero(is_mcq))), mcq_options)
    return floors, answers


class _PointSums:
    """The full-sample half of :class:`~biovqa.stats.bootstrap.ClusterBootstrapPlan` (same
    ``add_denominator`` / ``add_mean`` calls, same sums, so the same values) for cells whose
    intervals are not wanted: no per-cluster sums are built."""

    def __init__(self) -> None:
        self.full_numerators: list[np.ndarray] = []
        self.full_denominators: list[np.ndarray] = []
        self.denominator_of: list[int] = []
        self._denominator_width = 0

    def add_denominator(self, mask: np.ndarray, cells: np.ndarray, n_cells: int,
                        codes: np.ndarray | None = None) -> int:
        keep = np.flatnonzero(mask & (cells >= 0))
        self.full_denominators.append(np.bincount(cells[keep], minlength=n_cells).astype(np.float64))
        first = self._denominator_width
        self._denominator_width += n_cells
        return first

    def add_mean(self, values: np.ndarray, mask: np.ndarray, cells: np.ndarray, n_cells: int,
                 denominator_first: int, codes: np.ndarray | None = None) -> int:
        keep = np.flatnonzero(mask & (cells >= 0))
        weights = np.asarray(values, dtype=np.float64)[keep]
        self.full_numerators.append(np.bincount(cells[keep], weights=weights, minlength=n_cells))
        self.denominator_of.extend(range(denominator_first, denominator_first + n_cells))
        return sum(len(block) for block in self.full_numerators) - n_cells

    def estimate(self) -> np.ndarray:
        if not self.full_numerators:
            return np.empty(0)
        top = np.concatenate(self.full_numerators)
        bottom = np.concatenate(self.full_denominators)[np.asarray(self.denominator_of, dtype=np.int64)]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), np.nan)


def _run_plans(plans: tuple[ClusterBootstrapPlan, _PointSums], columns_of: Sequence[tuple[int, int]], B: int, seed: int,
               draws: CountsDrawnAhead | None) -> tuple[np.ndarray, np.ndarray]:
    """Full-sample value and ``B`` replicates of every summary column: the first plan's columns
    bootstrapped on the image resamples (``ClusterBootstrapPlan.run``'s float32 products, so the
    same numbers), the second plan's point estimates only (NaN replicates: null bounds)."""
    bootstrapped, points = plans
    estimates = [bootstrapped.run(0, seed)[0] if bootstrapped.full_numerators else np.empty(0), points.estimate()]
    plan_of = np.asarray([p for p, _ in columns_of], dtype=np.int64)
    position = np.asarray([c for _, c in columns_of], dtype=np.int64)
    estimate = np.empty(len(columns_of))
    replicates = np.full((B, len(columns_of)), np.nan)
    for which in (0, 1):
        mine = plan_of == which
        estimate[mine] = estimates[which][position[mine]]
    if B > 0 and bootstrapped.numerators:
        index = np.asarray(bootstrapped.denominator_of, dtype=np.int64)
        product = Float32Product(np.concatenate(bootstrapped.numerators, axis=0).T,
                                 np.concatenate(bootstrapped.denominators, axis=0).T)
        width = len(index)

        def means(totals: np.ndarray, _: np.ndarray | None) -> list[np.ndarray]:
            return list(ratio(totals[:, :width], totals[:, width:][:, index]).T)

        counts = None if draws is None else draws.blocks(DRAWS_NAME, bootstrapped.n_clusters)
        reps = bootstrap_replicates(product, means, B=B, seed=seed, counts=counts)
        mine = plan_of == 0
        replicates[:, mine] = reps[:, position[mine]]
    return estimate, replicates


def _intervals(replicates: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bounds per column; NaN when no bootstrap ran (B = 0)."""
    if replicates.shape[0] == 0:
        empty = np.full(replicates.shape[1] if replicates.ndim == 2 else 1, np.nan)
        return empty, empty.copy()
    return percentile_interval(replicates, confidence)


def summarize(scored: pa.Table, items: pa.Table, options: Any, *,
              draws: CountsDrawnAhead | None = None, facts: ItemFacts | None = None) -> dict[str, Any]:
    """The C1 summary (module docstring) from the per-item score table and the benchmark items it
    scores (same rows, same order). ``options``: the resolved score options (``bootstrap`` = B,
    ``seed``, ``confidence``, ``cell_intervals``). ``draws``: the image counts already being drawn
    (under :data:`DRAWS_NAME`, for ``n_images`` images; the scorer starts them before it reads
    the replies), else they are drawn here — the same resamples either way. ``facts``: the
    items' :class:`ItemFacts` where the scorer worked them out, else they are worked out here."""
    facts = facts if facts is not None else ItemFacts.of(items)
    arrays = _ItemArrays.of(scored)
    floors, floor_replies = facts.floors, facts.floor_replies
    B, seed, confidence = int(options.bootstrap), int(options.seed), float(options.confidence)
    n_items = len(arrays.task)
    em, em_soft = arrays.em, arrays.em_soft
    with_severity = ~np.isnan(arrays.severity)
    values = {"em": em, "em_soft": em_soft, "unresolved": (~arrays.resolved).astype(np.float64),
              "wup": arrays.wup, "lin": arrays.lin}
    # Two plans on the same image clusters: the cells the leaderboards print with intervals (per
    # question type, pooled, open pooled, pooled hierarchy) are bootstrapped; the group, tier and
    # per-group hierarchy cells get point estimates unless ``cell_intervals`` asks for their
    # intervals too (they are two thirds of the matrix products, and no table prints them).
    every_cell = bool(getattr(options, "cell_intervals", False))
    plans = (ClusterBootstrapPlan(facts.cluster, facts.n_clusters), _PointSums())
    everything = np.ones(n_items, dtype=bool)
    severity_values = np.nan_to_num(arrays.severity)
    columns_of: list[tuple[int, int]] = []  # summary column → (plan, its column there)

    def register(plan_index: int, first: int) -> int:
        columns_of.append((plan_index, first))
        return len(columns_of) - 1

    def full_block(cells: np.ndarray, n_cells: int, bootstrapped: bool) -> dict[str, list[int]]:
        which = 0 if bootstrapped or every_cell else 1
        plan: ClusterBootstrapPlan | _PointSums = plans[which]
        count = plan.add_denominator(everything, cells, n_cells)
        count_severity = plan.add_denominator(with_severity, cells, n_cells)
        firsts = {name: plan.add_mean(v, everything, cells, n_cells, count) for name, v in values.items()}
        firsts["severity"] = plan.add_mean(severity_values, with_severity, cells, n_cells, count_severity)
        return {name: [register(which, first + cell) for cell in range(n_cells)] for name, first in firsts.items()}

    n_groups, n_tiers = len(facts.group_labels), len(facts.tier_labels)
    task_codes = arrays.task
    pooled_codes = np.zeros(n_items, dtype=np.int64)
    open_codes = np.where(task_codes != TASK_NAMES.index(MCQ_TASK), 0, -1)
    blocks = {
        "tasks": (full_block(task_codes, len(TASK_NAMES), True), list(TASK_NAMES), task_codes),
        "pooled": (full_block(pooled_codes, 1, True), ["all"], pooled_codes),
        "open_pooled": (full_block(open_codes, 1, True), ["all"], open_codes),
        "groups": (full_block(facts.group, n_groups, False), facts.group_labels, facts.group),
        "tiers": (full_block(facts.tier, n_tiers, False), facts.tier_labels, facts.tier),
    }
    task_group = np.where(facts.group >= 0, task_codes * max(n_groups, 1) + facts.group, -1)
    task_tier = np.where(facts.tier >= 0, task_codes * max(n_tiers, 1) + facts.tier, -1)

    hierarchy_inputs = _hierarchy_matrix(task_codes, em, facts.cluster, facts.n_clusters, facts.group)
    hierarchy_columns: dict[str, list[int]] = {}
    if hierarchy_inputs is not None:
        correct, present, image_rows, image_group = hierarchy_inputs
        per_image = hierarchical_per_image(correct, present)
        every_image = np.ones(len(image_rows), dtype=bool)
        for scope, cells, width in (("pooled", np.zeros(len(image_rows), dtype=np.int64), 1),
                                    ("groups", image_group, n_groups)):
            which = 0 if scope == "pooled" or every_cell else 1
            scope_plan: ClusterBootstrapPlan | _PointSums = plans[which]
            count = scope_plan.add_denominator(every_image, cells, width, codes=image_rows)
            for metric in HIERARCHICAL_METRICS:
                first = scope_plan.add_mean(per_image[metric], every_image, cells, width, count, codes=image_rows)
                hierarchy_columns[f"{scope}:{metric}"] = [register(which, first + cell) for cell in range(width)]

    estimate, replicates = _run_plans(plans, columns_of, B, seed, draws)
    lo, hi = _intervals(replicates, confidence)

    def interval(column: int, n: int) -> dict[str, Any]:
        return _estimate(estimate[column], lo[column], hi[column], n=n)

    def difference(first: int, second: int, n: int) -> dict[str, Any]:
        d_lo, d_hi = _intervals(replicates[:, first] - replicates[:, second], confidence)
        return _estimate(estimate[first] - estimate[second], d_lo[0], d_hi[0], n=n)

    def ratio(numerator: int, denominator: int, n: int) -> dict[str, Any]:
        """numerator / denominator with the percentile interval of the replicate ratios (NaN where
        a replicate's denominator is 0)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            reps = np.where(replicates[:, denominator] > 0,
                            replicates[:, numerator] / replicates[:, denominator], np.nan)
        r_lo, r_hi = _intervals(reps, confidence)
        return _estimate(scaled_hca(float(estimate[numerator]), float(estimate[denominator])),
                         r_lo[0], r_hi[0], n=n)

    summary: dict[str, Any] = {"n_images": int(facts.n_clusters)}
    summary["bootstrap"] = {"B": int(B), "seed": int(seed), "confidence": float(confidence), "cluster": "image (source_id)"}

    def metric_blocks(key: str) -> dict[str, dict[str, Any]]:
        columns, labels, cells = blocks[key]
        n = np.bincount(cells[cells >= 0], minlength=len(labels))
        n_severity = np.bincount(cells[(cells >= 0) & with_severity], minlength=len(labels))
        out: dict[str, dict[str, Any]] = {}
        for position, label in enumerate(labels):
            if n[position] == 0:
                continue
            block: dict[str, Any] = {"n": int(n[position]), "n_severity": int(n_severity[position])}
            items = int(n[position])
            for name in ("em", "em_soft"):
                block[name] = interval(columns[name][position], items)
            block["revision_lag"] = difference(columns["em_soft"][position], columns["em"][position], items)
            for name in ("unresolved", "wup", "lin"):
                block[name] = interval(columns[name][position], items)
            block["severity"] = interval(columns["severity"][position], int(n_severity[position]))
            out[label] = block
        return out

    summary["tasks"] = metric_blocks("tasks")
    em_columns = blocks["tasks"][0]["em"]
    for name, block in summary["tasks"].items():
        phi = float(floors.get(name, np.nan))
        block["floor"] = phi
        block["floor_answer"] = floor_replies.get(name)
        column = em_columns[TASK_NAMES.index(name)]
        block["headroom"] = _headroom(estimate[column], replicates[:, column], phi, confidence, n=block["n"])
    summary["pooled"] = metric_blocks("pooled").get("all", {})
    summary["open_pooled"] = metric_blocks("open_pooled").get("all", {})
    if summary["pooled"]:
        n_by_task = {t: b["n"] for t, b in summary["tasks"].items()}
        phi = item_weighted_score({t: float(floors.get(t, 0.0)) for t in n_by_task}, n_by_task)
        summary["pooled"]["floor"] = float(phi)
        column = blocks["pooled"][0]["em"][0]
        summary["pooled"]["headroom"] = _headroom(estimate[column], replicates[:, column], phi, confidence,
                                                   n=summary["pooled"]["n"])
    summary["recognition_recall"] = _recognition_recall(
        em_columns, estimate, replicates, confidence, n_by_task={t: b["n"] for t, b in summary["tasks"].items()})
    summary["groups"] = metric_blocks("groups")
    summary["tiers"] = metric_blocks("tiers")

    def em_cells(cells: np.ndarray, labels: list[str]) -> dict[str, dict[str, Any]]:
        """EM per (task, label) cell, point estimates (the breakdown tables)."""
        width = len(TASK_NAMES) * max(len(labels), 1)
        n = np.bincount(cells[cells >= 0], minlength=width)
        hits = np.bincount(cells[cells >= 0], weights=em[cells >= 0], minlength=width)
        out: dict[str, dict[str, Any]] = {}
        for t_index, t_name in enumerate(TASK_NAMES):
            row: dict[str, Any] = {}
            for l_index, l_name in enumerate(labels):
                cell = t_index * len(labels) + l_index
                if n[cell]:
                    row[l_name] = {"n": int(n[cell]), "em": float(hits[cell] / n[cell])}
            if row:
                out[t_name] = row
        return out

    summary["task_group"] = em_cells(task_group, facts.group_labels)
    summary["task_tier"] = em_cells(task_tier, facts.tier_labels)
    summary["breakdown"] = _breakdown(arrays, facts, values, arrays.severity)
    n_statuses = len(PARSE_STATUSES)
    status_counts = np.bincount(task_codes * n_statuses + arrays.parse_status,
                                minlength=len(TASK_NAMES) * n_statuses).reshape(len(TASK_NAMES), n_statuses)
    summary["format"] = {
        TASK_NAMES[t]: {PARSE_STATUSES[r]: int(status_counts[t, r]) for r in np.argsort(PARSE_STATUSES)
                        if status_counts[t, r]}
        for t in range(len(TASK_NAMES)) if status_counts[t].any()
    }
    summary["table3"] = {column: summary["tasks"][task]["em"] for column, task in TABLE3_COLUMNS.items()
                         if task in summary["tasks"]}
    summary["hierarchy"] = _hierarchy_summary(hierarchy_inputs, hierarchy_columns, interval, ratio,
                                              facts.group_labels)
    return summary


def _headroom(estimate: float, replicates: np.ndarray, phi: float, confidence: float, *, n: int) -> dict[str, Any]:
    """Headroom recovered over the floor, (S − φ)/(1 − φ) (§2.10), with the transformed interval."""
    if not np.isfinite(phi) or phi >= 1:
        return _estimate(np.nan, n=n)
    lo, hi = _intervals((replicates - phi) / (1 - phi), confidence)
    return _estimate(headroom(estimate, phi), lo[0], hi[0], n=n)


def _recognition_recall(em_columns: list[int], estimate: np.ndarray, replicates: np.ndarray, confidence: float,
                        n_by_task: Mapping[str, int]) -> dict[str, Any]:
    """gap = EM(MCQ) − EM(open common name); ratio = MCQ / open (§2.11)."""
    if MCQ_TASK not in n_by_task or OPEN_COMMON_TASK not in n_by_task:
        return {}
    mcq = em_columns[TASK_NAMES.index(MCQ_TASK)]
    open_ = em_columns[TASK_NAMES.index(OPEN_COMMON_TASK)]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio_reps = np.where(replicates[:, open_] > 0, replicates[:, mcq] / replicates[:, open_], np.nan)
    gap, ratio = recognition_recall_gap(float(estimate[mcq]), float(estimate[open_]))
    gap_lo, gap_hi = _intervals(replicates[:, mcq] - replicates[:, open_], confidence)
    ratio_lo, ratio_hi = _intervals(ratio_reps, confidence)
    m_lo, m_hi = _intervals(replicates[:, [mcq, open_]], confidence)
    return {
        "mcq": _estimate(estimate[mcq], m_lo[0], m_hi[0], n=n_by_task[MCQ_TASK]),
        "open": _estimate(estimate[open_], m_lo[1], m_hi[1], n=n_by_task[OPEN_COMMON_TASK]),
        "gap": _estimate(gap, gap_lo[0], gap_hi[0], n=n_by_task[MCQ_TASK] + n_by_task[OPEN_COMMON_TASK]),
        "ratio": _estimate(ratio, ratio_lo[0], ratio_hi[0], n=n_by_task[MCQ_TASK] + n_by_task[OPEN_COMMON_TASK]),
    }


def _breakdown(arrays: _ItemArrays, facts: ItemFacts, values: dict[str, np.ndarray],
               severity: np.ndarray) -> list[dict[str, Any]]:
    """Point estimates for every (task, group, tier) cell with items (tier "none" where unset)."""
    n_groups = max(len(facts.group_labels), 1)
    n_tiers = len(facts.tier_labels) + 1  # last slot: no tier
    tier = np.where(facts.tier >= 0, facts.tier, n_tiers - 1)
    valid = facts.group >= 0
    cells = (arrays.task * n_groups + facts.group) * n_tiers + tier
    cells, width = cells[valid], len(TASK_NAMES) * n_groups * n_tiers
    n = np.bincount(cells, minlength=width)
    has_severity = ~np.isnan(severity[valid])
    n_severity = np.bincount(cells[has_severity], minlength=width)
    sums = {name: np.bincount(cells, weights=v[valid], minlength=width) for name, v in values.items()}
    severity_sum = np.bincount(cells[has_severity], weights=severity[valid][has_severity], minlength=width)
    tier_labels = [*facts.tier_labels, "none"]
    records = []
    for cell in np.flatnonzero(n):
        task, rest = divmod(int(cell), n_groups * n_tiers)
        group, tier_code = divmod(rest, n_tiers)
        record: dict[str, Any] = {"task": TASK_NAMES[task], "group": facts.group_labels[group],
                                  "tier": tier_labels[tier_code], "n": int(n[cell]),
                                  "n_severity": int(n_severity[cell])}
        for name, total in sums.items():
            record[name] = float(total[cell] / n[cell])
        record["severity"] = float(severity_sum[cell] / n_severity[cell]) if n_severity[cell] else float("nan")
        records.append(record)
    return records


def _hierarchy_matrix(task: np.ndarray, em: np.ndarray, codes: np.ndarray, n_clusters: int,
                      group: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Per image (cluster): EM at phylum … species, which levels it was asked, its group code."""
    level_of_task = np.asarray([HIERARCHY_TASKS.index(t) if t in HIERARCHY_TASKS else -1 for t in TASK_NAMES])
    level = level_of_task[task]
    rows = np.flatnonzero(level >= 0)
    if len(rows) == 0:
        return None
    flat = codes[rows] * len(HIERARCHY_TASKS) + level[rows]
    if np.bincount(flat, minlength=1).max() > 1:
        raise InputFormatError("an image has two questions at the same rank", field="source_id",
                               hint="hierarchical consistency needs one question per image and rank")
    present_flat = np.zeros(n_clusters * len(HIERARCHY_TASKS), dtype=bool)
    correct_flat = np.zeros_like(present_flat)
    present_flat[flat] = True
    correct_flat[flat] = em[rows] > 0
    present = present_flat.reshape(n_clusters, len(HIERARCHY_TASKS))
    correct = correct_flat.reshape(n_clusters, len(HIERARCHY_TASKS))
    image_group = np.full(n_clusters, -1, dtype=np.int64)
    image_group[codes[rows]] = group[rows]
    image_rows = np.flatnonzero(present.any(axis=1))
    return correct[image_rows], present[image_rows], image_rows, image_group[image_rows]


def _hierarchy_summary(inputs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None,
                       columns: dict[str, list[int]], interval: Any, ratio: Any,
                       group_labels: list[str]) -> dict[str, Any]:
    """HCA family per scope (pooled, per group): the means of :data:`HIERARCHICAL_METRICS` over
    images, ``hca_scaled`` = HCA / Acc_leaf (HCA paper §2.2, App. B.2 item 9: the share of leaf-correct
    images whose whole path is right), and per-level accuracy."""
    if inputs is None:
        return {}
    correct, present, _, image_group = inputs
    levels = list(HIERARCHY_TASKS)

    def block(scope: str, position: int, mask: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {"n_images": int(mask.sum())}
        for name in HIERARCHICAL_METRICS:
            out[name] = interval(columns[f"{scope}:{name}"][position], int(mask.sum()))
        out["hca_scaled"] = ratio(columns[f"{scope}:hca"][position], columns[f"{scope}:acc_leaf"][position],
                                  int(mask.sum()))
        accuracy = per_level_accuracy(correct[mask], present[mask])
        out["per_level"] = {level: float(acc) for level, acc in zip(levels, accuracy)}
        return out

    return {
        "levels": levels,
        "correctness": "em",
        "n_images": len(correct),
        "pooled": block("pooled", 0, np.ones(len(correct), dtype=bool)),
        "groups": {label: block("groups", i, image_group == i) for i, label in enumerate(group_labels)
                   if (image_group == i).any()},
    }
