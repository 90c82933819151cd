"""One prefill per image for the ``transformers`` backend (``--option shared_prefix=true``).

Bio-VQA asks several questions of every image (about 9 per C1 image, 35 per C2 image), and the
engine hands an image's questions over consecutively with the image first in the user turn, so
their prompts share a long token prefix: the chat template's opening, the system message if any,
and every image token. Here that prefix is run through the model **once** (vision encoder
included), its KV cache is repeated across the image's questions, and all of them are decoded
together from it:

    prefix  = longest common token prefix of the questions' prompts (it must hold every image token)
    cache   = model(prefix, pixel_values)                           # one prefill, batch 1
    cache  ← cache repeated K times                                 # K = the image's questions
    step 0  : model(suffixes, padded between prefix and suffix, masked, positions L, L+1, …)
    step t  : model(next tokens)                                    # greedy, until EOS or cap

Pads sit between the prefix and each suffix and are masked out; positions continue from the prefix
as if there were no pads, so every question sees exactly the tokens (and positions) of its own
unpadded prompt. Greedy decoding then gives the plain path's tokens (the tests check token-for-token
equality on the tiny LLaVA, Gemma 3, Qwen2-VL, Qwen2.5-VL and Qwen3-VL, C1- and C2-shaped; Qwen3-VL's
DeepStack vision features enter the text layers at the image tokens, all inside the prefill).
Anything this path cannot do exactly —
an image token outside the common prefix, logits processors in the checkpoint's generation config
(repetition penalty, …), a model without a dynamic cache — falls back to the plain path. Models
with sliding-window layers (Gemma 3) decode only equal-length suffixes together (no pads).
Models with multimodal rotary positions (Qwen2-VL, Qwen2.5-VL, Qwen3-VL) get every position
explicitly — the prefix's and each suffix's 3-D positions from the model's own rope index over
that question's whole unpadded prompt — so neither the positions the model would infer from the
padded batch nor the ``rope_deltas`` it keeps between calls are used. Processors that flatten
image patches across a batch (Qwen-VL) have the prefix's pixels taken from the first question
encoded on its own.

Every group that does not take this path goes through the plain one; the backend counts both,
with the reasons, in the run card (``describe()["shared_prefix"]``).
"""

from __future__ import annotations

import copy
import time
from typing import Any

from biovqa.engine.backends.base import Reply, Request, build_messages

#: generation-config settings that would make ``generate`` differ from plain greedy argmax.
_PROCESSOR_SETTINGS = {
    "repetition_penalty": (None, 1.0),
    "no_repeat_ngram_size": (None, 0),
    "encoder_no_repeat_ngram_size": (None, 0),
    "bad_words_ids": (None,),
    "suppress_tokens": (None,),
    "begin_suppress_tokens": (None,),
    "forced_bos_token_id": (None,),
    "forced_decoder_ids": (None,),
    "sequence_bias": (None,),
    "min_new_tokens": (None, 0),
}


class PrefixUnsupported(Exception):
    """This group cannot take the shared-prefix path exactly; use the plain one."""


def greedy_is_plain_argmax(generation_config: Any) -> bool:
    """Whether ``generate(do_sample=False, num_beams=1)`` is a plain argmax for this config."""
    for name, neutral in _PROCESSOR_SETTINGS.items():
        if getattr(generation_config, name, None) not in neutral:
            return False
    min_length = getattr(generation_config, "min_length", 0) or 0
    return min_length <= 0


def _image_token_id(model: Any) -> int | None:
    config = model.config
    for name in ("image_token_id", "image_token_index"):
        value = getattr(config, name, None)
        if isinstance(value, int):
            return value
    return None


