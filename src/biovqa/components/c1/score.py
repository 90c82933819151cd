"""C1 scorer: per-item EM / EM_soft / parse status / severity / Wu–Palmer / Lin (paper App. C.1–C.3,
paper Tables 3, 18–24, 72–82); the aggregates are in :mod:`biovqa.components.c1.summary`.

``score(bench, predictions, options)`` takes the predictions *aligned* with ``bench.items`` (same
length and order; columns ``item_id``, ``response``, ``status`` ∈ ok | failed | missing) and
returns a :class:`~biovqa.components.registry.ScoreResult`. Options: ``backbone`` (taxonomy index
folder; default ``manifest["taxonomy_index"]``; without a usable index the scorer raises
:class:`~biovqa.errors.MissingResourceError` — EM_soft never silently degrades to EM),
``bootstrap`` (B, default 1000; 0: no intervals), ``seed`` (42), ``confidence`` (0.95),
``epithet_last_word`` (True), ``cell_intervals`` (False: bounds only for the cells the tables
print); they arrive as the registry's resolved record (or a mapping, resolved here once).
``prepare(bench, options)`` does the part that needs no replies (resources, checked items, the
image draws and the summary's item facts under way); ``biovqa score`` runs it while it aligns
the predictions and hands the result to ``score(…, prepared=…)``.

Per-item table (one row per benchmark item, in order): the score schema's core columns
(``item_id, component, task, status, response, parsed, score`` with ``score`` = EM), then
``group, source_id, em, em_soft, resolved, parse_status, resolved_node, lca_node, lca_rank,
severity, wup, lin, mcq_choice`` plus the bench's difficulty columns (``target_node,
target_rank, reference_cell, resolution_method, exposure, log10_exposure, prevalence_percentile,
prevalence_tier, ndd, ndd_rank, confusability, mcq_tier, tier, tier_method``). See
:mod:`biovqa.components.c1.parse` for the per-item rules. Repetitive string columns are Arrow
dictionary arrays (pandas reads them as categoricals).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.bench.folder import Bench
from biovqa.components.c1.kernels import DEPTH_RANK
from biovqa.components.c1.floor import _mcq_arrays, _task_index
from biovqa.components.c1.parse import (
    PARSE_STATUSES,
    ReplyScores,
    SynonymIndex,
    VernacularLookup,
    score_replies,
)
from biovqa.components.c1.side_files import SIDE_FOLDER, TREE_FILE, VERNACULAR_FILE
from biovqa.components.c1.summary import DRAWS_NAME, ItemFacts, summarize
from biovqa.components.c1.tasks import MCQ_TASK, TASK_NAMES
from biovqa.components.registry import ScoreResult
from biovqa.errors import InputFormatError, MissingResourceError
from biovqa.stats.draws import CountsDrawnAhead
from biovqa.scoring.schema import SCORE_STATUSES, core_columns

#: Per-item metrics averaged over every item of a cell.
ITEM_METRICS: tuple[str, ...] = ("em", "em_soft", "revision_lag", "unresolved", "wup", "lin")
DIFFICULTY_COLUMNS: tuple[str, ...] = (
    "target_node", "target_rank", "reference_cell", "resolution_method", "exposure", "log10_exposure",
    "prevalence_percentile", "prevalence_tier", "ndd", "ndd_rank", "confusability", "mcq_tier", "tier",
    "tier_method",
)
REQUIRED_ITEM_COLUMNS: tuple[str, ...] = ("item_id", "task", "answer", "source_id", "group", "genus",
                                          "species", "target_node")


def resolved_options(options: Any = None) -> Any:  # the record type is made from the declarations at run time
    """C1's score options as the registry's frozen record (``options.bootstrap``, …): a record the
    registry already resolved is used as it is; a mapping (or nothing) is parsed against the
    declarations on :data:`biovqa.components.c1.COMPONENT`, defaults filled in."""
    from biovqa.components.c1 import COMPONENT

    return COMPONENT.resolve_score_options(options if options is not None else {})


def _check_predictions(items: pa.Table, predictions: pa.Table) -> tuple[pa.Array, np.ndarray]:
    """The replies and a status code per item (0 ok, 1 failed, 2 missing; an ``ok`` row without a
    reply counts as missing). The predictions come aligned (one row per item, in item order,
    statuses checked): :func:`biovqa.scoring.predictions.align_predictions` checks them once, with
    the file's own row numbers, so only their shape is checked here."""
    for column in ("item_id", "response", "status"):
        if column not in predictions.column_names:
            raise InputFormatError("predictions lack a required column", field=column,
                                   hint="align them with biovqa.scoring.predictions.align_predictions")
    if predictions.num_rows != items.num_rows:
        raise InputFormatError(
            f"predictions have {predictions.num_rows} rows, the benchmark has {items.num_rows} items",
            field="item_id", hint="align them with biovqa.scoring.predictions.align_predictions")
    status = predictions.column("status").cast(pa.string())
    replies = predictions.column("response").cast(pa.string()).combine_chunks()
    code = np.full(items.num_rows, SCORE_STATUSES.index("missing"), dtype=np.int8)
    ok = pc.and_(pc.equal(status, "ok"), pc.is_valid(replies)).to_numpy(zero_copy_only=False)
    code[ok] = SCORE_STATUSES.index("ok")
    code[pc.equal(status, "failed").to_numpy(zero_copy_only=False)] = SCORE_STATUSES.index("failed")
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
    from biovqa.taxonomy.index import TaxonomyIndex
    from biovqa.taxonomy.tree import BenchmarkTree
    from biovqa.taxonomy.vernacular import VernacularIndex

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


