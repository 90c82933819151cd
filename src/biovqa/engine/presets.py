"""Model presets: the paper's 18 models (paper App. B.1–B.2) with their prompt wrappers and limits.

A :class:`ModelPreset` says how the benchmark talks to one model: its checkpoint, the wrappers of
paper App. B.2 (Gemma-3/Gemma-4 system message on C1 and C2; the InternVL "Please answer in
English." prefix), the per-component cap on new tokens (C1 15 [PAPER]; C2 48, C3 48, C4 8
[DEFAULT]; BAGEL 5, HCA 10 from their specs), the processor's pixel limits where the checkpoint
sets them, and the model's rule for how many prompt tokens one image costs (used by
``biovqa plan``).

Any other Hugging Face id or local path gets :func:`default_preset`: no wrappers, the same token
caps, and an image-token rule guessed from the model's architecture name (the ``model_type`` of a
local ``config.json``, else the id) — a documented approximation, never a refusal.

Image-token rules are approximations of each processor's arithmetic (written from the published
processor behaviour, not copied): exact for Qwen2.5-VL/Qwen3-VL (smart resize to multiples of
patch × merge), LLaVA-NeXT AnyRes and Pixtral; close for InternVL (dynamic 448-px tiling, 256
tokens per tile), Phi-3.5-Vision (HD transform), Molmo2 (crops) and fixed-size encoders (Gemma).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from biovqa.errors import BiovqaError, did_you_mean

#: paper App. B.2 [PAPER]: the system message of Gemma-3-12B and Gemma-4-12B on C1 and C2.
GEMMA_SYSTEM_MESSAGE = "You are a precise taxonomy expert. Reply with only the requested term."
#: paper App. B.2 [PAPER]: the user-text prefix of InternVL3-8B, InternVL3-38B, InternVL3.5-38B.
INTERNVL_ENGLISH_PREFIX = "Please answer in English."
#: Max new tokens per component: C1 15 [PAPER]; C2 48, C3 48, C4 8 [DEFAULT] (paper App. B.2);
#: BAGEL 5 (BAGEL paper's protocol: ``generate(prompt, max_new_tokens≈5, greedy)``; one capital letter is
#: asked for); HCA 10 (HCA paper §2.4: ``max_new_tokens`` 5–10 [code]; the upper end, so that a
#: reply such as "B. Anseriformes" or "The answer is B." reaches the strict parser whole). Items
#: that carry their own cap (the HCA chain-of-thought variant) override these.
MAX_NEW_TOKENS: Mapping[str, int] = {"c1": 15, "c2": 48, "c3": 48, "c4": 8, "bagel": 5, "hca": 10}
#: [DEFAULT] cap for components the paper does not cover (text-only suites, new components).
DEFAULT_MAX_NEW_TOKENS = 48


# --------------------------------------------------------------------------------------------
# Image-token rules: (width, height) in pixels -> prompt tokens one image occupies, markers
# included. Pure integer arithmetic; each rule names the processor behaviour it follows.
# --------------------------------------------------------------------------------------------


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


@dataclass(frozen=True, slots=True)
class ModelPreset:
    """How the benchmark talks to one model (paper App. B.1–B.2, paper App. B.2)."""

    key: str
    display_name: str
    checkpoint: str
    family: str
    image_token_rule: str = "clip336"
    revision: str | None = None
    dtype: str = "bfloat16"
    system_message_text: str | None = None
    system_message_components: frozenset[str] = frozenset()
    user_prefix_text: str | None = None
    user_prefix_components: frozenset[str] | None = None  # None = every component
    min_pixels: int | None = None
    max_pixels: int | None = None
    trust_remote_code: bool = False
    max_new_tokens_by_component: tuple[tuple[str, int], ...] = tuple(MAX_NEW_TOKENS.items())
    aliases: tuple[str, ...] = field(default=())
    notes: str = ""

    def system_message(self, component: str) -> str | None:
        """The system message for ``component`` (None: the checkpoint's own default, if any).

        Only Gemma-3-12B and Gemma-4-12B set one, on C1 and C2; C4 never has one (paper App. B.2).
        """
        if self.system_message_text is None:
            return None
        return self.system_message_text if component.lower() in self.system_message_components else None

    def user_prefix(self, component: str) -> str | None:
        """Text put before the user prompt (InternVL3-8B/38B, InternVL3.5-38B: the English prefix)."""
        if self.user_prefix_text is None:
            return None
        if self.user_prefix_components is None or component.lower() in self.user_prefix_components:
            return self.user_prefix_text
        return None

    def max_new_tokens(self, component: str) -> int:
        """Hard cap on generated tokens: C1 15 [PAPER], C2 48, C3 48, C4 8, BAGEL 5, HCA 10,
        others 48 [DEFAULT] (see :data:`MAX_NEW_TOKENS`)."""
        return dict(self.max_new_tokens_by_component).get(component.lower(), DEFAULT_MAX_NEW_TOKENS)

    def image_tokens(self, width: int, height: int) -> int:
        """Prompt tokens one ``width``×``height`` image costs this model (markers included)."""
        if self.image_token_rule.startswith("fixed:"):  # read from a local checkpoint's config
            return fixed_image_tokens(int(self.image_token_rule[6:]))(int(width), int(height))
        rule = IMAGE_TOKEN_RULES[self.image_token_rule]
        return int(rule(int(width), int(height), self.min_pixels or 0, self.max_pixels or 1 << 62))

    def processor_options(self) -> dict[str, int]:
        """Keyword options for the model's processor (the pixel limits, where the preset sets them)."""
        options: dict[str, int] = {}
        if self.min_pixels is not None:
            options["min_pixels"] = self.min_pixels
        if self.max_pixels is not None:
            options["max_pixels"] = self.max_pixels
        return options


def apply_wrappers(preset: ModelPreset, component: str, prompt: str) -> tuple[str | None, str]:
    """(system message, user text) for ``prompt`` on ``component`` under ``preset``'s wrappers.

    The prefix is joined with one space: ``"Please answer in English." + " " + prompt``
    [DEFAULT, paper App. B.2].
    """
    prefix = preset.user_prefix(component)
    user_text = f"{prefix} {prompt}" if prefix else prompt
    return preset.system_message(component), user_text


def _preset_key(display_name: str) -> str:
    """paper App. B.1–B.2 [DEFAULT]: lower-case display name with ``.`` → ``_``."""
    return display_name.lower().replace(".", "_")


def _make(display_name: str, checkpoint: str, family: str, rule: str, **fields: object) -> ModelPreset:
    return ModelPreset(
        key=_preset_key(display_name),
        display_name=display_name,
        checkpoint=checkpoint,
        family=family,
        image_token_rule=rule,
        **fields,  # type: ignore[arg-type]
    )


_GEMMA = {
    "system_message_text": GEMMA_SYSTEM_MESSAGE, "system_message_components": frozenset({"c1", "c2"})
}
_INTERNVL_PREFIX = {"user_prefix_text": INTERNVL_ENGLISH_PREFIX}
_QWEN25 = {"min_pixels": QWEN2_5_VL_PIXELS[0], "max_pixels": QWEN2_5_VL_PIXELS[1]}
_QWEN3 = {"min_pixels": QWEN3_VL_PIXELS[0], "max_pixels": QWEN3_VL_PIXELS[1]}
_INTERNVL_NOTE = (
    "custom-code checkpoint (trust_remote_code); for the transformers backend use the native "
    "conversion named in aliases; the checkpoint's default system message applies"
)

#: The paper's 18 models (paper App. B.1–B.2), keyed by short model key.
PRESETS: Mapping[str, ModelPreset] = {
    preset.key: preset
    for preset in (
        _make("Qwen2.5-VL-3B", "Qwen/Qwen2.5-VL-3B-Instruct", "qwen2_5_vl", "qwen2_5_vl", **_QWEN25),
        _make("Qwen2.5-VL-7B", "Qwen/Qwen2.5-VL-7B-Instruct", "qwen2_5_vl", "qwen2_5_vl", **_QWEN25),
        _make("Qwen3-VL-8B", "Qwen/Qwen3-VL-8B-Instruct", "qwen3_vl", "qwen3_vl", **_QWEN3),
        _make(
            "Qwen3-VL-30B-A3B", "Qwen/Qwen3-VL-30B-A3B-Instruct", "qwen3_vl", "qwen3_vl", **_QWEN3
        ),
        _make("Qwen3-VL-32B", "Qwen/Qwen3-VL-32B-Instruct", "qwen3_vl", "qwen3_vl", **_QWEN3),
        _make(
            "InternVL3-8B",
            "OpenGVLab/InternVL3-8B-Instruct",
            "internvl",
            "internvl",
            trust_remote_code=True,
            aliases=("OpenGVLab/InternVL3-8B-hf",),
            notes=_INTERNVL_NOTE,
            **_INTERNVL_PREFIX,
        ),
        _make(
            "InternVL3-38B",
            "OpenGVLab/InternVL3-38B-Instruct",
            "internvl",
            "internvl",
            trust_remote_code=True,
            aliases=("OpenGVLab/InternVL3-38B-hf",),
            notes=_INTERNVL_NOTE,
            **_INTERNVL_PREFIX,
        ),
        _make(
            "InternVL3.5-8B",
            "OpenGVLab/InternVL3_5-8B-Instruct",
            "internvl",
            "internvl",
            trust_remote_code=True,
            aliases=("OpenGVLab/InternVL3_5-8B-HF",),
            notes=_INTERNVL_NOTE,
        ),
        _make(
            "InternVL3.5-30B-A3B",
            "OpenGVLab/InternVL3_5-30B-A3B-Instruct",
            "internvl",
            "internvl",
            trust_remote_code=True,
            aliases=("OpenGVLab/InternVL3_5-30B-A3B-HF",),
            notes=_INTERNVL_NOTE,
        ),
        _make(
            "InternVL3.5-38B",
            "OpenGVLab/InternVL3_5-38B-Instruct",
            "internvl",
            "internvl",
            trust_remote_code=True,
            aliases=("OpenGVLab/InternVL3_5-38B-HF",),
            notes=_INTERNVL_NOTE,
            **_INTERNVL_PREFIX,
        ),
        _make("Gemma-3-12B", "google/gemma-3-12b-it", "gemma3", "gemma3", **_GEMMA),
        _make(
            "Gemma-4-12B",
            "google/gemma-4-12B-it",
            "gemma4",
            "gemma4",
            notes="image-token rule approximated as Gemma 3's 256 soft tokens",
            **_GEMMA,
        ),
        _make(
            "Molmo2-8B",
            "allenai/Molmo2-8B",
            "molmo2",
            "molmo2",
            trust_remote_code=True,
            notes="custom code; the paper runs it in its own env with transformers==4.57.1",
        ),
        _make("Pixtral-12B", "mistral-community/pixtral-12b", "pixtral", "pixtral"),
        _make(
            "Phi-3.5-Vision",
            "microsoft/Phi-3.5-vision-instruct",
            "phi3_vision",
            "phi3_vision",
            trust_remote_code=True,
        ),
        _make(
            "Llama-3.2-Vision",
            "meta-llama/Llama-3.2-11B-Vision-Instruct",
            "mllama",
            "mllama",
            notes="cross-attention: the image costs one prompt token (1601 per tile in cross-attn)",
        ),
        _make(
            "LLaVA-NeXT-Vicuna",
            "llava-hf/llava-v1.6-vicuna-7b-hf",
            "llava_next",
            "llava_next",
            dtype="float16",
        ),
        _make(
            "LLaVA-NeXT-Mistral",
            "llava-hf/llava-v1.6-mistral-7b-hf",
            "llava_next",
            "llava_next",
            dtype="float16",
        ),
    )
}

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


def default_preset(model: str) -> ModelPreset:
    """Defaults for any other HF id or local path: no wrappers, standard token caps, and the
    image-token rule (and Qwen pixel limits) of the architecture guessed from its name."""
    name = model.rstrip("/").split("/")[-1] or model
    hint_source = f"{_local_model_type(model) or ''} {model}".lower()
    rule, pixels = "clip336", None
    for needle, hinted_rule, hinted_pixels in _ARCHITECTURE_HINTS:
        if needle in hint_source:
            rule, pixels = hinted_rule, hinted_pixels
            break
    from_config = config_image_tokens(model) if rule in ("clip336", "gemma3") else None
    if from_config is not None:
        rule = f"fixed:{from_config}"
    return ModelPreset(
        key=_preset_key(name),
        display_name=name,
        checkpoint=model,
        family="default",
        image_token_rule=rule,
        min_pixels=pixels[0] if pixels else None,
        max_pixels=pixels[1] if pixels else None,
        notes="not one of the paper's 18 models: no wrappers, default caps",
    )


def _lookup_table() -> dict[str, tuple[ModelPreset, str | None]]:
    table: dict[str, tuple[ModelPreset, str | None]] = {}
    for preset in PRESETS.values():
        for name in (preset.key, preset.display_name, preset.checkpoint):
            table[name.lower()] = (preset, None)
        for alias in preset.aliases:
            table[alias.lower()] = (preset, alias)
    return table


_LOOKUP = _lookup_table()


def get_preset(model: str) -> ModelPreset:
    """The preset for a model key, display name, checkpoint id or alias (case-insensitive).

    An alias (e.g. a transformers-native conversion of an InternVL checkpoint) keeps the paper
    model's wrappers and limits with the alias as checkpoint. Anything else (another HF id, a
    local path) gets :func:`default_preset`.
    """
    found = _LOOKUP.get(model.strip().lower())
    if found is None:
        return default_preset(model)
    preset, alias = found
    return replace(preset, checkpoint=alias, trust_remote_code=False) if alias else preset


#: What is known about the transformers-native aliases of the InternVL presets: the ``-hf``/``-HF``
#: repositories convert the final InternVL releases (``InternVL3-8B``, ``InternVL3_5-8B``: after
#: preference/RL training; their model cards list the MMPR preference data), not the
#: ``-Instruct`` (SFT-only) checkpoints the paper evaluated. Answers may therefore differ from the
#: paper's; the run card carries this note whenever such an alias is used.
INTERNVL_ALIAS_NOTE = (
    "the -hf/-HF alias is a transformers conversion of the final InternVL release (after MPO/RL "
    "training), not of the -Instruct checkpoint the paper used; answers may differ from the "
    "paper's; use the -Instruct checkpoint (vllm backend) to reproduce it"
)


def alias_note(alias: str) -> str | None:
    """A caveat about a preset alias (None when there is none)."""
    lowered = alias.lower()
    if "internvl" in lowered and lowered.endswith("-hf"):
        return INTERNVL_ALIAS_NOTE
    return None


_SNAPSHOT_PATH = re.compile(r"models--(?P<org>[^/]+?)--(?P<name>[^/]+)/snapshots/[0-9a-f]{40}/?$")


def _by_basename() -> dict[str, ModelPreset]:
    table: dict[str, ModelPreset] = {}
    for preset in PRESETS.values():
        for name in (preset.checkpoint, *preset.aliases):
            table.setdefault(name.rstrip("/").split("/")[-1].lower(), preset)
    return table


def _config_names(folder: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """``(field, name)`` candidates naming a local checkpoint, and its ``architectures``."""
    candidates: list[tuple[str, str]] = []
    snapshot = _SNAPSHOT_PATH.search(folder.as_posix())
    if snapshot is not None:
        candidates.append(("hf-cache snapshot", f"{snapshot['org']}/{snapshot['name']}"))
    architectures: list[str] = []
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    if isinstance(config, dict):
        name_or_path = config.get("_name_or_path")
        if isinstance(name_or_path, str) and name_or_path.strip():
            candidates.append(("config _name_or_path", name_or_path.strip()))
        found = config.get("architectures")
        if isinstance(found, list):
            architectures = [str(a) for a in found]
    candidates.append(("folder name", folder.resolve().name))
    return candidates, architectures


def resolve_preset(model: str, forced: str | None = None) -> tuple[ModelPreset, dict[str, Any]]:
    """The preset of ``model`` and how it was found, for the run card.

    ``forced`` (``--preset NAME``) wins; then a preset key, display name, checkpoint id or alias;
    then, for a local folder or HF-cache snapshot, the paper checkpoint it is a copy of, matched by
    the snapshot's repository, the config's ``_name_or_path`` or the folder name (each compared as a
    full id and by its last path part); anything else gets :func:`default_preset`.
    """
    if forced:
        found = _LOOKUP.get(forced.strip().lower())
        if found is None:
            raise BiovqaError(f"unknown preset {forced!r}{did_you_mean(forced.strip(), _LOOKUP)}", field="--preset",
                              hint="see `biovqa models` or biovqa.engine.presets.PRESETS")
        preset = found[0]
        return replace(preset, checkpoint=model), {"preset": preset.key, "matched_by": "forced"}
    found = _LOOKUP.get(model.strip().lower())
    if found is not None:
        match: dict[str, Any] = {"preset": found[0].key,
                                 "matched_by": "alias" if found[1] else "name"}
        note = alias_note(found[1]) if found[1] else None
        if note:
            match["note"] = note
        return get_preset(model), match
    folder = Path(model).expanduser()
    if folder.is_dir():
        candidates, architectures = _config_names(folder)
        basenames = _by_basename()
        for source, name in candidates:
            hit = _LOOKUP.get(name.lower())
            candidate = hit[0] if hit else basenames.get(name.rstrip("/").split("/")[-1].lower())
            if candidate is not None:
                preset = candidate
                match = {"preset": preset.key, "matched_by": "config", "via": source,
                         "name": name, "architectures": architectures}
                note = alias_note(name.rstrip("/").split("/")[-1])
                if note:
                    match["note"] = note
                return replace(preset, checkpoint=model), match
    preset = default_preset(model)
    return preset, {"preset": preset.key, "matched_by": "default"}