def shared_prefix_generate(backend: Any, requests: list[Request], image: Any) -> list[Reply]:
    """Replies to ``requests`` (all about ``image``) from one prefill of their common prefix.

    Raises :class:`PrefixUnsupported` when the group cannot be decoded exactly this way.
    """
    torch = backend._torch
    model = backend.model
    started = time.perf_counter()
    if getattr(backend, "text_only", False):
        raise PrefixUnsupported("a text-only model has no image prefix to share")
    if not greedy_is_plain_argmax(model.generation_config):
        raise PrefixUnsupported("the generation config adds logits processors")
    if any(r.mode != "chat" for r in requests):
        raise PrefixUnsupported("raw-mode requests have no chat prefix to share")
    render = getattr(backend, "prompt_text", None)
    texts = [render(r) if render is not None else backend.processor.apply_chat_template(
        build_messages(r), add_generation_prompt=True, tokenize=False) for r in requests]
    encoded = backend.processor(text=texts, images=[[image] for _ in requests], padding=True,
                                return_tensors="pt")
    mask = encoded["attention_mask"].bool()
    rows = [encoded["input_ids"][i][mask[i]] for i in range(len(requests))]
    shortest = min(len(r) for r in rows)
    first = rows[0]
    common = shortest
    for row in rows[1:]:
        same = (row[:shortest] == first[:shortest]).int()
        differ = (same == 0).nonzero()
        if len(differ):
            common = min(common, int(differ[0]))
    common = min(common, shortest - 1)  # every question keeps at least one token of its own
    image_token = _image_token_id(model)
    if image_token is None:
        raise PrefixUnsupported("the model config names no image token")
    for row in rows:
        positions = (row == image_token).nonzero()
        if len(positions) == 0 or int(positions[-1]) >= common:
            raise PrefixUnsupported("an image token lies outside the common prefix")
    device = backend.device
    prefix = first[:common].unsqueeze(0).to(device)
    extras = _prefix_inputs(backend, encoded, texts[0], image, first, common)
    if "pixel_values" in extras and extras["pixel_values"].is_floating_point():
        extras["pixel_values"] = extras["pixel_values"].to(model.dtype)
    # Multimodal RoPE (Qwen-VL): each question's 3-D positions come from the model's own rope
    # index over its whole unpadded prompt; the prefix and every suffix get theirs explicitly
    # (nothing is left to the positions and ``rope_deltas`` the model would infer and keep).
    rope_positions = _mrope_positions(model, encoded, mask, rows) if _uses_mrope(model) else None
    if rope_positions is not None:
        extras["position_ids"] = rope_positions[0][:, None, :common].to(device)
    extras.update(_last_logits_only(model))
    with torch.inference_mode():
        out = model(input_ids=prefix, attention_mask=torch.ones_like(prefix), use_cache=True,
                    **extras)
    cache = getattr(out, "cache", None) or out.past_key_values
    if not hasattr(cache, "batch_repeat_interleave"):
        raise PrefixUnsupported("the model's cache cannot be repeated across questions")
    suffixes = [row[common:] for row in rows]
    # Sliding-window layers count cache slots, pads included: there, only questions whose suffixes
    # have the same length (no pads) share a decoding batch; elsewhere all of them do.
    by_length = _has_sliding_window(model)
    groups: dict[int, list[int]] = {}
    for index, suffix in enumerate(suffixes):
        groups.setdefault(len(suffix) if by_length else 0, []).append(index)
    generated: list[list[int]] = [[] for _ in requests]
    members_list = list(groups.values())
    for number, members in enumerate(members_list):
        # the last group may consume the prefix cache itself; the others work on copies
        own = cache if number == len(members_list) - 1 else copy.deepcopy(cache)
        for index, tokens in zip(members, _decode(
                backend, own, common, [suffixes[i] for i in members],
                [requests[i].max_new_tokens for i in members],
                None if rope_positions is None else [rope_positions[i][:, common:]
                                                     for i in members])):
            generated[index] = tokens
    count = len(requests)
    latency = (time.perf_counter() - started) / count
    return [
        Reply(key=request.key, text=backend.tokenizer.decode(kept, skip_special_tokens=True),
              latency_s=latency, prompt_tokens=len(row), completion_tokens=len(kept))
        for request, kept, row in zip(requests, generated, rows)
    ]


def _prefix_inputs(backend: Any, encoded: Any, text: str, image: Any, row: Any,
                   common: int) -> dict[str, Any]:
    """The processor's non-token inputs (pixels, grids, token types…) for the prefix alone.

    Where every input of the batch encoding is one row per question (LLaVA, Gemma 3) the first
    row is taken. Processors that flatten image patches across the batch (Qwen-VL's
    ``pixel_values`` is ``(patches of all images, features)`` with ``image_grid_thw`` per image)
    have no such row: the first question is encoded again on its own, which gives its pixels and
    grid exactly as the plain path computes them.
    """
    count = len(encoded["input_ids"])
    per_row = all(not hasattr(value, "shape") or (len(value.shape) and value.shape[0] == count)
                  for value in encoded.values())
    source = encoded
    if not per_row:
        source = backend.processor(text=[text], images=[[image]], return_tensors="pt")
    own_mask = source["attention_mask"][0].bool()
    if not bool((source["input_ids"][0][own_mask][:common] == row[:common]).all()):
        raise PrefixUnsupported("the first question encodes differently on its own")
    device = backend.device
    extras: dict[str, Any] = {}
    for name, value in source.items():
        if name in ("input_ids", "attention_mask"):
            continue
        if name in ("token_type_ids", "mm_token_type_ids"):
            extras[name] = value[0][own_mask][:common].unsqueeze(0).to(device)
        elif hasattr(value, "shape") and len(value.shape) and value.shape[0] == len(source["input_ids"]):
            extras[name] = value[:1].to(device)
        else:
            extras[name] = value.to(device) if hasattr(value, "to") else value
    return extras


def _last_logits_only(model: Any) -> dict[str, Any]:
    """``logits_to_keep=1`` where forward takes it: only the last position's logits are used, and
    a full ``(questions × suffix length × vocabulary)`` logits tensor is most of step 0's time
    and memory with a 150k vocabulary (as ``generate`` does)."""
    import inspect

    parameters = inspect.signature(model.forward).parameters
    return {"logits_to_keep": 1} if "logits_to_keep" in parameters else {}


