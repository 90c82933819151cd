"""Batches: image-ordered requests cut into half-open ranges that keep an image's questions together.

A batch is bounded by a token budget (the requests' estimates) and a request count; the bounds
come from ``--batch-tokens``/``--max-batch-items``, else the backend's own ``batch_tokens`` and
``max_batch_items`` attributes (vLLM schedules its own continuous batches and gains from whole
image-grouped shards; an endpoint keeps ``concurrency`` requests in flight; the model-free
backends have nothing to bound), else the engine's defaults.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: [DEFAULT] bounds for a backend that declares none (the transformers backend declares its
#: ``batch_size`` as ``max_batch_items``)
DEFAULT_BATCH_TOKENS = 32_768
DEFAULT_MAX_BATCH_ITEMS = 64


def make_batches(image_keys_in_order: Sequence[str], token_estimates: np.ndarray, *,
                 batch_tokens: int = DEFAULT_BATCH_TOKENS,
                 max_batch_items: int = DEFAULT_MAX_BATCH_ITEMS) -> list[tuple[int, int]]:
    """Half-open ``(start, end)`` ranges over image-ordered requests.

    A batch holds whole images while they fit: it closes before an image whose questions would push
    it past ``batch_tokens`` tokens or ``max_batch_items`` requests. An image too large for one
    batch on its own is split into consecutive batches (still in order).
    """
    n = len(image_keys_in_order)
    batches: list[tuple[int, int]] = []
    if n == 0:
        return batches
    # boundaries of image groups
    starts = [0] + [i for i in range(1, n) if image_keys_in_order[i] != image_keys_in_order[i - 1]]
    ends = starts[1:] + [n]
    cumulative = np.concatenate([[0], np.cumsum(token_estimates)])
    batch_start = 0
    for g_start, g_end in zip(starts, ends):
        group_tokens = cumulative[g_end] - cumulative[g_start]
        batch_tokens_now = cumulative[g_start] - cumulative[batch_start]
        if batch_start < g_start and (
            batch_tokens_now + group_tokens > batch_tokens
            or g_end - batch_start > max_batch_items
        ):
            batches.append((batch_start, g_start))
            batch_start = g_start
        # split a group that alone exceeds a budget
        while (cumulative[g_end] - cumulative[batch_start] > batch_tokens
               or g_end - batch_start > max_batch_items):
            cut = batch_start + 1
            while (cut < g_end and cut - batch_start < max_batch_items
                   and cumulative[cut + 1] - cumulative[batch_start] <= batch_tokens):
                cut += 1
            batches.append((batch_start, cut))
            batch_start = cut
    if batch_start < n:
        batches.append((batch_start, n))
    return batches


def batch_bounds(hints: Mapping[str, Any], *, batch_tokens: int | None = None,
                 max_batch_items: int | None = None) -> tuple[int, int]:
    """``(batch_tokens, max_batch_items)`` of a run: the run's own settings, else the backend's
    hints (``executor.batch_hints()``), else :data:`DEFAULT_BATCH_TOKENS` and
    :data:`DEFAULT_MAX_BATCH_ITEMS`."""
    return (int(batch_tokens or hints.get("batch_tokens") or DEFAULT_BATCH_TOKENS),
            int(max_batch_items or hints.get("max_batch_items") or DEFAULT_MAX_BATCH_ITEMS))
