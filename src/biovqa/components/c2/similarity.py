"""The per-family similarity kernels of C2 (paper App. C.4–C.5), vectorised over items.

Each multiple-choice family has an :data:`OptionKernel`: given the rows of one family, their
option matrix (vocabulary ids, -1 beyond an item's options) and each row's gold id, it returns the
``(rows, K)`` matrix of s(option, gold), evaluating the pure kernel of :mod:`.kernels` once per
distinct pair it needs. Each open family has a :data:`PairKernel`: s of one normalized
prediction against one normalized gold (:mod:`.naming`). Every family's kernel is the function
here of the family's own name (:attr:`.tasks.Family.kernel` finds it); :mod:`.cags` turns the
similarities into s, b and cags.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.components.c2.kernels import (
    PART_LAYOUT_FILE, KernelConfig, PartLayout, normalize_c2, paired_attribute_matrix, side_option_set, soft_jaccard,
    value_similarity, visibility_element_similarity)
from biovqa.components.c2.naming import common_name_similarity, genus_similarity, scientific_name_similarity
from biovqa.errors import InputFormatError

if TYPE_CHECKING:
    from biovqa.components.c2.context import C2Context

#: ``(items, rows, options, gold, texts, context, config) -> (len(rows), K) similarities``:
#: ``options`` = the rows' option ids, ``gold`` = each row's gold id, ``texts`` = the id → text
#: vocabulary (normalized option texts).
OptionKernel = Callable[[pa.Table, np.ndarray, np.ndarray, np.ndarray, Sequence[str], "C2Context",
                         KernelConfig], np.ndarray]
#: ``(prediction, gold, context) -> s`` for one open item (both normalized).
PairKernel = Callable[[str, str, "C2Context"], float]


# ---------------------------------------------------------------------------------------------
# multiple-choice families


def attr_bare_value(items: pa.Table, rows: np.ndarray, opt: np.ndarray, gold: np.ndarray,
                    texts: Sequence[str], context: C2Context, config: KernelConfig) -> np.ndarray:
    """The value kernel of the item's attribute group (colour, ordinal, pattern or exact)."""
    group_names, group_id = _row_codes(items, rows, ("attribute_group", "part", "property"),
                                       lambda g, p, q: attribute_group_of(g, p, q))
    return _grouped_similarities(opt, gold, group_id, group_names, texts,
                                 lambda group, a, g: value_similarity(group, a, g, config))


def attr_group_value(items: pa.Table, rows: np.ndarray, opt: np.ndarray, gold: np.ndarray,
                     texts: Sequence[str], context: C2Context, config: KernelConfig) -> np.ndarray:
    """The paired part-and-value kernel over ``part: value`` traits."""
    layout = _require_layout(context, "attr_group_value")
    local, position_of = _dense_distinct(opt[opt >= 0], len(texts))
    matrix = paired_attribute_matrix([texts[v] for v in local], layout, config)
    position = position_of[np.maximum(opt, 0)]
    return np.where(opt >= 0, matrix[position, position_of[gold][:, None]], np.nan)


def marker_localization(items: pa.Table, rows: np.ndarray, opt: np.ndarray, gold: np.ndarray,
                        texts: Sequence[str], context: C2Context, config: KernelConfig) -> np.ndarray:
    """The part-distance kernel of the benchmark's part layout."""
    layout = _require_layout(context, "marker_localization")

    def evaluate(a: int, g: int) -> float:
        return layout.part_similarity(texts[a], texts[g])
    return pair_similarities(opt, np.repeat(gold[:, None], opt.shape[1], axis=1), evaluate)


def category_mcq(items: pa.Table, rows: np.ndarray, opt: np.ndarray, gold: np.ndarray,
                 texts: Sequence[str], context: C2Context, config: KernelConfig) -> np.ndarray:
    """Exact match."""
    return np.where(opt >= 0, (opt == gold[:, None]).astype(float), np.nan)


