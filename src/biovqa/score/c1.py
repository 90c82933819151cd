"""C1 scorer: per-item EM / EM_soft / resolution / severity / Wu–Palmer / Lin and the aggregates
of the C1 leaderboards (metrics.md §2, paper Tables 3, 18–24, 72–82).

``score(bench, predictions, options)`` takes the predictions *aligned* with ``bench.items`` (same
length and order; columns ``item_id``, ``response``, ``status`` ∈ ok | failed | missing) and
returns a :class:`~biovqa.components.ScoreResult`. Options: ``backbone`` (taxonomy index folder;
default ``manifest["taxonomy_index"]``; without a usable index the scorer raises
:class:`~biovqa.errors.MissingResourceError` — EM_soft never silently degrades to EM),
``bootstrap`` (B, default 1000), ``seed`` (42), ``level`` (0.95), ``epithet_last_word`` (True).

Per-item table (one row per benchmark item, in order): ``item_id, task, group, source_id, status,
parsed_response, em, em_soft, resolved, resolution, resolved_node, lca_node, lca_rank, severity,
wup, lin, mcq_choice`` plus the bench's difficulty columns (``target_node, target_rank,
reference_cell, resolution_method, exposure, log10_exposure, prevalence_percentile,
prevalence_tier, ndd, ndd_rank, confusability, mcq_tier, tier, tier_method``).
See :mod:`biovqa.score.c1_resolve` for the per-item rules.

Summary (JSON-able; floats unrounded; NaN where undefined). An *interval* is
``{"value": v, "lo": l, "hi": h}`` — the full-sample value and the 95% percentile bootstrap bounds
(B resamples of images, i.e. ``source_id`` clusters, seed ``seed``; every interval comes from the
same resamples). A *metric block* is
``{"n": items, "n_severity": wrong+resolved items, "em", "em_soft", "revision_lag", "unresolved",
"wup", "lin", "severity": interval…}``::

    {
      "component": "c1",
      "counts": {"items": n, "ok": n, "failed": n, "missing": n, "images": n},
      "bootstrap": {"B": 1000, "seed": 42, "level": 0.95, "unit": "image (source_id)"},
      "options": {"epithet_last_word": true, "backbone": "…"},
      "tasks": {task: metric block + {"floor": φ, "floor_answer": str, "headroom": interval}},
      "pooled": metric block + {"floor": item-weighted φ, "headroom": interval},
      "open_pooled": metric block over the 8 open types (Table 3 columns),
      "recognition_recall": {"mcq": interval, "open": interval, "gap": interval, "ratio": interval},
      "groups": {group: metric block},           # pooled over the 9 types
      "tiers": {tier: metric block},             # unified difficulty column
      "task_group": {task: {group: {"n": n, "em": interval}}},
      "task_tier": {task: {tier: {"n": n, "em": interval}}},
      "breakdown": [{"task", "group", "tier", "n", "em", "em_soft", "unresolved", "wup", "lin",
                     "severity", "n_severity"}, …],          # point estimates, sorted
      "resolution": {task: {resolution label: count}},
      "hierarchy": {"levels": [...], "correctness": "em", "n_images": n,
                    "pooled": {metric: interval, "per_level": {level: acc}},
                    "groups": {group: {…same…}}}
    }
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..build.c1_tiers import MCQ_TASKS
from ..components import ScoreResult
from ..errors import BiovqaError, InputFormatError, MissingResourceError
from ..manifests.bench import Bench
from ..records import TREE_RANKS
from ..stats.bootstrap import cluster_codes, percentile_interval, ratio_of_sums_replicates
from ..text import normalize_c1
from .c1_resolve import ReplyScores, SynonymIndex, VernacularLookup, normalize_unique, score_replies
from .hierarchy import HIERARCHICAL_METRICS, hierarchical_per_image, per_level_accuracy

#: C1 question types in Table 6 order.
TASKS: tuple[str, ...] = ("phylum", "class", "order", "family", "genus", "species", "scientific_name",
                          "common_name", "common_name_mcq")
OPEN_TASKS: tuple[str, ...] = tuple(t for t in TASKS if t not in MCQ_TASKS)
MCQ_TASK = "common_name_mcq"
OPEN_COMMON_TASK = "common_name"
#: Levels of the hierarchical-consistency path: phylum … species (epithet), scored by EM.
HIERARCHY_TASKS: tuple[str, ...] = TREE_RANKS
#: Per-item metrics averaged over every item of a cell.
ITEM_METRICS: tuple[str, ...] = ("em", "em_soft", "revision_lag", "unresolved", "wup", "lin")
DIFFICULTY_COLUMNS: tuple[str, ...] = (
    "target_node", "target_rank", "reference_cell", "resolution_method", "exposure", "log10_exposure",
    "prevalence_percentile", "prevalence_tier", "ndd", "ndd_rank", "confusability", "mcq_tier", "tier",
    "tier_method",
)
REQUIRED_ITEM_COLUMNS: tuple[str, ...] = ("item_id", "task", "answer", "source_id", "group", "genus",
                                          "species", "target_node")
PREDICTION_STATUSES: tuple[str, ...] = ("ok", "failed", "missing")
SIDE_FOLDER = "c1"
TREE_FILE = "tree.parquet"
VERNACULAR_FILE = "vernacular.parquet"
_OPTION_KEYS = frozenset({"backbone", "bootstrap", "seed", "level", "epithet_last_word", "label"})


@dataclass(frozen=True, slots=True)
class C1ScoreOptions:
    backbone: Path | None = None
    bootstrap: int = 1000
    seed: int = 42
    level: float = 0.95
    epithet_last_word: bool = True

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any] | None) -> "C1ScoreOptions":
        options = dict(options or {})
        unknown = sorted(set(options) - _OPTION_KEYS)
        if unknown:
            raise BiovqaError(f"unknown C1 score option(s) {unknown}", field=unknown[0],
                              hint=f"known options: {', '.join(sorted(_OPTION_KEYS))}")
        backbone = options.get("backbone")
        bootstrap = int(options.get("bootstrap", 1000) if options.get("bootstrap") is not None else 1000)
        if bootstrap < 1:
            raise BiovqaError(f"bootstrap must be ≥ 1, got {bootstrap}", field="bootstrap")
        level = float(options.get("level", 0.95) or 0.95)
        if not 0 < level < 1:
            raise BiovqaError(f"level must lie in (0, 1), got {level}", field="level")
        seed = options.get("seed", 42)
        epithet = options.get("epithet_last_word", True)
        return cls(backbone=Path(backbone) if backbone else None, bootstrap=bootstrap,
                   seed=42 if seed is None else int(seed), level=level,
                   epithet_last_word=True if epithet is None else bool(epithet))


# --------------------------------------------------------------------------------------------------
# floor


def _answer_keys(items: pa.Table) -> pd.DataFrame:
    answers = _strings(items, "answer")
    return pd.DataFrame({"task": _strings(items, "task"), "answer": answers, "key": normalize_unique(answers)})


def floor_answers(items: pa.Table) -> dict[str, str]:
    """The image-blind floor reply per question type (Table 3 floor row): the most frequent gold
    answer of that type after normalization (ties: the smallest normalized string), spelled as
    its most frequent written form (ties: the smallest string). The baseline backend answers it."""
    frame = _answer_keys(items)
    frame = frame[frame["answer"].notna() & (frame["key"] != "")]
    keys = frame.groupby(["task", "key"]).size().rename("n").reset_index()
    keys = keys.sort_values(["task", "n", "key"], ascending=[True, False, True], kind="stable")
    best = keys.drop_duplicates("task").set_index("task")["key"]
    chosen = frame[frame["key"].to_numpy() == frame["task"].map(best).to_numpy()]
    spellings = chosen.groupby(["task", "answer"]).size().rename("n").reset_index()
    spellings = spellings.sort_values(["task", "n", "answer"], ascending=[True, False, True], kind="stable")
    return {str(k): str(v) for k, v in spellings.drop_duplicates("task").set_index("task")["answer"].items()}


def floor_scores(items: pa.Table, answers: Mapping[str, str] | None = None) -> dict[str, float]:
    """φ per question type: the share of its items whose gold equals the floor answer."""
    answers = floor_answers(items) if answers is None else answers
    frame = _answer_keys(items)
    floor_keys = {task: normalize_c1(answer) for task, answer in answers.items()}
    hit = frame["key"].to_numpy() == frame["task"].map(floor_keys).to_numpy()
    return {str(task): float(share) for task, share in pd.Series(hit).groupby(frame["task"].to_numpy()).mean().items()}


def item_weighted_score(scores: Mapping[str, float], counts: Mapping[str, int]) -> float:
    """Pooled C1 score (§2.9): ``Σ_t n_t·S_t / Σ_t n_t`` over question types."""
    total = sum(counts[t] for t in scores)
    return float(sum(scores[t] * counts[t] for t in scores) / total) if total else float("nan")


def headroom(score_value: float, floor: float) -> float:
    """Headroom recovered over the image-blind floor (§2.10): ``(S − φ)/(1 − φ)``."""
    return float((score_value - floor) / (1.0 - floor)) if floor < 1 else float("nan")


def recognition_recall_gap(mcq: float, open_recall: float) -> tuple[float, float]:
    """Recognition–recall gap and ratio (§2.11): ``MCQ − open`` and ``MCQ / open``."""
    ratio = mcq / open_recall if open_recall > 0 else float("nan")
    return float(mcq - open_recall), float(ratio)


# --------------------------------------------------------------------------------------------------
# inputs


def _strings(table: pa.Table, name: str) -> np.ndarray:
    """A string column as an object array (None where null)."""
    return table.column(name).to_numpy(zero_copy_only=False).astype(object)


def _check_predictions(items: pa.Table, predictions: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    for column in ("item_id", "response", "status"):
        if column not in predictions.column_names:
            raise InputFormatError("predictions lack a required column", field=column,
                                   hint="align them with biovqa.scoring.align_predictions")
    if predictions.num_rows != items.num_rows:
        raise InputFormatError(
            f"predictions have {predictions.num_rows} rows, the benchmark has {items.num_rows} items",
            field="item_id", hint="align them with biovqa.scoring.align_predictions")
    ids = predictions.column("item_id").cast(pa.string())
    expected = items.column("item_id")
    same = pc.fill_null(pc.equal(ids, expected), False)
    if not pc.all(same).as_py():
        row = int(pc.index(same, False).as_py())
        raise InputFormatError(
            f"prediction item_id {ids[row].as_py()!r} does not match benchmark item {expected[row].as_py()!r}",
            row=row + 2, field="item_id", hint="predictions must be in benchmark item order")
    status = predictions.column("status").cast(pa.string())
    known = pc.fill_null(pc.is_in(status, value_set=pa.array(PREDICTION_STATUSES)), False)
    if not pc.all(known).as_py():
        row = int(pc.index(known, False).as_py())
        raise InputFormatError(f"unknown status {status[row].as_py()!r}", row=row + 2, field="status",
                               hint=f"use one of {', '.join(PREDICTION_STATUSES)}")
    replies = predictions.column("response").cast(pa.string()).to_numpy(zero_copy_only=False).astype(object)
    return replies, status.to_numpy(zero_copy_only=False).astype(object)


def _check_items(items: pa.Table, source: Path | None) -> None:
    missing = [c for c in REQUIRED_ITEM_COLUMNS if c not in items.column_names]
    if missing:
        raise InputFormatError("C1 items lack a required column", file=source, field=missing[0],
                               hint="rebuild the benchmark with `biovqa build c1`")
    tasks = _strings(items, "task")
    bad = np.flatnonzero(~np.isin(tasks, TASKS))
    if len(bad):
        raise InputFormatError(f"unknown C1 task {tasks[bad[0]]!r}", file=source, row=int(bad[0]) + 2,
                               field="task", hint=f"C1 tasks: {', '.join(TASKS)}")
    target = items.column("target_node")
    if target.null_count:
        row = int(np.flatnonzero(np.asarray(target.is_null()))[0])
        raise InputFormatError("item has no target node", file=source, row=row + 2, field="target_node")


def load_resources(bench: Bench, backbone: Path | None) -> tuple[Any, SynonymIndex, VernacularLookup, Path]:
    """The benchmark tree, the synonym index and the vernacular index a C1 score needs."""
    from ..taxonomy.index import TaxonomyIndex
    from ..taxonomy.tree import BenchmarkTree
    from ..taxonomy.vernacular import VernacularIndex

    recorded = bench.manifest.get("taxonomy_index")
    path = backbone if backbone is not None else (Path(recorded) if recorded else None)
    if path is None:
        raise MissingResourceError(
            "C1 scoring needs the taxonomy (synonym) index for EM_soft, and none was given",
            file=bench.root / "manifest.json", field="taxonomy_index",
            hint="pass --backbone INDEX (built with `biovqa taxonomy index`)")
    if not path.is_absolute() and backbone is None:
        path = bench.root / path
    if not path.exists():
        raise MissingResourceError("taxonomy index not found", file=path,
                                   hint="pass --backbone INDEX (built with `biovqa taxonomy index`)")
    synonyms = TaxonomyIndex.open(path)
    tree_path = bench.root / SIDE_FOLDER / TREE_FILE
    if not tree_path.exists():
        raise MissingResourceError("benchmark tree not found", file=tree_path, hint="rebuild the benchmark")
    tree = BenchmarkTree.load(tree_path)
    vernacular = VernacularIndex.load(bench.root / SIDE_FOLDER / VERNACULAR_FILE)
    return tree, synonyms, vernacular, path


def score(bench: Bench, predictions: pa.Table, options: Mapping[str, Any] | None = None) -> ScoreResult:
    """Score C1 predictions aligned with ``bench.items`` (see the module docstring)."""
    settings = C1ScoreOptions.from_mapping(options)
    items = bench.items
    _check_items(items, bench.items_path)
    replies, statuses = _check_predictions(items, predictions)
    tree, synonyms, vernacular, index_path = load_resources(bench, settings.backbone)
    if int(items.column("target_node").to_numpy().max(initial=-1)) >= len(tree.names):
        raise InputFormatError("target_node lies outside the benchmark tree", file=bench.items_path,
                               field="target_node", hint="the tree and the items come from different builds")
    return score_items(items, replies, statuses, tree=tree, synonyms=synonyms, vernacular=vernacular,
                       settings=settings, backbone=index_path, source=bench.items_path)


def _mcq_arrays(items: pa.Table, is_mcq: np.ndarray, source: Path | None) -> tuple[np.ndarray, np.ndarray]:
    """(n_mcq × k) option strings and option nodes of the MCQ items, in row order."""
    rows = np.flatnonzero(is_mcq)
    if len(rows) == 0:
        return np.empty((0, 0), dtype=object), np.empty((0, 0), dtype=np.int64)
    if "options" not in items.column_names:
        raise InputFormatError("MCQ items need an options column", file=source, field="options")
    options = items.column("options").take(pa.array(rows)).combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(options), 0).to_numpy()
    if len(set(lengths.tolist())) != 1 or lengths[0] < 2:
        row = int(rows[np.argmin(lengths == np.median(lengths))])
        raise InputFormatError("every MCQ item needs the same number (≥ 2) of options", file=source,
                               row=row + 2, field="options")
    width = int(lengths[0])
    strings = options.flatten().to_numpy(zero_copy_only=False).astype(object).reshape(len(rows), width)
    nodes = np.full((len(rows), width), -1, dtype=np.int64)
    if "option_nodes" in items.column_names:
        column = items.column("option_nodes").take(pa.array(rows)).combine_chunks()
        node_lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy()
        present = node_lengths == width
        if present.any():
            flat = pc.fill_null(column.filter(pa.array(present)).flatten(), -1).to_numpy(zero_copy_only=False)
            nodes[present] = np.asarray(flat, dtype=np.int64).reshape(int(present.sum()), width)
    return strings, nodes


def score_items(items: pa.Table, replies: np.ndarray, statuses: np.ndarray, *, tree: Any,
                synonyms: SynonymIndex, vernacular: VernacularLookup, settings: C1ScoreOptions,
                backbone: Path | None = None, source: Path | None = None) -> ScoreResult:
    """Per-item scores and the summary from already-loaded resources (pure)."""
    columns = {name: _strings(items, name) for name in ("task", "answer", "genus", "species", "group", "source_id")}
    is_mcq = np.isin(columns["task"], list(MCQ_TASKS))
    mcq_options, mcq_option_nodes = _mcq_arrays(items, is_mcq, source)
    target = items.column("target_node").to_numpy(zero_copy_only=False).astype(np.int64)
    result = score_replies(tasks=columns["task"], answers=columns["answer"], target_nodes=target,
                           genera=columns["genus"], binomials=columns["species"], mcq_options=mcq_options,
                           mcq_option_nodes=mcq_option_nodes, replies=replies, statuses=statuses, tree=tree,
                           synonyms=synonyms, vernacular=vernacular,
                           epithet_last_word=settings.epithet_last_word)
    effective_status = np.where((statuses == "ok") & pd.isna(replies), "missing", statuses).astype(object)
    table = _item_table(items, columns, effective_status, result)
    answers = floor_answers(items)
    summary = summarize(table, floor_scores(items, answers), answers, B=settings.bootstrap,
                        seed=settings.seed, level=settings.level)
    summary["options"] = {"epithet_last_word": settings.epithet_last_word,
                          "backbone": None if backbone is None else str(backbone)}
    return ScoreResult(items=table, summary=summary)


def _item_table(items: pa.Table, columns: dict[str, np.ndarray], statuses: np.ndarray,
                result: ReplyScores) -> pa.Table:
    resolved = result.resolved_node >= 0

    def nullable_int(values: np.ndarray, valid: np.ndarray, kind: pa.DataType) -> pa.Array:
        return pa.array(values, type=kind, mask=~valid)

    out: dict[str, pa.Array | pa.ChunkedArray] = {
        "item_id": items.column("item_id"),
        "task": items.column("task"),
        "group": items.column("group"),
        "source_id": items.column("source_id"),
        "status": pa.array(statuses, pa.string()),
        "parsed_response": pa.array(result.parsed, pa.string()),
        "em": pa.array(result.em, pa.int8()),
        "em_soft": pa.array(result.em_soft, pa.int8()),
        "resolved": pa.array(resolved, pa.bool_()),
        "resolution": pa.array(result.resolution, pa.string()),
        "resolved_node": nullable_int(result.resolved_node, resolved, pa.int32()),
        "lca_node": nullable_int(result.lca_node, resolved, pa.int32()),
        "lca_rank": pa.array(result.lca_rank, pa.string()),
        "severity": pa.array(result.severity, pa.float64(), from_pandas=True),
        "wup": pa.array(result.wup, pa.float64()),
        "lin": pa.array(result.lin, pa.float64()),
        "mcq_choice": nullable_int(result.mcq_choice, result.mcq_choice >= 0, pa.int8()),
    }
    for name in DIFFICULTY_COLUMNS:
        if name in items.column_names:
            out[name] = items.column(name)
    return pa.table(out)


# --------------------------------------------------------------------------------------------------
# aggregation


@dataclass
class _Plan:
    """Numerator and denominator columns of every bootstrapped mean (per-cluster sums)."""

    codes: np.ndarray
    n_clusters: int
    numerators: list[np.ndarray]
    denominators: list[np.ndarray]
    denominator_of: list[int]
    estimates: list[float]

    def add_denominator(self, mask: np.ndarray, cells: np.ndarray, n_cells: int,
                        codes: np.ndarray | None = None) -> int:
        """Counts of ``mask`` rows per cell; returns the index of its first column. ``codes``
        overrides the rows' cluster codes (image-level rows)."""
        codes = self.codes if codes is None else codes
        block = _cell_sums(np.ones(len(cells)), mask, cells, n_cells, codes, self.n_clusters)
        first = sum(d.shape[1] for d in self.denominators)
        self.denominators.append(block)
        return first

    def add_mean(self, values: np.ndarray, mask: np.ndarray, cells: np.ndarray, n_cells: int,
                 denominator_first: int, codes: np.ndarray | None = None) -> int:
        """Means of ``values`` over ``mask`` per cell; returns the index of its first column."""
        codes = self.codes if codes is None else codes
        block = _cell_sums(values, mask, cells, n_cells, codes, self.n_clusters)
        first = sum(n.shape[1] for n in self.numerators)
        self.numerators.append(block)
        self.denominator_of.extend(range(denominator_first, denominator_first + n_cells))
        return first

    def run(self, B: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        numerators = np.concatenate(self.numerators, axis=1)
        denominators = np.concatenate(self.denominators, axis=1)
        index = np.asarray(self.denominator_of)
        top = numerators.sum(axis=0)
        bottom = denominators.sum(axis=0)[index]
        with np.errstate(invalid="ignore", divide="ignore"):
            estimate = np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), np.nan)
        replicates = ratio_of_sums_replicates(numerators, denominators, B=B, seed=seed, denominator_of=index)
        return estimate, replicates