def prepare(bench: Bench, options: Any = None) -> PreparedItems:
    """Scoring's work on the benchmark alone (C1's preparer: ``biovqa score`` runs it on a
    worker thread while it reads and aligns the replies): the tree, synonym and vernacular
    indexes, the items' scoring columns, checked, and the image resamples and the summary's item
    facts under way (:func:`prepare_items`)."""
    settings = resolved_options(options)
    tree, synonyms, vernacular, index_path = load_resources(bench, settings.backbone)
    return prepare_items(_scoring_columns(bench), tree=tree, synonyms=synonyms, vernacular=vernacular,
                         settings=settings, backbone=index_path, source=bench.items_path)


def score(bench: Bench, predictions: pa.Table, options: Any = None, *,
          prepared: PreparedItems | None = None) -> ScoreResult:
    """Score C1 predictions aligned with ``bench.items`` (see the module docstring); ``prepared``:
    what :func:`prepare` made of the benchmark, else it is prepared here."""
    return score_prepared(prepared if prepared is not None else prepare(bench, options), predictions)


#: Item columns the scorer reads (plus the difficulty columns it copies); the rest stay on disk.
SCORING_COLUMNS: tuple[str, ...] = (*REQUIRED_ITEM_COLUMNS, "tier", "options", "option_nodes")
#: Repetitive string columns read as Arrow dictionaries (no per-row strings are materialised).
DICTIONARY_COLUMNS: tuple[str, ...] = (
    "task", "answer", "genus", "species", "group", "tier", "target_rank", "reference_cell", "resolution_method",
    "prevalence_tier", "ndd_rank", "mcq_tier", "tier_method",
)


def _scoring_columns(bench: Bench) -> pa.Table:
    """The items table restricted to what scoring needs."""
    return bench.item_columns(dict.fromkeys((*SCORING_COLUMNS, *DIFFICULTY_COLUMNS)), dictionaries=DICTIONARY_COLUMNS)


@dataclass(frozen=True, eq=False)
class PreparedItems:
    """C1 scoring's work on the items alone (:func:`prepare_items`): the checked items and what
    scoring reads of them, with the image resamples (``draws``) and the summary's
    :class:`~biovqa.components.c1.summary.ItemFacts` (``facts``) under way on worker threads.
    :meth:`close` stops the draws where no score follows (a score's result closes them)."""

    items: pa.Table
    task_index: np.ndarray
    target: np.ndarray
    mcq_options: Any
    mcq_option_nodes: Any
    tree: Any
    synonyms: SynonymIndex
    vernacular: VernacularLookup
    settings: Any
    backbone: Path | None
    draws: CountsDrawnAhead
    facts: Future[ItemFacts]

    def close(self) -> None:
        self.draws.close()