def visibility_side(items: pa.Table, rows: np.ndarray, opt: np.ndarray, gold: np.ndarray,
                    texts: Sequence[str], context: C2Context, config: KernelConfig) -> np.ndarray:
    """Soft Jaccard over the sides shown (Left / Right / Both / None) of the item's part."""
    part_names, part_id = _row_codes(items, rows, ("part",), _side_part)
    size = len(texts)
    keys = np.where(opt >= 0, part_id[:, None] * size + opt, -1)
    gold_keys = part_id * size + gold

    def evaluate(a: int, g: int) -> float:
        part = part_names[a // size]
        kappa = visibility_element_similarity(context.layout, config, part or None)
        return soft_jaccard(side_option_set(texts[a % size]),
                                    side_option_set(texts[g % size]), kappa)
    return pair_similarities(keys, np.repeat(gold_keys[:, None], opt.shape[1], axis=1), evaluate)


def visibility_partset(items: pa.Table, rows: np.ndarray, opt: np.ndarray, gold: np.ndarray,
                       texts: Sequence[str], context: C2Context, config: KernelConfig) -> np.ndarray:
    """Soft Jaccard over the set of parts an option names (None = ∅, All three = the three)."""
    return _partset_similarities(opt, gold, texts, context, config)


# ---------------------------------------------------------------------------------------------
# open families


def open_common_name(prediction: str, gold: str, context: C2Context) -> float:
    """Token F1 with the genus lift (:mod:`.naming`)."""
    return common_name_similarity(prediction, gold, context.genus_index)


#: a kind-of answer is a common name ("a sparrow"), scored as open_common_name is
open_kind_of = open_common_name


def open_scientific_name(prediction: str, gold: str, context: C2Context) -> float:
    return scientific_name_similarity(prediction, gold)


def open_genus(prediction: str, gold: str, context: C2Context) -> float:
    return genus_similarity(prediction, gold)


# ---------------------------------------------------------------------------------------------
# helpers


def pair_similarities(a_keys: np.ndarray, b_keys: np.ndarray,
                      evaluate: Callable[[int, int], float]) -> np.ndarray:
    """s for each (a, b) key pair, calling ``evaluate`` once per distinct pair. Keys are
    non-negative integers; pairs with a negative key get NaN."""
    a = np.asarray(a_keys, dtype=np.int64).ravel()
    b = np.asarray(b_keys, dtype=np.int64).ravel()
    out = np.full(a.shape, np.nan)
    valid = (a >= 0) & (b >= 0)
    if not valid.any():
        return out.reshape(np.shape(a_keys))
    base = int(max(a[valid].max(), b[valid].max())) + 1
    combined = a[valid] * base + b[valid]
    if base * base <= _DENSE_KEYS:
        unique, rank = _dense_distinct(combined, base * base)
        inverse = rank[combined]
    else:
        unique, inverse = np.unique(combined, return_inverse=True)
    values = np.array([evaluate(int(k // base), int(k % base)) for k in unique], dtype=float)
    out[valid] = values[inverse]
    return out.reshape(np.shape(a_keys))



#: Key spaces up to this size are deduplicated through a presence table (linear time) instead of
#: a sort; both give the distinct keys in ascending order.
_DENSE_KEYS = 1 << 22


def _dense_distinct(keys: np.ndarray, key_space: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys)`` for non-negative keys below ``key_space``, without sorting: (the
    distinct keys ascending, each key's position among them, indexed by key)."""
    present = np.zeros(key_space, dtype=bool)
    present[keys] = True
    distinct = np.flatnonzero(present)
    position = np.zeros(key_space, dtype=np.int64)
    position[distinct] = np.arange(len(distinct))
    return distinct, position


def _side_part(value: Any) -> str:
    text = normalize_c2(value or "")
    return text[:-1] if text in ("eyes", "legs", "wings") else text


def attribute_group_of(group: Any, part: Any, prop: Any) -> str:
    """The CUB attribute group of an attr_bare_value item (``attribute_group``, or rebuilt from
    ``part`` and ``property``)."""
    if group:
        return str(group)
    words = [w for w in (normalize_c2(part or ""), normalize_c2(prop or "")) if w]
    return "has_" + "_".join(" ".join(words).split())


def _row_codes(items: pa.Table, rows: np.ndarray, columns: Sequence[str],
               derive: Callable[..., str]) -> tuple[list[str], np.ndarray]:
    """``derive(*column values)`` for the given rows, computed once per distinct combination:
    (sorted distinct results, code of each row into them)."""
    n = len(rows)
    take = pa.array(rows)
    key = np.zeros(n, dtype=np.int64)
    dictionaries: list[list[Any]] = []
    for column in columns:
        if column in items.column_names:
            encoded = pc.dictionary_encode(items.column(column).take(take).combine_chunks())
            values = [None, *encoded.dictionary.to_pylist()]
            codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64) + 1
        else:
            values, codes = [None], np.zeros(n, dtype=np.int64)
        key = key * len(values) + codes
        dictionaries.append(values)
    distinct, inverse = np.unique(key, return_inverse=True)
    derived = []
    for combined in distinct.tolist():
        parts = []
        for values in reversed(dictionaries):
            combined, code = divmod(combined, len(values))
            parts.append(values[code])
        derived.append(derive(*reversed(parts)))
    names = sorted(set(derived))
    position = np.array([names.index(d) for d in derived], dtype=np.int64)
    return names, position[inverse.ravel()]


def _grouped_similarities(opt: np.ndarray, gold: np.ndarray, group_id: np.ndarray,
                          group_names: Sequence[str], texts: Sequence[str],
                          kernel: Callable[[str, str, str], float]) -> np.ndarray:
    """s(option, gold) where the kernel depends on the row's group: one small matrix per group
    over the values it offers, gathered into a (rows, K) array (NaN beyond the options)."""
    n_groups, size = len(group_names), len(texts)
    present = np.zeros((n_groups, size + 1), dtype=bool)
    present[np.repeat(group_id, opt.shape[1]), np.where(opt >= 0, opt, size).ravel()] = True
    present[:, size] = False
    local = np.cumsum(present, axis=1) - 1
    widest = int(present.sum(axis=1).max()) if n_groups else 0
    table = np.zeros((n_groups, max(widest, 1), max(widest, 1)))
    for g, name in enumerate(group_names):
        values = np.flatnonzero(present[g])
        for i, a in enumerate(values):
            for j, b in enumerate(values):
                table[g, i, j] = kernel(name, texts[int(a)], texts[int(b)])
    rows_group = group_id[:, None]
    option_local = local[rows_group, np.maximum(opt, 0)]
    gold_local = local[group_id, gold][:, None]
    return np.where(opt >= 0, table[rows_group, option_local, gold_local], np.nan)


def _partset_similarities(opt: np.ndarray, gold: np.ndarray, texts: Sequence[str],
                          context: C2Context, config: KernelConfig) -> np.ndarray:
    """visibility_partset: options as bit masks over the offered parts (None = ∅, All three =
    the row's three parts), soft Jaccard per distinct (mask, mask) pair."""
    special = {"none", "all three"}
    used = sorted({texts[v] for v in np.unique(opt[opt >= 0])} - special)
    if len(used) > 62:
        raise InputFormatError(f"visibility_partset offers {len(used)} distinct parts (max 62)",
                               file="items.parquet", field="options")
    bit = np.zeros(len(texts) + 1, dtype=np.int64)
    for index, name in enumerate(used):
        bit[_text_id(texts, name)] = 1 << index
    all_three_id = _text_id(texts, "all three")
    safe = np.where(opt >= 0, opt, len(texts))
    masks = bit[safe]
    row_all = np.bitwise_or.reduce(masks, axis=1)
    is_all = opt == all_three_id if all_three_id >= 0 else np.zeros_like(opt, dtype=bool)
    masks = np.where(is_all, row_all[:, None], masks)
    masks = np.where(opt >= 0, masks, -1)
    gold_masks = masks[np.arange(len(opt)), (opt == gold[:, None]).argmax(axis=1)]

    def members(mask: int) -> list[str]:
        return [name for index, name in enumerate(used) if mask >> index & 1]

    kappa = visibility_element_similarity(context.layout, config)

    # masks can use 62 bits, so pair them through their distinct values
    distinct, inverse = np.unique(np.concatenate([masks.ravel(), gold_masks]), return_inverse=True)
    mask_keys = inverse[: masks.size].reshape(masks.shape)
    gold_keys = inverse[masks.size:]
    mask_keys = np.where(masks >= 0, mask_keys, -1)

    def evaluate(a: int, g: int) -> float:
        return soft_jaccard(members(int(distinct[a])), members(int(distinct[g])), kappa)
    return pair_similarities(mask_keys, np.repeat(gold_keys[:, None], opt.shape[1], axis=1), evaluate)


def _text_id(texts: Sequence[str], text: str) -> int:
    try:
        return texts.index(text)
    except ValueError:
        return -1


def _require_layout(context: C2Context, family: str) -> PartLayout:
    if context.layout is None:
        from biovqa.errors import MissingResourceError

        raise MissingResourceError(
            f"{family} items need the part layout {PART_LAYOUT_FILE}",
            file=PART_LAYOUT_FILE, hint="re-build the benchmark with `biovqa build c2`")
    return context.layout
