"""Loading a processor without torchvision (Qwen-VL's video processor needs it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = [pytest.mark.models]

MISSING = "ModuleNotFoundError: No module named 'torchvision'"


def _without_torchvision(monkeypatch: pytest.MonkeyPatch) -> None:
    """Act as a machine without torchvision, whatever this one has."""
    import transformers

    from biovqa.engine.backends import processors

    def refuse(*args: object, **kwargs: object) -> None:
        raise ImportError("Qwen2VLVideoProcessor requires the Torchvision library but it was not found")

    monkeypatch.setattr(processors, "torchvision_problem", lambda: MISSING)
    monkeypatch.setattr(transformers.AutoProcessor, "from_pretrained", refuse)


def test_qwen_processor_is_assembled_from_its_pil_pieces(
        monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Callable[[str], Path],
        tiny_images: list[Path]) -> None:
    from PIL import Image

    from biovqa.engine.backends.processors import load_processor

    folder = tiny_model_dir("qwen2_5_vl")
    _without_torchvision(monkeypatch)
    processor, source = load_processor(folder, min_pixels=56 * 56, max_pixels=84 * 84)
    assert source == f"pil-pieces ({MISSING})"
    assert processor.video_processor is None
    assert type(processor.image_processor).__name__.endswith("Pil")
    assert processor.image_processor.size.longest_edge == 84 * 84  # the options reached it
    text = processor.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Which order?"}]}],
        add_generation_prompt=True, tokenize=False)
    assert text.startswith("<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Which")
    with Image.open(tiny_images[0]) as image:
        inputs = processor(text=[text], images=[[image.convert("RGB")]], return_tensors="pt")
    image_pad = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    t, h, w = inputs["image_grid_thw"][0].tolist()
    assert int((inputs["input_ids"][0] == image_pad).sum()) == t * h * w // 4
    assert inputs["pixel_values"].shape[0] == t * h * w


def test_other_processor_errors_are_not_hidden(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    import transformers

    from biovqa.engine.backends import processors

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError("no file named preprocessor_config.json")

    monkeypatch.setattr(processors, "torchvision_problem", lambda: MISSING)
    monkeypatch.setattr(transformers.AutoProcessor, "from_pretrained", fail)
    with pytest.raises(OSError, match="preprocessor_config"):
        processors.load_processor(tmp_path)


def test_the_backend_records_how_its_processor_was_made(
        monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Callable[[str], Path]) -> None:
    from biovqa.engine.backends.transformers import create

    folder = str(tiny_model_dir("qwen2_5_vl"))
    _without_torchvision(monkeypatch)
    backend = create(folder, device="cpu")
    facts = backend.describe()
    assert facts["processor_source"] == f"pil-pieces ({MISSING})"
    assert facts["processor_class"] == "Qwen2_5_VLProcessorImageOnly"
    assert facts["processor"]["min_pixels"] is not None
    backend.close()
    monkeypatch.undo()
    llava = create(str(tiny_model_dir("llava")), device="cpu")  # needs no torchvision at all
    assert llava.describe()["processor_source"] == "auto"
    llava.close()


def test_the_pil_and_the_auto_processor_are_different_identities(
        monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Callable[[str], Path]) -> None:
    """Same settings file, another image-processor class: a run must not resume across them."""
    from biovqa.engine.backends.transformers import create

    folder = str(tiny_model_dir("qwen2_5_vl"))
    _without_torchvision(monkeypatch)
    backend = create(folder, device="cpu")
    pil = backend._processor_settings_sha256()
    other = type("Qwen2VLImageProcessor", (type(backend.processor.image_processor),), {})
    backend.processor.image_processor.__class__ = other
    assert backend._processor_settings_sha256() != pil
    backend.close()
