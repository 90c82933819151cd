"""The ``vllm`` backend: vLLM's offline engine fed whole image-grouped batches, prefix caching on.

Why it is fast on this benchmark: an image carries up to ~35 questions (C2), and every question's
prompt starts with the same tokens — optional system turn, then the user turn's image — followed by
a short question text. With the image placed *before* the text (paper App. B.2) and the image's
questions sent together, vLLM's automatic prefix caching computes the image's vision tokens and
their KV cache once and reuses them for the other questions; the multimodal processor cache also
hashes the image bytes, so the image is preprocessed once.

How a batch is run (:meth:`VllmBackend.generate`):

1. :func:`group_by_image` orders the requests image by image (first appearance, stable inside a
   group) — the engine already hands batches in that order; this keeps the backend correct on any
   input order.
2. With ``prefix_warmup`` (default on) the first request of each image ("leaders") goes in one
   ``llm.chat`` call and all remaining requests ("followers") in a second call, so every follower
   finds its image prefix already computed (requests scheduled in the same engine step cannot
   always share blocks that are not yet computed). Without it, one call takes the whole batch.
   Either way the engine sees whole batches, never one request per call.
3. Raw-mode requests (``Request.mode == "raw"``, BAGEL paper App. A.1.2) go in their own
   ``llm.generate`` call with the raw prompt text (:func:`build_raw_inputs`: no chat template);
   a raw request with an image fails.
4. Replies are mapped back to request order.

The prefix-cache hit rate is measured from vLLM's per-request ``RequestOutput.num_cached_tokens``
(prompt tokens served from the cache) over ``len(prompt_token_ids)``, summed over the run, and
reported by :meth:`VllmBackend.describe` under ``prefix_cache``; where an older vLLM lacks that
field, the ``vllm:prefix_cache_hits`` / ``vllm:prefix_cache_queries`` counters of
``LLM.get_metrics()`` are used instead.

Everything except :func:`create` and :class:`VllmBackend`'s engine calls is pure and tested on
CPU; ``vllm`` is imported only inside :func:`create`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biovqa.errors import BiovqaError
from biovqa.engine.presets import ModelPreset, get_preset
from biovqa.engine.backends.base import Reply, Request, raw_prompt_text
from biovqa.engine.backends.openai import build_chat_messages, image_data_url

IMAGE_FORMATS = ("data_url", "pil")


# ------------------------------------------------------------------------------ pure helpers


def image_group_key(request: Request) -> str:
    """The grouping key of a request: its image path (text-only requests share one group)."""
    return "" if request.image_path is None else str(request.image_path)


def group_by_image(requests: Sequence[Request]) -> list[list[int]]:
    """Indices of ``requests`` grouped by image, groups in order of first appearance and indices
    ascending inside a group. Concatenated, the groups are a permutation of ``range(n)``."""
    groups: dict[str, list[int]] = {}
    for index, request in enumerate(requests):
        groups.setdefault(image_group_key(request), []).append(index)
    return list(groups.values())


def split_leaders(groups: Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    """(first index of every group, the remaining indices in group order): the two calls of the
    prefix warm-up. Text-only requests are all leaders (they share no image prefix)."""
    leaders: list[int] = []
    followers: list[int] = []
    for group in groups:
        if not group:
            continue
        leaders.append(group[0])
        followers.extend(group[1:])
    return leaders, followers


def execution_plan(requests: Sequence[Request], *, prefix_warmup: bool) -> list[list[int]]:
    """The ``llm.chat`` calls for one batch, as lists of request indices: one call with the whole
    image-grouped batch, or (warm-up) the group leaders then everyone else. Empty calls dropped."""
    groups = group_by_image(requests)
    if not prefix_warmup:
        return [[index for group in groups for index in group]] if requests else []
    text_only = [i for i, request in enumerate(requests) if request.image_path is None]
    image_groups = [group for group in groups if requests[group[0]].image_path is not None]
    leaders, followers = split_leaders(image_groups)
    calls = [leaders, followers + text_only]
    return [call for call in calls if call]


def image_content_part(image: Any, image_format: str) -> dict[str, Any]:
    """A chat content part for an image: a base64 data URL (``image``: a path) or, for ``pil``,
    vLLM's ``image_pil`` part (``image``: a PIL image)."""
    if image_format == "data_url":
        return {"type": "image_url", "image_url": {"url": image_data_url(image)}}
    if image_format == "pil":
        return {"type": "image_pil", "image_pil": image}
    raise BiovqaError(
        f"unknown image format {image_format!r}",
        field="image_format",
        hint=f"use one of {', '.join(IMAGE_FORMATS)}",
    )


