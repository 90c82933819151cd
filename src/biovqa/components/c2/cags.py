"""Per-item C2 scores: parse, s, b, cags, EM (paper App. C.4; paper Eqs. 2, 11, 12, 22).

For item i with kernel s, prediction ŷᵢ and gold yᵢ::

    sᵢ = s(ŷᵢ, yᵢ)                         raw graded similarity (GS_raw = mean sᵢ)
    bᵢ = (1/|Dᵢ|) Σ_{d ∈ Dᵢ} s(d, yᵢ)       chance baseline over the item's own distractors
                                            (MCQ) or 40 other gold answers of the family (open)
    cagsᵢ = (sᵢ − bᵢ) / (1 − bᵢ)            never clipped; 1 if sᵢ = 1 and 1 − bᵢ < 1e-12
    severityᵢ = 1 − cagsᵢ                   on items with EMᵢ = 0 (Eq. 22)

A parse failure or a missing reply scores sᵢ = cagsᵢ = EMᵢ = 0 [DEFAULT].

:func:`score_items` is vectorised: replies are analyzed once per distinct string, option texts
once per distinct text, and each kernel is evaluated once per distinct (option, gold) pair; the
remaining work is array arithmetic. The per-item Python reference in ``benchmarks/score_c2.py``
must agree with it item by item.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.components.c2 import naming, parse
from biovqa.components.c2.context import (
    C2Context, class_keys, family_codes, genus_class_baseline, open_baseline, open_gold_texts)
from biovqa.components.c2.kernels import DEFAULT_CONFIG, KernelConfig
from biovqa.components.c2.similarity import pair_similarities
from biovqa.components.c2.tasks import CATEGORY_OF, FAMILIES, FAMILY, MCQ_FAMILIES, OPEN_FAMILIES
from biovqa.errors import BiovqaError, InputFormatError
from biovqa.scoring.schema import core_columns
from biovqa.text import Vocabulary, encode_strings
from biovqa.components.c2.kernels import normalize_c2

DEGENERATE_BASELINE = 1e-12

_GOLD_LETTER_RE = re.compile(r"^\(([A-J])\)\s*(.*)$", re.DOTALL)


def chance_adjusted(s: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cags = (s − b)/(1 − b), Eq. 12; where 1 − b < 1e-12: 1 if s = 1 else 0 [DEFAULT]."""
    s = np.asarray(s, dtype=float)
    b = np.asarray(b, dtype=float)
    denominator = 1.0 - b
    degenerate = denominator < DEGENERATE_BASELINE
    safe = np.where(degenerate, 1.0, denominator)
    out = (s - b) / safe
    return np.where(degenerate, np.where(s == 1.0, 1.0, 0.0), out)


def _encode_strings(values: pa.ChunkedArray | pa.Array, transform: Callable[[str], Any]
                    ) -> tuple[np.ndarray, list[Any]]:
    """(code per row, -1 for null; ``transform`` of each distinct value)."""
    codes, dictionary = encode_strings(values)
    return codes, [transform(text) for text in dictionary.to_pylist()]


# ---------------------------------------------------------------------------------------------
# the scorer


