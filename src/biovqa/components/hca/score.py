"""Scoring of the hierarchical VQA (HCA paper, Tan, Qing, Gong 2025: §2.2 and App. B.2 metrics, §3.3.1 text control).

``score(bench, predictions, options) -> ScoreResult`` is registered as
``biovqa.components.hca.score:score``.

Per-item table: the core columns (``parsed`` = the letter recovered by the strict parser,
``score`` = correct 0/1; unparseable or missing = wrong, kept in place on the path), then
level, level_name, gold, correct, parse_ok, n_paths (images the question stands for).

Each question's correctness is placed on the path of every image it stands for; a text bench's
leaf level is right by construction (leaf auto-correct). Summary (every metric a fraction, an
estimate ``{value, lo, hi, n}`` with a percentile bootstrap over images)::

    {
      "dataset": the bench's dataset name (the report pairs visual and text scores by it),
      "table3":  {hca, leaf, por, spor, tor},
      "kind":    "visual" | "text",
      "metrics": {hca, acc_leaf, por, spor, spor_prefix, tor},
      "levels":  {"<level>[ <name>]": per-level accuracy (asked levels, scored or not)},
      "depth":   {"<k>": HCA at depth k (every path truncated to levels ≤ k, App. C.4 of the HCA
                  paper; k = the deepest level gives HCA)},
      "unscored_levels": levels asked but left out of every path metric (the kingdom of the
                  authors' iNat items; -O score_unscored_levels=true scores them),
      "scaled_hca": HCA / Acc_leaf (visual),
      "without_genus": {<metrics>, "n_levels_removed"}   (text, when the entity gives the genus away),
      "format":  {parse_failure_rate, letter_histogram, n_unparsed, n_missing, n_failed_requests},
      "counts":  {images, questions[, statements]},
      "bootstrap": {resamples, seed, level, unit: "images"}
    }
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.bench.folder import Bench
from biovqa.components.hca.prompts import LETTERS, binary_level_correct, parse_choice, parse_cot_choice, parse_yes_no
from biovqa.components.registry import ScoreResult
from biovqa.scoring.schema import core_columns, estimate
from biovqa.stats.bootstrap import bootstrap_means
from biovqa.stats.hierarchy import HIERARCHICAL_METRICS, hca, hierarchical_per_image, scaled_hca

TABLE3: dict[str, str] = {"hca": "hca", "leaf": "acc_leaf", "por": "por", "spor": "spor", "tor": "tor"}


def _column(items: pa.Table, name: str) -> list[Any]:
    """A column's values, or nulls for benches built before the column existed."""
    return items.column(name).to_pylist() if name in items.column_names else [None] * items.num_rows


def score_items(items: pa.Table, predictions: pa.Table) -> pa.Table:
    """Per-item table. Plain and taxonomy-in-context items: the strict parser; CoT items: the final
    answer of the reasoning (:func:`parse_cot_choice`); binary statements (visual or text): Yes/No, and
    every statement of a question gets that question's outcome (exactly one "Yes", on the true
    option)."""
    options = items.column("options").to_pylist()
    statuses = predictions.column("status").to_pylist()
    variants = [v or "plain" for v in _column(items, "variant")]
    statements = _column(items, "statement")
    answers = items.column("answer").to_pylist()
    parsed: list[str | None] = []
    for status, reply, opts, variant, statement in zip(statuses, predictions.column("response").to_pylist(),
                                                        options, variants, statements):
        if status != "ok":
            parsed.append(None)
        elif statement is not None:
            parsed.append(parse_yes_no(reply))
        elif "cot" in variant.split("+"):
            parsed.append(parse_cot_choice(reply, opts))
        else:
            parsed.append(parse_choice(reply, opts))
    correct = [p is not None and p == g for p, g in zip(parsed, answers)]
    if any(s is not None for s in statements):
        groups: dict[tuple[Any, ...], dict[str, str | None]] = {}
        # one group = the statements of one 4-way question: visual (image, level); text (entity,
        # level, options) — a deduplicated text question's statements share all three
        keys = list(zip(_column(items, "image_key"), items.column("level").to_pylist(),
                        items.column("source_id").to_pylist(), map(tuple, options)))
        for key, statement, answer in zip(keys, statements, parsed):
            if statement is not None:
                groups.setdefault(key, {})[statement] = answer
        correct = [binary_level_correct([groups[key].get(x) for x in LETTERS[: len(opts)]],
                                        LETTERS.index(gold)) if statement is not None else ok
                   for key, statement, opts, gold, ok in zip(keys, statements, options, answers, correct)]
    gold = [o[LETTERS.index(a)] for o, a in zip(options, items.column("answer").to_pylist())]
    columns = core_columns(items, predictions, component="hca", parsed=pa.array(parsed, pa.string()),
                           score=[float(c) for c in correct])
    columns.update({
        "level": items.column("level"),
        "level_name": items.column("level_name"),
        "gold": pa.array(gold, pa.string()),
        "correct": pa.array(correct, pa.bool_()),
        "parse_ok": pa.array([p is not None for p in parsed], pa.bool_()),
        "n_paths": pa.array([len(p) for p in items.column("paths").to_pylist()], pa.int32()),
    })
    return pa.table(columns)