def build_conversation(request: Request, image_part: dict[str, Any] | None) -> list[dict[str, Any]]:
    """OpenAI-style messages for vLLM's ``llm.chat``: system turn (if any), then the user turn
    with the image part first and the text second — the prefix-cache-friendly layout (everything
    before the question text is shared by all questions of an image)."""
    if image_part is None:
        return build_chat_messages(request, None)
    messages = build_chat_messages(request, "placeholder")
    messages[-1]["content"][0] = image_part
    return messages


def encode_images(
    requests: Sequence[Request], *, image_format: str = "data_url"
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Each distinct image of ``requests`` as a content part, encoded once: (parts by image key,
    error text by image key for images that cannot be read)."""
    parts: dict[str, dict[str, Any]] = {}
    errors: dict[str, str] = {}
    for request in requests:
        if request.image_path is None:
            continue
        key = image_group_key(request)
        if key in parts or key in errors:
            continue
        try:
            source: Any = Path(request.image_path)
            if image_format == "pil":
                from PIL import Image

                with Image.open(source) as image:
                    source = image.convert("RGB")
            parts[key] = image_content_part(source, image_format)
        except OSError as error:
            errors[key] = f"image: {error}"
    return parts, errors


def build_conversations(
    requests: Sequence[Request], indices: Iterable[int], parts: dict[str, dict[str, Any]]
) -> list[list[dict[str, Any]]]:
    """Conversations for ``requests[i]`` for i in ``indices``, image parts from ``parts``."""
    return [
        build_conversation(
            requests[index],
            None if requests[index].image_path is None else parts[image_group_key(requests[index])],
        )
        for index in indices
    ]


def build_raw_inputs(requests: Sequence[Request], indices: Iterable[int]) -> list[dict[str, str]]:
    """``llm.generate`` prompts for the raw-mode ``requests[i]``: ``{"prompt": text}`` with the
    exact completion text (:func:`~biovqa.engine.backends.base.raw_prompt_text`)."""
    return [{"prompt": raw_prompt_text(requests[index])} for index in indices]


def split_modes(requests: Sequence[Request], call: Sequence[int]) -> list[tuple[str, list[int]]]:
    """A call's indices split by request mode — ``("chat", …)`` then ``("raw", …)`` — empty
    parts dropped (order kept inside each)."""
    chat = [i for i in call if requests[i].mode != "raw"]
    raw = [i for i in call if requests[i].mode == "raw"]
    return [(mode, part) for mode, part in (("chat", chat), ("raw", raw)) if part]


def sampling_settings(request: Request, *, seed: int = 0) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for a request: greedy, its token cap."""
    return {"temperature": 0.0, "top_p": 1.0, "max_tokens": int(request.max_new_tokens), "seed": seed}


@dataclass
class PrefixCacheCounter:
    """Running totals behind the prefix-cache hit rate: cached / prompt tokens."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    requests_with_counts: int = 0

    def add(self, prompt_tokens: int, cached_tokens: int | None) -> None:
        if cached_tokens is None:
            return
        self.prompt_tokens += int(prompt_tokens)
        self.cached_tokens += int(cached_tokens)
        self.requests_with_counts += 1

    @property
    def hit_rate(self) -> float | None:
        """cached_tokens / prompt_tokens (None before any counted request)."""
        return None if self.prompt_tokens == 0 else self.cached_tokens / self.prompt_tokens


def reply_from_output(request: Request, output: Any, latency_s: float) -> Reply:
    """A :class:`Reply` from one vLLM ``RequestOutput`` (first completion)."""
    completion = output.outputs[0]
    finish = getattr(completion, "finish_reason", None)
    if finish == "abort" or completion.text is None:
        return Reply(key=request.key, text=None, status="failed", error=f"vllm finish_reason={finish}")
    return Reply(
        key=request.key,
        text=completion.text,
        latency_s=latency_s,
        prompt_tokens=len(output.prompt_token_ids or ()),
        completion_tokens=len(completion.token_ids or ()),
    )


def metrics_hit_rate(metrics: Iterable[Any]) -> tuple[int, int] | None:
    """(hits, queries) from ``LLM.get_metrics()`` counters, or None when they are missing."""
    values: dict[str, float] = {}
    for metric in metrics:
        name = getattr(metric, "name", "")
        if name in ("vllm:prefix_cache_hits", "vllm:prefix_cache_queries"):
            values[name] = values.get(name, 0.0) + float(getattr(metric, "value", 0.0))
    if "vllm:prefix_cache_queries" not in values:
        return None
    return int(values.get("vllm:prefix_cache_hits", 0.0)), int(values["vllm:prefix_cache_queries"])


# ------------------------------------------------------------------------------------ backend


class VllmBackend:
    """Whole image-grouped batches through ``vllm.LLM.chat`` with prefix caching."""

    name = "vllm"

    def __init__(
        self,
        llm: Any,
        *,
        model: str,
        preset: ModelPreset,
        engine_options: dict[str, Any],
        prefix_warmup: bool = True,
        image_format: str = "data_url",
        seed: int = 0,
        revision: str | None = None,
        sampling_overrides: dict[str, Any] | None = None,
        batch_items: int = 2048,
        batch_tokens: int = 2_000_000,
        sampling_params_factory: Callable[..., Any] | None = None,
    ) -> None:
        self.llm = llm
        #: ``vllm.SamplingParams`` unless given (tests on machines without vLLM pass ``dict``).
        self._sampling_params_factory = sampling_params_factory
        self.sampling_overrides = dict(sampling_overrides or {})
        #: Batch hints for the engine [DEFAULT]: large image-grouped batches (vLLM schedules
        #: inside a call; bigger calls mean more prefix reuse and fuller GPU batches).
        self.max_batch_items = int(batch_items)
        self.batch_tokens = int(batch_tokens)
        self.model = model
        self.preset = preset
        self.engine_options = engine_options
        self.prefix_warmup = prefix_warmup
        self.image_format = image_format
        self.seed = seed
        self.revision = revision
        self.prefix_cache = PrefixCacheCounter()
        self.chat_calls = 0

    def generate(self, requests: Sequence[Request]) -> list[Reply]:
        """One reply per request, in request order; ≤ 2 ``llm.chat`` calls per batch (more
        only when the engine rejects a call and it is bisected to isolate the bad requests)."""
        replies: dict[int, Reply] = {}
        parts, image_errors = encode_images(requests, image_format=self.image_format)
        for index, request in enumerate(requests):
            error = image_errors.get(image_group_key(request))
            if request.mode == "raw" and request.image_path is not None:
                error = "a raw-mode (completion) request cannot carry an image"
            if request.image_path is not None and error is not None:
                replies[index] = Reply(key=request.key, text=None, status="failed", error=error)
        for call in execution_plan(requests, prefix_warmup=self.prefix_warmup):
            call = [index for index in call if index not in replies]
            for mode, part in split_modes(requests, call):
                self._run_call(requests, part, parts, replies, raw=mode == "raw")
        return [replies[index] for index in range(len(requests))]

    def _run_call(
        self,
        requests: Sequence[Request],
        call: list[int],
        parts: dict[str, dict[str, Any]],
        replies: dict[int, Reply],
        *,
        raw: bool = False,
    ) -> None:
        """One ``llm.chat`` over ``call`` (``raw``: one ``llm.generate`` over the raw prompts); if
        the engine rejects the call (a prompt longer than ``max_model_len``, say), bisect it so
        only the offending requests fail."""
        make_params = self._sampling_params_factory
        if make_params is None:
            from vllm import SamplingParams

            make_params = SamplingParams
        params = [
            make_params(**sampling_settings(requests[i], seed=self.seed), **self.sampling_overrides)
            for i in call
        ]
        started = time.perf_counter()
        try:
            if raw:
                outputs = self.llm.generate(build_raw_inputs(requests, call), sampling_params=params,
                                            use_tqdm=False)
            else:
                outputs = self.llm.chat(build_conversations(requests, call, parts),
                                        sampling_params=params, use_tqdm=False,
                                        add_generation_prompt=True)
        except Exception as error:  # noqa: BLE001 - recorded per request below
            if len(call) == 1:
                index = call[0]
                replies[index] = Reply(
                    key=requests[index].key, text=None, status="failed", error=repr(error)
                )
                return
            middle = len(call) // 2
            self._run_call(requests, call[:middle], parts, replies, raw=raw)
            self._run_call(requests, call[middle:], parts, replies, raw=raw)
            return
        self.chat_calls += 1
        latency = (time.perf_counter() - started) / max(1, len(call))
        for index, output in zip(call, outputs):
            replies[index] = reply_from_output(requests[index], output, latency)
            self.prefix_cache.add(
                len(output.prompt_token_ids or ()), getattr(output, "num_cached_tokens", None)
            )

    def prefix_cache_stats(self) -> dict[str, Any]:
        """Prefix-cache hit rate so far and where it came from."""
        if self.prefix_cache.requests_with_counts:
            return {
                "hit_rate": self.prefix_cache.hit_rate,
                "cached_prompt_tokens": self.prefix_cache.cached_tokens,
                "prompt_tokens": self.prefix_cache.prompt_tokens,
                "source": "RequestOutput.num_cached_tokens",
            }
        try:
            counts = metrics_hit_rate(self.llm.get_metrics())
        except Exception:  # noqa: BLE001 - metrics are optional in older vLLM
            counts = None
        if counts is None:
            return {"hit_rate": None, "source": "unavailable"}
        hits, queries = counts
        return {
            "hit_rate": hits / queries if queries else None,
            "cached_prompt_tokens": hits,
            "prompt_tokens": queries,
            "source": "LLM.get_metrics() vllm:prefix_cache_hits/queries",
        }

    def describe(self) -> dict[str, Any]:
        """Run-card facts: vLLM/torch/CUDA versions, GPU, model and revision, engine options,
        decoding, and the prefix-cache hit rate so far."""
        import torch
        import vllm

        return {
            "backend": self.name,
            "backend_version": vllm.__version__,
            "vllm_version": vllm.__version__,
            "torch_version": torch.__version__,
            "cuda_version": torch.version.cuda,
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "model": self.model,
            "preset": self.preset.key,
            "revision": self.revision,
            "dtype": self.engine_options.get("dtype"),
            "engine": {k: v for k, v in self.engine_options.items() if k != "model"},
            "processor": {"min_pixels": self.preset.min_pixels, "max_pixels": self.preset.max_pixels},
            "decoding": {"temperature": 0.0, "top_p": 1.0, "seed": self.seed, **self.sampling_overrides},
            "prefix_warmup": self.prefix_warmup,
            "image_format": self.image_format,
            "chat_calls": self.chat_calls,
            "prefix_cache": self.prefix_cache_stats(),
        }

    def close(self) -> None:
        """Shut the engine down and free the GPU."""
        llm, self.llm = self.llm, None
        if llm is None:
            return
        try:
            engine = getattr(llm, "llm_engine", None)
            shutdown = getattr(engine, "shutdown", None) or getattr(
                getattr(engine, "engine_core", None), "shutdown", None
            )
            if callable(shutdown):
                shutdown()
        finally:
            del llm
            import gc

            gc.collect()
            try:
                import torch

                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
            except ImportError:
                pass


def engine_options_for(model: str, preset: ModelPreset, options: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments of ``vllm.LLM`` for ``model``: prefix caching forced on, one image per
    prompt, the preset's dtype / pixel limits / remote-code flag unless overridden. Pure."""
    engine: dict[str, Any] = {
        "model": model,
        "dtype": options.pop("dtype", None) or preset.dtype,
        "trust_remote_code": options.pop("trust_remote_code", preset.trust_remote_code),
        "enable_prefix_caching": True,
        "limit_mm_per_prompt": {"image": 1},
        "seed": options.pop("seed", 0),
        "gpu_memory_utilization": options.pop("gpu_memory_utilization", 0.9),
        "tensor_parallel_size": options.pop("tensor_parallel_size", 1),
        "disable_log_stats": False,
    }
    revision = options.pop("revision", None) or preset.revision
    if revision:
        engine["revision"] = revision
    pixels = dict(preset.processor_options())
    for key in ("min_pixels", "max_pixels"):
        if options.get(key) is not None:
            pixels[key] = int(options.pop(key))
        else:
            options.pop(key, None)
    if pixels:
        engine["mm_processor_kwargs"] = pixels
    for key in (
        "max_model_len",
        "max_num_seqs",
        "max_num_batched_tokens",
        "enforce_eager",
        "quantization",
        "load_format",
    ):
        if key in options:
            engine[key] = options.pop(key)
    if options.pop("enable_prefix_caching", True) is False:
        warnings.warn("the vllm backend always enables prefix caching", RuntimeWarning, stacklevel=3)
    return engine


def _resolve_revision(model: str, revision: str | None, trust_remote_code: bool) -> str | None:
    if Path(model).exists():
        return f"local:{Path(model).resolve()}"
    try:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(
            model, revision=revision, trust_remote_code=trust_remote_code
        )
        return getattr(config, "_commit_hash", None) or revision
    except Exception:  # noqa: BLE001 - the revision is a run-card fact, not a requirement
        return revision


def create(model: str, **options: Any) -> VllmBackend:
    """Start a vLLM offline engine for ``model`` (preset key, HF id or local folder).

    Options: ``dtype``, ``tensor_parallel_size`` (1), ``gpu_memory_utilization`` (0.9),
    ``max_model_len``, ``max_num_seqs``, ``max_num_batched_tokens``, ``enforce_eager``,
    ``quantization``, ``revision``, ``trust_remote_code``, ``min_pixels``/``max_pixels``,
    ``seed`` (0), ``prefix_warmup`` (True), ``image_format`` (data_url|pil), ``load_format``
    (``"dummy"``: random weights, for benchmarks), ``sampling_overrides`` (extra
    ``SamplingParams`` fields, e.g. ``{"ignore_eos": True}`` for fixed-length benchmarks);
    ``preset``.
    """
    preset = options.pop("preset", None) or get_preset(model)
    checkpoint = (
        preset.checkpoint if model.lower() in (preset.key, preset.display_name.lower()) else model
    )
    prefix_warmup = bool(options.pop("prefix_warmup", True))
    image_format = options.pop("image_format", "data_url")
    sampling_overrides = options.pop("sampling_overrides", None)
    if image_format not in IMAGE_FORMATS:
        raise BiovqaError(
            f"unknown image format {image_format!r}",
            field="image_format",
            hint=f"use one of {', '.join(IMAGE_FORMATS)}",
        )
    batch_items = int(options.pop("batch_items", 2048))
    batch_tokens = int(options.pop("batch_tokens", 2_000_000))
    options.pop("batch_size", None)  # the engine's token budget bounds batches; vLLM schedules
    options.pop("device", None)
    engine = engine_options_for(checkpoint, preset, options)
    if options:
        warnings.warn(f"vllm backend ignores options {sorted(options)}", RuntimeWarning, stacklevel=2)
    try:
        from vllm import LLM
    except ImportError as error:
        raise BiovqaError(
            "the vllm backend needs the vllm package (a CUDA build)",
            field="backend",
            hint="pip install 'biovqa[vllm]' on a GPU machine, or use --backend transformers",
        ) from error
    llm = LLM(**engine)
    return VllmBackend(
        llm,
        model=checkpoint,
        preset=preset,
        engine_options=engine,
        prefix_warmup=prefix_warmup,
        image_format=image_format,
        seed=engine["seed"],
        sampling_overrides=sampling_overrides,
        batch_items=batch_items,
        batch_tokens=batch_tokens,
        revision=_resolve_revision(checkpoint, engine.get("revision"), engine["trust_remote_code"]),
    )