def prepare_items(items: pa.Table, *, tree: Any, synonyms: SynonymIndex, vernacular: VernacularLookup,
                  settings: Any = None, backbone: Path | None = None, source: Path | None = None) -> PreparedItems:
    """Check the items and start what depends on them alone: the image resamples (their count is
    the items' distinct ``source_id``) and the summary's item facts, each on a worker thread."""
    settings = settings if settings is not None else resolved_options()
    task_index = _check_items(items, source)
    target = items.column("target_node").to_numpy(zero_copy_only=False).astype(np.int64)
    if len(target) and (target.min() < 0 or target.max() >= len(tree.names)):
        raise InputFormatError("target_node lies outside the benchmark tree", file=source, field="target_node",
                               hint="the tree and the items come from different builds")
    is_mcq = task_index == TASK_NAMES.index(MCQ_TASK)
    mcq_options, mcq_option_nodes = _mcq_arrays(items, is_mcq, source)
    n_images = int(pc.count_distinct(items.column("source_id")).as_py()) if settings.bootstrap > 0 else 0
    draws = CountsDrawnAhead({DRAWS_NAME: n_images}, B=settings.bootstrap, seed=settings.seed)
    pool = ThreadPoolExecutor(1, thread_name_prefix="c1-item-facts")
    facts = pool.submit(ItemFacts.of, items)
    pool.shutdown(wait=False)  # the task runs on; the aggregation reads its result
    return PreparedItems(items=items, task_index=task_index, target=target, mcq_options=mcq_options,
                         mcq_option_nodes=mcq_option_nodes, tree=tree, synonyms=synonyms, vernacular=vernacular,
                         settings=settings, backbone=backbone, draws=draws, facts=facts)


def score_items(items: pa.Table, predictions: pa.Table, *, tree: Any, synonyms: SynonymIndex,
                vernacular: VernacularLookup, settings: Any = None,
                backbone: Path | None = None, source: Path | None = None) -> ScoreResult:
    """Per-item scores and the summary from already-loaded resources (pure); the summary is
    aggregated when first read (:class:`~biovqa.components.registry.ScoreResult`), the image
    resamples drawn meanwhile on a worker thread."""
    return score_prepared(prepare_items(items, tree=tree, synonyms=synonyms, vernacular=vernacular,
                                        settings=settings, backbone=backbone, source=source), predictions)


def score_prepared(prepared: PreparedItems, predictions: pa.Table) -> ScoreResult:
    """Score the replies against prepared items: the image resamples go on being drawn while the
    replies are scored (same stream), and the summary is aggregated when first read."""
    items, settings, draws = prepared.items, prepared.settings, prepared.draws
    with draws.closed_on_error():
        replies, status = _check_predictions(items, predictions)
        result = score_replies(
            task_index=prepared.task_index, task_names=TASK_NAMES, answers=items.column("answer"),
            genera=items.column("genus"), binomials=items.column("species"), target_nodes=prepared.target,
            replies=replies, answered=status == SCORE_STATUSES.index("ok"),
            failed=status == SCORE_STATUSES.index("failed"), mcq_options=prepared.mcq_options,
            mcq_option_nodes=prepared.mcq_option_nodes, tree=prepared.tree, synonyms=prepared.synonyms,
            vernacular=prepared.vernacular, epithet_last_word=settings.epithet_last_word)
        scored = _item_table(items, predictions, result)

    def aggregate() -> dict[str, Any]:
        summary = summarize(scored, items, settings, draws=draws, facts=prepared.facts.result())
        summary["taxonomy_index"] = None if prepared.backbone is None else str(prepared.backbone)
        return summary

    return ScoreResult(items=scored, aggregate=aggregate, release=draws.close)


def _label_array(codes: np.ndarray, labels: Sequence[str]) -> pa.Array:
    """A dictionary array of ``labels`` from integer codes (null where the code is negative)."""
    indices = pa.array(np.asarray(codes, dtype=np.int32), pa.int32(), mask=np.asarray(codes) < 0)
    return pa.DictionaryArray.from_arrays(indices, pa.array(list(labels), pa.string()))


def _item_table(items: pa.Table, predictions: pa.Table, result: ReplyScores) -> pa.Table:
    resolved = result.resolved_node >= 0

    def nullable(values: np.ndarray, valid: np.ndarray, kind: pa.DataType) -> pa.Array:
        return pa.array(values, type=kind, mask=~valid)

    out: dict[str, pa.Array | pa.ChunkedArray] = {
        **core_columns(items, predictions, component="c1", parsed=result.parsed, score=result.em),
        "group": _dictionary(items.column("group")),
        "source_id": _plain(items.column("source_id")),
        "em": pa.array(result.em, pa.int8()),
        "em_soft": pa.array(result.em_soft, pa.int8()),
        "resolved": pa.array(resolved, pa.bool_()),
        "parse_status": _label_array(result.parse_status, PARSE_STATUSES),
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

