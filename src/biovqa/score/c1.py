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
See :mod:`biovqa.score.c1_resolve` for the per-item rules. Repetitive string columns (``task``,
``group``, ``status``, ``resolution``, ``lca_rank``, ``parsed_response`` and the string difficulty
columns) are Arrow dictionary arrays (pandas reads them as categoricals).

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
      "task_group": {task: {group: {"n": n, "em": float}}},   # point estimates
      "task_tier": {task: {tier: {"n": n, "em": float}}},
      "breakdown": [{"task", "group", "tier", "n", "em", "em_soft", "unresolved", "wup", "lin",
                     "severity", "n_severity"}, …],          # point estimates, sorted
      "resolution": {task: {resolution label: count}},
      "hierarchy": {"levels": [...], "correctness": "em", "n_images": n,
                    "pooled": {metric: interval, "per_level": {level: acc}},
                    "groups": {group: {…same…}}}
    }
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..build.c1_tiers import DEPTH_RANK, MCQ_TASKS
from ..components import ScoreResult
from ..errors import BiovqaError, InputFormatError, MissingResourceError
from ..manifests.bench import Bench
from ..records import TREE_RANKS
from ..stats.bootstrap import percentile_interval, ratio_of_sums_replicates
from ..text import normalize_c1
from .c1_resolve import (
    RESOLUTIONS,
    ReplyScores,
    SynonymIndex,
    VernacularLookup,
    Vocabulary,
    encode_strings,
    score_replies,
)
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
    def from_mapping(cls, options: Mapping[str, Any] | None) -> C1ScoreOptions:
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


def _task_index(column: pa.Array | pa.ChunkedArray, source: Path | None = None) -> np.ndarray:
    """Index into :data:`TASKS` per row; an unknown task is an error naming the row."""
    codes, dictionary = encode_strings(column)
    labels = dictionary.to_pylist()
    unknown = [label for label in labels if label not in TASKS]
    if unknown or (codes < 0).any():
        bad = np.flatnonzero((codes < 0) | np.isin(codes, [labels.index(u) for u in unknown]))
        value = None if codes[bad[0]] < 0 else labels[codes[bad[0]]]
        raise InputFormatError(f"unknown C1 task {value!r}", file=source, row=int(bad[0]) + 2, field="task",
                               hint=f"C1 tasks: {', '.join(TASKS)}")
    return np.asarray([TASKS.index(label) for label in labels], dtype=np.int64)[codes]


