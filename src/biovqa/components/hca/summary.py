"""Aggregation of the hierarchical VQA (HCA paper, Tan, Qing, Gong 2025: §2.2 and App. B.2 metrics, §3.3.1 text
control): ``summarize(scored, items, options) -> dict`` from the per-item table of :mod:`.score`.

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
      "bootstrap": {B, seed, confidence, cluster: "images"}
    }
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.components.hca.prompts import LETTERS
from biovqa.components.hca.tasks import TABLE3, TASKS, task
from biovqa.scoring.schema import estimate
from biovqa.stats.bootstrap import bootstrap_means
from biovqa.stats.hierarchy import HIERARCHICAL_METRICS, hca, hierarchical_per_image, scaled_hca


def optional_column(items: pa.Table, name: str) -> list[Any]:
    """A column's values, or nulls for benches built before the column existed."""
    return items.column(name).to_pylist() if name in items.column_names else [None] * items.num_rows


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
    for group, level, depth, ok, is_leak, name in zip(paths, levels, depths, correct, leaks, text):
        rows = [row_of[image] for image in group]
        c[rows, level - 1] = ok
        present[rows, level - 1] = True
        leak[rows, level - 1] = bool(is_leak)
        if task(name).leaf_autocorrect:
            c[rows, depth - 1] = True
            present[rows, depth - 1] = True
    return images, c, present, leak


def _estimates(matrix: np.ndarray, names: list[str], B: int, seed: int, confidence: float) -> dict[str, Any]:
    n = len(matrix)
    counts = (~np.isnan(matrix)).sum(axis=0)
    if B > 0 and n:
        result = bootstrap_means(matrix, np.arange(n), B=B, seed=seed, confidence=confidence)
        return {name: estimate(v, lo, hi, n=int(k))
                for name, v, lo, hi, k in zip(names, result.estimate, result.lo, result.hi, counts)}
    with np.errstate(invalid="ignore"):
        values = np.nanmean(matrix, axis=0) if n else np.full(len(names), np.nan)
    return {name: estimate(v, n=int(k)) for name, v, k in zip(names, values, counts)}


def _counts(items: pa.Table, n_images: int) -> dict[str, int]:
    """Images and questions; binary benches also count their statements (one per option, so a
    question is its statement "A")."""
    statements = optional_column(items, "statement")
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


def summarize(scored: pa.Table, items: pa.Table, options: Mapping[str, Any]) -> dict[str, Any]:
    """The summary (see the module docstring) from the per-item table of :func:`.score.score`:
    its ``dataset`` column names the dataset the report pairs scores by, its ``unscored_level``
    column marks the items of a level asked but left out of the paths unless
    ``options["score_unscored_levels"]`` (both the bench manifest's; a table without them, such as
    :func:`.score.score_items`' own, has no dataset and scores every level)."""
    B, seed, confidence = int(options["bootstrap"]), int(options["seed"]), float(options["confidence"])
    score_unscored = bool(options.get("score_unscored_levels", False))
    table = scored
    correct = table.column("correct").to_pylist()
    images, c, present, leak = path_matrix(items, correct)
    unscored = [] if score_unscored else sorted({level for level, flag in zip(
        table.column("level").to_pylist(), optional_column(table, "unscored_level")) if flag})
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
    estimates = _estimates(matrix, [*HIERARCHICAL_METRICS, *level_keys, *depth_keys], B, seed, confidence)
    metrics = {m: estimates[m] for m in HIERARCHICAL_METRICS}
    statuses = table.column("status").to_pylist()
    parse_status = table.column("parse_status").to_pylist()
    replied = [s == "ok" for s in statuses]
    unparsed = [p == "unparsed" for p in parse_status]
    parsed_letters = [p for p in table.column("parsed").to_pylist() if p is not None]
    kind = "text" if set(items.column("task").to_pylist()) == {"text"} else "visual"
    summary: dict[str, Any] = {
        "dataset": next((d for d in optional_column(table, "dataset") if d is not None), None),
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
        "variant": sorted({v or "plain" for v in optional_column(items, "variant")}),
        "bootstrap": {"B": B, "seed": seed, "confidence": confidence, "cluster": TASKS[0].cluster},
    }
    if kind == "visual":
        summary["scaled_hca"] = scaled_hca(metrics["hca"]["value"] or 0.0, metrics["acc_leaf"]["value"] or 0.0)
    if kind == "text":
        summary["leaf_autocorrected"] = True
        if leak.any():
            kept = present & ~leak
            without = hierarchical_per_image(c, kept)
            plain = _estimates(np.column_stack([without[m] for m in HIERARCHICAL_METRICS]),
                               list(HIERARCHICAL_METRICS), B, seed, confidence)
            summary["without_genus"] = {**plain, "n_levels_removed": int(leak.sum())}
    return summary


__all__ = ["optional_column", "path_matrix", "summarize"]
