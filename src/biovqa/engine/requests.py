"""Requests: one per selected item, in image-first order, with its prompt, image, token cap, mode and key.

The user text is ``question + "\\n" + instruction`` (paper App. B.2) passed through the model
preset's wrappers; an item may carry its own system prompt, request mode and token cap. The key
(:func:`request_key`) hashes the item's content, the exact prompt, the mode, the model and the
decoding, so that a store resumes only what was asked the same way. The string work is done
column-wise in Arrow; only hashing and the request records are per item.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biovqa.bench import Bench
from biovqa.engine.backends.base import Request
from biovqa.engine.presets import ModelPreset
from biovqa.engine.selection import image_keys, order_image_first
from biovqa.errors import BiovqaError

#: Applies a model's wrappers: ``(preset, component, prompt) -> (system message, user text)``.
Wrap = Callable[[ModelPreset, str, str], tuple[str | None, str]]

#: Characters per text token for estimates when no tokenizer is at hand [DEFAULT].
CHARS_PER_TOKEN = 4.0
#: Image size assumed for token estimates when the items table records none [DEFAULT].
DEFAULT_IMAGE_SIZE = (1024, 768)


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
    ``parameters.prompt_mode`` (or the parameter the benchmark's component declares as its
    ``request_mode_parameter``: BAGEL's builds record ``mode``), else "chat"."""
    from biovqa.engine.backends.base import REQUEST_MODES

    if ITEM_MODE_COLUMN in items.column_names:
        modes = [m or "chat" for m in items.column(ITEM_MODE_COLUMN).to_pylist()]
    else:
        parameters = bench.manifest.get("parameters") or {}
        mode = parameters.get("prompt_mode")
        component = bench.manifest.get("component")
        from biovqa.components.registry import find_component

        declared = find_component(component) if mode is None and isinstance(component, str) else None
        if declared is not None and declared.request_mode_parameter:
            mode = parameters.get(declared.request_mode_parameter)
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



# -- keys and requests -----------------------------------------------------------------------------
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
        # an item's own system prompt (HCA items carry one) replaces the preset's (SYSTEM_RULE)
        own = items.column(ITEM_SYSTEM_COLUMN).combine_chunks()
        has_own = pc.fill_null(pc.not_equal(own, ""), False)
        system = pc.if_else(has_own, own, system)
    components = column["component"].to_pylist()
    modes = item_modes(bench, items)
    caps_by_component = {c: int(max_new_tokens or preset.max_new_tokens(c))
                         for c in set(components)}
    caps = [caps_by_component[c] for c in components]
    if ITEM_CAP_COLUMN in items.column_names and not max_new_tokens:
        # an item's own cap (e.g. the HCA chain-of-thought variant) wins over the component's
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
            # a text-only item (null image: the text suites) is a request without an image
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