def _sorted_codes(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Codes numbered in sorted label order (−1 where null) and the sorted labels."""
    codes, dictionary = encode_strings(column)
    order = pc.sort_indices(dictionary).to_numpy(zero_copy_only=False).astype(np.int64)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    labels = [str(v) for v in dictionary.take(pa.array(order, pa.int64())).to_pylist()]
    return np.where(codes >= 0, rank[np.maximum(codes, 0)] if len(labels) else -1, -1), labels


def _floors(task_index: np.ndarray, answers: pa.Array | pa.ChunkedArray) -> tuple[dict[str, str], dict[str, float]]:
    """Floor answer and floor score φ per question type (see :func:`floor_answers`)."""
    vocabulary = Vocabulary()
    gold = vocabulary.normalized_ids(answers)
    raw_codes, raw_dictionary = encode_strings(answers)
    size = np.int64(len(vocabulary))
    valid = (gold != 0) & (raw_codes >= 0)
    all_counts = np.bincount(task_index[valid] * size + gold[valid], minlength=len(TASKS) * int(size))
    keys = np.flatnonzero(all_counts)
    counts = all_counts[keys]
    frame = pd.DataFrame({"task": keys // size, "gold": keys % size, "n": counts})
    frame["text"] = vocabulary.text(frame["gold"].to_numpy()).to_pylist()
    frame = frame.sort_values(["task", "n", "text"], ascending=[True, False, True], kind="stable")
    best = frame.drop_duplicates("task").set_index("task")["gold"]
    raw_labels = raw_dictionary.to_pylist()
    answers_out: dict[str, str] = {}
    scores_out: dict[str, float] = {}
    for task, gold_id in best.items():
        rows = task_index == task
        chosen = rows & (gold == gold_id) & (raw_codes >= 0)
        spelled, spelled_counts = np.unique(raw_codes[chosen], return_counts=True)
        options = sorted(zip(-spelled_counts, [raw_labels[c] for c in spelled]))
        answers_out[TASKS[task]] = options[0][1]
        scores_out[TASKS[task]] = float(chosen.sum() / rows.sum())
    return answers_out, scores_out


def floor_answers(items: pa.Table) -> dict[str, str]:
    """The image-blind floor reply per question type (Table 3 floor row): the most frequent gold
    answer of that type after normalization (ties: the smallest normalized string), spelled as
    its most frequent written form (ties: the smallest string). The baseline backend answers it."""
    return _floors(_task_index(items.column("task")), items.column("answer"))[0]


def floor_scores(items: pa.Table, answers: Mapping[str, str] | None = None) -> dict[str, float]:
    """φ per question type (§2.10): the share of its items whose gold equals the floor answer; for
    the MCQ (when the items carry options), the share answered right by picking the option that
    names the most frequent gold common name (ties: the first option) — what the baseline does."""
    task_index = _task_index(items.column("task"))
    if answers is None:
        out = _floors(task_index, items.column("answer"))[1]
    else:
        vocabulary = Vocabulary()
        gold = vocabulary.normalized_ids(items.column("answer"))
        out = {}
        for task, answer in answers.items():
            rows = task_index == TASKS.index(task)
            if rows.any():
                out[task] = float((gold[rows] == vocabulary.ids([normalize_c1(answer)])[0]).mean())
    is_mcq = task_index == TASKS.index(MCQ_TASK)
    if is_mcq.any() and "options" in items.column_names:
        options, _ = _mcq_arrays(items, is_mcq, None)
        out[MCQ_TASK] = mcq_floor(items.column("answer").take(pa.array(np.flatnonzero(is_mcq))), options)
    return out


def mcq_floor_choice(answers: pa.Array | pa.ChunkedArray, options: pa.Array) -> np.ndarray:
    """Image-blind MCQ rule: per item the index of the option naming the most frequent gold
    answer of the MCQ items (ties: the first option). ``options`` is flattened, k per item."""
    vocabulary = Vocabulary()
    gold = vocabulary.normalized_ids(answers)
    option_ids = vocabulary.normalized_ids(options).reshape(len(gold), -1)
    frequency = np.bincount(gold, minlength=len(vocabulary))
    return frequency[option_ids].argmax(axis=1)


def mcq_floor(answers: pa.Array | pa.ChunkedArray, options: pa.Array) -> float:
    """The share of MCQ items where :func:`mcq_floor_choice` picks the gold."""
    vocabulary = Vocabulary()
    gold = vocabulary.normalized_ids(answers)
    option_ids = vocabulary.normalized_ids(options).reshape(len(gold), -1)
    pick = option_ids[np.arange(len(gold)), mcq_floor_choice(answers, options)]
    return float((pick == gold).mean()) if len(gold) else float("nan")


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


def _check_predictions(items: pa.Table, predictions: pa.Table) -> tuple[pa.Array, np.ndarray]:
    """The replies and a status code per item (0 ok, 1 failed, 2 missing; an ``ok`` row without a
    reply counts as missing)."""
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
    replies = predictions.column("response").cast(pa.string()).combine_chunks()
    code = np.full(items.num_rows, PREDICTION_STATUSES.index("missing"), dtype=np.int8)
    ok = pc.and_(pc.equal(status, "ok"), pc.is_valid(replies)).to_numpy(zero_copy_only=False)
    code[ok] = PREDICTION_STATUSES.index("ok")
    code[pc.equal(status, "failed").to_numpy(zero_copy_only=False)] = PREDICTION_STATUSES.index("failed")
    return replies, code


def _check_items(items: pa.Table, source: Path | None) -> np.ndarray:
    missing = [c for c in REQUIRED_ITEM_COLUMNS if c not in items.column_names]
    if missing:
        raise InputFormatError("C1 items lack a required column", file=source, field=missing[0],
                               hint="rebuild the benchmark with `biovqa build c1`")
    task_index = _task_index(items.column("task"), source)
    target = items.column("target_node")
    if target.null_count:
        row = int(np.flatnonzero(target.is_null().to_numpy(zero_copy_only=False))[0])
        raise InputFormatError("item has no target node", file=source, row=row + 2, field="target_node")
    return task_index


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
    tree, synonyms, vernacular, index_path = load_resources(bench, settings.backbone)
    items = _scoring_columns(bench)
    return score_items(items, predictions, tree=tree, synonyms=synonyms, vernacular=vernacular,
                       settings=settings, backbone=index_path, source=bench.items_path)


#: Item columns the scorer reads (plus the difficulty columns it copies); the rest stay on disk.
SCORING_COLUMNS: tuple[str, ...] = (*REQUIRED_ITEM_COLUMNS, "tier", "options", "option_nodes")
#: Repetitive string columns read as Arrow dictionaries (no per-row strings are materialised).
DICTIONARY_COLUMNS: tuple[str, ...] = (
    "task", "answer", "genus", "species", "group", "tier", "target_rank", "reference_cell", "resolution_method",
    "prevalence_tier", "ndd_rank", "mcq_tier", "tier_method",
)


def _scoring_columns(bench: Bench) -> pa.Table:
    """The items table restricted to what scoring needs (the cached full table if already read)."""
    if "items" in vars(bench):
        return bench.items
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(bench.items_path)
        wanted = [c for c in dict.fromkeys((*SCORING_COLUMNS, *DIFFICULTY_COLUMNS)) if c in schema.names]
        strings = [c for c in DICTIONARY_COLUMNS if c in wanted and pa.types.is_string(schema.field(c).type)]
        return pq.read_table(bench.items_path, columns=wanted, read_dictionary=strings)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputFormatError(f"cannot read benchmark items: {exc}", file=bench.items_path,
                               hint="the file looks truncated or is not Parquet; rebuild the benchmark") from None


def _mcq_arrays(items: pa.Table, is_mcq: np.ndarray, source: Path | None) -> tuple[pa.Array, np.ndarray]:
    """Flattened option strings (n_mcq·k) and the (n_mcq × k) option nodes of the MCQ items."""
    rows = np.flatnonzero(is_mcq)
    if len(rows) == 0:
        return pa.array([], pa.string()), np.empty((0, 0), dtype=np.int64)
    if "options" not in items.column_names:
        raise InputFormatError("MCQ items need an options column", file=source, field="options")
    options = items.column("options").take(pa.array(rows)).combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(options), 0).to_numpy(zero_copy_only=False)
    if (lengths != lengths[0]).any() or lengths[0] < 2:
        bad = int(np.flatnonzero((lengths != lengths[0]) | (lengths < 2))[0])
        raise InputFormatError("every MCQ item needs the same number (≥ 2) of options", file=source,
                               row=int(rows[bad]) + 2, field="options")
    width = int(lengths[0])
    nodes = np.full((len(rows), width), -1, dtype=np.int64)
    if "option_nodes" in items.column_names:
        column = items.column("option_nodes").take(pa.array(rows)).combine_chunks()
        present = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False) == width
        if present.any():
            flat = pc.fill_null(column.filter(pa.array(present)).flatten(), -1).to_numpy(zero_copy_only=False)
            nodes[present] = np.asarray(flat, dtype=np.int64).reshape(int(present.sum()), width)
    return options.flatten(), nodes


def score_items(items: pa.Table, predictions: pa.Table, *, tree: Any, synonyms: SynonymIndex,
                vernacular: VernacularLookup, settings: C1ScoreOptions | None = None,
                backbone: Path | None = None, source: Path | None = None) -> ScoreResult:
    """Per-item scores and the summary from already-loaded resources (pure)."""
    settings = settings or C1ScoreOptions()
    task_index = _check_items(items, source)
    replies, status = _check_predictions(items, predictions)
    target = items.column("target_node").to_numpy(zero_copy_only=False).astype(np.int64)
    if len(target) and (target.min() < 0 or target.max() >= len(tree.names)):
        raise InputFormatError("target_node lies outside the benchmark tree", file=source, field="target_node",
                               hint="the tree and the items come from different builds")
    is_mcq = task_index == TASKS.index(MCQ_TASK)
    mcq_options, mcq_option_nodes = _mcq_arrays(items, is_mcq, source)
    result = score_replies(
        task_index=task_index, task_names=TASKS, answers=items.column("answer"), genera=items.column("genus"),
        binomials=items.column("species"), target_nodes=target, replies=replies,
        answered=status == PREDICTION_STATUSES.index("ok"), failed=status == PREDICTION_STATUSES.index("failed"),
        mcq_options=mcq_options, mcq_option_nodes=mcq_option_nodes, tree=tree, synonyms=synonyms,
        vernacular=vernacular, epithet_last_word=settings.epithet_last_word)
    group_codes, group_labels = _sorted_codes(items.column("group"))
    if "tier" in items.column_names:
        tier_codes, tier_labels = _sorted_codes(items.column("tier"))
    else:
        tier_codes, tier_labels = np.full(items.num_rows, -1, dtype=np.int64), []
    cluster, cluster_labels = _sorted_codes(items.column("source_id"))
    arrays = _ItemArrays(task=task_index, group=group_codes, group_labels=group_labels, tier=tier_codes,
                         tier_labels=tier_labels, cluster=cluster, n_clusters=len(cluster_labels), status=status,
                         scores=result)
    answers, floors = _floors(task_index, items.column("answer"))
    if is_mcq.any():
        floors[MCQ_TASK] = mcq_floor(items.column("answer").take(pa.array(np.flatnonzero(is_mcq))), mcq_options)
    summary = summarize(arrays, floors, answers, B=settings.bootstrap, seed=settings.seed, level=settings.level)
    summary["options"] = {"epithet_last_word": settings.epithet_last_word,
                          "backbone": None if backbone is None else str(backbone)}
    return ScoreResult(items=_item_table(items, status, result), summary=summary)


def _label_array(codes: np.ndarray, labels: Sequence[str]) -> pa.Array:
    """A dictionary array of ``labels`` from integer codes (null where the code is negative)."""
    indices = pa.array(np.asarray(codes, dtype=np.int32), pa.int32(), mask=np.asarray(codes) < 0)
    return pa.DictionaryArray.from_arrays(indices, pa.array(list(labels), pa.string()))


def _item_table(items: pa.Table, status: np.ndarray, result: ReplyScores) -> pa.Table:
    resolved = result.resolved_node >= 0

    def nullable(values: np.ndarray, valid: np.ndarray, kind: pa.DataType) -> pa.Array:
        return pa.array(values, type=kind, mask=~valid)

    out: dict[str, pa.Array | pa.ChunkedArray] = {
        "item_id": items.column("item_id"),
        "task": _dictionary(items.column("task")),
        "group": _dictionary(items.column("group")),
        "source_id": _plain(items.column("source_id")),
        "status": _label_array(status, PREDICTION_STATUSES),
        "parsed_response": result.parsed,
        "em": pa.array(result.em, pa.int8()),
        "em_soft": pa.array(result.em_soft, pa.int8()),
        "resolved": pa.array(resolved, pa.bool_()),
        "resolution": _label_array(result.resolution, RESOLUTIONS),
        "resolved_node": nullable(result.resolved_node, resolved, pa.int32()),
        "lca_node": nullable(result.lca_node, resolved, pa.int32()),
        "lca_rank": _label_array(result.lca_depth, DEPTH_RANK),
        "severity": pa.array(result.severity, pa.float64(), from_pandas=True),
        "wup": pa.array(result.wup, pa.float64()),
        "lin": pa.array(result.lin, pa.float64()),
        "mcq_choice": nullable(result.mcq_choice, result.mcq_choice >= 0, pa.int8()),
    }
    for name in DIFFICULTY_COLUMNS:
        if name in items.column_names:
            column = items.column(name)
            out[name] = _dictionary(column) if name in DICTIONARY_COLUMNS else _plain(column)
    return pa.table(out)


def _dictionary(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A repetitive string column as a dictionary array (however the items were read)."""
    if pa.types.is_dictionary(column.type):
        return column
    return column.cast(pa.string()).dictionary_encode()


def _plain(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A dictionary-encoded column decoded to its value type (the output schema never depends on
    how the items were read)."""
    return column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column


# --------------------------------------------------------------------------------------------------
# aggregation


@dataclass(frozen=True)
class _ItemArrays:
    """Per-item integer codes and scores the summary is computed from."""

    task: np.ndarray
    group: np.ndarray
    group_labels: list[str]
    tier: np.ndarray
    tier_labels: list[str]
    cluster: np.ndarray
    n_clusters: int
    status: np.ndarray
    scores: ReplyScores


class _Plan:
    """Every bootstrapped mean as per-cluster numerator and denominator sums, so that one set of
    resampled cluster weights serves all of them; full-sample values are kept in float64."""

    def __init__(self, codes: np.ndarray, n_clusters: int) -> None:
        self.codes = codes
        self.n_clusters = n_clusters
        self.numerators: list[np.ndarray] = []
        self.denominators: list[np.ndarray] = []
        self.denominator_of: list[int] = []
        self.full_numerators: list[np.ndarray] = []
        self.full_denominators: list[np.ndarray] = []
        self._width = 0
        self._denominator_width = 0
        self._layouts: dict[tuple[int, int, int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._pinned: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def _layout(self, mask: np.ndarray, cells: np.ndarray, n_cells: int,
                codes: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Rows kept and their flat (cluster, cell) bin, computed once per layout."""
        codes = self.codes if codes is None else codes
        key = (id(mask), id(cells), id(codes), n_cells)
        if key not in self._layouts:
            keep = np.flatnonzero(mask & (cells >= 0))
            self._layouts[key] = (keep, cells[keep] * self.n_clusters + codes[keep])  # cell-major
            self._pinned.append((mask, cells, codes))  # keep the ids valid while cached
        return self._layouts[key]

    def add_denominator(self, mask: np.ndarray, cells: np.ndarray, n_cells: int,
                        codes: np.ndarray | None = None) -> int:
        """Counts of ``mask`` rows per cell; returns its first column. ``codes`` overrides the rows'
        cluster codes (image-level rows)."""
        keep, flat = self._layout(mask, cells, n_cells, codes)
        block = np.bincount(flat, minlength=self.n_clusters * n_cells).reshape(n_cells, self.n_clusters)
        first = self._denominator_width
        self.denominators.append(block.astype(np.float32))
        self.full_denominators.append(np.bincount(cells[keep], minlength=n_cells).astype(np.float64))
        self._denominator_width += n_cells
        return first

    def add_mean(self, values: np.ndarray, mask: np.ndarray, cells: np.ndarray, n_cells: int,
                 denominator_first: int, codes: np.ndarray | None = None) -> int:
        """Means of ``values`` over ``mask`` per cell; returns the index of its first column."""
        keep, flat = self._layout(mask, cells, n_cells, codes)
        weights = np.asarray(values, dtype=np.float64)[keep]
        sums = np.bincount(flat, weights=weights, minlength=self.n_clusters * n_cells)
        self.numerators.append(sums.reshape(n_cells, self.n_clusters).astype(np.float32))
        self.full_numerators.append(np.bincount(cells[keep], weights=weights, minlength=n_cells))
        self.denominator_of.extend(range(denominator_first, denominator_first + n_cells))
        first = self._width
        self._width += n_cells
        return first

    def run(self, B: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        index = np.asarray(self.denominator_of, dtype=np.int64)
        top = np.concatenate(self.full_numerators)
        bottom = np.concatenate(self.full_denominators)[index]
        with np.errstate(invalid="ignore", divide="ignore"):
            estimate = np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), np.nan)
        # blocks are (cells × clusters), so stacking them is a plain copy; the products take the
        # transposed views
        replicates = ratio_of_sums_replicates(np.concatenate(self.numerators, axis=0).T,
                                              np.concatenate(self.denominators, axis=0).T,
                                              B=B, seed=seed, denominator_of=index)
        return estimate, replicates


def _interval(estimate: float, lo: float, hi: float) -> dict[str, float]:
    return {"value": float(estimate), "lo": float(lo), "hi": float(hi)}


def summarize(arrays: _ItemArrays, floors: Mapping[str, float], floor_replies: Mapping[str, str], *,
              B: int = 1000, seed: int = 42, level: float = 0.95) -> dict[str, Any]:
    """The C1 summary (module docstring) from per-item codes and scores."""
    scores = arrays.scores
    n_items = len(arrays.task)
    em = scores.em.astype(np.float64)
    em_soft = scores.em_soft.astype(np.float64)
    resolved = scores.resolved_node >= 0
    with_severity = ~np.isnan(scores.severity)
    values = {"em": em, "em_soft": em_soft, "unresolved": (~resolved).astype(np.float64),
              "wup": scores.wup, "lin": scores.lin}
    plan = _Plan(arrays.cluster, arrays.n_clusters)
    everything = np.ones(n_items, dtype=bool)
    severity_values = np.nan_to_num(scores.severity)

    def full_block(cells: np.ndarray, n_cells: int) -> dict[str, int]:
        count = plan.add_denominator(everything, cells, n_cells)
        count_severity = plan.add_denominator(with_severity, cells, n_cells)
        columns = {name: plan.add_mean(v, everything, cells, n_cells, count) for name, v in values.items()}
        columns["severity"] = plan.add_mean(severity_values, with_severity, cells, n_cells, count_severity)
        return columns

    n_groups, n_tiers = len(arrays.group_labels), len(arrays.tier_labels)
    task_codes = arrays.task
    pooled_codes = np.zeros(n_items, dtype=np.int64)
    open_codes = np.where(task_codes != TASKS.index(MCQ_TASK), 0, -1)
    blocks = {
        "tasks": (full_block(task_codes, len(TASKS)), list(TASKS), task_codes),
        "pooled": (full_block(pooled_codes, 1), ["all"], pooled_codes),
        "open_pooled": (full_block(open_codes, 1), ["all"], open_codes),
        "groups": (full_block(arrays.group, n_groups), arrays.group_labels, arrays.group),
        "tiers": (full_block(arrays.tier, n_tiers), arrays.tier_labels, arrays.tier),
    }
    task_group = np.where(arrays.group >= 0, task_codes * max(n_groups, 1) + arrays.group, -1)
    task_tier = np.where(arrays.tier >= 0, task_codes * max(n_tiers, 1) + arrays.tier, -1)

    hierarchy_inputs = _hierarchy_matrix(task_codes, em, arrays.cluster, arrays.n_clusters, arrays.group)
    hierarchy_columns: dict[str, int] = {}
    if hierarchy_inputs is not None:
        correct, present, image_rows, image_group = hierarchy_inputs
        per_image = hierarchical_per_image(correct, present)
        every_image = np.ones(len(image_rows), dtype=bool)
        for scope, cells, width in (("pooled", np.zeros(len(image_rows), dtype=np.int64), 1),
                                    ("groups", image_group, n_groups)):
            count = plan.add_denominator(every_image, cells, width, codes=image_rows)
            for metric in HIERARCHICAL_METRICS:
                hierarchy_columns[f"{scope}:{metric}"] = plan.add_mean(per_image[metric], every_image, cells,
                                                                       width, count, codes=image_rows)

    estimate, replicates = plan.run(B, seed)
    lo, hi = percentile_interval(replicates, level)

    def interval(column: int) -> dict[str, float]:
        return _interval(estimate[column], lo[column], hi[column])

    def difference(first: int, second: int) -> dict[str, float]:
        d_lo, d_hi = percentile_interval(replicates[:, first] - replicates[:, second], level)
        return _interval(estimate[first] - estimate[second], d_lo[0], d_hi[0])

    summary: dict[str, Any] = {"component": "c1"}
    summary["counts"] = {"items": int(n_items),
                         **{s: int((arrays.status == i).sum()) for i, s in enumerate(PREDICTION_STATUSES)},
                         "images": int(arrays.n_clusters)}
    summary["bootstrap"] = {"B": int(B), "seed": int(seed), "level": float(level), "unit": "image (source_id)"}

    def metric_blocks(key: str) -> dict[str, dict[str, Any]]:
        columns, labels, cells = blocks[key]
        n = np.bincount(cells[cells >= 0], minlength=len(labels))
        n_severity = np.bincount(cells[(cells >= 0) & with_severity], minlength=len(labels))
        out: dict[str, dict[str, Any]] = {}
        for position, label in enumerate(labels):
            if n[position] == 0:
                continue
            block: dict[str, Any] = {"n": int(n[position]), "n_severity": int(n_severity[position])}
            for name in ("em", "em_soft"):
                block[name] = interval(columns[name] + position)
            block["revision_lag"] = difference(columns["em_soft"] + position, columns["em"] + position)
            for name in ("unresolved", "wup", "lin", "severity"):
                block[name] = interval(columns[name] + position)
            out[label] = block
        return out

    summary["tasks"] = metric_blocks("tasks")
    em_first = blocks["tasks"][0]["em"]
    for name, block in summary["tasks"].items():
        phi = float(floors.get(name, np.nan))
        block["floor"] = phi
        block["floor_answer"] = floor_replies.get(name)
        column = em_first + TASKS.index(name)
        block["headroom"] = _headroom(estimate[column], replicates[:, column], phi, level)
    summary["pooled"] = metric_blocks("pooled").get("all", {})
    summary["open_pooled"] = metric_blocks("open_pooled").get("all", {})
    if summary["pooled"]:
        n_by_task = {t: b["n"] for t, b in summary["tasks"].items()}
        phi = item_weighted_score({t: float(floors.get(t, 0.0)) for t in n_by_task}, n_by_task)
        summary["pooled"]["floor"] = float(phi)
        column = blocks["pooled"][0]["em"]
        summary["pooled"]["headroom"] = _headroom(estimate[column], replicates[:, column], phi, level)
    summary["recognition_recall"] = _recognition_recall(em_first, estimate, replicates, level,
                                                        present=set(summary["tasks"]))
    summary["groups"] = metric_blocks("groups")
    summary["tiers"] = metric_blocks("tiers")

    def em_cells(cells: np.ndarray, labels: list[str]) -> dict[str, dict[str, Any]]:
        """EM per (task, label) cell, point estimates (the breakdown tables)."""
        width = len(TASKS) * max(len(labels), 1)
        n = np.bincount(cells[cells >= 0], minlength=width)
        hits = np.bincount(cells[cells >= 0], weights=em[cells >= 0], minlength=width)
        out: dict[str, dict[str, Any]] = {}
        for t_index, t_name in enumerate(TASKS):
            row: dict[str, Any] = {}
            for l_index, l_name in enumerate(labels):
                cell = t_index * len(labels) + l_index
                if n[cell]:
                    row[l_name] = {"n": int(n[cell]), "em": float(hits[cell] / n[cell])}
            if row:
                out[t_name] = row
        return out

    summary["task_group"] = em_cells(task_group, arrays.group_labels)
    summary["task_tier"] = em_cells(task_tier, arrays.tier_labels)
    summary["breakdown"] = _breakdown(arrays, values, scores.severity)
    resolution_counts = np.bincount(task_codes * len(RESOLUTIONS) + scores.resolution,
                                    minlength=len(TASKS) * len(RESOLUTIONS)).reshape(len(TASKS), len(RESOLUTIONS))
    summary["resolution"] = {
        TASKS[t]: {RESOLUTIONS[r]: int(resolution_counts[t, r]) for r in np.argsort(RESOLUTIONS)
                   if resolution_counts[t, r]}
        for t in range(len(TASKS)) if resolution_counts[t].any()
    }
    summary["hierarchy"] = _hierarchy_summary(hierarchy_inputs, hierarchy_columns, interval, arrays.group_labels)
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


def _breakdown(arrays: _ItemArrays, values: dict[str, np.ndarray], severity: np.ndarray) -> list[dict[str, Any]]:
    """Point estimates for every (task, group, tier) cell with items (tier "none" where unset)."""
    n_groups = max(len(arrays.group_labels), 1)
    n_tiers = len(arrays.tier_labels) + 1  # last slot: no tier
    tier = np.where(arrays.tier >= 0, arrays.tier, n_tiers - 1)
    valid = arrays.group >= 0
    cells = (arrays.task * n_groups + arrays.group) * n_tiers + tier
    cells, width = cells[valid], len(TASKS) * n_groups * n_tiers
    n = np.bincount(cells, minlength=width)
    has_severity = ~np.isnan(severity[valid])
    n_severity = np.bincount(cells[has_severity], minlength=width)
    sums = {name: np.bincount(cells, weights=v[valid], minlength=width) for name, v in values.items()}
    severity_sum = np.bincount(cells[has_severity], weights=severity[valid][has_severity], minlength=width)
    tier_labels = [*arrays.tier_labels, "none"]
    records = []
    for cell in np.flatnonzero(n):
        task, rest = divmod(int(cell), n_groups * n_tiers)
        group, tier_code = divmod(rest, n_tiers)
        record: dict[str, Any] = {"task": TASKS[task], "group": arrays.group_labels[group],
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
    level_of_task = np.asarray([HIERARCHY_TASKS.index(t) if t in HIERARCHY_TASKS else -1 for t in TASKS])
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
                       columns: dict[str, int], interval: Any, group_labels: list[str]) -> dict[str, Any]:
    if inputs is None:
        return {}
    correct, present, _, image_group = inputs
    levels = list(HIERARCHY_TASKS)

    def block(scope: str, position: int, mask: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {"n_images": int(mask.sum())}
        for name in HIERARCHICAL_METRICS:
            out[name] = interval(columns[f"{scope}:{name}"] + position)
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
