"""BAGEL per-item scoring (BAGEL paper, Shen et al. 2026: the output format it asks for; the parser
is biovqa's). Aggregation is :mod:`.summary`'s.

``score(bench, predictions, options) -> ScoreResult`` (found by the registry's convention).

Per-item table: the core columns (``parsed`` = the letter recovered, ``score`` = correct 0/1;
an unparseable or missing reply is wrong), then domain, dimension, tier, gold, chosen (the
option text of the parsed letter), parse_status (``parsed``, ``unparsed``: a reply the parser
could not read; ``failed`` / ``missing``: no reply), correct.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from biovqa.bench.folder import Bench
from biovqa.bench.layout import REBUILD_HINT
from biovqa.components.bagel.items import LETTERS
from biovqa.components.bagel.summary import summarize
from biovqa.components.bagel.tasks import TASKS
from biovqa.components.registry import ScoreResult
from biovqa.errors import BiovqaError
from biovqa.scoring.schema import core_columns


def score_items(items: pa.Table, predictions: pa.Table) -> pa.Table:
    """The per-item table (see the module docstring), each item by its domain's parser and kernel."""
    specs = {spec.name: spec for spec in TASKS}
    options = items.column("options").to_pylist()
    gold = items.column("answer").to_pylist()
    domains = items.column("domain").to_pylist()
    statuses = predictions.column("status").to_pylist()
    responses = predictions.column("response").to_pylist()
    parsed: list[str | None] = []
    correct: list[bool] = []
    for status, response, opts, domain, answer in zip(statuses, responses, options, domains, gold):
        spec = specs.get(domain, TASKS[0])
        letter = spec.parser(response, opts) if status == "ok" else None
        parsed.append(letter)
        correct.append(spec.kernel(letter, answer))
    chosen = [None if p is None else opts[LETTERS.index(p)] for p, opts in zip(parsed, options)]
    parse_status = [("parsed" if p is not None else "unparsed") if s == "ok" else
                    ("failed" if s == "failed" else "missing") for p, s in zip(parsed, statuses)]
    columns = core_columns(items, predictions, component="bagel", parsed=pa.array(parsed, pa.string()),
                           score=[float(c) for c in correct])
    columns.update({
        "domain": items.column("domain"),
        "dimension": items.column("dimension"),
        "tier": items.column("tier"),
        "gold": items.column("answer"),
        "chosen": pa.array(chosen, pa.string()),
        "parse_status": pa.array(parse_status, pa.string()),
        "correct": pa.array(correct, pa.bool_()),
    })
    return pa.table(columns)


def score(bench: Bench, predictions: pa.Table, options: Mapping[str, Any]) -> ScoreResult:
    """Score BAGEL predictions (aligned with ``bench.items``): per-item table + summary. ``options``
    are resolved once, by the registry's scorer (``get_component("bagel").load("scorer")``)."""
    if "tier" not in bench.items.column_names:
        raise BiovqaError("this BAGEL benchmark has no 'tier' column: it was built before the difficulty "
                          "column 'level' was renamed 'tier'", file=bench.items_path, field="tier",
                          hint=REBUILD_HINT)
    table = score_items(bench.items, predictions)
    return ScoreResult(items=table, summary=summarize(table, bench.items, options))


__all__ = ["score", "score_items"]
