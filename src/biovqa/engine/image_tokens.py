"""Image-token rules: how many prompt tokens one image of a given size costs each model family.

``biovqa plan`` and the batcher's token budget read these through
:meth:`biovqa.engine.presets.ModelPreset.image_tokens`. Every rule is an approximation of its
processor's arithmetic (written from the published processor behaviour, not copied): exact for
Qwen2.5-VL/Qwen3-VL (smart resize to multiples of patch × merge), LLaVA-NeXT AnyRes and Pixtral;
close for InternVL (dynamic 448-px tiling, 256 tokens per tile), Phi-3.5-Vision (HD transform),
Molmo2 (crops) and fixed-size encoders (Gemma). A model that is not one of the paper's gets the rule
of the architecture its name or ``config.json`` suggests (:func:`guess_image_token_rule`) — a
documented approximation, never a refusal.

Each rule maps (width, height) in pixels to the prompt tokens one image occupies, markers
included; pure integer arithmetic.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path


def smart_resize(
    height: int, width: int, *, factor: int, min_pixels: int, max_pixels: int
) -> tuple[int, int]:
    """Qwen-VL resize: round each side to a multiple of ``factor``, then rescale into the limits.

    h' = round(h / f)·f, w' = round(w / f)·f; if h'·w' > max_pixels, β = √(h·w / max_pixels) and
    h' = ⌊h / β / f⌋·f (same for w); if h'·w' < min_pixels, β = √(min_pixels / (h·w)) and
    h' = ⌈h·β / f⌉·f. Sides never fall below ``factor``.
    """
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    resized_height = max(factor, round(height / factor) * factor)
    resized_width = max(factor, round(width / factor) * factor)
    if resized_height * resized_width > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        resized_height = max(factor, math.floor(height / beta / factor) * factor)
        resized_width = max(factor, math.floor(width / beta / factor) * factor)
    elif resized_height * resized_width < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        resized_height = math.ceil(height * beta / factor) * factor
        resized_width = math.ceil(width * beta / factor) * factor
    return resized_height, resized_width


def qwen_image_tokens(
    width: int, height: int, *, patch_size: int, merge_size: int, min_pixels: int, max_pixels: int
) -> int:
    """Qwen2.5-VL / Qwen3-VL: (h'/(p·m))·(w'/(p·m)) merged patches after :func:`smart_resize`,
    plus the vision-start and vision-end markers."""
    factor = patch_size * merge_size
    resized_height, resized_width = smart_resize(
        height, width, factor=factor, min_pixels=min_pixels, max_pixels=max_pixels
    )
    return (resized_height // factor) * (resized_width // factor) + 2


def _closest_tile_grid(
    width: int, height: int, *, tile: int, min_tiles: int, max_tiles: int
) -> tuple[int, int]:
    """InternVL dynamic tiling: the (columns, rows) grid, with min ≤ c·r ≤ max tiles, whose aspect
    ratio is closest to the image's; ties go to the larger grid when the image has the pixels."""
    aspect = width / height
    grids = sorted(
        {
            (columns, rows)
            for count in range(min_tiles, max_tiles + 1)
            for columns in range(1, count + 1)
            for rows in range(1, count + 1)
            if min_tiles <= columns * rows <= max_tiles
        },
        key=lambda grid: grid[0] * grid[1],
    )
    best, best_difference = (1, 1), float("inf")
    for columns, rows in grids:
        difference = abs(aspect - columns / rows)
        if difference < best_difference:
            best, best_difference = (columns, rows), difference
        elif difference == best_difference and width * height > 0.5 * tile * tile * columns * rows:
            best = (columns, rows)
    return best


def internvl_image_tokens(
    width: int, height: int, *, tile: int = 448, tokens_per_tile: int = 256, max_tiles: int = 12
) -> int:
    """InternVL3/3.5: 256 tokens per 448-px tile of the closest-aspect grid (≤ 12 tiles), one
    extra thumbnail tile when the grid has more than one tile, plus ``<img>``/``</img>``."""
    columns, rows = _closest_tile_grid(width, height, tile=tile, min_tiles=1, max_tiles=max_tiles)
    tiles = columns * rows + (1 if columns * rows > 1 else 0)
    return tiles * tokens_per_tile + 2


