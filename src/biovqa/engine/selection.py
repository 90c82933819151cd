"""Which items a run asks: filters, a per-task stratified ``--limit`` sample, one ``--shard`` of images.

Everything here is deterministic and independent of row order: the same benchmark and selection
give the same items, and shards of a sample partition it (all of an image's questions stay in one
shard, so the model's prefix cache keeps its reuse). :func:`merge_coverage` recomputes a selection
from the run cards of merged shards to say how much of it they cover.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from biovqa.bench import open_bench
from biovqa.bench.strata import SEED, sample_per_task
from biovqa.errors import BiovqaError


@dataclass(frozen=True, slots=True)
class Selection:
    """Which items a run asks: filters, a per-task stratified sample, one shard of images."""

    components: tuple[str, ...] | None = None
    tasks: tuple[str, ...] | None = None
    limit: int | None = None
    seed: int = SEED
    shard: tuple[int, int] | None = None


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` → ``(i, n)`` with ``0 <= i < n`` (shards count from 0)."""
    try:
        index_text, count_text = text.split("/")
        index, count = int(index_text), int(count_text)
    except ValueError:
        raise BiovqaError(f"shard must look like i/n, got {text!r}", field="--shard",
                          hint="e.g. --shard 0/4 … --shard 3/4 (shards count from 0)") from None
    if count < 1 or not 0 <= index < count:
        raise BiovqaError(f"shard {text!r} is out of range", field="--shard",
                          hint=f"i must be in 0…{max(count, 1) - 1} for n = {count}")
    return index, count


def image_keys(items: pa.Table) -> pa.Array:
    """What identifies an item's image: its content hash, or its path when the hash is missing."""
    path = items.column("image").combine_chunks()
    keys = path
    if "image_sha256" in items.column_names:
        sha = items.column("image_sha256").combine_chunks()
        has_sha = pc.and_(pc.is_valid(sha), pc.not_equal(pc.fill_null(sha, ""), ""))
        keys = pc.if_else(has_sha, sha, path)
    # a text-only item (no image) is its own group, keyed by its id
    if keys.null_count:
        text_keys = pc.binary_join_element_wise("text-only:", items.column("item_id").combine_chunks(), "")
        keys = pc.if_else(pc.is_valid(keys), keys, text_keys)
    return keys


def stratified_sample(items: pa.Table, limit_per_task: int, seed: int = SEED) -> pa.Table:
    """At most ``limit_per_task`` items of each task: the per-task stratified sample of
    :func:`biovqa.bench.strata.sample_per_task` (strata from each component's declaration, the
    items of a Bio-VQA-Lite bench of that size). Rows keep their order."""
    rows = sample_per_task(items, limit_per_task, seed).rows
    return items.take(pa.array(rows, pa.int64()))


def shard_by_image(items: pa.Table, index: int, count: int) -> pa.Table:
    """Shard ``index`` of ``count``: the images sorted by key, dealt round-robin, with all of each
    image's questions. Shards are disjoint, cover everything and keep prefix reuse intact."""
    keys = image_keys(items)
    distinct = pc.unique(keys).sort()
    position = pc.index_in(keys, value_set=distinct).to_numpy()
    return items.filter(pa.array(position % count == index))


def select_items(items: pa.Table, selection: Selection) -> pa.Table:
    """Apply filters, then the per-task sample, then the shard (so shards of a sample partition it)."""
    if selection.components:
        wanted = pa.array(sorted({c.lower() for c in selection.components}))
        items = items.filter(pc.is_in(pc.utf8_lower(items.column("component")), value_set=wanted))
    if selection.tasks:
        items = items.filter(pc.is_in(items.column("task"), value_set=pa.array(
            sorted(set(selection.tasks)))))
    if selection.limit is not None:
        items = stratified_sample(items, selection.limit, selection.seed)
    if selection.shard is not None:
        items = shard_by_image(items, *selection.shard)
    return items


def order_image_first(items: pa.Table) -> pa.Table:
    """Items sorted by (image key, item id): every image's questions consecutive."""
    keyed = items.append_column("__image_key", image_keys(items))
    keyed = keyed.sort_by([("__image_key", "ascending"), ("item_id", "ascending")])
    return keyed.drop_columns(["__image_key"])



def subset_facts(all_items: pa.Table, selected: pa.Table, selection: Selection) -> dict[str, Any]:
    """How the selection relates to the benchmark, for the run card and for scoring a subset:
    ``selected`` of ``total`` items, whether a stratified ``--limit`` sample made it, and a hash
    of the selected item ids (sorted) so that a scorer can check it recomputed the same subset."""
    ids = sorted(selected.column("item_id").to_pylist())
    digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()
    return {
        "selected": selected.num_rows,
        "total": all_items.num_rows,
        "stratified": selection.limit is not None,
        "is_subset": selected.num_rows < all_items.num_rows,
        "item_ids_sha256": digest,
    }


def merge_coverage(run_dirs: Sequence[str | Path], predictions: pa.Table) -> dict[str, Any]:
    """How much of the intended selection merged run folders cover.

    The intended selection is read from the inputs' run cards (filters and ``--limit`` without the
    shard) and recomputed on their benchmark when it is still there with the same manifest; else
    the shard numbers the cards name are compared with the shard count. Returns ``expected``
    (None when unknown), ``covered``, ``missing_shards`` and ``complete``.
    """
    cards = []
    for run_dir in run_dirs:
        try:
            card = json.loads((Path(run_dir) / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            card = None
        cards.append(card if isinstance(card, dict) else None)
    answered = set(predictions.column("item_id").to_pylist())
    result: dict[str, Any] = {"expected": None, "covered": len(answered), "missing_shards": [],
                              "incomplete_runs": [], "complete": True}
    shards: dict[int, set[int]] = {}
    for run_dir, card in zip(run_dirs, cards):
        if card is None:
            continue
        if card.get("status") not in ("complete", "merged"):
            result["incomplete_runs"].append(str(run_dir))
        shard = (card.get("selection") or {}).get("shard")
        if isinstance(shard, str) and "/" in shard:
            index, count = (int(x) for x in shard.split("/"))
            shards.setdefault(count, set()).add(index)
    for count, seen in shards.items():
        result["missing_shards"].extend(f"{i}/{count}" for i in range(count) if i not in seen)
    first = next((c for c in cards if c is not None), None)
    if first is not None:
        bench_info = first.get("benchmark") or {}
        selection = first.get("selection") or {}
        try:
            bench = open_bench(bench_info.get("path", ""))
            if bench.manifest_sha256 == bench_info.get("manifest_sha256"):
                wanted = select_items(bench.items, Selection(
                    components=tuple(selection.get("components") or ()) or None,
                    tasks=tuple(selection.get("tasks") or ()) or None,
                    limit=selection.get("limit_per_task"), seed=int(selection.get("seed", SEED))))
                ids = set(wanted.column("item_id").to_pylist())
                result["expected"] = len(ids)
                result["covered"] = len(ids & answered)
        except (BiovqaError, OSError, TypeError, ValueError):
            pass
    result["complete"] = (not result["missing_shards"] and not result["incomplete_runs"]
                          and (result["expected"] is None
                               or result["covered"] >= result["expected"]))
    return result