def _cache_keyword(model: Any) -> str:
    """``cache`` (transformers ≥ 5.2x) or ``past_key_values`` (older), whichever forward takes."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _has_sliding_window(model: Any) -> bool:
    config = getattr(model.config, "text_config", None) or model.config
    layer_types = getattr(config, "layer_types", None) or []
    return bool(getattr(config, "sliding_window", None)) and (
        not layer_types or any("sliding" in str(t) for t in layer_types))


def _uses_mrope(model: Any) -> bool:
    """Whether the model places tokens with multimodal rotary positions (Qwen2/2.5/3-VL)."""
    config = model.config
    text = getattr(config, "text_config", None) or config
    for candidate in (config, text):
        for name in ("rope_scaling", "rope_parameters"):
            value = getattr(candidate, name, None)
            if isinstance(value, dict) and "mrope_section" in value:
                return True
    return str(getattr(config, "model_type", "")).startswith(("qwen2_vl", "qwen2_5_vl", "qwen3_vl"))


def _mrope_positions(model: Any, encoded: Any, mask: Any, rows: list[Any]) -> list[Any]:
    """Each row's ``(3, length)`` multimodal rotary positions from the model's rope index."""
    import torch

    owner: Any = model if hasattr(model, "get_rope_index") else getattr(model, "model", None)
    rope_index = getattr(owner, "get_rope_index", None)
    if owner is None or rope_index is None or "image_grid_thw" not in encoded:
        raise PrefixUnsupported("no rope index for this multimodal-rotary model")
    found = []
    for index, row in enumerate(rows):
        options: dict[str, Any] = {"image_grid_thw": encoded["image_grid_thw"][index:index + 1],
                                   "attention_mask": torch.ones((1, len(row)), dtype=torch.long)}
        if "mm_token_type_ids" in encoded:
            options["mm_token_type_ids"] = encoded["mm_token_type_ids"][index][mask[index]][None]
        try:
            positions, _ = rope_index(row[None].to(owner.device), **{
                k: v.to(owner.device) for k, v in options.items()})
        except (TypeError, ValueError, RuntimeError) as error:
            raise PrefixUnsupported(f"rope index failed: {error}") from None
        found.append(positions[:, 0, :].cpu())
    return found


def _decode(backend: Any, cache: Any, common: int, suffixes: list[Any],
            caps: list[int], rope_positions: list[Any] | None = None) -> list[list[int]]:
    """Greedy tokens of each suffix continued from ``cache`` (the prefix's, batch 1)."""
    torch = backend._torch
    model = backend.model
    device = backend.device
    count = len(suffixes)
    cap = max(caps)
    width = max(len(s) for s in suffixes)
    pad = backend.pad_token_id if backend.pad_token_id is not None else 0
    suffix_ids = torch.full((count, width), int(pad), dtype=torch.long)
    suffix_mask = torch.zeros((count, width), dtype=torch.long)
    for index, suffix in enumerate(suffixes):
        suffix_ids[index, width - len(suffix):] = suffix
        suffix_mask[index, width - len(suffix):] = 1
    generated: list[list[int]] = [[] for _ in suffixes]
    with torch.inference_mode():
        if count > 1:
            cache.batch_repeat_interleave(count)
        attention = torch.cat([torch.ones((count, common), dtype=torch.long), suffix_mask],
                              dim=1).to(device)
        positions = (common + suffix_mask.cumsum(-1) - 1).clamp(min=common).to(device)
        if rope_positions is not None:  # (3, count, width), right-aligned like the suffixes
            grid = torch.zeros((3, count, width), dtype=torch.long)
            for index, rows in enumerate(rope_positions):
                grid[:, index, width - rows.shape[1]:] = rows
            positions = grid.to(device)
        placed = {"position_ids": positions, **_last_logits_only(model)}
        out = model(input_ids=suffix_ids.to(device), attention_mask=attention, **placed,
                    **{_cache_keyword(model): cache}, use_cache=True,
                    cache_position=torch.arange(common, common + width, device=device))
        next_position = positions[..., -1:] + 1
        length = common + width
        finished = [False] * count
        for step in range(cap):
            tokens = out.logits[:, -1, :].argmax(dim=-1)
            for index, token in enumerate(tokens.tolist()):
                if finished[index]:
                    continue
                if token in backend.stop_token_ids or token == backend.pad_token_id:
                    finished[index] = True
                    continue
                generated[index].append(int(token))
                if len(generated[index]) >= caps[index]:
                    finished[index] = True
            if all(finished) or step == cap - 1:
                break
            attention = torch.cat([attention, torch.ones((count, 1), dtype=torch.long,
                                                         device=device)], dim=1)
            placed = {"position_ids": next_position}
            out = model(input_ids=tokens.unsqueeze(1), attention_mask=attention, **placed,
                        **{_cache_keyword(model): cache}, use_cache=True,
                        cache_position=torch.tensor([length], device=device))
            next_position = next_position + 1
            length += 1
    return generated
