"""The ``transformers`` backend: a local VLM through ``AutoModelForImageTextToText``.

Each batch is rendered with the checkpoint's chat template (the image before the text in the user
turn, paper App. B.2), tokenised left-padded by ``AutoProcessor`` and decoded greedily
(``do_sample=False``, one beam) with ``max_new_tokens`` from the requests. Requests in one batch
may have different caps: the batch generates up to the largest cap and each reply keeps only its
own first ``max_new_tokens`` tokens, which for greedy decoding equals generating with that cap.

System messages (``Request.system``: an item's own system prompt or the preset's) go in a
system turn when the checkpoint's chat template has one. At load the template is probed
(:meth:`TransformersBackend._probe_system_handling`) and ``describe()`` records the outcome as
``system_prompt_handling``: ``system-turn`` (its own turn), ``merged-by-template`` (the template
itself puts the system text before the first user text, as Gemma 3's does — Gemma has no system
role), or ``prepended-to-user-text`` (the template refuses or silently drops a system turn:
biovqa puts ``system + "\\n\\n"`` before the user text itself, so the instruction is never lost).

Raw-mode requests (``Request.mode == "raw"``, BAGEL paper App. A.1.2) skip the chat template: the text of
:func:`~biovqa.engine.backends.base.raw_prompt_text` is tokenised as it is (the tokenizer's own
special tokens, as ``transformers serve``'s ``/v1/completions`` does). A raw request with an image
fails (raw completion has no place for one).

Failures stay per request: an unreadable image fails that request only; an error inside
``generate`` (out of memory, say) retries the batch one request at a time, and a request that
still fails becomes ``status="failed"`` with the error text.

torch and transformers are imported inside :func:`create`, never at package import.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from biovqa.errors import BiovqaError, MissingResourceError
from biovqa.engine.presets import ModelPreset, get_preset
from biovqa.engine.backends.base import (Reply, Request, build_messages, build_text_messages, raw_prompt_text,
                                         system_in_user_text)

#: Options :func:`create` understands; anything else is reported in ``describe()``.
KNOWN_OPTIONS = (
    "dtype",
    "device",
    "batch_size",
    "revision",
    "trust_remote_code",
    "min_pixels",
    "max_pixels",
    "attn_implementation",
    "preset",
    "shared_prefix",
    "text_only",  # a causal LM for text-only benches
)

_DTYPE_NAMES = ("auto", "float32", "float16", "bfloat16")
#: ``describe()["system_prompt_handling"]`` values (see the module docstring).
SYSTEM_HANDLINGS = ("system-turn", "merged-by-template", "prepended-to-user-text", "no-chat-template")


def _load_image(path: Path):  # -> PIL.Image.Image
    from PIL import Image

    with Image.open(path) as image:
        return image.convert("RGB")


class TransformersBackend:
    """Greedy batched generation with a Hugging Face image-text-to-text model."""

    name = "transformers"

    def __init__(
        self,
        model: str,
        *,
        preset: ModelPreset,
        dtype: str = "auto",
        device: str = "auto",
        batch_size: int = 8,
        revision: str | None = None,
        trust_remote_code: bool | None = None,
        min_pixels: int | None = None,
        max_pixels: int | None = None,
        attn_implementation: str | None = None,
        shared_prefix: bool = False,
        text_only: bool = False,
        ignored_options: dict[str, Any] | None = None,
    ) -> None:
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

        from biovqa.engine.backends.processors import load_processor

        if dtype not in _DTYPE_NAMES:
            raise BiovqaError(
                f"unknown dtype {dtype!r}", field="dtype", hint=f"use one of {', '.join(_DTYPE_NAMES)}"
            )
        if batch_size < 1:
            raise BiovqaError(f"batch_size must be ≥ 1, got {batch_size}", field="batch_size")
        self._torch = torch
        self._transformers_version = transformers.__version__
        self.preset = preset
        self.model_id = model
        self.batch_size = int(batch_size)
        #: one prefill per image, its questions decoded from a shared KV cache (backends/prefix.py)
        self.shared_prefix = bool(shared_prefix)
        #: Batch hint for the engine: hand over batches of about one generate call each.
        self.max_batch_items = self.batch_size
        self.ignored_options = dict(ignored_options or {})
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = device
        if dtype == "auto":
            dtype = preset.dtype if device.startswith("cuda") else "float32"
        self.dtype_name = dtype
        revision = revision or preset.revision
        trust = preset.trust_remote_code if trust_remote_code is None else bool(trust_remote_code)
        processor_options: dict[str, Any] = dict(preset.processor_options())
        if min_pixels is not None:
            processor_options["min_pixels"] = int(min_pixels)
        if max_pixels is not None:
            processor_options["max_pixels"] = int(max_pixels)
        load_options: dict[str, Any] = {"trust_remote_code": trust}
        if revision:
            load_options["revision"] = revision
        try:
            # without torchvision, Qwen-VL processors are assembled from their PIL pieces
            self.processor, self.processor_source = load_processor(
                model, **load_options, **processor_options)
            model_options: dict[str, Any] = dict(load_options, dtype=getattr(torch, dtype))
            if attn_implementation:
                model_options["attn_implementation"] = attn_implementation
            # text_only=true: a causal-LM checkpoint (no vision tower)
            # answers text-only items
            self.text_only = bool(text_only)
            model_class: Any = AutoModelForCausalLM if self.text_only else AutoModelForImageTextToText
            loaded: Any = model_class.from_pretrained(model, **model_options)
        except ValueError as error:
            # A custom-code checkpoint not registered for image-text-to-text (Phi-3.5-Vision,
            # Molmo2): transformers says "Unrecognized configuration class ...".
            raise BiovqaError(
                f"{model!r} cannot be loaded as an image-text-to-text model: {error}",
                field="model",
                hint="run it with --backend vllm, or serve it and use --backend openai",
            ) from error
        except OSError as error:
            raise MissingResourceError(
                f"cannot load model {model!r}: {error}",
                field="model",
                hint="pass a local checkpoint folder or a Hugging Face id that is cached "
                "(HF_HUB_OFFLINE=1 needs the files on disk)",
            ) from error
        self.model: Any = loaded.to(device).eval()
        # a text-only LM's "processor" is the tokenizer itself
        tokenizer = self.processor if self.text_only else getattr(self.processor, "tokenizer", None)
        if tokenizer is None:
            raise BiovqaError(f"the processor of {model!r} has no tokenizer", field="model")
        tokenizer.padding_side = "left"
        self.tokenizer = tokenizer
        self.pad_token_id = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        )
        eos = self.model.generation_config.eos_token_id
        eos_ids = eos if isinstance(eos, list) else [eos]
        if tokenizer.eos_token_id is not None:
            eos_ids.append(tokenizer.eos_token_id)
        self.stop_token_ids = frozenset(int(t) for t in eos_ids if t is not None)
        self.resolved_revision = self._resolve_revision(model, revision)
        self.system_handling = self._probe_system_handling()

    # ------------------------------------------------------------------------------ prompts
    def _render_chat(self, request: Request) -> str:
        messages = build_text_messages(request) if self.text_only else build_messages(request)
        return str(self.processor.apply_chat_template(messages, add_generation_prompt=True,
                                                      tokenize=False))

    def _probe_system_handling(self) -> str:
        """How the chat template treats a system message (one of :data:`SYSTEM_HANDLINGS`): it is
        rendered with a marker system message and compared with the marker put before the user
        text by hand."""
        system, user = "BIOVQA-SYSTEM-PROBE", "BIOVQA-USER-PROBE"
        try:
            self._render_chat(Request(key="", item_id="", prompt=user))
        except Exception:  # noqa: BLE001 - no usable chat template at all
            return "no-chat-template"
        try:
            with_system = self._render_chat(Request(key="", item_id="", prompt=user, system=system))
        except Exception:  # noqa: BLE001 - the template refuses a system turn
            return "prepended-to-user-text"
        if system not in with_system:
            return "prepended-to-user-text"
        merged = self._render_chat(Request(key="", item_id="",
                                           prompt=system_in_user_text(system, user)))
        return "merged-by-template" if merged == with_system else "system-turn"

    def prepare(self, request: Request) -> Request:
        """The request as this model gets it: a system message moved before the user text where
        the template has no system role (``prepended-to-user-text``)."""
        # (getattr: benchmarks/gpu builds a backend around a loaded model without __init__)
        if (request.mode == "chat" and request.system
                and getattr(self, "system_handling", "system-turn") == "prepended-to-user-text"):
            return replace(request, prompt=system_in_user_text(request.system, request.prompt),
                           system=None)
        return request

    def prompt_text(self, request: Request) -> str:
        """The exact text tokenised for ``request``: the chat template's rendering, or the raw
        completion text."""
        if request.mode == "raw":
            return raw_prompt_text(request)
        return self._render_chat(request)

    # ---------------------------------------------------------------------------------- describe
    def _resolve_revision(self, model: str, revision: str | None) -> str:
        commit = getattr(self.model.config, "_commit_hash", None)
        if commit:
            return str(commit)
        if Path(model).exists():
            return f"local:{Path(model).resolve()}"
        return revision or "unknown"

    def _pixel_limits(self) -> dict[str, Any]:
        image_processor = getattr(self.processor, "image_processor", None)
        if image_processor is None:
            return {"min_pixels": None, "max_pixels": None, "size": None}
        size = getattr(image_processor, "size", None)
        if size is None or isinstance(size, dict):
            size_dict = size
        elif hasattr(size, "__dict__") or hasattr(size, "__dataclass_fields__"):
            fields = getattr(size, "__dataclass_fields__", None) or vars(size)
            size_dict = {name: getattr(size, name) for name in fields if getattr(size, name) is not None}
        else:
            size_dict = {"value": str(size)}
        min_pixels = getattr(image_processor, "min_pixels", None)
        max_pixels = getattr(image_processor, "max_pixels", None)
        if size_dict and min_pixels is None:
            min_pixels, max_pixels = size_dict.get("min_pixels"), size_dict.get("max_pixels")
        if size_dict and min_pixels is None and set(size_dict) == {"shortest_edge", "longest_edge"}:
            # Qwen-VL processors keep their pixel limits as size = {shortest_edge: min_pixels,
            # longest_edge: max_pixels} (pixel counts, not side lengths).
            min_pixels, max_pixels = size_dict["shortest_edge"], size_dict["longest_edge"]
        return {"min_pixels": min_pixels, "max_pixels": max_pixels, "size": size_dict}

    def _chat_template_sha256(self) -> str | None:
        """sha256 of the checkpoint's own chat template(s) (processor and tokenizer), so that the
        run identity changes when the template does."""
        import hashlib
        import json

        templates = {
            "processor": getattr(self.processor, "chat_template", None),
            "tokenizer": getattr(self.tokenizer, "chat_template", None),
        }
        if not any(templates.values()):
            return None
        text = json.dumps(templates, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def _processor_settings_sha256(self) -> str | None:
        """sha256 of every image-processor setting (size, pixel limits, mean/std, resampling,
        crops) and of its class (PIL or torchvision), so that the run identity changes with any
        of them."""
        import hashlib
        import json

        image_processor = getattr(self.processor, "image_processor", None)
        if image_processor is None or not hasattr(image_processor, "to_dict"):
            return None
        settings = image_processor.to_dict()
        # the class too: the PIL and torchvision image processors of one checkpoint share their
        # settings file (and ``image_processor_type``) but may resize to different pixels
        settings["_class"] = type(image_processor).__name__
        text = json.dumps(settings, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> dict[str, Any]:
        """Run-card facts: library versions, model id and resolved revision, dtype, device,
        processor pixel limits, GPU."""
        torch = self._torch
        facts: dict[str, Any] = {
            "backend": self.name,
            "backend_version": self._transformers_version,
            "transformers_version": self._transformers_version,
            "torch_version": torch.__version__,
            "cuda_version": torch.version.cuda,
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "model": self.model_id,
            "model_class": type(self.model).__name__,
            "processor_class": type(self.processor).__name__,
            "processor_source": getattr(self, "processor_source", "auto"),
            "preset": self.preset.key,
            "revision": self.resolved_revision,
            "dtype": self.dtype_name,
            "device": self.device,
            "batch_size": self.batch_size,
            "decoding": {"do_sample": False, "num_beams": 1},
            "processor": self._pixel_limits(),
            "chat_template_sha256": self._chat_template_sha256(),
            "system_prompt_handling": getattr(self, "system_handling", None),
            "processor_settings_sha256": self._processor_settings_sha256(),
        }
        if getattr(self, "shared_prefix", False):
            stats = getattr(self, "_shared_stats", None) or {
                "shared_questions": 0, "shared_groups": 0, "plain_questions": 0, "plain_reasons": {}}
            facts["shared_prefix"] = {"enabled": True, **stats,
                                      "plain_reasons": dict(sorted(stats["plain_reasons"].items()))}
        if self.ignored_options:
            facts["ignored_options"] = sorted(self.ignored_options)
        return facts

    # ---------------------------------------------------------------------------------- generate
    def generate(self, requests: Sequence[Request]) -> list[Reply]:
        """One reply per request, in request order (see ``base.Backend``)."""
        replies: dict[int, Reply] = {}
        prepared: list[tuple[int, Request, Any]] = []
        for index, request in enumerate(requests):
            request = self.prepare(request)
            if request.mode == "raw" and request.image_path is not None:
                replies[index] = Reply(key=request.key, text=None, status="failed",
                                       error="a raw-mode (completion) request cannot carry an image")
                continue
            if request.image_path is None:
                prepared.append((index, request, None))
                continue
            try:
                prepared.append((index, request, _load_image(Path(request.image_path))))
            except Exception as error:  # noqa: BLE001 - any unreadable image fails its request only
                replies[index] = Reply(
                    key=request.key, text=None, status="failed", error=f"image: {error}"
                )
        with_images = [entry for entry in prepared if entry[2] is not None]
        text_only = [entry for entry in prepared if entry[2] is None]
        if self.shared_prefix:
            with_images = self._generate_shared(with_images, replies)
        for group in (with_images, text_only):
            for start in range(0, len(group), self.batch_size):
                chunk = group[start : start + self.batch_size]
                for index, reply in zip((e[0] for e in chunk), self._generate_robust(chunk)):
                    replies[index] = reply
        return [replies[index] for index in range(len(requests))]

    def _generate_shared(self, entries: list[tuple[int, Request, Any]],
                         replies: dict[int, Reply]) -> list[tuple[int, Request, Any]]:
        """Answer each image's questions (consecutive, ≥ 2, up to ``batch_size``) from one
        prefill; returns the entries left for the plain path."""
        from biovqa.engine.backends.prefix import PrefixUnsupported, shared_prefix_generate

        left: list[tuple[int, Request, Any]] = []
        start = 0
        while start < len(entries):
            end = start + 1
            path = entries[start][1].image_path
            while (end < len(entries) and entries[end][1].image_path == path
                   and end - start < self.batch_size):
                end += 1
            group = entries[start:end]
            start = end
            if len(group) < 2:
                self._count_shared(len(group), "a single question of its image in the batch")
                left.extend(group)
                continue
            try:
                answers = shared_prefix_generate(self, [e[1] for e in group], group[0][2])
            except PrefixUnsupported as reason:
                self._count_shared(len(group), str(reason))
                left.extend(group)
                continue
            except Exception as error:  # noqa: BLE001 - e.g. out of memory: the plain path retries
                if self.device.startswith("cuda"):
                    self._torch.cuda.empty_cache()
                self._count_shared(len(group), f"error: {type(error).__name__}: "
                                               f"{str(error).strip()[:160]}")
                left.extend(group)
                continue
            self._count_shared(len(group), None)
            for entry, reply in zip(group, answers):
                replies[entry[0]] = reply
        return left

    def _count_shared(self, questions: int, fallback: str | None) -> None:
        """Tally for the run card: questions answered from a shared prefix, and those sent to the
        plain path with the reason (``describe()["shared_prefix"]``)."""
        stats = self.__dict__.setdefault("_shared_stats", {"shared_questions": 0, "shared_groups": 0,
                                                           "plain_questions": 0, "plain_reasons": {}})
        if fallback is None:
            stats["shared_questions"] += questions
            stats["shared_groups"] += 1
            return
        stats["plain_questions"] += questions
        reasons = stats["plain_reasons"]
        reasons[fallback] = reasons.get(fallback, 0) + questions

    def _generate_robust(self, chunk: list[tuple[int, Request, Any]]) -> list[Reply]:
        try:
            return self._generate_batch(chunk)
        except Exception as error:  # noqa: BLE001 - retry alone, then record the failure
            if self.device.startswith("cuda"):
                self._torch.cuda.empty_cache()
            if len(chunk) == 1:
                request = chunk[0][1]
                return [Reply(key=request.key, text=None, status="failed", error=repr(error))]
            replies: list[Reply] = []
            for entry in chunk:
                replies.extend(self._generate_robust([entry]))
            return replies

    def _generate_batch(self, chunk: list[tuple[int, Request, Any]]) -> list[Reply]:
        torch = self._torch
        started = time.perf_counter()
        requests = [entry[1] for entry in chunk]
        texts = [self.prompt_text(request) for request in requests]
        images = [entry[2] for entry in chunk if entry[2] is not None]
        processor_inputs: dict[str, Any] = {"text": texts, "padding": True, "return_tensors": "pt"}
        if images:
            # One list per sample: Gemma3 and Mllama processors need it, the others accept it.
            processor_inputs["images"] = [[image] for image in images]
        inputs = self.processor(**processor_inputs).to(self.device)
        if "pixel_values" in inputs and inputs["pixel_values"].is_floating_point():
            inputs["pixel_values"] = inputs["pixel_values"].to(self.model.dtype)
        cap = max(request.max_new_tokens for request in requests)
        with torch.inference_mode():
            output = self.model.generate(
                **inputs,
                max_new_tokens=cap,
                do_sample=False,
                num_beams=1,
                temperature=None,
                top_p=None,
                top_k=None,
                pad_token_id=self.pad_token_id,
            )
        prompt_length = inputs["input_ids"].shape[1]
        generated = output[:, prompt_length:].tolist()
        prompt_tokens = inputs["attention_mask"].sum(dim=1).tolist()
        latency = (time.perf_counter() - started) / len(requests)
        replies = []
        for request, token_ids, prompt_count in zip(requests, generated, prompt_tokens):
            kept: list[int] = []
            for token_id in token_ids[: request.max_new_tokens]:
                if token_id in self.stop_token_ids or token_id == self.pad_token_id:
                    break
                kept.append(token_id)
            text = self.tokenizer.decode(kept, skip_special_tokens=True)
            replies.append(
                Reply(
                    key=request.key,
                    text=text,
                    latency_s=latency,
                    prompt_tokens=int(prompt_count),
                    completion_tokens=len(kept),
                )
            )
        return replies

    def close(self) -> None:
        """Drop the model and free GPU memory."""
        self.model = None
        if self._torch.cuda.is_available():
            self._torch.cuda.empty_cache()


def create(model: str, **options: Any) -> TransformersBackend:
    """Load ``model`` (HF id, preset key or local folder) with its preset's limits.

    Options: ``dtype`` (auto|float32|float16|bfloat16; auto = the preset's dtype on CUDA, float32
    on CPU), ``device`` (auto|cpu|cuda|cuda:N), ``batch_size`` (default 8, a cap inside the
    engine's batch), ``revision``, ``trust_remote_code``, ``min_pixels``/``max_pixels`` (override
    the preset), ``attn_implementation``; ``preset`` (a ModelPreset) overrides the lookup;
    ``text_only`` (default false) loads a text-only causal LM for text-only benches.
    """
    preset = options.pop("preset", None) or get_preset(model)
    ignored = {key: options.pop(key) for key in list(options) if key not in KNOWN_OPTIONS}
    if ignored:
        warnings.warn(
            f"transformers backend ignores options {sorted(ignored)}", RuntimeWarning, stacklevel=2
        )
    checkpoint = preset.checkpoint if model.lower() in (preset.key, preset.display_name.lower()) else model
    return TransformersBackend(checkpoint, preset=preset, ignored_options=ignored, **options)