def _cell_sums(values: np.ndarray, mask: np.ndarray, cells: np.ndarray, n_cells: int, codes: np.ndarray,
               n_clusters: int) -> np.ndarray:
    keep = mask & (cells >= 0)
    flat = codes[keep] * n_cells + cells[keep]
    sums = np.bincount(flat, weights=np.asarray(values, dtype=np.float64)[keep], minlength=n_clusters * n_cells)
    return sums.reshape(n_clusters, n_cells).astype(np.float32)


def _interval(estimate: float, lo: float, hi: float) -> dict[str, float]:
    return {"value": float(estimate), "lo": float(lo), "hi": float(hi)}


def _labels(values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Dense codes (sorted labels; None → −1) and the labels."""
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), sort=True)
    return codes.astype(np.int64), [str(u) for u in uniques]


def summarize(table: pa.Table, floors: Mapping[str, float], floor_replies: Mapping[str, str], *,
              B: int = 1000, seed: int = 42, level: float = 0.95) -> dict[str, Any]:
    """The C1 summary (module docstring) from the per-item table."""
    task = _strings(table, "task")
    group = _strings(table, "group")
    tier = _strings(table, "tier") if "tier" in table.column_names else np.full(len(task), None, dtype=object)
    status = _strings(table, "status")
    em = table.column("em").to_numpy().astype(np.float64)
    em_soft = table.column("em_soft").to_numpy().astype(np.float64)
    resolved = table.column("resolved").to_numpy(zero_copy_only=False).astype(bool)
    severity = table.column("severity").to_numpy(zero_copy_only=False).astype(np.float64)
    values = {
        "em": em, "em_soft": em_soft, "revision_lag": em_soft - em, "unresolved": (~resolved).astype(np.float64),
        "wup": table.column("wup").to_numpy(), "lin": table.column("lin").to_numpy(),
    }
    codes, n_clusters = cluster_codes(_strings(table, "source_id"))
    plan = _Plan(codes, n_clusters, [], [], [], [])
    everything = np.ones(len(task), dtype=bool)
    with_severity = ~np.isnan(severity)
    severity_values = np.nan_to_num(severity)

    def full_block(cells: np.ndarray, n_cells: int) -> dict[str, int]:
        count = plan.add_denominator(everything, cells, n_cells)
        count_severity = plan.add_denominator(with_severity, cells, n_cells)
        columns = {name: plan.add_mean(v, everything, cells, n_cells, count) for name, v in values.items()}
        columns["severity"] = plan.add_mean(severity_values, with_severity, cells, n_cells, count_severity)
        return columns

    task_codes = pd.Series(task, dtype=object).map({t: i for i, t in enumerate(TASKS)}).to_numpy(np.int64)
    pooled_codes = np.zeros(len(task), dtype=np.int64)
    open_codes = np.where(np.isin(task, OPEN_TASKS), 0, -1)
    group_codes, group_labels = _labels(group)
    tier_codes, tier_labels = _labels(tier)
    task_group_codes = np.where(group_codes >= 0, task_codes * max(len(group_labels), 1) + group_codes, -1)
    task_tier_codes = np.where(tier_codes >= 0, task_codes * max(len(tier_labels), 1) + tier_codes, -1)

    blocks = {
        "tasks": (full_block(task_codes, len(TASKS)), list(TASKS), task_codes),
        "pooled": (full_block(pooled_codes, 1), ["all"], pooled_codes),
        "open_pooled": (full_block(open_codes, 1), ["all"], open_codes),
        "groups": (full_block(group_codes, len(group_labels)), group_labels, group_codes),
        "tiers": (full_block(tier_codes, len(tier_labels)), tier_labels, tier_codes),
    }
    n_task_group = len(TASKS) * max(len(group_labels), 1)
    n_task_tier = len(TASKS) * max(len(tier_labels), 1)
    tg_count = plan.add_denominator(everything, task_group_codes, n_task_group)
    tg_em = plan.add_mean(em, everything, task_group_codes, n_task_group, tg_count)
    tt_count = plan.add_denominator(everything, task_tier_codes, n_task_tier)
    tt_em = plan.add_mean(em, everything, task_tier_codes, n_task_tier, tt_count)

    hierarchy_inputs = _hierarchy_matrix(task, em, codes, n_clusters, group)
    hierarchy_columns: dict[str, int] = {}
    if hierarchy_inputs is not None:
        correct, present, image_rows, image_group = hierarchy_inputs
        per_image = hierarchical_per_image(correct, present)
        image_group_codes, image_group_labels = _labels(image_group)
        every_image = np.ones(len(image_rows), dtype=bool)
        for scope, cells, width in (("pooled", np.zeros(len(image_rows), dtype=np.int64), 1),
                                    ("groups", image_group_codes, len(image_group_labels))):
            count = plan.add_denominator(every_image, cells, width, codes=image_rows)
            for name in HIERARCHICAL_METRICS:
                hierarchy_columns[f"{scope}:{name}"] = plan.add_mean(per_image[name], every_image, cells, width,
                                                                     count, codes=image_rows)

    estimate, replicates = plan.run(B, seed)
    lo, hi = percentile_interval(replicates, level)

    def interval(column: int) -> dict[str, float]:
        return _interval(estimate[column], lo[column], hi[column])

    def counts_of(mask: np.ndarray, cells: np.ndarray, n_cells: int) -> np.ndarray:
        keep = mask & (cells >= 0)
        return np.bincount(cells[keep], minlength=n_cells)

    summary: dict[str, Any] = {"component": "c1"}
    summary["counts"] = {
        "items": int(len(task)),
        **{s: int((status == s).sum()) for s in PREDICTION_STATUSES},
        "images": int(n_clusters),
    }
    summary["bootstrap"] = {"B": int(B), "seed": int(seed), "level": float(level), "unit": "image (source_id)"}

    def metric_blocks(key: str) -> dict[str, dict[str, Any]]:
        columns, labels, cells = blocks[key]
        n = counts_of(everything, cells, len(labels))
        n_sev = counts_of(with_severity, cells, len(labels))
        out: dict[str, dict[str, Any]] = {}
        for position, label in enumerate(labels):
            if n[position] == 0:
                continue
            block: dict[str, Any] = {"n": int(n[position]), "n_severity": int(n_sev[position])}
            for name, first in columns.items():
                block[name] = interval(first + position)
            out[label] = block
        return out

    summary["tasks"] = metric_blocks("tasks")
    for name, block in summary["tasks"].items():
        phi = float(floors.get(name, np.nan))
        block["floor"] = phi
        block["floor_answer"] = floor_replies.get(name)
        column = blocks["tasks"][0]["em"] + TASKS.index(name)
        block["headroom"] = _headroom(estimate[column], replicates[:, column], phi, level)
    summary["pooled"] = metric_blocks("pooled").get("all", {})
    summary["open_pooled"] = metric_blocks("open_pooled").get("all", {})
    if summary["pooled"]:
        n_by_task = {t: b["n"] for t, b in summary["tasks"].items()}
        phi = item_weighted_score({t: float(floors.get(t, 0.0)) for t in n_by_task}, n_by_task)
        summary["pooled"]["floor"] = float(phi)
        column = blocks["pooled"][0]["em"]
        summary["pooled"]["headroom"] = _headroom(estimate[column], replicates[:, column], phi, level)
    summary["recognition_recall"] = _recognition_recall(blocks["tasks"][0]["em"], estimate, replicates, level,
                                                        present=set(summary["tasks"]))
    summary["groups"] = metric_blocks("groups")
    summary["tiers"] = metric_blocks("tiers")

    def em_cells(first: int, cells: np.ndarray, labels: list[str]) -> dict[str, dict[str, Any]]:
        n = counts_of(everything, cells, len(TASKS) * max(len(labels), 1))
        out: dict[str, dict[str, Any]] = {}
        for t_index, t_name in enumerate(TASKS):
            row: dict[str, Any] = {}
            for l_index, l_name in enumerate(labels):
                cell = t_index * len(labels) + l_index
                if n[cell]:
                    row[l_name] = {"n": int(n[cell]), "em": interval(first + cell)}
            if row:
                out[t_name] = row
        return out

    summary["task_group"] = em_cells(tg_em, task_group_codes, group_labels)
    summary["task_tier"] = em_cells(tt_em, task_tier_codes, tier_labels)
    summary["breakdown"] = _breakdown(task, group, tier, values, severity)
    resolution = pd.Series(_strings(table, "resolution"))
    summary["resolution"] = {
        str(t): {str(k): int(v) for k, v in sorted(part.value_counts().items())}
        for t, part in resolution.groupby(pd.Series(task), sort=True)
    }
    summary["hierarchy"] = _hierarchy_summary(hierarchy_inputs, hierarchy_columns, interval)
    return summary


def _headroom(estimate: float, replicates: np.ndarray, phi: float, level: float) -> dict[str, float]:
    """Headroom recovered over the floor, (S − φ)/(1 − φ) (§2.10), with the transformed interval."""
    if not np.isfinite(phi) or phi >= 1:
        return _interval(np.nan, np.nan, np.nan)
    lo, hi = percentile_interval((replicates - phi) / (1 - phi), level)
    return _interval(headroom(estimate, phi), lo[0], hi[0])


def _recognition_recall(em_first: int, estimate: np.ndarray, replicates: np.ndarray, level: float,
                        present: set[str]) -> dict[str, Any]:
    """gap = EM(MCQ) − EM(open common name); ratio = MCQ / open (§2.11)."""
    if MCQ_TASK not in present or OPEN_COMMON_TASK not in present:
        return {}
    mcq = em_first + TASKS.index(MCQ_TASK)
    open_ = em_first + TASKS.index(OPEN_COMMON_TASK)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio_reps = np.where(replicates[:, open_] > 0, replicates[:, mcq] / replicates[:, open_], np.nan)
    gap, ratio = recognition_recall_gap(float(estimate[mcq]), float(estimate[open_]))
    gap_lo, gap_hi = percentile_interval(replicates[:, mcq] - replicates[:, open_], level)
    ratio_lo, ratio_hi = percentile_interval(ratio_reps, level)
    m_lo, m_hi = percentile_interval(replicates[:, [mcq, open_]], level)
    return {
        "mcq": _interval(estimate[mcq], m_lo[0], m_hi[0]),
        "open": _interval(estimate[open_], m_lo[1], m_hi[1]),
        "gap": _interval(gap, gap_lo[0], gap_hi[0]),
        "ratio": _interval(ratio, ratio_lo[0], ratio_hi[0]),
    }


def _breakdown(task: np.ndarray, group: np.ndarray, tier: np.ndarray, values: dict[str, np.ndarray],
               severity: np.ndarray) -> list[dict[str, Any]]:
    frame = pd.DataFrame({"task": task, "group": group, "tier": tier, **values, "severity": severity})
    frame["tier"] = frame["tier"].fillna("none")
    grouped = frame.groupby(["task", "group", "tier"], sort=True)
    means = grouped[["em", "em_soft", "unresolved", "wup", "lin", "severity"]].mean()
    n = grouped.size()
    n_severity = grouped["severity"].count()
    order = {t: i for i, t in enumerate(TASKS)}
    records = []
    for (t, g, k), row in means.iterrows():
        records.append({"task": t, "group": g, "tier": k, "n": int(n[(t, g, k)]),
                        "n_severity": int(n_severity[(t, g, k)]),
                        **{name: float(row[name]) for name in means.columns}})
    records.sort(key=lambda r: (order.get(r["task"], 99), r["group"], r["tier"]))
    return records


def _hierarchy_matrix(task: np.ndarray, em: np.ndarray, codes: np.ndarray, n_clusters: int,
                      group: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Per image (cluster): EM at phylum … species and which levels it was asked."""
    level = (pd.Series(task, dtype=object).map({t: i for i, t in enumerate(HIERARCHY_TASKS)})
             .fillna(-1).to_numpy(np.int64))
    rows = np.flatnonzero(level >= 0)
    if len(rows) == 0:
        return None
    flat = codes[rows] * len(HIERARCHY_TASKS) + level[rows]
    if len(np.unique(flat)) != len(flat):
        raise InputFormatError("an image has two questions at the same rank", field="source_id",
                               hint="hierarchical consistency needs one question per image and rank")
    present = np.zeros(n_clusters * len(HIERARCHY_TASKS), dtype=bool)
    correct = np.zeros_like(present)
    present[flat] = True
    correct[flat] = em[rows] > 0
    present = present.reshape(n_clusters, len(HIERARCHY_TASKS))
    correct = correct.reshape(n_clusters, len(HIERARCHY_TASKS))
    asked = present.any(axis=1)
    image_group = np.full(n_clusters, None, dtype=object)
    image_group[codes[rows]] = group[rows]
    image_rows = np.flatnonzero(asked)
    return correct[asked], present[asked], image_rows, image_group[asked]


def _hierarchy_summary(inputs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None,
                       columns: dict[str, int], interval: Any) -> dict[str, Any]:
    if inputs is None:
        return {}
    correct, present, _, image_group = inputs
    levels = list(HIERARCHY_TASKS)

    def block(scope: str, position: int, mask: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {"n_images": int(mask.sum())}
        for name in HIERARCHICAL_METRICS:
            out[name] = interval(columns[f"{scope}:{name}"] + position)
        accuracy = per_level_accuracy(correct[mask], present[mask])
        out["per_level"] = {lvl: float(acc) for lvl, acc in zip(levels, accuracy)}
        return out

    groups = sorted({str(g) for g in image_group.tolist() if g is not None})
    return {
        "levels": levels,
        "correctness": "em",
        "n_images": int(len(correct)),
        "pooled": block("pooled", 0, np.ones(len(correct), dtype=bool)),
        "groups": {g: block("groups", i, image_group == g) for i, g in enumerate(groups)},
    }
