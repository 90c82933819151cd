"""C2 scoring: the five-step parser, the six similarity kernels, the naming kernels, cags and
its companions (paper App. C.4–C.5; paper App. K.5).

``score(bench, predictions, options) -> ScoreResult`` is registered as ``biovqa.components.c2.score:score``.

Options: declared on :data:`biovqa.components.c2.COMPONENT` (``bootstrap``, ``seed``, ``confidence``,
``prefer_text``, ``tau``, ``alpha``, ``colour_kernel``, ``visibility_kernel``, ``sweep_size``).

Per-item table: the score schema's core columns (``parsed`` = the recovered answer text,
``score`` = cags), then family, category, gold, gold_letter, pred_letter, parse_status (parsed /
mismatch / fuzzy / failed / missing), em, s, b, cags, severity.

Summary sections (every mean item-weighted; every estimate ``{value, lo, hi, n}`` with a 95 %
percentile bootstrap over items)::

    {
      "table3":     {sal, mrp, loc, nam: cags estimate of the category},
      "pooled":     {n, cags, em, gs_raw, severity: estimate, n_wrong},
      "categories": {morphological|relative_salience|anatomical|naming: <same as pooled>},
      "families":   {<family>: <same as pooled> + category, n_replies, n_missing,
                     n_failed_requests, n_parse_failed, n_fuzzy, n_mismatch, parse_rate,
                     mismatch_rate, choose_a_rate},
      "format":     {parse_rate, mismatch_rate, choose_a_rate, em_mcq, em_open, n_mcq, n_open,
                     n_replies, n_missing, n_failed_requests, n_parse_failed, n_fuzzy, n_mismatch},
      "laterality": {n_lateral, n_mirror_offered, mirror_confusion_rate, mirror_baseline,
                     n_part_named, laterality_given_part, laterality_chance,
                     laterality_p_below_chance, laterality_below_chance},
      "bootstrap":  {B, seed, confidence, cluster: "item"}
    }

Rates are fractions in [0, 1] (reports print percentages); families without items are absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from biovqa.components.registry import ScoreResult
from biovqa.bench.folder import Bench
from biovqa.components.c2.cags import PreparedItems, check_prediction_columns, prepare_items, score_prepared
from biovqa.components.c2.context import C2Context
from biovqa.components.c2.kernels import PART_LAYOUT_FILE, KernelConfig, PartLayout
from biovqa.components.c2.summary import summarize

__all__ = ["C2Context", "KernelConfig", "kernel_config", "load_context", "score"]


def kernel_config(options: Mapping[str, Any] | None = None) -> KernelConfig:
    """The kernel configuration named by score options (defaults = the paper's)."""
    resolved = resolve_options(options)
    return KernelConfig(**{name: resolved[name] for name in KernelConfig.__dataclass_fields__})


def resolve_options(options: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """Every C2 score option, checked against the component's declarations (a record the
    registry already resolved passes through as it is)."""
    from biovqa.components.c2 import COMPONENT

    return COMPONENT.resolve_score_options(options if options is not None else {})


#: The item columns C2 scoring reads (where the items have them): a wide benchmark's other
#: columns (instruction, image, image_sha256, source_id, …) are not decoded.
SCORE_COLUMNS: tuple[str, ...] = (
    "item_id", "task", "family", "question", "options", "answer", "answer_letter", "part", "property",
    "attribute_group", "gold_set", "class_id", "class_name", "genus", "kind_category")


def load_context(bench: Bench, items: pa.Table | None = None) -> C2Context:
    """Scoring context of a C2 benchmark folder: part layout (if written) + name index + gold
    pools, from ``items`` (the bench's :data:`SCORE_COLUMNS` when not given)."""
    layout_path = bench.root / PART_LAYOUT_FILE
    layout = PartLayout.from_file(layout_path) if layout_path.exists() else None
    return C2Context.from_items(bench.item_columns(SCORE_COLUMNS) if items is None else items, layout)


def prepare(bench: Bench, options: Mapping[str, Any] | None = None) -> PreparedItems:
    """Scoring's work on the benchmark alone (C2's preparer: ``biovqa score`` runs it on a worker
    thread while it reads and aligns the replies): the items' scoring columns, the scoring
    context, and :func:`~biovqa.components.c2.cags.prepare_items` on them."""
    options = resolve_options(options)
    # the questions (the largest column) serve the routing check alone, which reads them on a
    # worker thread of its own; the options (some 4 per item over a few hundred texts) come as
    # Parquet's dictionary, never decoded into millions of strings
    items = bench.item_columns([column for column in SCORE_COLUMNS if column != "question"],
                               dictionaries=["options.list.element"])
    return prepare_items(items, load_context(bench, items), kernel_config(options),
                         questions=lambda: bench.item_columns(["question"]).column("question"))


def score(bench: Bench, predictions: pa.Table, options: Mapping[str, Any] | None = None, *,
          prepared: PreparedItems | None = None) -> ScoreResult:
    """Score C2 predictions (aligned with ``bench.items``): per-item table + summary.
    ``prepared``: what :func:`prepare` made of the benchmark, else it is prepared here."""
    options = resolve_options(options)
    check_prediction_columns(predictions)  # before the items, as the unprepared path always did
    prepared = prepared if prepared is not None else prepare(bench, options)
    table = score_prepared(prepared, predictions)
    return ScoreResult(items=table, aggregate=lambda: summarize(table, prepared.items, options))
