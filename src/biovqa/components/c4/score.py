"""C4 per-item scoring: the yes/no parser and the kernel of every pair (paper appendix C; parser of
appendix H.1). Aggregation — signal detection per dataset × condition, pooled, the ordering check,
the intervals — is :mod:`.summary`'s.

``score(bench, predictions, options) -> ScoreResult`` (found by the registry's convention). Options:
``bootstrap`` (default 2000, appendix L.3), ``seed``, ``confidence``.

Per-item table: the score schema's core columns (``parsed`` = ``yes``/``no`` or null, ``score`` =
1.0 when the reply is correct), then dataset, condition, same, gold, parse_status (the parser rule
that resolved the reply: strict, loose, prefix, negated; or refusal, unparsed; failed / missing
when there was no reply), said_yes, correct, similarity (the pair's stored DINOv2 similarity) and
reply_similarity (the similarity a specialist's reply carries, null for any other reply).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.bench.folder import Bench
from biovqa.components.c4.parse import reply_similarity
from biovqa.components.c4.summary import summarize
from biovqa.components.c4.tasks import task
from biovqa.components.registry import ScoreResult
from biovqa.scoring.schema import core_columns

__all__ = ["parse_items", "score", "score_items"]


def parse_items(responses: list[str | None], statuses: list[str], conditions: list[str]
                ) -> tuple[list[str | None], list[str]]:
    """(parsed answer, parse status) per item, each by its condition's parser; a reply that did
    not come is its request's status (``failed`` / ``missing``). Each distinct reply is parsed once."""
    specs = {c: task(c) for c in set(conditions)}
    memo: dict[tuple[Any, str | None], tuple[str | None, str]] = {}
    parsed: list[str | None] = []
    parse_status: list[str] = []
    for k, (response, status) in enumerate(zip(responses, statuses)):
        if status != "ok":
            parsed.append(None)
            parse_status.append(status if status == "failed" else "missing")
            continue
        parser = specs[conditions[k]].parser
        key = (parser, response)
        if key not in memo:
            memo[key] = parser(response)
        answer, outcome = memo[key]
        parsed.append(answer)
        parse_status.append(outcome)
    return parsed, parse_status


def score_items(items: pa.Table, predictions: pa.Table) -> pa.Table:
    """The per-item table (see the module docstring): pure in its inputs."""
    responses = predictions.column("response").to_pylist()
    statuses = predictions.column("status").to_pylist()
    conditions = items.column("condition").to_pylist()
    parsed, parse_status = parse_items(responses, statuses, conditions)
    same = items.column("same").to_pylist()
    specs = {c: task(c) for c in set(conditions)}
    correct = [specs[c].kernel(p, bool(s)) for p, s, c in zip(parsed, same, conditions)]
    similarities = [reply_similarity(r) if s == "ok" else None for r, s in zip(responses, statuses)]
    return pa.table({
        **core_columns(items, predictions, component="c4", parsed=pa.array(parsed, pa.string()),
                       score=np.asarray(correct, dtype=float)),
        "dataset": items.column("dataset"),
        "condition": items.column("condition"),
        "same": items.column("same"),
        "gold": pa.array(["yes" if s else "no" for s in same], pa.string()),
        "parse_status": pa.array(parse_status, pa.string()),
        "said_yes": pa.array([p == "yes" for p in parsed], pa.bool_()),
        "correct": pa.array(correct, pa.bool_()),
        "similarity": items.column("similarity"),
        "reply_similarity": pa.array(similarities, pa.float64()),
    })


def score(bench: Bench, predictions: pa.Table, options: Mapping[str, Any]) -> ScoreResult:
    """Score C4 predictions (aligned with ``bench.items``): per-item table + summary. ``options``
    are resolved once, by the registry's scorer (``get_component("c4").load("scorer")``)."""
    table = score_items(bench.items, predictions)
    return ScoreResult(items=table, summary=summarize(table, bench.items, options))
