"""Per-item scoring of the hierarchical VQA (HCA paper, Tan, Qing, Gong 2025: §2.2, §3.3.1 text control,
App. C.1.2–C.1.4 prompt variants); aggregation is :mod:`.summary`'s.

``score(bench, predictions, options) -> ScoreResult`` (found by the registry's convention).

Per-item table: the core columns (``parsed`` = the letter recovered by the strict parser,
``score`` = correct 0/1; unparseable or missing = wrong, kept in place on the path), then
level, level_name, gold, correct, parse_status (``parsed``, ``unparsed``: a reply the parser could
not read; ``failed`` / ``missing``: no reply), n_paths (images the question stands for); :func:`score`
adds the bench manifest's facts the summary reads: dataset (the bench's dataset name) and
unscored_level (the item's level is one the manifest's ``unscored_levels`` leaves out of the paths).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from biovqa.bench.folder import Bench
from biovqa.components.hca.prompts import LETTERS
from biovqa.components.hca.summary import optional_column, summarize
from biovqa.components.hca.tasks import task
from biovqa.components.registry import ScoreResult
from biovqa.scoring.schema import core_columns


def score_items(items: pa.Table, predictions: pa.Table) -> pa.Table:
    """Per-item table. Plain and taxonomy-in-context items: the strict parser; CoT items: the final
    answer of the reasoning (:func:`parse_cot_choice`); binary statements (visual or text): Yes/No, and
    every statement of a question gets that question's outcome (exactly one "Yes", on the true
    option)."""
    options = items.column("options").to_pylist()
    statuses = predictions.column("status").to_pylist()
    variants = [v or "plain" for v in optional_column(items, "variant")]
    statements = optional_column(items, "statement")
    answers = items.column("answer").to_pylist()
    tasks = items.column("task").to_pylist()
    parsed: list[str | None] = []
    for status, reply, opts, variant, statement, name in zip(statuses, predictions.column("response").to_pylist(),
                                                              options, variants, statements, tasks):
        spec = task(name)
        if status != "ok":
            parsed.append(None)
        elif statement is not None:
            parsed.append(spec.statement_parser(reply))
        elif "cot" in variant.split("+"):
            parsed.append(spec.cot_parser(reply, opts))
        else:
            parsed.append(spec.parser(reply, opts))
    correct = [p is not None and p == g for p, g in zip(parsed, answers)]
    if any(s is not None for s in statements):
        groups: dict[tuple[Any, ...], dict[str, str | None]] = {}
        # one group = the statements of one 4-way question: visual (image, level); text (entity,
        # level, options) — a deduplicated text question's statements share all three
        keys = list(zip(optional_column(items, "image_key"), items.column("level").to_pylist(),
                        items.column("source_id").to_pylist(), map(tuple, options)))
        for key, statement, answer in zip(keys, statements, parsed):
            if statement is not None:
                groups.setdefault(key, {})[statement] = answer
        correct = [task(name).statement_kernel([groups[key].get(x) for x in LETTERS[: len(opts)]],
                                               LETTERS.index(gold)) if statement is not None else ok
                   for key, statement, opts, gold, ok, name in zip(keys, statements, options, answers, correct, tasks)]
    gold = [o[LETTERS.index(a)] for o, a in zip(options, items.column("answer").to_pylist())]
    columns = core_columns(items, predictions, component="hca", parsed=pa.array(parsed, pa.string()),
                           score=[float(c) for c in correct])
    columns.update({
        "level": items.column("level"),
        "level_name": items.column("level_name"),
        "gold": pa.array(gold, pa.string()),
        "correct": pa.array(correct, pa.bool_()),
        "parse_status": pa.array([("parsed" if p is not None else "unparsed") if s == "ok" else
                                  ("failed" if s == "failed" else "missing") for p, s in zip(parsed, statuses)],
                                 pa.string()),
        "n_paths": pa.array([len(p) for p in items.column("paths").to_pylist()], pa.int32()),
    })
    return pa.table(columns)


def score(bench: Bench, predictions: pa.Table, options: Mapping[str, Any]) -> ScoreResult:
    """Score hierarchical VQA predictions (aligned with ``bench.items``). ``options`` are resolved
    once, by the registry's scorer (``get_component("hca").load("scorer")``)."""
    table = score_items(bench.items, predictions)
    unscored = {int(level) for level in bench.manifest.get("unscored_levels") or []}
    table = table.append_column("dataset", pa.array([bench.manifest.get("dataset")] * table.num_rows, pa.string()))
    table = table.append_column("unscored_level", pa.array([level in unscored for level in
                                                            table.column("level").to_pylist()], pa.bool_()))
    return ScoreResult(items=table, summary=summarize(table, bench.items, options))


__all__ = ["score", "score_items"]
