"""The inference engine: items → requests → image-grouped, token-budgeted batches → the store.

A run is::

    select items (--components, --tasks, --limit per task, --shard i/n by image)
      → requests (model wrappers of paper App. B.2 via the model preset, image first)
      → skip keys already in the store (resume)
      → batches: an image's questions consecutive, bounded by a token budget
      → executor (in process, or Ray actors) → backend.generate(batch)
      → PredictionStore segments → RUN/predictions.parquet (sorted by item id) + RUN/run.json

Everything here is deterministic: the same benchmark, selection, model and settings give the same
requests, keys, batches and predictions file, whatever the order replies arrive in.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.errors import BiovqaError
from biovqa.bench import Bench, open_bench
from biovqa.engine.backends.base import Reply, Request
from biovqa.engine.presets import ModelPreset
from biovqa.engine.store import (
    PREDICTIONS_FILE,
    PredictionStore,
    RunLock,
    StoreHeader,
    refuse_if_different,
)

#: Applies a model's wrappers: ``(preset, component, prompt) -> (system message, user text)``.
Wrap = Callable[[ModelPreset, str, str], tuple[str | None, str]]

#: Strata of ``--limit`` inside each task (component columns that exist are used).
STRATA_COLUMNS: tuple[str, ...] = ("group", "tier")
#: Characters per text token for estimates when no tokenizer is at hand [DEFAULT].
CHARS_PER_TOKEN = 4.0
#: Image size assumed for token estimates when the items table records none [DEFAULT].
DEFAULT_IMAGE_SIZE = (1024, 768)
DEFAULT_BATCH_TOKENS = 32_768
DEFAULT_MAX_BATCH_ITEMS = 64
#: Batch bounds per backend where the backend declares none [DEFAULT]: vLLM schedules its own
#: continuous batches and gains from seeing whole image-grouped shards at once; an endpoint keeps
#: ``concurrency`` requests in flight and only stalls at batch ends; the model-free backends have
#: nothing to bound.
BACKEND_BATCH_DEFAULTS: dict[str, tuple[int, int]] = {
    "vllm": (4_000_000, 8192),
    "openai": (1_000_000, 512),
    "baseline": (1 << 40, 65_536),
    "echo": (1 << 40, 4096),
}
SEED = 42


# -- model presets -------------------------------------------------------------------------------
def resolve_preset(model: str, forced: str | None = None) -> tuple[ModelPreset, Wrap]:
    """The model's preset (``biovqa.engine.presets``: a preset name, checkpoint id or alias; a
    local folder or HF-cache snapshot matched by its config; ``forced`` names one outright) and the
    function that applies its wrappers."""
    from biovqa.engine import presets

    return presets.resolve_preset(model, forced)[0], presets.apply_wrappers


def prompt_template_hash(preset: ModelPreset, wrap: Wrap, components: Sequence[str],
                         prompting: dict[str, Any] | None = None) -> str:
    """sha256 of how a prompt is wrapped for each component (system message, prefix, joiner),
    plus — only when a benchmark uses them — the per-item system prompt rule and the request
    modes (:func:`prompting_facts`), so that stores of benches without them keep their hash."""
    template: dict[str, Any] = {
        c: list(wrap(preset, c, "{question}\n{instruction}")) for c in sorted(set(components))
    }
    if prompting:
        template["__prompting__"] = prompting
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()


# -- per-item system prompts and request modes ---------------------------------------------------
#: Optional items column: the item's own system prompt (HCA paper §2.4: HCA items carry one).
ITEM_SYSTEM_COLUMN = "system"
#: Optional items column: "chat" or "raw" per item (BAGEL paper App. A.1.2: chat vs raw completion).
ITEM_MODE_COLUMN = "prompt_mode"
#: How an item's system prompt and a preset's system message combine [DEFAULT]: the item's
#: replaces the preset's (the benchmark's protocol names the system prompt the model gets); the
#: preset's user-text prefix (InternVL's "Please answer in English.") still applies.
SYSTEM_RULE = "item system prompt replaces the preset's system message"
#: Optional items column: the item's own cap on new tokens (overrides the preset's component cap;
#: ``--max-new-tokens`` overrides both).
ITEM_CAP_COLUMN = "max_new_tokens"


def item_modes(bench: Bench, items: pa.Table) -> list[str]:
    """Request mode of every row: the ``prompt_mode`` column, else the manifest's
    ``parameters.prompt_mode`` (or a BAGEL manifest's ``parameters.mode``), else "chat"."""
    from biovqa.engine.backends.base import REQUEST_MODES

    if ITEM_MODE_COLUMN in items.column_names:
        modes = [m or "chat" for m in items.column(ITEM_MODE_COLUMN).to_pylist()]
    else:
        parameters = bench.manifest.get("parameters") or {}
        mode = parameters.get("prompt_mode")
        if mode is None and bench.manifest.get("component") == "bagel":
            mode = parameters.get("mode")
        modes = [str(mode or "chat")] * items.num_rows
    bad = sorted(set(modes) - set(REQUEST_MODES))
    if bad:
        raise BiovqaError(f"unknown request mode {bad[0]!r}", file=bench.root / "items.parquet",
                          field=ITEM_MODE_COLUMN, hint=f"use one of {', '.join(REQUEST_MODES)}")
    return modes


def prompting_facts(bench: Bench) -> dict[str, Any]:
    """What the store header and run card record about per-item system prompts and modes (empty
    when the benchmark uses neither: its header hash stays what it was)."""
    facts: dict[str, Any] = {}
    items = bench.items
    if ITEM_SYSTEM_COLUMN in items.column_names and items.column(ITEM_SYSTEM_COLUMN).null_count < items.num_rows:
        facts["item_system"] = SYSTEM_RULE
    modes = sorted(set(item_modes(bench, items)))
    if modes != ["chat"]:
        facts["modes"] = modes
    if ITEM_CAP_COLUMN in items.column_names:
        caps = {int(c) for c in items.column(ITEM_CAP_COLUMN).to_pylist() if c is not None}
        if caps:
            facts["item_max_new_tokens"] = sorted(caps)
    return facts


def decoding_settings(preset: ModelPreset, components: Sequence[str],
                      max_new_tokens: int | None = None) -> dict[str, Any]:
    """Decoding recorded in the store header and in every key: greedy, per-component caps."""
    caps = {c: int(max_new_tokens or preset.max_new_tokens(c)) for c in sorted(set(components))}
    return {"greedy": True, "max_new_tokens": caps}


# -- selection -----------------------------------------------------------------------------------
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
    # [text-only items, issue 14] no image: each item is its own group, keyed by its id
    if keys.null_count:
        text_keys = pc.binary_join_element_wise("text-only:", items.column("item_id").combine_chunks(), "")
        keys = pc.if_else(pc.is_valid(keys), keys, text_keys)
    return keys


def _rank_by_hash(values: Sequence[str], seed: int) -> np.ndarray:
    """A seeded, order-independent pseudo-random rank of each value (sha256 of seed:value)."""
    return np.array(
        [int.from_bytes(hashlib.sha256(f"{seed}:{v}".encode()).digest()[:8], "big") for v in values],
        dtype=np.uint64,
    )


def largest_remainder(sizes: Sequence[int], total: int) -> list[int]:
    """Split ``total`` across strata proportionally to ``sizes`` (Hamilton's method).

    ``quota_s = total · n_s / N``; each stratum gets ``floor(quota_s)``, and the units left go to
    the largest fractional parts (ties: the earlier stratum). No stratum gets more than it has.
    """
    whole = sum(sizes)
    if total >= whole:
        return list(sizes)
    quotas = [total * s / whole for s in sizes]
    alloc = [math.floor(q) for q in quotas]
    left = total - sum(alloc)
    order = sorted(range(len(sizes)), key=lambda i: (-(quotas[i] - alloc[i]), i))
    for i in order[:left]:
        alloc[i] += 1
    return alloc


def stratified_sample(items: pa.Table, limit_per_task: int, seed: int = SEED) -> pa.Table:
    """At most ``limit_per_task`` items of each task, allocated proportionally over the task's
    strata (``group`` × ``tier`` where those columns exist) by largest remainder; inside a stratum
    the items with the smallest ``sha256(seed:item_id)`` are kept. Deterministic and independent of
    row order. Rows keep their order."""
    if limit_per_task < 1:
        raise BiovqaError("limit must be at least 1", field="--limit")
    columns = ["task"] + [c for c in STRATA_COLUMNS if c in items.column_names]
    if "component" in items.column_names:
        columns.insert(0, "component")
    strata = list(zip(*(
        [("" if v is None else str(v)) for v in items.column(c).to_pylist()] for c in columns
    )))
    ranks = _rank_by_hash(items.column("item_id").to_pylist(), seed)
    by_task: dict[tuple[str, ...], dict[tuple[str, ...], list[int]]] = {}
    task_width = columns.index("task") + 1
    for row, stratum in enumerate(strata):
        by_task.setdefault(stratum[:task_width], {}).setdefault(stratum, []).append(row)
    keep: list[int] = []
    for task in sorted(by_task):
        groups = by_task[task]
        names = sorted(groups)
        alloc = largest_remainder([len(groups[n]) for n in names], limit_per_task)
        for name, count in zip(names, alloc):
            rows = np.array(groups[name])
            order = np.lexsort((rows, ranks[rows]))
            keep.extend(rows[order[:count]].tolist())
    keep.sort()
    return items.take(pa.array(keep, pa.int64()))


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


# -- requests ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ModelFingerprint:
    """Everything about the model side that goes into a store key."""

    model: str
    revision: str
    decoding: dict[str, Any]
    identity: dict[str, Any] = field(default_factory=dict)

    def header(self, manifest_sha256: str, template_hash: str) -> StoreHeader:
        return StoreHeader(manifest_sha256=manifest_sha256, model=self.model,
                           revision=self.revision, prompt_template_hash=template_hash,
                           decoding=self.decoding, identity=self.identity)


def _field(text: str | None) -> str:
    """Length-prefixed, so that no two different field lists join to the same string."""
    return "~" if text is None else f"{len(text)}:{text}"


def _decoding_field(max_new_tokens: int, mode: str = "chat") -> str:
    """The key's decoding field: ``greedy:N``, prefixed ``raw:`` for a raw-mode request (chat
    keys stay what they were before modes existed)."""
    return f"greedy:{max_new_tokens}" if mode == "chat" else f"{mode}:greedy:{max_new_tokens}"


def request_key(item_id: str, question: str, instruction: str, options: Sequence[str] | None,
                image_ref: str, system: str | None, user_text: str, max_new_tokens: int,
                model: str, revision: str, mode: str = "chat") -> str:
    """``sha256`` over the item's content, the exact prompt (system message included: an item's
    own system prompt changes the key), the request mode, the model and the decoding.

    Fields are length-prefixed and joined (an unambiguous encoding; faster than JSON). The item id
    is part of the content so two items with equal text on one image stay two rows.
    """
    encoded_options = "~" if options is None else f"L{len(options)}" + "".join(
        _field(o) for o in options)
    payload = "|".join((
        "biovqa-key/1", _field(item_id), _field(question), _field(instruction), encoded_options,
        _field(image_ref), _field(system), _field(user_text), _decoding_field(max_new_tokens, mode),
        _field(model), _field(revision),
    ))
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class RequestPlan:
    """The requests of a selection in image-first order, with what batching needs."""

    requests: list[Request]
    image_keys: list[str]
    token_estimates: np.ndarray

    def __len__(self) -> int:
        return len(self.requests)

    def subset(self, keep: np.ndarray) -> RequestPlan:
        index = np.flatnonzero(keep)
        return RequestPlan([self.requests[i] for i in index],
                           [self.image_keys[i] for i in index], self.token_estimates[index])


def _image_sizes(items: pa.Table) -> tuple[list[int | None], list[int | None]]:
    if "width" in items.column_names and "height" in items.column_names:
        return items.column("width").to_pylist(), items.column("height").to_pylist()
    return [None] * items.num_rows, [None] * items.num_rows


def _length_prefixed(column: pa.Array) -> pa.Array:
    """:func:`_field` over an Arrow string array: ``"~"`` for null, else ``"<length>:<text>"``."""
    lengths = pc.cast(pc.utf8_length(column), pa.string())
    return pc.fill_null(pc.binary_join_element_wise(lengths, column, ":"), "~")


def _affine_wrapper(preset: ModelPreset, wrap: Wrap,
                    component: str) -> tuple[str | None, str, str] | None:
    """``(system, before, after)`` when ``wrap`` on ``component`` is ``before + prompt + after``
    with a fixed system message (every preset wrapper is), else None."""
    probe = "\x00biovqa-probe\x00"
    system, text = wrap(preset, component, probe)
    if text.count(probe) != 1:
        return None
    before, after = text.split(probe)
    if wrap(preset, component, "q\ni") != (system, f"{before}q\ni{after}"):
        return None
    return system, before, after


def _wrapped_prompts(preset: ModelPreset, wrap: Wrap, components: pa.Array,
                     prompts: pa.Array) -> tuple[pa.Array, pa.Array]:
    """System message and user text of every row: vectorised where the wrapper is a fixed
    prefix/suffix, row by row otherwise."""
    names = sorted(set(pc.unique(components).to_pylist()))
    affine = {name: _affine_wrapper(preset, wrap, name) for name in names}
    if any(rule is None for rule in affine.values()):
        pairs = [wrap(preset, c, p) for c, p in zip(components.to_pylist(), prompts.to_pylist())]
        return (pa.array([s for s, _ in pairs], pa.string()),
                pa.array([u for _, u in pairs], pa.string()))
    system: pa.Array = pa.nulls(len(prompts), pa.string())
    user: pa.Array = prompts
    for name in names:
        system_message, before, after = affine[name]  # type: ignore[misc]
        wrapped = pc.binary_join_element_wise(before, prompts, after, "")
        if len(names) == 1:
            return pa.array([system_message] * len(prompts), pa.string()), wrapped
        mask = pc.equal(components, name)
        user = pc.if_else(mask, wrapped, user)
        system = pc.if_else(mask, pa.scalar(system_message, pa.string()), system)
    return system, user


def build_requests(bench: Bench, items: pa.Table, preset: ModelPreset, wrap: Wrap, model: str,
                   revision: str, *, max_new_tokens: int | None = None) -> RequestPlan:
    """One :class:`Request` per item, image-first order, keys as :func:`request_key` computes them.

    The user text is ``question + "\\n" + instruction`` (paper App. B.2) passed through the model's
    wrappers (system message, English prefix); an item's own ``system`` column replaces the
    preset's system message (:data:`SYSTEM_RULE`) and its ``prompt_mode`` (or the manifest's,
    :func:`item_modes`) sets ``Request.mode``. The token estimate is
    ``image_tokens(w, h) + ⌈len(system + user text) / 4⌉ + max_new_tokens``. The string work is
    done column-wise in Arrow; only hashing and the request records are per item.
    """
    items = order_image_first(items)
    n = items.num_rows
    image_key_column = image_keys(items)
    column = {c: items.column(c).combine_chunks() for c in
              ("item_id", "component", "task", "question", "instruction", "options", "image")}
    instruction = column["instruction"]
    has_instruction = pc.fill_null(pc.not_equal(instruction, ""), False)
    prompts = pc.if_else(has_instruction,
                         pc.binary_join_element_wise(column["question"], instruction, "\n"),
                         column["question"])
    system, user = _wrapped_prompts(preset, wrap, column["component"], prompts)
    if ITEM_SYSTEM_COLUMN in items.column_names:
        # [issue 14] an item's own system prompt replaces the preset's (SYSTEM_RULE)
        own = items.column(ITEM_SYSTEM_COLUMN).combine_chunks()
        has_own = pc.fill_null(pc.not_equal(own, ""), False)
        system = pc.if_else(has_own, own, system)
    components = column["component"].to_pylist()
    modes = item_modes(bench, items)
    caps_by_component = {c: int(max_new_tokens or preset.max_new_tokens(c))
                         for c in set(components)}
    caps = [caps_by_component[c] for c in components]
    if ITEM_CAP_COLUMN in items.column_names and not max_new_tokens:
        # [issue 14] an item's own cap (e.g. the HCA chain-of-thought variant) wins over the preset's
        caps = [cap if own is None else int(own)
                for cap, own in zip(caps, items.column(ITEM_CAP_COLUMN).to_pylist())]
    tails = {(cap, m): f"{_decoding_field(cap, m)}|{_field(model)}|{_field(revision)}"
             for cap, m in set(zip(caps, modes))}
    options = column["options"].to_pylist()
    encoded_options = ["~" if o is None else f"L{len(o)}" + "".join([f"{len(x)}:{x}" for x in o])
                       for o in options]
    payloads = pc.binary_join_element_wise(
        "biovqa-key/1", _length_prefixed(column["item_id"]),
        _length_prefixed(column["question"]), _length_prefixed(instruction),
        pa.array(encoded_options, pa.string()), _length_prefixed(image_key_column),
        _length_prefixed(system), _length_prefixed(user),
        pa.array([tails[(cap, m)] for cap, m in zip(caps, modes)], pa.string()), "|",
    )
    sha256 = hashlib.sha256
    keys = [sha256(p).hexdigest() for p in payloads.cast(pa.binary()).to_pylist()]

    images = column["image"].to_pylist()
    image_key_list = image_key_column.to_pylist()
    widths, heights = _image_sizes(items)
    resolved: dict[str | None, Path | None] = {}
    tokens_by_image: dict[str, int] = {}
    image_tokens = np.empty(n, dtype=np.int64)
    for row, (image, image_key, width, height) in enumerate(
            zip(images, image_key_list, widths, heights)):
        if image not in resolved:
            # [text-only items, issue 14] a null image is a request without an image
            resolved[image] = None if image is None else bench.resolve_image(image)
        tokens = 0 if image is None else tokens_by_image.get(image_key)
        if tokens is None:
            tokens = tokens_by_image[image_key] = int(preset.image_tokens(
                int(width or DEFAULT_IMAGE_SIZE[0]), int(height or DEFAULT_IMAGE_SIZE[1])))
        image_tokens[row] = tokens
    text_chars = (pc.utf8_length(user).to_numpy(zero_copy_only=False)
                  + pc.fill_null(pc.utf8_length(system), 0).to_numpy(zero_copy_only=False))
    estimates = (image_tokens + np.ceil(text_chars / CHARS_PER_TOKEN).astype(np.int64)
                 + np.array(caps, dtype=np.int64))
    requests = [
        Request(key=key, item_id=item_id, prompt=user_text, image_path=resolved[image],
                system=system_message, max_new_tokens=cap,
                options=None if opts is None else tuple(opts), task=task, mode=mode)
        for key, item_id, user_text, image, system_message, cap, opts, task, mode in zip(
            keys, column["item_id"].to_pylist(), user.to_pylist(), images, system.to_pylist(),
            caps, options, column["task"].to_pylist(), modes)
    ]
    return RequestPlan(requests, image_key_list, estimates)


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


# -- progress ------------------------------------------------------------------------------------
class LiveProgress:
    """Items done/total, items/s, tokens/s, failures, parse failures (when a check is given), ETA.

    On a terminal the line is redrawn at most every ``interval_s``; elsewhere a line is printed
    every ``log_every_s`` so that batch-job logs stay short.
    """

    def __init__(self, total: int, *, stream: Any = None, enabled: bool = True,
                 interval_s: float = 0.5, log_every_s: float = 30.0, skipped: int = 0,
                 parse_ok: Callable[[Request, Reply], bool] | None = None) -> None:
        self.total = total
        self.skipped = skipped
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.is_terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval_s = interval_s if self.is_terminal else log_every_s
        self.parse_ok = parse_ok
        self.done = 0
        self.failed = 0
        self.parse_failed = 0
        self.parse_checked = 0
        self.tokens = 0
        self.started = time.monotonic()
        self._last_draw = 0.0
        self._drawn_done = -1  # items done when the line was last drawn (close draws only news)

    def advance(self, requests: Sequence[Request], replies: Sequence[Reply]) -> None:
        self.done += len(replies)
        for request, reply in zip(requests, replies):
            if reply.status != "ok":
                self.failed += 1
            elif self.parse_ok is not None:
                self.parse_checked += 1
                self.parse_failed += not self.parse_ok(request, reply)
            self.tokens += (reply.prompt_tokens or 0) + (reply.completion_tokens or 0)
        now = time.monotonic()
        if self.enabled and now - self._last_draw >= self.interval_s:
            self._last_draw = now
            self._draw()

    def snapshot(self) -> dict[str, Any]:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        left = self.total - self.done
        return {
            "done": self.done, "total": self.total, "skipped": self.skipped,
            "failed": self.failed, "elapsed_s": elapsed, "items_per_s": rate,
            "tokens_per_s": self.tokens / elapsed,
            "parse_failure_rate": (self.parse_failed / self.parse_checked
                                   if self.parse_checked else None),
            "eta_s": left / rate if rate > 0 else None,
        }

    def render(self) -> str:
        s = self.snapshot()
        eta = "?" if s["eta_s"] is None else time.strftime("%H:%M:%S", time.gmtime(s["eta_s"]))
        parse = ("" if s["parse_failure_rate"] is None
                 else f" | parse failures {100 * s['parse_failure_rate']:.1f}%")
        return (f"{s['done']}/{s['total']} items ({s['skipped']} resumed) | "
                f"{s['items_per_s']:.1f} items/s | {s['tokens_per_s']:.0f} tokens/s | "
                f"{s['failed']} failed{parse} | ETA {eta}")

    def _draw(self) -> None:
        self._drawn_done = self.done
        line = self.render()
        if self.is_terminal:
            self.stream.write("\r\033[K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            if self._drawn_done != self.done or self.is_terminal:
                self._draw()  # a log already holding the final count does not get it twice
            if self.is_terminal:
                self.stream.write("\n")
                self.stream.flush()


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


# -- the run -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunOptions:
    """Everything ``biovqa run`` takes besides the benchmark and the output folder."""

    model: str | None = None
    backend: str = "transformers"
    backend_options: dict[str, Any] = field(default_factory=dict)
    selection: Selection = field(default_factory=Selection)
    executor: str = "inprocess"
    replicas: int | None = None
    gpus_per_replica: float | None = None
    ray_address: str | None = None
    batch_tokens: int | None = None
    max_batch_items: int | None = None
    max_new_tokens: int | None = None
    revision: str | None = None
    retry_failed: bool = False
    #: torch intra-op threads per worker (None: the physical cores shared among the workers)
    threads: int | None = None
    #: force this preset (a key of ``biovqa.engine.presets``) whatever the model argument is
    preset: str | None = None
    flush_rows: int = 4096
    flush_seconds: float = 10.0
    progress: bool = True


@dataclass(frozen=True)
class RunResult:
    """What a finished run wrote and did."""

    run_dir: Path
    predictions_path: Path
    card: dict[str, Any]
    selected: int
    resumed: int
    asked: int
    failed: int


def default_model(backend: str) -> str | None:
    return {"baseline": "baseline", "echo": "echo"}.get(backend)


def _resolved_revision(facts: dict[str, Any], options: RunOptions, preset: ModelPreset) -> str:
    for name in ("revision", "commit_hash", "resolved_revision"):
        value = facts.get(name)
        if value:
            return str(value)
    return str(options.revision or getattr(preset, "revision", None) or "unversioned")


def _check_replies(batch: Sequence[Request], replies: Sequence[Reply], backend: str) -> None:
    if len(replies) != len(batch) or any(r.key != q.key for q, r in zip(batch, replies)):
        raise BiovqaError(
            f"backend {backend!r} broke its contract: {len(batch)} requests in, "
            f"{len(replies)} replies out or keys out of order",
            hint="a backend must return one reply per request, in request order",
        )


def run_benchmark(bench_path: str | Path, out: str | Path, options: RunOptions, *,
                  progress_stream: Any = None) -> RunResult:
    """Run ``options.model`` on a benchmark folder into ``out`` (resuming what ``out`` holds).

    The run holds an exclusive lock on ``out`` for its whole life (a second run on the same folder
    is refused with the holder's pid); every reply and the run card pass through the run's
    :class:`~biovqa.engine.secrets.Redactor` before they are written."""
    locks: list[RunLock] = []
    try:
        return _run_locked(bench_path, out, options, progress_stream, locks)
    finally:
        for lock in locks:
            lock.release()


def _run_locked(bench_path: str | Path, out: str | Path, options: RunOptions,
                progress_stream: Any, locks: list[RunLock]) -> RunResult:
    from biovqa.engine.card import build_card, earlier_sessions
    from biovqa.engine.card import write_card as write_card_raw
    from biovqa.engine.executors import make_executor
    from biovqa.engine.identity import identity_digest, run_identity
    from biovqa.engine.presets import resolve_preset as match_preset
    from biovqa.engine.secrets import Redactor

    redactor = Redactor.for_options(options.backend_options)

    def write_card(run_dir: Path, card: dict[str, Any]) -> Path:
        card = redactor.value(card)
        redactions = redactor.summary()  # a server that echoed the key: say so in the card
        if redactions:
            card["redactions"] = redactions
        return write_card_raw(run_dir, card)

    started_wall = time.time()
    started = time.monotonic()
    bench = open_bench(bench_path)
    model = options.model or default_model(options.backend)
    if not model:
        raise BiovqaError("no model given", field="--model",
                          hint="give an HF id, a local checkpoint folder or a served model name")
    options = replace(options, model=model)
    selected_items = select_items(bench.items, options.selection)
    if selected_items.num_rows == 0:
        raise BiovqaError("the selection holds no items", file=bench.root,
                          hint="check --components/--tasks/--limit/--shard against the benchmark")
    preset, preset_match = match_preset(model, options.preset)
    wrap = resolve_preset(preset.key)[1]
    if (preset_match.get("matched_by") in ("config", "forced")
            and options.backend in ("transformers", "vllm")):
        # a local copy of a paper model (or a forced preset): the folder is still the checkpoint,
        # the preset gives the wrappers, caps and processor limits
        options = replace(options, backend_options={**options.backend_options, "preset": preset})
    all_components = sorted(set(bench.items.column("component").to_pylist()))
    prompting = prompting_facts(bench)
    template_hash = prompt_template_hash(preset, wrap, all_components, prompting)
    decoding = decoding_settings(preset, all_components, options.max_new_tokens)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    locks.append(RunLock(out).acquire())
    model_label = str(getattr(preset, "key", None) or model)
    # refuse a folder of another run before loading a model (revision and identity after)
    refuse_if_different(out, ModelFingerprint(model_label, "?", decoding).header(
        bench.manifest_sha256, template_hash), skip=("revision", "identity"))

    executor = make_executor(options, bench)
    try:
        executor.start()
        facts = executor.describe()
        revision = _resolved_revision(facts, options, preset)
        identity = run_identity(facts, {k: v for k, v in options.backend_options.items()
                                        if k != "preset"}, model)
        fingerprint = ModelFingerprint(model=model_label, revision=revision, decoding=decoding,
                                       identity=identity)
        header = fingerprint.header(bench.manifest_sha256, template_hash)
        store = PredictionStore.open(out, header, flush_rows=options.flush_rows,
                                     flush_seconds=options.flush_seconds)
        plan = build_requests(bench, selected_items, preset, wrap, model_label,
                              f"{revision}#{identity_digest(identity)}",
                              max_new_tokens=options.max_new_tokens)
        done = store.done_keys(retry_failed=options.retry_failed)
        todo = plan.subset(np.array([r.key not in done for r in plan.requests], dtype=bool))
        hints = executor.batch_hints()
        fallback = BACKEND_BATCH_DEFAULTS.get(options.backend,
                                              (DEFAULT_BATCH_TOKENS, DEFAULT_MAX_BATCH_ITEMS))
        ranges = make_batches(
            todo.image_keys, todo.token_estimates,
            batch_tokens=options.batch_tokens or hints.get("batch_tokens") or fallback[0],
            max_batch_items=options.max_batch_items or hints.get("max_batch_items") or fallback[1],
        )
        batches = [todo.requests[a:b] for a, b in ranges]
        progress = LiveProgress(len(todo), stream=progress_stream, enabled=options.progress,
                                skipped=len(plan) - len(todo))
        card_args: dict[str, Any] = {
            "bench": bench, "options": options, "facts": facts, "header": header,
            "selected": len(plan), "resumed": len(plan) - len(todo), "started": started_wall,
            "executor": executor.name, "earlier_sessions": earlier_sessions(out),
            "preset_match": preset_match,
            "subset": subset_facts(bench.items, selected_items, options.selection),
            "planned_tokens": int(plan.token_estimates.sum()),
            "prompting": prompting,
        }
        write_card(out, build_card(**card_args, status="running"))

        def on_batch(index: int, replies: list[Reply]) -> None:
            batch = batches[index]
            _check_replies(batch, replies, options.backend)
            replies = [redactor.reply(r) for r in replies]
            store.append([r.item_id for r in batch], replies, model_label)
            progress.advance(batch, replies)

        try:
            executor.run(batches, on_batch)
        except BaseException as exc:
            store.flush()  # keep every reply received so far; the same command resumes
            progress.close()
            status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            write_card(out, build_card(**card_args, status=status, ended=time.time(),
                                       progress=progress.snapshot()))
            if isinstance(exc, BiovqaError):
                exc.message = redactor.text(exc.message) or ""
                exc.args = (exc.render(),)
            raise
        store.flush()
        progress.close()
        if store.segments_written > 64 or len(store.segment_paths()) > 256:
            store.compact()
        table = store.materialize(keys=[r.key for r in plan.requests])
        card_args["facts"] = executor.describe()  # end-of-run facts (e.g. prefix-cache hit rate)
    finally:
        executor.close()
    elapsed = time.monotonic() - started
    failed = int(pc.sum(pc.equal(table.column("status"), "failed")).as_py() or 0)
    card = build_card(**card_args, status="complete", ended=time.time(), elapsed_s=elapsed,
                      progress=progress.snapshot(), predictions=table)
    write_card(out, card)
    return RunResult(run_dir=out, predictions_path=out / PREDICTIONS_FILE, card=card,
                     selected=len(plan), resumed=len(plan) - len(todo), asked=len(todo),
                     failed=failed)


# -- merge coverage ------------------------------------------------------------------------------
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