def path_matrix(items: pa.Table, correct: list[bool]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """``(images, correct, present, genus_leak)``, each matrix images × levels (level 1 first).
    Text benches: the leaf level of every path is present and right."""
    paths = items.column("paths").to_pylist()
    levels = items.column("level").to_pylist()
    depths = items.column("depth").to_pylist()
    leaks = items.column("genus_leak").to_pylist()
    text = items.column("task").to_pylist()
    images = sorted({image for group in paths for image in group})
    row_of = {image: i for i, image in enumerate(images)}
    width = max(depths) if depths else 1
    c = np.zeros((len(images), width), dtype=bool)
    present = np.zeros_like(c)
    leak = np.zeros_like(c)
    for group, level, depth, ok, is_leak, task in zip(paths, levels, depths, correct, leaks, text):
        rows = [row_of[image] for image in group]
        c[rows, level - 1] = ok
        present[rows, level - 1] = True
        leak[rows, level - 1] = bool(is_leak)
        if task == "text":
            c[rows, depth - 1] = True
            present[rows, depth - 1] = True
    return images, c, present, leak


def _estimates(matrix: np.ndarray, names: list[str], resamples: int, seed: int, level: float) -> dict[str, Any]:
    n = len(matrix)
    counts = (~np.isnan(matrix)).sum(axis=0)
    if resamples > 0 and n:
        result = bootstrap_means(matrix, np.arange(n), B=resamples, seed=seed, level=level)
        return {name: estimate(v, lo, hi, n=int(k))
                for name, v, lo, hi, k in zip(names, result.estimate, result.lo, result.hi, counts)}
    with np.errstate(invalid="ignore"):
        values = np.nanmean(matrix, axis=0) if n else np.full(len(names), np.nan)
    return {name: estimate(v, n=int(k)) for name, v, k in zip(names, values, counts)}


def _counts(items: pa.Table, n_images: int) -> dict[str, int]:
    """Images and questions; binary benches also count their statements (one per option, so a
    question is its statement "A")."""
    statements = _column(items, "statement")
    if all(s is None for s in statements):
        return {"images": n_images, "questions": items.num_rows}
    return {"images": n_images, "questions": statements.count("A"), "statements": items.num_rows}


def _scored_mask(present: np.ndarray, unscored_levels: list[int]) -> np.ndarray:
    """``present`` without the unscored levels (an image asked only those keeps them: it must
    have a path)."""
    scored = present.copy()
    for lv in unscored_levels:
        if 1 <= lv <= scored.shape[1]:
            scored[:, lv - 1] = False
    empty = ~scored.any(axis=1)
    scored[empty] = present[empty]
    return scored


def _depth_columns(c: np.ndarray, scored: np.ndarray) -> tuple[list[str], list[np.ndarray]]:
    """HCA at depth k per image (NaN for an image with no scored level ≤ k), for every k at which
    some image has one."""
    keys, columns = [], []
    for k in range(1, c.shape[1] + 1):
        has = scored[:, :k].any(axis=1)
        if not has.any():
            continue
        values = np.full(len(c), np.nan)
        values[has] = hca(c[has, :k], scored[has, :k])
        keys.append(f"depth {k}")
        columns.append(values)
    return keys, columns


def summarize(items: pa.Table, table: pa.Table, *, resamples: int, seed: int, level: float,
              unscored_levels: list[int] | None = None, score_unscored: bool = False,
              dataset: str | None = None) -> dict[str, Any]:
    correct = table.column("correct").to_pylist()
    images, c, present, leak = path_matrix(items, correct)
    unscored = [] if score_unscored else sorted(unscored_levels or [])
    asked = present
    present = _scored_mask(asked, unscored)
    per_image = hierarchical_per_image(c, present)
    level_names: dict[int, str | None] = {}
    for lv, name in zip(items.column("level").to_pylist(), items.column("level_name").to_pylist()):
        level_names.setdefault(lv, name)
    level_keys = [f"{j}" + (f" {level_names[j]}" if level_names.get(j) else "") for j in range(1, c.shape[1] + 1)
                  if asked[:, j - 1].any()]
    level_columns = [np.where(asked[:, j - 1], c[:, j - 1], np.nan) for j in range(1, c.shape[1] + 1)
                     if asked[:, j - 1].any()]
    depth_keys, depth_columns = _depth_columns(c, present)
    matrix = np.column_stack([per_image[m] for m in HIERARCHICAL_METRICS] + level_columns + depth_columns)
    estimates = _estimates(matrix, [*HIERARCHICAL_METRICS, *level_keys, *depth_keys], resamples, seed, level)
    metrics = {m: estimates[m] for m in HIERARCHICAL_METRICS}
    statuses = table.column("status").to_pylist()
    parse_ok = table.column("parse_ok").to_pylist()
    replied = [s == "ok" for s in statuses]
    unparsed = [r and not p for r, p in zip(replied, parse_ok)]
    parsed_letters = [p for p in table.column("parsed").to_pylist() if p is not None]
    kind = "text" if set(items.column("task").to_pylist()) == {"text"} else "visual"
    summary: dict[str, Any] = {
        "dataset": dataset,
        "table3": {column: metrics[metric] for column, metric in TABLE3.items()},
        "kind": kind,
        "metrics": metrics,
        "levels": {key: estimates[key] for key in level_keys},
        "depth": {key.split()[1]: estimates[key] for key in depth_keys},
        "unscored_levels": unscored,
        "format": {
            "parse_failure_rate": estimate(sum(unparsed) / max(sum(replied), 1) if any(replied) else float("nan"),
                                           n=sum(replied)),
            "letter_histogram": {x: (parsed_letters.count(x) / len(parsed_letters) if parsed_letters else None)
                                 for x in LETTERS},
            **({"yes_no_histogram": {x: parsed_letters.count(x) / len(parsed_letters) for x in ("Yes", "No")}}
               if parsed_letters and set(parsed_letters) <= {"Yes", "No"} else {}),
            "n_unparsed": int(sum(unparsed)), "n_missing": statuses.count("missing"),
            "n_failed_requests": statuses.count("failed"),
        },
        "counts": _counts(items, len(images)),
        "variant": sorted({v or "plain" for v in _column(items, "variant")}),
        "bootstrap": {"resamples": resamples, "seed": seed, "level": level, "unit": "images"},
    }
    if kind == "visual":
        summary["scaled_hca"] = scaled_hca(metrics["hca"]["value"] or 0.0, metrics["acc_leaf"]["value"] or 0.0)
    if kind == "text":
        summary["leaf_autocorrected"] = True
        if leak.any():
            kept = present & ~leak
            without = hierarchical_per_image(c, kept)
            plain = _estimates(np.column_stack([without[m] for m in HIERARCHICAL_METRICS]),
                               list(HIERARCHICAL_METRICS), resamples, seed, level)
            summary["without_genus"] = {**plain, "n_levels_removed": int(leak.sum())}
    return summary


def score(bench: Bench, predictions: pa.Table, options: Mapping[str, Any] | None = None) -> ScoreResult:
    """Score hierarchical VQA predictions (aligned with ``bench.items``)."""
    from biovqa.components.hca import COMPONENT

    options = COMPONENT.resolve_score_options(dict(options or {}))
    table = score_items(bench.items, predictions)
    summary = summarize(bench.items, table, resamples=options["bootstrap"], seed=options["seed"],
                        level=options["level"], unscored_levels=list(bench.manifest.get("unscored_levels") or []),
                        score_unscored=options["score_unscored_levels"], dataset=bench.manifest.get("dataset"))
    return ScoreResult(items=table, summary=summary)
