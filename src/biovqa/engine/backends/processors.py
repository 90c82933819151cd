"""Loading a checkpoint's processor, with or without torchvision.

``AutoProcessor.from_pretrained`` needs torchvision for some checkpoints even when only images are
sent: Qwen2-VL / Qwen2.5-VL / Qwen3-VL processors carry a *video* processor, and the video
processors (and the default "fast" image processors) are torchvision classes. A machine without
torchvision, or with one built for another torch (it then fails at import), cannot load them.

:func:`load_processor` then assembles the same processor from its pieces: the PIL image processor
(the "slow" one, same settings file), the tokenizer, the chat template, and no video processor —
biovqa sends images only. The second value it returns says which way it went (``"auto"`` or
``"pil-pieces (<why>)"``); the transformers backend records it in the run card
(``processor_source``). The PIL and torchvision image processors may differ in the last bits of a
pixel value; the run identity's ``processor_settings_sha256`` covers the image processor's class,
so a run never resumes across the two.

torch, torchvision and transformers are imported inside the functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def torchvision_problem() -> str | None:
    """Why torchvision cannot be used here (``"ModuleNotFoundError: …"``), or None when it can."""
    try:
        import torchvision  # noqa: F401  (a build for another torch fails here, not mid-run)
    except Exception as error:  # noqa: BLE001 - ImportError, or RuntimeError from a broken build
        first = str(error).strip().splitlines()[0][:120] if str(error).strip() else ""
        return f"{type(error).__name__}: {first}"
    return None


def load_processor(model: str | Path, **options: Any) -> tuple[Any, str]:
    """The processor of ``model`` (a folder or hub id) and how it was made.

    ``options`` go to ``from_pretrained`` (``revision``, ``trust_remote_code``, image-processor
    settings such as ``min_pixels``). Returns ``(processor, "auto")`` when ``AutoProcessor``
    loads it, ``(processor, "pil-pieces (<why>)")`` when it was assembled without torchvision.
    Errors other than a missing or broken torchvision propagate unchanged.
    """
    from transformers import AutoProcessor

    problem = torchvision_problem()
    if problem is None:
        return AutoProcessor.from_pretrained(model, **options), "auto"
    try:
        return AutoProcessor.from_pretrained(model, **options), "auto"
    except Exception as error:  # noqa: BLE001 - ImportError, or a broken build's RuntimeError
        if "torchvision" not in str(error).lower():
            raise
    return pil_processor(model, **options), f"pil-pieces ({problem})"


def _processor_class(model: str | Path, options: dict[str, Any]) -> Any:
    """The checkpoint's processor class: ``processor_class`` of its settings, else the one
    transformers maps its ``model_type`` to."""
    import transformers
    from transformers import AutoConfig

    name = None
    folder = Path(model)
    for settings in ("processor_config.json", "preprocessor_config.json"):
        path = folder / settings
        if path.is_file():
            import json

            name = json.loads(path.read_text()).get("processor_class") or name
            if name:
                break
    if not name:
        from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES

        model_type = AutoConfig.from_pretrained(model, **{
            k: v for k, v in options.items() if k in ("revision", "trust_remote_code")}).model_type
        name = PROCESSOR_MAPPING_NAMES.get(model_type)
    found = getattr(transformers, str(name), None) if name else None
    if found is None:
        raise ImportError(f"no processor class known for {str(model)!r} ({name!r}); "
                          "install torchvision so that AutoProcessor can load it")
    return found


def pil_processor(model: str | Path, **options: Any) -> Any:
    """``model``'s processor built from its PIL image processor, tokenizer and chat template,
    without a video processor (see the module docstring)."""
    import inspect

    from transformers import AutoImageProcessor, AutoTokenizer

    load = {k: v for k, v in options.items() if k in ("revision", "trust_remote_code")}
    try:
        image_processor = AutoImageProcessor.from_pretrained(model, backend="pil", **options)
    except TypeError:  # transformers releases before image-processor backends
        image_processor = AutoImageProcessor.from_pretrained(model, use_fast=False, **options)
    tokenizer = AutoTokenizer.from_pretrained(model, **load)
    base = _processor_class(model, options)

    class ImageOnlyProcessor(base):  # type: ignore[misc, valid-type]
        """Accepts ``video_processor=None``: the video processor's base class is a torchvision
        class, so the type check fails for any value when torchvision is missing."""

        def check_argument_for_proper_class(self, argument_name: str, argument: Any) -> Any:
            if argument_name == "video_processor" and argument is None:
                return None
            return super().check_argument_for_proper_class(argument_name, argument)

    ImageOnlyProcessor.__name__ = ImageOnlyProcessor.__qualname__ = f"{base.__name__}ImageOnly"
    parameters = inspect.signature(base.__init__).parameters
    pieces: dict[str, Any] = {"image_processor": image_processor, "tokenizer": tokenizer}
    if "video_processor" in parameters:
        pieces["video_processor"] = None
    template = getattr(tokenizer, "chat_template", None)
    try:
        from transformers.utils import cached_file

        path = cached_file(str(model), "chat_template.json", _raise_exceptions_for_missing_entries=False,
                           **load)
        if path:
            import json

            template = json.loads(Path(path).read_text()).get("chat_template") or template
    except Exception:  # noqa: BLE001 - no separate template file: the tokenizer's is used
        pass
    if "chat_template" in parameters and template is not None:
        pieces["chat_template"] = template
    return ImageOnlyProcessor(**pieces)
