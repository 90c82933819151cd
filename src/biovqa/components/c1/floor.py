"""C1 image-blind floor (Table 3): the most frequent taxon at each rank, the MCQ option naming
the most frequent common name (each question type's ``floor_rule``); :func:`floor_responses` is
what the ``baseline`` backend answers; and the floor-relative quantities (headroom,
recognition–recall)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.components.c1.tasks import MCQ_TASK, TASK_NAMES
from biovqa.errors import InputFormatError
from biovqa.text import Vocabulary, encode_strings, normalize_c1, normalize_c1_array


def _task_index(column: pa.Array | pa.ChunkedArray, source: Path | None = None) -> np.ndarray:
    """Index into :data:`~biovqa.components.c1.tasks.TASK_NAMES` per row; an unknown task is an error naming the row."""
    codes, dictionary = encode_strings(column)
    labels = dictionary.to_pylist()
    unknown = [label for label in labels if label not in TASK_NAMES]
    if unknown or (codes < 0).any():
        bad = np.flatnonzero((codes < 0) | np.isin(codes, [labels.index(u) for u in unknown]))
        value = None if codes[bad[0]] < 0 else labels[codes[bad[0]]]
        raise InputFormatError(f"unknown C1 task {value!r}", file=source, row=int(bad[0]) + 2, field="task",
                               hint=f"C1 tasks: {', '.join(TASK_NAMES)}")
    return np.asarray([TASK_NAMES.index(label) for label in labels], dtype=np.int64)[codes]


def _floors(task_index: np.ndarray, answers: pa.Array | pa.ChunkedArray) -> tuple[dict[str, str], dict[str, float]]:
    """Floor answer and floor score φ per question type (see :func:`floor_answers`)."""
    vocabulary = Vocabulary()
    gold = vocabulary.mapped_ids(answers, normalize_c1_array)
    raw_codes, raw_dictionary = encode_strings(answers)
    size = np.int64(len(vocabulary))
    valid = (gold != 0) & (raw_codes >= 0)
    all_counts = np.bincount(task_index[valid] * size + gold[valid], minlength=len(TASK_NAMES) * int(size))
    keys = np.flatnonzero(all_counts)
    # per task, the most frequent normalized gold (ties: the smallest normalized string)
    best_of: dict[int, tuple[int, str, int]] = {}
    for task, gold_id, n, text in zip((keys // size).tolist(), (keys % size).tolist(), all_counts[keys].tolist(),
                                      vocabulary.text(keys % size).to_pylist()):
        candidate = (-n, text, gold_id)
        if task not in best_of or candidate < best_of[task]:
            best_of[task] = candidate
    best = {task: gold_id for task, (_, _, gold_id) in sorted(best_of.items())}
    raw_labels = raw_dictionary.to_pylist()
    answers_out: dict[str, str] = {}
    scores_out: dict[str, float] = {}
    for task, gold_id in best.items():
        rows = task_index == task
        chosen = rows & (gold == gold_id) & (raw_codes >= 0)
        spelled, spelled_counts = np.unique(raw_codes[chosen], return_counts=True)
        options = sorted(zip(-spelled_counts, [raw_labels[c] for c in spelled]))
        answers_out[TASK_NAMES[task]] = options[0][1]
        scores_out[TASK_NAMES[task]] = float(chosen.sum() / rows.sum())
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
        gold = vocabulary.mapped_ids(items.column("answer"), normalize_c1_array)
        out = {}
        for task, answer in answers.items():
            rows = task_index == TASK_NAMES.index(task)
            if rows.any():
                out[task] = float((gold[rows] == vocabulary.ids([normalize_c1(answer)])[0]).mean())
    is_mcq = task_index == TASK_NAMES.index(MCQ_TASK)
    if is_mcq.any() and "options" in items.column_names:
        options, _ = _mcq_arrays(items, is_mcq, None)
        out[MCQ_TASK] = mcq_floor(items.column("answer").take(pa.array(np.flatnonzero(is_mcq))), options)
    return out


def _mcq_ids(answers: pa.Array | pa.ChunkedArray, options: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gold ids (n,), option ids (n × k) and each item's floor choice (ties: the first option)."""
    vocabulary = Vocabulary()
    gold = vocabulary.mapped_ids(answers, normalize_c1_array)
    option_ids = vocabulary.mapped_ids(options, normalize_c1_array).reshape(len(gold), -1)
    frequency = np.bincount(gold, minlength=len(vocabulary))
    return gold, option_ids, frequency[option_ids].argmax(axis=1)


def mcq_floor_choice(answers: pa.Array | pa.ChunkedArray, options: pa.Array) -> np.ndarray:
    """Image-blind MCQ rule: per item the index of the option naming the most frequent gold
    answer of the MCQ items (ties: the first option). ``options`` is flattened, k per item."""
    return _mcq_ids(answers, options)[2]


def mcq_floor(answers: pa.Array | pa.ChunkedArray, options: pa.Array) -> float:
    """The share of MCQ items where :func:`mcq_floor_choice` picks the gold."""
    gold, option_ids, choice = _mcq_ids(answers, options)
    pick = option_ids[np.arange(len(gold)), choice]
    return float((pick == gold).mean()) if len(gold) else float("nan")


def floor_responses(items: pa.Table) -> pa.Array:
    """Image-blind floor (Table 3): the most frequent taxon at each rank for every item; for the
    MCQ, the option naming the most frequent common name (ties: first option)."""
    answers = floor_answers(items)
    tasks = items.column("task")
    replies = np.asarray([answers.get(t) for t in tasks.to_pylist()], dtype=object)
    mcq_rows = np.flatnonzero(pc.equal(tasks, MCQ_TASK).to_numpy(zero_copy_only=False))
    if len(mcq_rows):
        take = pa.array(mcq_rows)
        options = items.column("options").take(take).combine_chunks()
        flat = options.flatten()
        choice = mcq_floor_choice(items.column("answer").take(take), flat)
        width = len(flat) // len(mcq_rows)
        replies[mcq_rows] = flat.take(pa.array(np.arange(len(mcq_rows)) * width + choice)).to_pylist()
    return pa.array(replies.tolist(), pa.string())


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
