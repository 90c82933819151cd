"""C2's image-blind floor: the reply a model that never looks at the image would give
(the ``baseline`` backend; each family's rule is its ``floor_rule`` in :mod:`.tasks`).

Multiple choice: among the item's options, the one most often gold across the benchmark's items of
the same family and question stem; open families: the family's most frequent gold.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.components.c2.prompts import LETTERS


def floor_responses(items: pa.Table) -> pa.Array:
    """Image-blind baseline replies, one per item.

    MCQ: among the item's options, the one most often gold across the benchmark's items of the
    same family and question stem (the question without its options); ties go to the earlier
    letter; the reply is ``(X) option text`` as the instruction asks. Open families: the most
    frequent gold of the family (ties: alphabetically first).
    """
    n = items.num_rows
    task = _strings(items.column("task"))
    answer = _strings(items.column("answer"))
    options = items.column("options").combine_chunks() if n else pa.array([], pa.list_(pa.string()))
    stem = pc.replace_substring_regex(_strings(items.column("question")), pattern=r" Options:.*$",
                                      replacement="", max_replacements=1)
    replies = np.empty(n, dtype=object)
    is_open = np.asarray(pc.is_null(options).to_numpy(zero_copy_only=False), dtype=bool)

    if is_open.any():
        open_rows = np.flatnonzero(is_open)
        open_task = task.take(pa.array(open_rows))
        tally = (pa.table({"task": open_task, "answer": answer.take(pa.array(open_rows))})
                 .group_by(["task", "answer"]).aggregate([("answer", "count")])
                 .sort_by([("task", "ascending"), ("answer_count", "descending"), ("answer", "ascending")]))
        tasks = tally.column("task").to_numpy(zero_copy_only=False)
        best = tally.take(pa.array(np.flatnonzero(np.r_[True, tasks[1:] != tasks[:-1]])))  # first per task
        replies[open_rows] = best.column("answer").take(
            pc.index_in(open_task, value_set=best.column("task").combine_chunks())).to_pylist()

    mcq_rows = np.flatnonzero(~is_open)
    if mcq_rows.size:
        separator = "\x1f"
        prefix = pc.binary_join_element_wise(task.take(mcq_rows), stem.take(mcq_rows), "", separator)
        gold_keys = pc.binary_join_element_wise(prefix, answer.take(mcq_rows), separator)
        encoded = gold_keys.dictionary_encode()
        key_counts = np.bincount(encoded.indices.to_numpy(), minlength=len(encoded.dictionary))
        mcq_options = options.take(pa.array(mcq_rows))
        flat = pc.list_flatten(mcq_options)
        parent = pc.list_parent_indices(mcq_options).to_numpy()
        offsets = mcq_options.offsets.to_numpy()
        letter_index = np.arange(len(flat)) - (offsets[parent] - offsets[0])
        option_keys = pc.binary_join_element_wise(prefix.take(pa.array(parent)), flat, separator)
        found = pc.index_in(option_keys, value_set=encoded.dictionary)
        found_np = pc.fill_null(found, -1).to_numpy()
        option_counts = np.where(found_np >= 0, key_counts[np.maximum(found_np, 0)], 0)
        order = np.lexsort((letter_index, -option_counts, parent))
        first = order[np.r_[True, parent[order][1:] != parent[order][:-1]]]
        letters = np.array(list(LETTERS), dtype=object)[letter_index[first]]
        texts = flat.take(pa.array(first)).to_pylist()
        replies[mcq_rows[parent[first]]] = [f"({letter}) {text}" for letter, text in zip(letters, texts)]
    return pa.array(replies.tolist(), type=pa.string())


def _strings(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return pc.fill_null(array.cast(pa.string()), "")
