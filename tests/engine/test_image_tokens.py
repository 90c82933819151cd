"""Image-token rules: worked examples hand-computed from each processor's arithmetic, the preset
that uses each rule, and cross-checks against the real processors (transformers, offline)."""

from __future__ import annotations

import pytest

from biovqa.engine.image_tokens import (
    guess_image_token_rule,
    internvl_image_tokens,
    llava_next_image_tokens,
    openai_tile_tokens,
    phi3_vision_image_tokens,
    pixtral_image_tokens,
    qwen_image_tokens,
    smart_resize,
)
from biovqa.engine.presets import PRESETS, get_preset



# Worked image-token examples (hand-computed from each processor's arithmetic).
@pytest.mark.parametrize(
    ("height", "width", "limits", "expected"),
    [
        (768, 1024, (3136, 12845056), (756, 1036)),  # round to multiples of 28
        (10, 10, (3136, 12845056), (56, 56)),  # grown to min_pixels
        (4000, 3000, (3136, 1003520), (1148, 840)),  # shrunk under max_pixels
    ],
)
def test_smart_resize(height: int, width: int, limits: tuple[int, int], expected: tuple[int, int]) -> None:
    assert smart_resize(height, width, factor=28, min_pixels=limits[0], max_pixels=limits[1]) == expected


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [(1024, 768, 27 * 37 + 2), (448, 448, 16 * 16 + 2), (28, 28, 2 * 2 + 2)],
)
def test_qwen2_5_vl_image_tokens(width: int, height: int, expected: int) -> None:
    assert qwen_image_tokens(width, height, patch_size=14, merge_size=2, min_pixels=3136,
                             max_pixels=12845056) == expected
    assert get_preset("Qwen2.5-VL-3B").image_tokens(width, height) == expected


def test_qwen3_vl_uses_32_pixel_merged_patches() -> None:
    # 1024×768 → 1024×768 (multiples of 32) → 32·24 tokens + 2 markers.
    assert get_preset("Qwen3-VL-8B").image_tokens(1024, 768) == 32 * 24 + 2


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [(448, 448, 258), (896, 448, 3 * 256 + 2), (1024, 768, 13 * 256 + 2)],
)
def test_internvl_tiles(width: int, height: int, expected: int) -> None:
    assert internvl_image_tokens(width, height) == expected
    assert get_preset("InternVL3-8B").image_tokens(width, height) == expected


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [(1024, 768, 576 + 36 * 48 + 36), (336, 336, 576 + 24 * 24 + 24)],
)
def test_llava_next_anyres(width: int, height: int, expected: int) -> None:
    assert llava_next_image_tokens(width, height) == expected
    assert get_preset("LLaVA-NeXT-Mistral").image_tokens(width, height) == expected


@pytest.mark.parametrize(("width", "height", "expected"), [(1024, 1024, 64 * 65), (512, 256, 16 * 33),
                                                           (2048, 1024, 32 * 65)])
def test_pixtral_rows_with_break_tokens(width: int, height: int, expected: int) -> None:
    assert pixtral_image_tokens(width, height) == expected


@pytest.mark.parametrize(("width", "height", "expected"), [(336, 336, 757), (1024, 768, 757),
                                                           (1344, 336, (4 + 1) * 144 + 1 + 2 * 12)])
def test_phi3_vision_hd_transform(width: int, height: int, expected: int) -> None:
    assert phi3_vision_image_tokens(width, height) == expected


def test_fixed_size_encoders() -> None:
    assert get_preset("Gemma-3-12B").image_tokens(4000, 100) == 260
    assert get_preset("Llama-3.2-Vision").image_tokens(1120, 1120) == 1


def test_every_preset_has_a_positive_rule() -> None:
    for preset in PRESETS.values():
        for size in ((1, 1), (500, 375), (4032, 3024)):
            assert preset.image_tokens(*size) > 0, preset.key
    with pytest.raises(ValueError):
        get_preset("Gemma-3-12B").image_tokens(0, 10)


SIZES = [(1024, 768), (500, 375), (375, 500), (336, 336), (1200, 300), (28, 28), (4032, 3024)]


@pytest.mark.models
@pytest.mark.parametrize(("display_name", "patch_size"), [("Qwen2.5-VL-7B", 14), ("Qwen3-VL-8B", 16)])
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_qwen_rule_matches_the_real_image_processor(
    display_name: str, patch_size: int, width: int, height: int
) -> None:
    transformers = pytest.importorskip("transformers")
    from PIL import Image

    preset = get_preset(display_name)
    processor_class = getattr(transformers, "Qwen2VLImageProcessorPil", None) or pytest.skip(
        "no PIL Qwen2-VL image processor in this transformers"
    )
    processor = processor_class(
        patch_size=patch_size, merge_size=2, min_pixels=preset.min_pixels, max_pixels=preset.max_pixels
    )
    grid = processor(images=[Image.new("RGB", (width, height))], return_tensors="np")["image_grid_thw"][0]
    placeholder_tokens = int(grid[0] * grid[1] * grid[2]) // 4
    assert preset.image_tokens(width, height) == placeholder_tokens + 2  # + vision start/end


@pytest.mark.models
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_llava_next_rule_matches_the_real_processor(width: int, height: int) -> None:
    transformers = pytest.importorskip("transformers")
    from PIL import Image
    from fixtures.tiny_models import _train_tokenizer

    image_processor_class = getattr(transformers, "LlavaNextImageProcessorPil", None) or pytest.skip(
        "no PIL LLaVA-NeXT image processor in this transformers"
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=_train_tokenizer(["<pad>", "<s>", "</s>", "<image>"]),
        pad_token="<pad>",
        extra_special_tokens={"image_token": "<image>"},
    )
    # The llava-v1.6 checkpoints: 336-px CLIP crops, "default" feature selection, 1 CLS token.
    processor = transformers.LlavaNextProcessor(
        image_processor=image_processor_class(
            size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336}
        ),
        tokenizer=tokenizer,
        patch_size=14,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
    )
    input_ids = processor(text="<image>", images=[Image.new("RGB", (width, height))])["input_ids"][0]
    image_token = tokenizer.convert_tokens_to_ids("<image>")
    assert get_preset("LLaVA-NeXT-Vicuna").image_tokens(width, height) == sum(
        1 for token in input_ids if token == image_token
    )



def test_unknown_architectures_are_guessed_from_the_name() -> None:
    assert guess_image_token_rule("someone/Qwen3-VL-2B") == ("qwen3_vl", (65536, 16777216))
    assert guess_image_token_rule("someone/gpt-4o-mini-2024") == ("openai_4o_mini", None)
    assert guess_image_token_rule("org/unknown-vlm") == ("clip336", None)
    # OpenAI's worked example: 1024×1024 → 768×768 → 4 tiles → 85 + 4·170
    assert openai_tile_tokens(1024, 1024, 85, 170) == 765