def _option_matrix(items: pa.Table, vocab: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
    n = items.num_rows
    column = items.column("options").combine_chunks()
    if column.null_count == len(column):
        return np.full((n, 1), -1, dtype=np.int64), np.zeros(n, dtype=np.int64)
    counts = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = pc.list_flatten(column)
    flat_index, normalized = _encode_strings(flat, normalize_c2)
    # the last entry (-1) is where a null option (code -1) lands: one gather, no temporaries
    lookup = np.array([vocab.add(t) for t in normalized] + [-1], dtype=np.int64)
    width = max(1, int(counts.max()) if n else 1)
    ids = np.full((n, width), -1, dtype=np.int64)
    # a boolean mask fills row-major, i.e. in the flattened list order (no per-option indices)
    ids[np.arange(width)[None, :] < counts[:, None]] = lookup[flat_index]
    return ids, counts


def _gold_indices(items: pa.Table, option_ids: np.ndarray, counts: np.ndarray,
                  vocab: Vocabulary, mcq: np.ndarray) -> np.ndarray:
    """Step 3 for every MCQ row: the gold's option index (from ``(A) text`` or a bare value,
    falling back on ``answer_letter``)."""
    def parse_gold(text: str) -> tuple[int, int]:
        match = _GOLD_LETTER_RE.match(text.strip())
        letter = -1
        if match:
            letter = parse.LETTERS.index(match.group(1))
            text = match.group(2)
        return vocab.get(normalize_c2(text)), letter

    index, parsed = _encode_strings(items.column("answer"), parse_gold)
    gold_ids = np.array([p[0] for p in parsed] or [-1], dtype=np.int64)[np.maximum(index, 0)]
    gold_letters = np.array([p[1] for p in parsed] or [-1], dtype=np.int64)[np.maximum(index, 0)]
    gold_ids[index < 0] = -1
    gold_letters[index < 0] = -1
    hit = (option_ids == gold_ids[:, None]) & (gold_ids[:, None] >= 0)
    gold = np.where(hit.any(axis=1), hit.argmax(axis=1), -1)
    use_letter = (gold < 0) & (gold_letters >= 0) & (gold_letters < counts)
    gold = np.where(use_letter, gold_letters, gold)
    unresolved = np.flatnonzero(mcq & (gold < 0))
    if "answer_letter" in items.column_names and len(unresolved):
        letters = items.column("answer_letter").take(pa.array(unresolved)).to_pylist()
        for row, letter in zip(unresolved.tolist(), letters):
            if letter and letter in parse.LETTERS and parse.LETTERS.index(letter) < counts[row]:
                gold[row] = parse.LETTERS.index(letter)
    bad = np.flatnonzero(mcq & (gold < 0))
    if len(bad):
        first_bad = int(bad[0])
        raise InputFormatError(
            f"gold answer {items.column('answer')[first_bad].as_py()!r} of item "
            f"{items.column('item_id')[first_bad].as_py()!r} is not one of its options "
            f"({len(bad)} such item(s))",
            file="items.parquet", row=first_bad + 1, field="answer",
            hint="the C2 builder must store the gold option text (or '(A) text') in 'answer'")
    return gold


def check_prediction_columns(predictions: pa.Table) -> None:
    """The predictions have the columns scoring reads (what can be checked before the items)."""
    for name in ("item_id", "response", "status"):
        if name not in predictions.column_names:
            raise InputFormatError("predictions lack a required column", field=name)


def check_predictions(items: pa.Table, predictions: pa.Table) -> None:
    if predictions.num_rows != items.num_rows:
        raise InputFormatError(
            f"predictions have {predictions.num_rows} rows, the benchmark has {items.num_rows}",
            field="item_id", hint="pass predictions aligned with bench.items (same order)")
    check_prediction_columns(predictions)
    same = pc.all(pc.equal(items.column("item_id"), predictions.column("item_id"))).as_py()
    if not same:
        diff = pc.not_equal(items.column("item_id"), predictions.column("item_id"))
        row = int(np.flatnonzero(diff.to_numpy(zero_copy_only=False))[0])
        raise InputFormatError(
            f"prediction item_id {predictions.column('item_id')[row].as_py()!r} does not match "
            f"benchmark item {items.column('item_id')[row].as_py()!r}",
            row=row + 1, field="item_id", hint="align predictions with bench.items first")


def _side_option_sets(option_ids: np.ndarray, counts: np.ndarray, vocab: Vocabulary) -> np.ndarray:
    """Rows whose options are exactly Left / Right / Both / None (in any order)."""
    side_ids = np.sort([vocab.get(label) for label in parse.SIDE_LABELS])
    is_side = np.zeros(len(counts), dtype=bool)
    if option_ids.shape[1] >= 4 and (side_ids >= 0).all():
        four = np.flatnonzero(counts == 4)  # only a four-option row can be the side set
        first4 = np.sort(option_ids[four, :4], axis=1)
        is_side[four] = (first4 == side_ids[None, :]).all(axis=1)
    return is_side


def _check_routing(items: pa.Table, questions: pa.ChunkedArray | pa.Array, codes: np.ndarray,
                   is_side: np.ndarray, counts: np.ndarray) -> None:
    """Step 5: the template phrases must route every question to the family it is stored as
    (``codes``: each row's index in FAMILIES)."""
    route, has_token = parse.route_codes(questions, is_side, counts > 0)
    family_of_route = np.array([FAMILIES.index(t) if t in FAMILIES else -1
                                for t in parse.ROUTE_TARGETS], dtype=np.int64)
    wrong = np.flatnonzero((family_of_route[route] != codes) | (has_token != (counts > 0)))
    if len(wrong):
        row = int(wrong[0])
        raise InputFormatError(
            f"question of item {items.column('item_id')[row].as_py()!r} routes to "
            f"{parse.ROUTE_TARGETS[route[row]]!r}, but the item is stored as {FAMILIES[codes[row]]!r} "
            f"({len(wrong)} such item(s))",
            file="items.parquet", row=row + 1, field="question",
            hint="questions must follow the Table 69 templates (paper App. K.2 (Table 69)), with an "
                 "'Options:' list exactly for multiple-choice items")


@contextmanager
def _routing_reported_first(routing: Future[None]) -> Iterator[None]:
    """A block after the routing check (step 5, on a worker thread) whose own input error is
    reported only where the routing passed: the first failing step is the one reported, as if
    the steps ran one after another."""
    try:
        yield
    except BiovqaError:
        routing.result()
        raise


@dataclass(frozen=True, eq=False)
class PreparedItems:
    """C2 scoring's work on the items alone (:func:`prepare_items`): each item's family code,
    option vocabulary ids and count, and gold option; each multiple-choice family's rows and
    option-to-gold similarities, and the items' chance baselines ``b`` (MCQ rows; open rows are
    filled when scored). ``routing``: the routing check, still running on a worker thread."""

    items: pa.Table
    context: C2Context
    config: KernelConfig
    codes: np.ndarray
    vocab: Vocabulary
    option_ids: np.ndarray
    counts: np.ndarray
    gold_idx: np.ndarray
    mcq_similarities: dict[str, tuple[np.ndarray, np.ndarray]]
    mcq_baselines: np.ndarray
    routing: Future[None]


def prepare_items(items: pa.Table, context: C2Context, config: KernelConfig = DEFAULT_CONFIG, *,
                  questions: Callable[[], pa.ChunkedArray | pa.Array] | None = None) -> PreparedItems:
    """Steps 1–3 and the multiple-choice similarities, which need no reply: the routing check
    (step 5) starts on a worker thread, its Arrow string kernels beside the rest. The questions
    are read for that check alone: ``questions`` returns the question column where ``items`` has
    none (the scorer reads that column, the largest, on the worker)."""
    codes, unknown = family_codes(items)
    if unknown:
        row = int(np.flatnonzero(codes < 0)[0])
        raise InputFormatError(f"unknown C2 family {unknown[0]!r}", file="items.parquet",
                               row=row + 1, field="family", hint=f"expected one of {FAMILIES}")
    vocab = Vocabulary(reserve_empty=False)
    option_ids, counts = _option_matrix(items, vocab)
    is_side = _side_option_sets(option_ids, counts, vocab)
    read_questions = questions or (lambda: items.column("question"))
    pool = ThreadPoolExecutor(1, thread_name_prefix="c2-routing")
    routing = pool.submit(lambda: _check_routing(items, read_questions(), codes, is_side, counts))
    pool.shutdown(wait=False)  # the check runs on; the score reads its outcome
    mcq = counts > 0
    with _routing_reported_first(routing):
        gold_idx = _gold_indices(items, option_ids, counts, vocab, mcq)
        baselines = np.zeros(items.num_rows)
        similarities: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for family in MCQ_FAMILIES:
            frows = np.flatnonzero((codes == FAMILIES.index(family)) & mcq)
            if len(frows) == 0:
                continue
            opt = option_ids[frows]
            gold = opt[np.arange(len(frows)), gold_idx[frows]]
            sims = FAMILY[family].kernel(items, frows, opt, gold, vocab.texts, context, config)
            k = counts[frows]
            valid = np.arange(sims.shape[1])[None, :] < k[:, None]
            gold_sim = sims[np.arange(len(frows)), gold_idx[frows]]
            distractor_sum = np.where(valid, sims, 0.0).sum(axis=1) - gold_sim
            baselines[frows] = np.where(k > 1, distractor_sum / np.maximum(k - 1, 1), 0.0)
            similarities[family] = (frows, sims)
    return PreparedItems(items=items, context=context, config=config, codes=codes, vocab=vocab,
                         option_ids=option_ids, counts=counts, gold_idx=gold_idx, mcq_similarities=similarities,
                         mcq_baselines=baselines, routing=routing)


def score_items(items: pa.Table, predictions: pa.Table, context: C2Context,
                config: KernelConfig = DEFAULT_CONFIG, *,
                questions: Callable[[], pa.ChunkedArray | pa.Array] | None = None) -> pa.Table:
    """Per-item C2 scores for ``predictions`` aligned with ``items``.

    Columns: the score schema's core (item_id, component, task, status, response, parsed = the
    answer the parser recovered, score = cags), then family, category, gold, gold_letter,
    pred_letter, parse_status, em (0/1), s, b, cags, severity (1 − cags on EM = 0 items, else
    null). ``questions``: as for :func:`prepare_items`.
    """
    check_predictions(items, predictions)  # the predictions' shape is the first step, as ever
    return score_prepared(prepare_items(items, context, config, questions=questions), predictions)


def score_prepared(prepared: PreparedItems, predictions: pa.Table) -> pa.Table:
    """:func:`score_items` for items already prepared: the replies' steps, then the routing
    check's outcome (its failure reported first)."""
    with _routing_reported_first(prepared.routing):
        table = _score_replies(prepared, predictions)
    prepared.routing.result()
    return table


def _score_replies(prepared: PreparedItems, predictions: pa.Table) -> pa.Table:
    items, context, config, codes = prepared.items, prepared.context, prepared.config, prepared.codes
    vocab, option_ids, counts, gold_idx = prepared.vocab, prepared.option_ids, prepared.counts, prepared.gold_idx
    check_predictions(items, predictions)
    n = items.num_rows
    mcq = counts > 0

    # replies: analyzed once per distinct string
    status = pc.fill_null(predictions.column("status"), "missing")
    reply_index, reply_parts = _encode_strings(predictions.column("response"), parse.analyze_reply)
    is_ok = np.asarray(pc.equal(status, "ok").to_numpy(zero_copy_only=False), dtype=bool)
    has_reply = is_ok & (reply_index >= 0)
    parts_text = [p.text for p in reply_parts]
    empty_of = np.array([not p.text for p in reply_parts] or [True], dtype=bool)
    safe_reply = np.maximum(reply_index, 0)

    pred_idx = np.full(n, -1, dtype=np.int64)
    parse_code = np.full(n, _CODE[parse.MISSING], dtype=np.int8)

    # MCQ resolution: common cases with arrays, the rest through the scalar resolver
    rows = np.flatnonzero(mcq & has_reply)
    if len(rows):
        ridx = safe_reply[rows]
        letter, remainder, remainder_empty = _markers_in_range(ridx, counts[rows], reply_parts, vocab)
        valid_letter = letter >= 0
        eq = (option_ids[rows] == remainder[:, None]) & (remainder[:, None] >= 0)
        has_eq = eq.any(axis=1)
        eq_idx = np.where(has_eq, eq.argmax(axis=1), -1)
        empty = empty_of[ridx]
        chosen = np.full(len(rows), -1, dtype=np.int64)
        code = np.full(len(rows), _CODE[parse.FAILED], dtype=np.int8)
        agree = has_eq & valid_letter & (eq_idx == letter)
        disagree = has_eq & valid_letter & (eq_idx != letter)
        text_only = has_eq & ~valid_letter
        letter_only = ~has_eq & valid_letter & remainder_empty
        chosen[agree | text_only] = eq_idx[agree | text_only]
        chosen[letter_only] = letter[letter_only]
        chosen[disagree] = eq_idx[disagree] if config.prefer_text else letter[disagree]
        code[agree | text_only | letter_only] = _CODE[parse.PARSED]
        code[disagree] = _CODE[parse.MISMATCH]
        slow = np.flatnonzero(~empty & ~(agree | disagree | text_only | letter_only))
        if len(slow):
            _resolve_slow_rows(rows[slow], slow, option_ids, counts, reply_index, reply_parts,
                               letter[slow], valid_letter[slow], vocab, config, chosen, code)
        pred_idx[rows] = chosen
        parse_code[rows] = code

    # open items: the cleaned reply is the prediction
    open_rows = np.flatnonzero(~mcq & has_reply)
    parse_code[open_rows] = np.where(empty_of[safe_reply[open_rows]], _CODE[parse.FAILED],
                                     _CODE[parse.PARSED])
    recovered = np.zeros(n, dtype=bool)
    for name in parse.RECOVERED:
        recovered |= parse_code == _CODE[name]

    s = np.zeros(n)
    b = prepared.mcq_baselines.copy()
    em = np.zeros(n, dtype=np.int8)
    open_pred_text = np.full(n, None, dtype=object)

    for frows, sims in prepared.mcq_similarities.values():
        chosen = pred_idx[frows]
        picked = sims[np.arange(len(frows)), np.maximum(chosen, 0)]
        s[frows] = np.where(chosen >= 0, picked, 0.0)
        em[frows] = (chosen >= 0) & (chosen == gold_idx[frows])

    for family in OPEN_FAMILIES:
        frows = np.flatnonzero(codes == FAMILIES.index(family))
        if len(frows) == 0:
            continue
        golds = open_gold_texts(items, frows, family)
        _score_open_family(family, items, frows, golds, reply_index, parts_text, has_reply,
                           context, s, b, em, open_pred_text, config)

    cags = chance_adjusted(s, b)
    not_recovered = ~recovered
    s[not_recovered] = 0.0
    cags[not_recovered] = 0.0
    em[not_recovered] = 0
    severity = np.where(em == 0, 1.0 - cags, np.nan)

    gold_text, pred_text = _display_texts(items, mcq, counts, gold_idx, pred_idx, open_pred_text)
    letters = pa.array(list(parse.LETTERS))
    gold_letter = letters.take(pa.array(np.clip(gold_idx, 0, len(letters) - 1), mask=~mcq))
    pred_letter = letters.take(pa.array(np.clip(pred_idx, 0, len(letters) - 1), mask=~mcq | (pred_idx < 0)))
    family_array = pa.array(list(FAMILIES)).take(pa.array(codes))
    category_array = pa.array([CATEGORY_OF[f] for f in FAMILIES]).take(pa.array(codes))
    return pa.table({
        **core_columns(items, predictions.set_column(predictions.schema.get_field_index("status"),
                                                     "status", status),
                       component="c2", parsed=pred_text, score=cags),
        "family": family_array,
        "category": category_array,
        "gold": gold_text,
        "gold_letter": gold_letter,
        "pred_letter": pred_letter,
        "parse_status": pa.array(list(_STATUS_BY_CODE)).take(pa.array(parse_code.astype(np.int64))),
        "em": pa.array(em, pa.int8()),
        "s": pa.array(s, pa.float64()),
        "b": pa.array(b, pa.float64()),
        "cags": pa.array(cags, pa.float64()),
        "severity": pa.array(severity, pa.float64(), from_pandas=True),
    })


def _markers_in_range(reply_rows: np.ndarray, n_options: np.ndarray,
                      reply_parts: Sequence[parse.ReplyParts], vocab: Vocabulary
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step 4b per MCQ row: the first letter marker of the reply within the row's option range
    (:meth:`parse.ReplyParts.for_options`), once per distinct (reply, option count). Returns
    (letter or -1, vocabulary id of the remainder or -1, remainder empty)."""
    width = len(parse.LETTERS) + 1
    keys = reply_rows.astype(np.int64) * width + np.minimum(n_options, width - 1)
    distinct, inverse = np.unique(keys, return_inverse=True)
    letters = np.empty(len(distinct), dtype=np.int64)
    remainders = np.empty(len(distinct), dtype=np.int64)
    empty = np.empty(len(distinct), dtype=bool)
    for j, key in enumerate(distinct.tolist()):
        reply, count = divmod(key, width)
        letter, remainder = reply_parts[reply].for_options(count)
        letters[j] = letter
        remainders[j] = vocab.get(remainder) if remainder else -1
        empty[j] = not remainder
    inverse = inverse.ravel()
    return letters[inverse], remainders[inverse], empty[inverse]


def _resolve_slow_rows(rows: np.ndarray, local: np.ndarray, option_ids: np.ndarray,
                       counts: np.ndarray, reply_index: np.ndarray,
                       reply_parts: Sequence[parse.ReplyParts], letter: np.ndarray,
                       valid_letter: np.ndarray, vocab: Vocabulary, config: KernelConfig,
                       chosen: np.ndarray, code: np.ndarray) -> None:
    """Steps 4c–4f for MCQ rows whose remainder is not verbatim an option: the longest option
    contained in the reply (word runs, found once per distinct reply), reconciliation with the
    letter, then the fuzzy fallback once per distinct (reply, option) pair. Writes ``chosen`` and
    ``code`` at positions ``local``; agrees with :func:`parse.resolve_parts` row by row."""
    size = max(len(vocab.texts), 1)
    longest = max((len(text.split()) for text in vocab.texts), default=1)
    contained: list[int] = []
    for rid in np.unique(reply_index[rows]):
        for phrase in set(parse.word_ngrams(reply_parts[rid].text, longest)):
            vid = vocab.get(phrase)
            if vid >= 0:
                contained.append(int(rid) * size + vid)
    contained_keys = np.unique(np.array(contained, dtype=np.int64))
    opts = option_ids[rows]
    keys = reply_index[rows][:, None] * size + opts
    present = (opts >= 0) & np.isin(keys, contained_keys)
    lengths = np.array([len(text) for text in vocab.texts] or [0], dtype=np.int64)
    weighted = np.where(present, lengths[np.maximum(opts, 0)], -1)
    text_idx = np.where(present.any(axis=1), weighted.argmax(axis=1), -1)

    pick = np.full(len(rows), -1, dtype=np.int64)
    status = np.full(len(rows), _CODE[parse.FAILED], dtype=np.int8)
    both = valid_letter & (text_idx >= 0)
    agree = both & (text_idx == letter)
    disagree = both & (text_idx != letter)
    pick[agree] = letter[agree]
    pick[disagree] = text_idx[disagree] if config.prefer_text else letter[disagree]
    status[agree] = _CODE[parse.PARSED]
    status[disagree] = _CODE[parse.MISMATCH]
    letter_only = valid_letter & (text_idx < 0)
    text_only = ~valid_letter & (text_idx >= 0)
    pick[letter_only] = letter[letter_only]
    pick[text_only] = text_idx[text_only]
    status[letter_only | text_only] = _CODE[parse.PARSED]

    fuzzy_rows = np.flatnonzero(~valid_letter & (text_idx < 0))
    if len(fuzzy_rows):
        fopts = opts[fuzzy_rows]
        texts = vocab.texts
        ratios = pair_similarities(
            np.repeat(reply_index[rows][fuzzy_rows][:, None], fopts.shape[1], axis=1), fopts,
            lambda rid, vid: parse.bounded_ratio(reply_parts[rid].text, texts[vid]))
        ratios = np.where(np.isnan(ratios), -1.0, ratios)
        best = ratios.argmax(axis=1)
        best_ratio = ratios[np.arange(len(fuzzy_rows)), best]
        hit = best_ratio >= parse.FUZZY_THRESHOLD
        pick[fuzzy_rows[hit]] = best[hit]
        status[fuzzy_rows[hit]] = _CODE[parse.FUZZY]
    chosen[local] = pick
    code[local] = status


def _display_texts(items: pa.Table, mcq: np.ndarray, counts: np.ndarray, gold_idx: np.ndarray,
                   pred_idx: np.ndarray, open_pred_text: np.ndarray) -> tuple[pa.Array, pa.Array]:
    """The gold and predicted texts as shown per item: option texts for MCQ items (as written
    in the benchmark), the gold answer and the cleaned reply for open items."""
    answers = items.column("answer").combine_chunks()
    open_pred = pa.array(open_pred_text, pa.string())
    if not mcq.any():
        return answers, open_pred
    flat = pc.list_flatten(items.column("options").combine_chunks())
    starts = np.cumsum(counts) - counts
    gold_from_options = flat.take(pa.array(starts + np.maximum(gold_idx, 0), mask=~mcq))
    pred_from_options = flat.take(pa.array(starts + np.maximum(pred_idx, 0),
                                           mask=~mcq | (pred_idx < 0)))
    mask = pa.array(mcq)
    return (pc.if_else(mask, gold_from_options, answers),
            pc.if_else(mask, pred_from_options, open_pred))


_STATUS_BY_CODE = parse.PARSE_STATUSES
_CODE = {name: code for code, name in enumerate(_STATUS_BY_CODE)}


def _score_open_family(family: str, items: pa.Table, rows: np.ndarray, golds: list[str],
                       reply_index: np.ndarray, parts_text: list[str], has_reply: np.ndarray,
                       context: C2Context, s: np.ndarray, b: np.ndarray, em: np.ndarray,
                       pred_text: np.ndarray, config: KernelConfig = DEFAULT_CONFIG) -> None:
    kernel = FAMILY[family].kernel
    take = pa.array(rows)
    answers = [normalize_c2(a) for a in items.column("answer").take(take).to_pylist()]
    categories = (items.column("kind_category").take(take).to_pylist()
                  if "kind_category" in items.column_names else [None] * len(rows))
    preds: list[str] = []
    for local, row in enumerate(rows):
        text = parts_text[reply_index[row]] if has_reply[row] else ""
        if has_reply[row]:
            pred_text[row] = text
        if family == "open_kind_of":
            text = naming.complete_kind_of(text, categories[local]) if text else ""
        preds.append(text)
    # s on distinct (prediction, gold) pairs
    strings = Vocabulary(reserve_empty=False)
    pred_keys = np.array([strings.add(p) for p in preds], dtype=np.int64)
    gold_keys = np.array([strings.add(g) for g in golds], dtype=np.int64)
    texts = strings.texts
    s[rows] = pair_similarities(pred_keys, gold_keys,
                                lambda a, g: kernel(texts[a], texts[g], context)
                                if texts[a] else 0.0)
    matched = np.array([p == g and bool(p) for p, g in zip(preds, golds)], dtype=bool)
    if family == "open_common_name" and config.english_names and "gold_set" in items.column_names:
        # the English name beside the CUB label: a reply scores its better match of the two
        english = [normalize_c2(names[0]) if names else "" for names in
                   items.column("gold_set").take(pa.array(rows)).to_pylist()]
        if any(english):
            english_keys = np.array([strings.add(e) if e else -1 for e in english], dtype=np.int64)
            texts = strings.texts
            has = english_keys >= 0
            alt = np.zeros(len(rows))
            alt[has] = pair_similarities(pred_keys[has], english_keys[has],
                                         lambda a, g: kernel(texts[a], texts[g], context)
                                         if texts[a] else 0.0)
            s[rows] = np.maximum(s[rows], alt)
            matched |= np.array([bool(p) and p == e for p, e in zip(preds, english)], dtype=bool)
    if family == "open_kind_of":
        raw = [parts_text[reply_index[r]] if has_reply[r] else "" for r in rows]
        matched |= np.array([bool(r) and r == a for r, a in zip(raw, answers)], dtype=bool)
    em[rows] = matched
    # b over a fixed-seed sample of 40 other golds of the family
    pool = set(context.open_gold_pool.get(family, ()))
    missing = [g for g in golds if g not in pool]
    if missing:
        raise InputFormatError(f"{family} gold {missing[0]!r} is not in the benchmark's gold pool",
                               hint="build the scoring context from the whole benchmark")
    if family == "open_genus" and config.genus_baseline == "exact":
        keys = class_keys(items, rows)
        b[rows] = [genus_class_baseline(k, g, context) for k, g in zip(keys, golds)]
        return
    baseline = {g: open_baseline(family, g, context) for g in set(golds)}
    b[rows] = [baseline[g] for g in golds]