#: LLaVA-NeXT (llava-v1.6) AnyRes grid pinpoints, (height, width).
LLAVA_NEXT_PINPOINTS: tuple[tuple[int, int], ...] = (
    (336, 672),
    (672, 336),
    (672, 672),
    (1008, 336),
    (336, 1008),
)


def _best_anyres_resolution(
    width: int, height: int, pinpoints: tuple[tuple[int, int], ...]
) -> tuple[int, int]:
    """The pinpoint (height, width) that keeps the most image pixels, then wastes the fewest."""
    best, best_effective, best_wasted = pinpoints[0], -1, float("inf")
    for target_height, target_width in pinpoints:
        scale = min(target_width / width, target_height / height)
        kept = min(int(width * scale) * int(height * scale), width * height)
        wasted = target_width * target_height - kept
        if kept > best_effective or (kept == best_effective and wasted < best_wasted):
            best, best_effective, best_wasted = (target_height, target_width), kept, wasted
    return best


def llava_next_image_tokens(
    width: int,
    height: int,
    *,
    tile: int = 336,
    patch_size: int = 14,
    pinpoints: tuple[tuple[int, int], ...] = LLAVA_NEXT_PINPOINTS,
) -> int:
    """LLaVA-NeXT AnyRes: a base tile ((336/14)² = 576 tokens) plus the best-fitting grid's
    feature map with the letterbox padding removed, and one newline token per feature row."""
    side = tile // patch_size
    base = side * side
    grid_height, grid_width = _best_anyres_resolution(width, height, pinpoints)
    current_height = grid_height // tile * side
    current_width = grid_width // tile * side
    if width / height > current_width / current_height:
        scaled_height = int(round(height * (current_width / width), 7))
        current_height -= 2 * ((current_height - scaled_height) // 2)
    else:
        scaled_width = int(round(width * (current_height / height), 7))
        current_width -= 2 * ((current_width - scaled_width) // 2)
    return base + current_height * current_width + current_height


def pixtral_image_tokens(
    width: int, height: int, *, patch_size: int = 16, longest_edge: int = 1024
) -> int:
    """Pixtral: downscale so the longer side ≤ 1024, then one token per 16-px patch and one
    break/end token per row: rows·(columns + 1)."""
    ratio = max(width / longest_edge, height / longest_edge, 1.0)
    scaled_width, scaled_height = int(width / ratio), int(height / ratio)
    rows = max(1, math.ceil(scaled_height / patch_size))
    columns = max(1, math.ceil(scaled_width / patch_size))
    return rows * (columns + 1)


def phi3_vision_image_tokens(width: int, height: int, *, num_crops: int = 4, tile: int = 336) -> int:
    """Phi-3.5-Vision HD transform: fit the image into ≤ ``num_crops`` 336-px crops (keeping its
    aspect ratio, padded to whole crops), 144 tokens per crop plus a global view, a separator,
    and 12 newline tokens per crop row: (r·c + 1)·144 + 1 + (r + 1)·12."""
    transposed = width < height
    long_side, short_side = (height, width) if transposed else (width, height)
    ratio = long_side / short_side
    scale = 1
    while scale * math.ceil(scale / ratio) <= num_crops:
        scale += 1
    scale = max(1, scale - 1)
    crops_long = scale
    crops_short = max(1, math.ceil(int(scale * tile / ratio) / tile))
    crop_rows = crops_long if transposed else crops_short
    return (crops_long * crops_short + 1) * 144 + 1 + (crop_rows + 1) * 12


def molmo_image_tokens(width: int, height: int, *, crop: int = 378, max_crops: int = 8) -> int:
    """Molmo2 (approximation): overlapping 378-px crops of a SigLIP 2 encoder (≤ 8) plus a global
    view, each pooled 2×2 to 14·14 = 196 tokens, one row-end token per pooled row."""
    crops = min(max_crops, max(1, math.ceil(width / crop)) * max(1, math.ceil(height / crop)))
    per_view = 14 * 14 + 14
    return (crops + 1) * per_view + 2


def openai_tile_tokens(width: int, height: int, base: int, per_tile: int) -> int:
    """OpenAI's high-detail image cost: scale to fit 2048×2048, then the shortest side to 768
    (never up), count 512-px tiles; ``base + per_tile · tiles``."""
    if width <= 0 or height <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return base + per_tile * math.ceil(w / 512) * math.ceil(h / 512)


def config_image_tokens(model: str) -> int | None:
    """Image tokens of a local checkpoint read from its ``config.json`` (None when unknown):
    LLaVA-style ``(image_size / patch_size)²`` patch tokens (+1 with the ``full`` feature
    strategy), Gemma-3-style ``mm_tokens_per_image`` soft tokens + 4 markers."""
    try:
        config = json.loads((Path(model) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    if isinstance(config.get("mm_tokens_per_image"), int):
        return int(config["mm_tokens_per_image"]) + 4
    vision = config.get("vision_config")
    if config.get("model_type") == "llava" and isinstance(vision, dict):
        size, patch = vision.get("image_size"), vision.get("patch_size")
        if isinstance(size, int) and isinstance(patch, int) and patch > 0:
            full = config.get("vision_feature_select_strategy") == "full"
            return (size // patch) ** 2 + int(full)
    return None


def fixed_image_tokens(count: int) -> Callable[[int, int], int]:
    """A fixed-size encoder: every image costs ``count`` tokens whatever its size."""

    def rule(width: int, height: int) -> int:
        if width <= 0 or height <= 0:
            raise ValueError(f"image size must be positive, got {width}x{height}")
        return count

    return rule


# --------------------------------------------------------------------------------------------
# Presets
# --------------------------------------------------------------------------------------------

#: Names of the image-token rules a preset can use; value = (callable, takes pixel limits).
IMAGE_TOKEN_RULES: Mapping[str, Callable[..., int]] = {
    "qwen2_5_vl": lambda w, h, lo, hi: qwen_image_tokens(
        w, h, patch_size=14, merge_size=2, min_pixels=lo, max_pixels=hi
    ),
    "qwen3_vl": lambda w, h, lo, hi: qwen_image_tokens(
        w, h, patch_size=16, merge_size=2, min_pixels=lo, max_pixels=hi
    ),
    "internvl": lambda w, h, lo, hi: internvl_image_tokens(w, h),
    # Gemma 3: 896×896 SigLIP, 256 soft tokens + begin/end-of-image and two "\n\n" pieces.
    "gemma3": lambda w, h, lo, hi: fixed_image_tokens(260)(w, h),
    # Gemma 4 (approximation): 256 soft tokens + markers, as Gemma 3.
    "gemma4": lambda w, h, lo, hi: fixed_image_tokens(260)(w, h),
    "molmo2": lambda w, h, lo, hi: molmo_image_tokens(w, h),
    "pixtral": lambda w, h, lo, hi: pixtral_image_tokens(w, h),
    "phi3_vision": lambda w, h, lo, hi: phi3_vision_image_tokens(w, h),
    # Llama-3.2-Vision reads the image through cross-attention: one <|image|> token in the prompt.
    "mllama": lambda w, h, lo, hi: fixed_image_tokens(1)(w, h),
    "llava_next": lambda w, h, lo, hi: llava_next_image_tokens(w, h),
    # OpenAI "high detail" tiling (fit in 2048², shortest side 768, 512-px tiles): GPT-4o
    # 85 + 170·tiles; GPT-4o-mini bills 2833 + 5667·tiles (its published image-token rates).
    "openai_4o": lambda w, h, lo, hi: openai_tile_tokens(w, h, 85, 170),
    "openai_4o_mini": lambda w, h, lo, hi: openai_tile_tokens(w, h, 2833, 5667),
    # LLaVA-1.5 style (CLIP ViT-L/14-336): 576 tokens; the fallback for unknown architectures.
    "clip336": lambda w, h, lo, hi: fixed_image_tokens(576)(w, h),
}

#: [DEFAULT] checkpoint defaults of the processors (preprocessor_config.json of the releases):
#: Qwen2.5-VL min 56·56, max 28·28·16384 pixels; Qwen3-VL min 256·256 (65 536), max 4096·4096.
QWEN2_5_VL_PIXELS = (3136, 12845056)
QWEN3_VL_PIXELS = (65536, 16777216)


#: (substring of a lower-cased model_type or id, image-token rule, pixel limits) for unknown models.
_ARCHITECTURE_HINTS: tuple[tuple[str, str, tuple[int, int] | None], ...] = (
    ("qwen2_5_vl", "qwen2_5_vl", QWEN2_5_VL_PIXELS),
    ("qwen2.5-vl", "qwen2_5_vl", QWEN2_5_VL_PIXELS),
    ("qwen2_vl", "qwen2_5_vl", QWEN2_5_VL_PIXELS),
    ("qwen2-vl", "qwen2_5_vl", QWEN2_5_VL_PIXELS),
    ("qwen3_vl", "qwen3_vl", QWEN3_VL_PIXELS),
    ("qwen3-vl", "qwen3_vl", QWEN3_VL_PIXELS),
    ("internvl", "internvl", None),
    ("gemma3", "gemma3", None),
    ("gemma-3", "gemma3", None),
    ("gemma4", "gemma4", None),
    ("gemma-4", "gemma4", None),
    ("molmo", "molmo2", None),
    ("pixtral", "pixtral", None),
    ("phi3_v", "phi3_vision", None),
    ("phi-3", "phi3_vision", None),
    ("mllama", "mllama", None),
    ("llama-3.2", "mllama", None),
    ("gpt-4o-mini", "openai_4o_mini", None),
    ("gpt-4o", "openai_4o", None),
    ("llava_next", "llava_next", None),
    ("llava-v1.6", "llava_next", None),
)


def _local_model_type(model: str) -> str | None:
    """``model_type`` from a local checkpoint's ``config.json`` (None if not a local model)."""
    config_path = Path(model) / "config.json"
    if not config_path.is_file():
        return None
    try:
        return str(json.loads(config_path.read_text(encoding="utf-8")).get("model_type", ""))
    except (OSError, ValueError):
        return None



def guess_image_token_rule(model: str) -> tuple[str, tuple[int, int] | None]:
    """The image-token rule (and Qwen pixel limits) of the architecture a model's name or local
    ``config.json`` suggests: a hint of :data:`_ARCHITECTURE_HINTS`, else CLIP-336's; a fixed-size
    rule read from the checkpoint's config (``fixed:N``) where that is more precise."""
    hint_source = f"{_local_model_type(model) or ''} {model}".lower()
    rule, pixels = "clip336", None
    for needle, hinted_rule, hinted_pixels in _ARCHITECTURE_HINTS:
        if needle in hint_source:
            rule, pixels = hinted_rule, hinted_pixels
            break
    from_config = config_image_tokens(model) if rule in ("clip336", "gemma3") else None
    if from_config is not None:
        rule = f"fixed:{from_config}"
    return rule, pixels


def image_tokens(rule: str, width: int, height: int, *, min_pixels: int | None = None,
                 max_pixels: int | None = None) -> int:
    """Prompt tokens one ``width``×``height`` image costs under ``rule`` (a name of
    :data:`IMAGE_TOKEN_RULES`, or ``fixed:N`` read from a local checkpoint's config)."""
    if rule.startswith("fixed:"):
        return fixed_image_tokens(int(rule[6:]))(int(width), int(height))
    return int(IMAGE_TOKEN_RULES[rule](int(width), int(height), min_pixels or 0, max_pixels or 1 << 62))
