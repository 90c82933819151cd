"""GPU benchmark: one request per call vs batched vs one prefill per image (+ vLLM when present).

One prepared script for a single bare GPU machine (≤ 8 minutes on an H100/H200), nothing downloaded:

1. Writes a model folder for a real architecture and size — Qwen2.5-VL-7B (8.3B parameters):
   its ``config.json``, a matching random byte-level BPE tokenizer with Qwen's special tokens at
   Qwen's ids and a vocabulary of the real width, the Qwen2-VL image-processor settings and a
   Qwen-style chat template. No weights: the transformers stage initialises the architecture
   randomly on the GPU (bf16); vLLM, when importable, loads it with ``load_format="dummy"``.
2. Writes a fixed C1+C2-like sample: C1 — 9 questions per image with 15-token caps; C2 — 35
   questions per image with 48-token caps; deterministic synthetic PNGs at the sources' sizes.
3. Stage ``transformers`` (always): biovqa's ``TransformersBackend`` around the random model, on
   ``--hf-images`` images per component: (a) one ``generate`` per request (batch 1, like
   lmms-eval's HF path), (b) left-padded batches, (c) ``shared_prefix=True`` — one prefill per
   image, its questions decoded together from the KV cache. Items/s, tokens/s, peak GPU memory,
   and whether (b)/(c) reproduce (a) token for token.
4. Stage ``vllm`` (only if ``vllm`` is importable): our vLLM backend, image-grouped, prefix cache
   on, with its hit rate; and one ``llm.chat`` call per request on the same engine.
5. Writes ``results.json`` + ``results.md`` (rows and ratios) to ``--out``.

Run (see README.md beside this file):
    PYTHONPATH=src python benchmarks/gpu/run_gpu_bench.py --out "$OUT" --workdir /tmp/gpu-bench-work \
        --c1-images 8 --c2-images 4 --hf-images 2 --hf-batch 16 --hf-budget-s 300 --stage-timeout-s 420
    python benchmarks/gpu/run_gpu_bench.py --smoke --device cpu --c1-images 2 --c2-images 1 \
        --hf-images 1 --hf-batch 4 --hf-questions 6 --hf-max-new-tokens 6 \
        --workdir /tmp/gpu-smoke-work --out /tmp/gpu-smoke    # CPU smoke test (no torchvision needed)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[2]
if str(REPOSITORY / "src") not in sys.path:
    sys.path.insert(0, str(REPOSITORY / "src"))

# ------------------------------------------------------------------------- the model folder

#: Qwen's special tokens, in id order from 151643 (the ids the real tokenizer gives them).
QWEN_SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
QWEN_FIRST_SPECIAL_ID = 151643

#: Qwen2.5-VL-7B-Instruct's architecture (Qwen2.5-7B text model, 0.67B window-attention ViT).
QWEN2_5_VL_7B = {
    "text": {
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "vocab_size": 152064,
        "max_position_embeddings": 128000,
        "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-6,
        "mrope_section": [16, 24, 24],
    },
    "vision": {
        "depth": 32,
        "hidden_size": 1280,
        "intermediate_size": 3420,
        "num_heads": 16,
        "out_hidden_size": 3584,
        "window_size": 112,
        "fullatt_block_indexes": [7, 15, 23, 31],
    },
}

#: A small model of the same architecture for ``--smoke`` (seconds to load, same code paths).
QWEN2_5_VL_SMOKE = {
    "text": {
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 152064,
        "max_position_embeddings": 32768,
        "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-6,
        "mrope_section": [8, 12, 12],
    },
    "vision": {
        "depth": 2,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_heads": 2,
        "out_hidden_size": 256,
        "window_size": 112,
        "fullatt_block_indexes": [1],
    },
}

QWEN_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] in ('image', 'image_url', 'image_pil') %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def qwen2_5_vl_config(architecture: dict[str, Any]) -> dict[str, Any]:
    """A Qwen2.5-VL ``config.json`` in the layout the hub checkpoints use (flat text fields plus
    ``vision_config``), with Qwen's token ids."""
    text, vision = architecture["text"], architecture["vision"]
    ids = {token: QWEN_FIRST_SPECIAL_ID + i for i, token in enumerate(QWEN_SPECIAL_TOKENS)}
    text_fields = {
        "hidden_size": text["hidden_size"],
        "intermediate_size": text["intermediate_size"],
        "num_hidden_layers": text["num_hidden_layers"],
        "num_attention_heads": text["num_attention_heads"],
        "num_key_value_heads": text["num_key_value_heads"],
        "hidden_act": "silu",
        "max_position_embeddings": text["max_position_embeddings"],
        "max_window_layers": text["num_hidden_layers"],
        "rms_norm_eps": text["rms_norm_eps"],
        "rope_theta": text["rope_theta"],
        "rope_scaling": {"type": "mrope", "mrope_section": text["mrope_section"]},
        "sliding_window": 32768,
        "use_sliding_window": False,
        "vocab_size": text["vocab_size"],
        "attention_dropout": 0.0,
        "initializer_range": 0.02,
        "use_cache": True,
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
    }
    return {
        "architectures": ["Qwen2_5_VLForConditionalGeneration"],
        "model_type": "qwen2_5_vl",
        "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
        **text_fields,
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
        "vision_token_id": ids["<|vision_pad|>"],
        "vision_config": {
            "model_type": "qwen2_5_vl",
            "depth": vision["depth"],
            "hidden_act": "silu",
            "hidden_size": vision["hidden_size"],
            "intermediate_size": vision["intermediate_size"],
            "num_heads": vision["num_heads"],
            "in_chans": 3,
            "in_channels": 3,
            "out_hidden_size": vision["out_hidden_size"],
            "patch_size": 14,
            "spatial_merge_size": 2,
            "spatial_patch_size": 14,
            "temporal_patch_size": 2,
            "window_size": vision["window_size"],
            "fullatt_block_indexes": vision["fullatt_block_indexes"],
            "tokens_per_second": 2,
        },
    }


def build_tokenizer_json(corpus: Sequence[str], vocab_size: int, *, merges_budget: int = 6000) -> str:
    """A byte-level BPE ``tokenizer.json`` (text): merges learnt from ``corpus``, the regular
    vocabulary padded with unreachable filler tokens up to Qwen's 151 643 entries, then Qwen's
    special tokens at their real ids, then reserved special tokens up to ``vocab_size`` — so
    every id a random model can emit decodes."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    trainer_tokenizer = Tokenizer(models.BPE())
    trainer_tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=merges_budget,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    trainer_tokenizer.train_from_iterator(list(corpus), trainer=trainer)
    learnt = json.loads(trainer_tokenizer.to_str())["model"]
    vocab: dict[str, int] = dict(learnt["vocab"])
    merges = learnt["merges"]
    filler = 0
    while len(vocab) < QWEN_FIRST_SPECIAL_ID:
        token = f"filler{filler}x"
        filler += 1
        if token not in vocab:
            vocab[token] = len(vocab)
    merge_pairs = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in merges]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merge_pairs))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    specials = list(QWEN_SPECIAL_TOKENS)
    specials += [f"<|reserved_{i}|>" for i in range(vocab_size - QWEN_FIRST_SPECIAL_ID - len(specials))]
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in specials])
    return tokenizer.to_str()


def write_model_folder(folder: Path, architecture: dict[str, Any], corpus: Sequence[str],
                       *, min_pixels: int, max_pixels: int) -> Path:
    """Config, tokenizer, processor settings and chat template of a weightless Qwen2.5-VL."""
    folder.mkdir(parents=True, exist_ok=True)
    config = qwen2_5_vl_config(architecture)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    (folder / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": config["bos_token_id"], "eos_token_id": config["eos_token_id"],
         "do_sample": False}, indent=2))
    tokenizer_json = build_tokenizer_json(corpus, config["vocab_size"])
    (folder / "tokenizer.json").write_text(tokenizer_json)
    specials = json.loads(tokenizer_json)["added_tokens"]
    added = {
        str(token["id"]): {
            "content": token["content"], "lstrip": False, "normalized": False, "rstrip": False,
            "single_word": False, "special": True,
        }
        for token in specials
    }
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "Qwen2Tokenizer",
        "added_tokens_decoder": added,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "model_max_length": 131072,
        "clean_up_tokenization_spaces": False,
        "errors": "replace",
        "split_special_tokens": False,
        "padding_side": "left",
        "chat_template": QWEN_CHAT_TEMPLATE,
    }, indent=2))
    image_settings = {
        "do_resize": True, "do_rescale": True, "do_normalize": True, "do_convert_rgb": True,
        "rescale_factor": 1 / 255,
        "image_mean": [0.48145466, 0.4578275, 0.40821073],
        "image_std": [0.26862954, 0.26130258, 0.27577711],
        "min_pixels": min_pixels, "max_pixels": max_pixels,
        "size": {"shortest_edge": min_pixels, "longest_edge": max_pixels},
        "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
        "processor_class": "Qwen2_5_VLProcessor",
    }
    (folder / "preprocessor_config.json").write_text(json.dumps(
        {"image_processor_type": "Qwen2VLImageProcessor", **image_settings}, indent=2))
    (folder / "video_preprocessor_config.json").write_text(json.dumps(
        {"video_processor_type": "Qwen2VLVideoProcessor", **image_settings}, indent=2))
    (folder / "chat_template.json").write_text(json.dumps({"chat_template": QWEN_CHAT_TEMPLATE}))
    return folder


# ----------------------------------------------------------------------------- the sample

C1_RANK_INSTRUCTIONS = {
    "phylum": "Answer with ONLY the Phylum name (e.g., Arthropoda). Do not include class, order, or "
    "any other taxonomic ranks. Do not write full sentences.",
    "class": "Answer with ONLY the Class name (e.g., Arachnida, Insecta). Do not include order, "
    "family, or any other taxonomic ranks. Do not write full sentences.",
    "order": "Answer with ONLY the Order name (e.g., Araneae). Do not include family, genus, or any "
    "other taxonomic ranks. Do not write full sentences.",
    "family": "Answer with ONLY the Family name (e.g., Araneidae). Do not include genus, species, or "
    "any other taxonomic ranks. Do not write full sentences.",
    "genus": "Answer with ONLY the Genus name (capitalized, e.g., Argiope). Do not include the "
    "species epithet or family name. Do not write full sentences.",
    "species epithet": "Answer with ONLY the species epithet (the single, lowercase second word of "
    "the scientific name, e.g., aurantia). Absolutely DO NOT include the capitalized Genus name. "
    "Do not write full sentences.",
    "scientific name": "Answer with ONLY the full binomial scientific name (Genus and species, e.g., "
    "Argiope aurantia). Do not include the common name or higher taxonomic ranks. Do not write "
    "full sentences.",
    "common name": "Answer with ONLY the everyday English common name (e.g., Orb weavers). "
    "Absolutely DO NOT provide the Latin scientific name. Do not write full sentences.",
}
C1_MCQ_INSTRUCTION = (
    "Answer with ONLY the exact correct option from the four choices provided in the question. "
    "Absolutely DO NOT write full sentences, and do not provide any extra context or scientific names."
)
C2_MCQ_INSTRUCTION = "[CRITICAL INSTRUCTIONS - NO VIOLATIONS ALLOWED]:\n1. Locate the 'Options:' section in the question above.\n2. Identify the single correct choice from that list.\n3. Output ONLY the matching option letter in parentheses and its exact trailing text string. For example, if the correct option is '(X) alpha bravo charlie', your entire response must be exactly: (X) alpha bravo charlie\n4. DO NOT truncate the response to just the option letter (e.g., do not output just '(X)').\n5. DO NOT invent, hallucinate, or insert any placeholder words from external examples. Absolutely DO NOT output any word unless it is explicitly written inside the chosen option string above.\n6. Output exactly zero extra words, zero markdown formatting, and zero punctuation outside the option string."
C2_OPEN = (
    ("What is the common name of the bird?",
     "Answer with ONLY the everyday English common name of the bird. Do not write full sentences."),
    ("What is the scientific name of the bird?",
     "Answer with ONLY the scientific name of the bird. Do not write full sentences."),
    ("What is the genus of the bird?",
     "Answer with ONLY the capitalized Genus name of the bird. Do not write full sentences."),
)
PARTS = ("bill", "wing", "tail", "breast", "crown", "nape", "throat", "belly", "leg", "back",
         "forehead", "eye", "upper tail", "under tail", "primary")
PROPERTIES = ("color", "pattern", "shape", "length")
VALUES = ("black", "white", "brown", "grey", "yellow", "red", "blue", "buff", "olive", "orange",
          "striped", "spotted", "solid", "multi-colored", "rufous", "iridescent")


@dataclass(frozen=True)
class SampleItem:
    key: str
    component: str
    image: str
    prompt: str
    max_new_tokens: int


def c1_questions(image_index: int) -> list[tuple[str, str]]:
    """Nine (question, instruction) pairs for one C1 image (App. K.1)."""
    label = ("animal", "plant", "organism")[image_index % 3]
    pairs = [
        (f"What is the {rank} of the {label} shown in this image?", C1_RANK_INSTRUCTIONS[rank])
        for rank in ("phylum", "class", "order", "family", "genus", "species epithet",
                     "scientific name", "common name")
    ]
    options = ", ".join(f"option {image_index}-{k} warbler" for k in range(4))
    pairs.append(((f"Among the four options, what is the common name of the {label} shown in this "
                  f"image? {options}"), C1_MCQ_INSTRUCTION))
    return pairs


def c2_questions(image_index: int, count: int = 35) -> list[tuple[str, str]]:
    """``count`` (question, instruction) pairs for one C2 image: MCQ with the long instruction
    block, and the open questions (App. K.2)."""
    pairs = list(C2_OPEN)
    k = 0
    while len(pairs) < count:
        part = PARTS[(image_index + k) % len(PARTS)]
        prop = PROPERTIES[k % len(PROPERTIES)]
        options = ", ".join(f"({letter}) {VALUES[(k + j + image_index) % len(VALUES)]}"
                            for j, letter in enumerate("ABCD"))
        pairs.append((f"What is the {part} {prop} of this bird? Options: {options}", C2_MCQ_INSTRUCTION))
        k += 1
    return pairs[:count]


def make_sample(image_folder: Path, *, c1_images: int, c2_images: int,
                c1_size: tuple[int, int] = (800, 600), c2_size: tuple[int, int] = (500, 375),
                c2_questions_per_image: int = 35) -> list[SampleItem]:
    """The fixed sample, image-grouped: C1 images × 9 questions (cap 15), then C2 images × 35
    questions (cap 48). Writes deterministic synthetic PNGs into ``image_folder``."""
    import numpy as np
    from PIL import Image

    image_folder.mkdir(parents=True, exist_ok=True)
    generator = np.random.default_rng(20240601)
    items: list[SampleItem] = []
    plan = [("c1", i, c1_size, c1_questions(i), 15) for i in range(c1_images)]
    plan += [("c2", i, c2_size, c2_questions(i, c2_questions_per_image), 48) for i in range(c2_images)]
    for component, index, (width, height), pairs, cap in plan:
        path = image_folder / f"{component}_{width}x{height}_{index:04d}.png"
        if not path.exists():
            gradient = np.linspace(0, 255, width, dtype=np.float32)[None, :, None]
            noise = generator.integers(0, 64, size=(height, width, 3)).astype(np.float32)
            pixels = np.clip(gradient * 0.7 + noise + (index * 37) % 64, 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(path)
        for q, (question, instruction) in enumerate(pairs):
            items.append(SampleItem(key=f"{component}-{index:04d}-{q:02d}", component=component,
                                    image=str(path), prompt=f"{question}\n{instruction}",
                                    max_new_tokens=cap))
    return items


def tokenizer_corpus() -> list[str]:
    """Text the random tokenizer learns its merges from: the sample's prompt vocabulary."""
    corpus = []
    for i in range(6):
        corpus += [f"{q}\n{ins}" for q, ins in c1_questions(i)]
        corpus += [f"{q}\n{ins}" for q, ins in c2_questions(i)]
    return corpus * 3


def to_requests(items: Sequence[SampleItem]) -> list[Any]:
    from biovqa.engine.backends.base import Request

    return [Request(key=item.key, item_id=item.key, prompt=item.prompt, image_path=Path(item.image),
                    max_new_tokens=item.max_new_tokens, task=item.component) for item in items]


def batches(items: Sequence[Any], size: int) -> list[list[Any]]:
    """Consecutive slices of at most ``size`` (the sample is already image-grouped)."""
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


# ------------------------------------------------------------------------------ measuring


@dataclass
class Measurement:
    mode: str
    items: int
    seconds: float
    prompt_tokens: int
    generated_tokens: int
    hit_rate: float | None = None
    hit_rate_ceiling: float | None = None

    @property
    def items_per_s(self) -> float:
        return self.items / self.seconds if self.seconds > 0 else float("nan")

    @property
    def prompt_tokens_per_s(self) -> float:
        return self.prompt_tokens / self.seconds if self.seconds > 0 else float("nan")

    @property
    def generated_tokens_per_s(self) -> float:
        return self.generated_tokens / self.seconds if self.seconds > 0 else float("nan")

    def row(self) -> dict[str, Any]:
        return {**asdict(self), "items_per_s": self.items_per_s,
                "prompt_tokens_per_s": self.prompt_tokens_per_s,
                "generated_tokens_per_s": self.generated_tokens_per_s}


def prefix_cache_ceiling(prompt_tokens: Sequence[int], images: Sequence[str],
                         shared_prefix_tokens: Sequence[int], *, block_size: int = 16) -> float:
    """The best hit rate any cache can reach on an image-grouped run: every question after an
    image's first reuses the shared prefix (chat header + image tokens), rounded down to whole
    KV blocks; nothing else is shareable because each question's text follows the image.

    ceiling = Σ_followers ⌊prefix / block⌋·block / Σ_all prompt tokens
    """
    total = sum(prompt_tokens)
    if total == 0:
        return float("nan")
    reusable = 0
    seen: set[str] = set()
    for tokens, image, prefix in zip(prompt_tokens, images, shared_prefix_tokens):
        if image in seen:
            reusable += min(tokens, (prefix // block_size) * block_size)
        seen.add(image)
    return reusable / total


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Ratios and target checks from measurement rows (keyed by ``mode``)."""
    by_mode = {row["mode"]: row for row in rows}
    ours = by_mode.get("a_ours_grouped")
    per_request = by_mode.get("b_vllm_per_request")
    plain = by_mode.get("c_transformers_loop")
    c2 = by_mode.get("a_ours_c2")
    summary: dict[str, Any] = {}
    for component in ("c2", "c1"):
        one = by_mode.get(f"hf_per_request_{component}")
        batched = by_mode.get(f"hf_batched_{component}")
        shared = by_mode.get(f"hf_shared_prefix_{component}")
        if batched and one:
            summary[f"{component}_batched_over_per_request"] = (
                batched["items_per_s"] / one["items_per_s"])
        if shared and one:
            summary[f"{component}_shared_prefix_over_per_request"] = (
                shared["items_per_s"] / one["items_per_s"])
        if shared and batched:
            summary[f"{component}_shared_prefix_over_batched"] = (
                shared["items_per_s"] / batched["items_per_s"])
        for name, row in (("batched", batched), ("shared_prefix", shared)):
            if row is not None and row.get("equal_to_per_request") is not None:
                summary[f"{component}_{name}_equal_to_per_request"] = row["equal_to_per_request"]
    if ours and per_request:
        summary["speedup_vs_per_request"] = ours["items_per_s"] / per_request["items_per_s"]
        summary["target_5x_met"] = summary["speedup_vs_per_request"] >= 5.0
    if ours and plain:
        summary["speedup_vs_transformers"] = ours["items_per_s"] / plain["items_per_s"]
    if c2 and c2.get("hit_rate") is not None:
        summary["c2_prefix_cache_hit_rate"] = c2["hit_rate"]
        summary["target_hit_rate_80_met"] = c2["hit_rate"] >= 0.8
        if c2.get("hit_rate_ceiling") is not None:
            summary["c2_hit_rate_ceiling_for_this_layout"] = c2["hit_rate_ceiling"]
    return summary


def format_table(rows: Sequence[dict[str, Any]], summary: dict[str, Any]) -> str:
    lines = [("| mode | items | s | items/s | prompt tok/s | generated tok/s | peak GPU GiB "
              "| prefix-cache hit | ceiling |"),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        hit = "" if row.get("hit_rate") is None else f"{row['hit_rate']:.1%}"
        ceiling = "" if row.get("hit_rate_ceiling") is None else f"{row['hit_rate_ceiling']:.1%}"
        memory = "" if row.get("peak_gpu_memory_gib") is None else f"{row['peak_gpu_memory_gib']:.1f}"
        lines.append(f"| {row['mode']} | {row['items']} | {row['seconds']:.1f} | "
                     f"{row['items_per_s']:.2f} | {row['prompt_tokens_per_s']:.0f} | "
                     f"{row['generated_tokens_per_s']:.0f} | {memory} | {hit} | {ceiling} |")
    lines.append("")
    for key, value in summary.items():
        lines.append(f"- {key}: {value:.3f}" if isinstance(value, float) else f"- {key}: {value}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- stages


def stage_vllm(args: argparse.Namespace, model_folder: Path, items: list[SampleItem]) -> list[dict]:
    """(a) our backend, C1 and C2 separately then together; (b) one request per call."""
    from vllm import LLM, SamplingParams

    from biovqa.engine.backends.vllm import (
        VllmBackend,
        build_conversation,
        encode_images,
        engine_options_for,
    )
    from biovqa.engine.presets import get_preset

    preset = replace(get_preset("Qwen2.5-VL-7B"), min_pixels=args.min_pixels, max_pixels=args.max_pixels)
    engine = engine_options_for(str(model_folder), preset, {
        "load_format": "dummy", "max_model_len": args.max_model_len,
        "gpu_memory_utilization": args.gpu_memory_utilization,
        "min_pixels": args.min_pixels, "max_pixels": args.max_pixels,
        **({"enforce_eager": True} if args.enforce_eager else {}),
    })
    engine["trust_remote_code"] = False
    started = time.perf_counter()
    llm = LLM(**engine)
    print(f"[vllm] engine up in {time.perf_counter() - started:.1f} s", flush=True)
    backend = VllmBackend(llm, model=str(model_folder), preset=preset, engine_options=engine,
                          sampling_overrides={"ignore_eos": True})
    requests = to_requests(items)
    warmup = to_requests(make_sample(Path(args.workdir) / "warmup-images", c1_images=2, c2_images=1,
                                     c2_questions_per_image=4))
    backend.generate(warmup)

    from PIL import Image
    from transformers import AutoTokenizer

    image_sizes = {}
    for request in requests:
        if str(request.image_path) not in image_sizes:
            with Image.open(request.image_path) as image:
                image_sizes[str(request.image_path)] = image.size
    # Tokens before the image: "<|im_start|>user\n" (the image markers are in image_tokens).
    header_tokens = len(AutoTokenizer.from_pretrained(model_folder)("<|im_start|>user\n")["input_ids"])

    def reset_cache() -> None:
        reset = getattr(llm, "reset_prefix_cache", None)
        if callable(reset):
            reset()

    rows = []

    def run_ours(mode: str, subset: list[Any]) -> Measurement:
        reset_cache()
        before = (backend.prefix_cache.prompt_tokens, backend.prefix_cache.cached_tokens)
        started = time.perf_counter()
        replies = []
        for batch in batches(subset, args.batch_items):
            replies += backend.generate(batch)
        seconds = time.perf_counter() - started
        prompt = backend.prefix_cache.prompt_tokens - before[0]
        cached = backend.prefix_cache.cached_tokens - before[1]
        failed = sum(reply.status != "ok" for reply in replies)
        if failed:
            print(f"[vllm] {mode}: {failed} failed replies, first: "
                  f"{next(r.error for r in replies if r.status != 'ok')}", flush=True)
        prefixes = [header_tokens + preset.image_tokens(*image_sizes[str(r.image_path)]) for r in subset]
        ceiling = prefix_cache_ceiling([r.prompt_tokens or 0 for r in replies],
                                       [str(r.image_path) for r in subset], prefixes)
        return Measurement(mode, len(subset), seconds, sum(r.prompt_tokens or 0 for r in replies),
                           sum(r.completion_tokens or 0 for r in replies),
                           hit_rate=(cached / prompt) if prompt else None, hit_rate_ceiling=ceiling)

    c1 = [r for r in requests if r.task == "c1"]
    c2 = [r for r in requests if r.task == "c2"]
    measured = []
    for mode, subset in (("a_ours_c1", c1), ("a_ours_c2", c2)):
        measurement = run_ours(mode, subset)
        measured.append(measurement)
        rows.append(measurement.row())
        print(f"[vllm] {mode}: {measurement.items_per_s:.2f} items/s, hit rate "
              f"{measurement.hit_rate}, ceiling {measurement.hit_rate_ceiling}", flush=True)
    # The whole sample = C1 run + C2 run (each started with an empty cache, as separate shards).
    whole = Measurement("a_ours_grouped", sum(m.items for m in measured),
                        sum(m.seconds for m in measured), sum(m.prompt_tokens for m in measured),
                        sum(m.generated_tokens for m in measured))
    rows.append(whole.row())

    # (b) one request per llm.chat call, image-grouped order kept, on a prefix of the sample
    # spread over C1 and C2 in the sample's proportions.
    reset_cache()
    share = args.per_request_items / max(1, len(requests))
    subset = c1[: max(1, round(len(c1) * share))] + c2[: max(1, round(len(c2) * share))]
    parts, _ = encode_images(subset)
    started = time.perf_counter()
    prompt_tokens = generated = cached = 0
    for request in subset:
        conversation = build_conversation(request, parts[str(request.image_path)])
        params = SamplingParams(temperature=0.0, max_tokens=request.max_new_tokens, ignore_eos=True)
        output = llm.chat([conversation], sampling_params=params, use_tqdm=False)[0]
        prompt_tokens += len(output.prompt_token_ids)
        generated += len(output.outputs[0].token_ids)
        cached += getattr(output, "num_cached_tokens", 0) or 0
    seconds = time.perf_counter() - started
    measurement = Measurement("b_vllm_per_request", len(subset), seconds, prompt_tokens, generated,
                              hit_rate=cached / prompt_tokens if prompt_tokens else None)
    rows.append(measurement.row())
    print(f"[vllm] b_vllm_per_request: {measurement.items_per_s:.2f} items/s", flush=True)
    rows.append({"mode": "_describe", **{k: v for k, v in backend.describe().items()
                                           if k in ("vllm_version", "torch_version", "gpu", "prefix_cache",
                                                    "chat_calls")}})
    backend.close()
    return rows


def _backend_around(model: Any, processor: Any, *, batch_size: int, shared_prefix: bool,
                    device: str = "cuda") -> Any:
    """biovqa's ``TransformersBackend`` wrapped around a model already on the GPU (random weights
    cannot be loaded with ``from_pretrained`` without writing 16 GB first)."""
    import torch
    import transformers

    from biovqa.engine.backends.transformers import TransformersBackend
    from biovqa.engine.presets import get_preset

    backend = TransformersBackend.__new__(TransformersBackend)
    tokenizer = processor.tokenizer
    tokenizer.padding_side = "left"
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    eos = model.generation_config.eos_token_id
    stop = set(eos if isinstance(eos, list) else [eos]) | {tokenizer.eos_token_id}
    backend.__dict__.update(
        _torch=torch, _transformers_version=transformers.__version__,
        preset=get_preset("qwen2_5-vl-7b"), model_id="qwen2_5_vl_7b_random",
        batch_size=batch_size, max_batch_items=batch_size, shared_prefix=shared_prefix,
        ignored_options={}, device=device, dtype_name=str(model.dtype).replace("torch.", ""),
        processor=processor,
        model=model, tokenizer=tokenizer, pad_token_id=pad,
        stop_token_ids=frozenset(int(t) for t in stop if t is not None),
        resolved_revision="random", text_only=False)
    return backend


def load_processor(model_folder: Path) -> tuple[Any, str]:
    """The Qwen2.5-VL processor and how it was made (``"auto"`` or ``"pil-pieces (<why>)"``).

    The engine's :func:`biovqa.engine.backends.processors.load_processor`: without a usable
    torchvision (a bare machine may have none, or one built for another torch) the processor is
    assembled from the PIL image processor, the tokenizer and the chat template, with no video
    processor — images are all the benchmark sends."""
    from biovqa.engine.backends.processors import load_processor as engine_load_processor

    return engine_load_processor(model_folder)


def pil_processor(model_folder: Path) -> Any:
    """Qwen2.5-VL's processor without torchvision (the engine's ``pil_processor``)."""
    from biovqa.engine.backends.processors import pil_processor as engine_pil_processor

    return engine_pil_processor(model_folder)


def greedy_margins(model: Any, processor: Any, requests: Sequence[Any], device: str) -> list[float]:
    """Per request, the smallest gap between the two largest logits over its greedy steps
    (one request per forward, no padding). A gap of zero or a few bf16 steps (2**-7 of the logit
    scale) is a tie: there, any reordering of a sum — batching, another kernel — may flip the
    argmax, so a False equality under bf16 need not be a bug."""
    import torch

    from biovqa.engine.backends.transformers import _load_image

    margins: list[float] = []
    for request in requests:
        text = processor.apply_chat_template(
            [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": request.prompt}]}],
            add_generation_prompt=True, tokenize=False)
        inputs = processor(text=[text], images=[[_load_image(Path(request.image_path))]],
                           return_tensors="pt").to(device)
        inputs["pixel_values"] = inputs["pixel_values"].to(model.dtype)
        with torch.inference_mode():
            output = model.generate(**inputs, max_new_tokens=request.max_new_tokens, do_sample=False,
                                    num_beams=1, output_scores=True, return_dict_in_generate=True)
        gaps = [float(top[0, 0] - top[0, 1]) for top in
                (torch.topk(score.float(), 2, dim=-1).values for score in output.scores)]
        margins.append(min(gaps) if gaps else float("inf"))
    return margins


def stage_transformers(args: argparse.Namespace, model_folder: Path, items: list[SampleItem]) -> list[dict]:
    """Three ways to run the same image-grouped items through one random-weight model on the GPU:

    (a) ``hf_per_request``: one ``generate`` per request (batch 1), as lmms-eval's HF path does;
    (b) ``hf_batched``: biovqa's transformers backend, left-padded batches of ``--hf-batch``;
    (c) ``hf_shared_prefix``: the same backend with ``shared_prefix=True`` — one prefill per image,
        its questions decoded together from that KV cache — one image's questions per call.

    Greedy, random weights: the shared-prefix path must give the per-request path's tokens
    (``equal_to_per_request``), so the modes do about the same work. Where a mode differs,
    ``min_top2_logit_margin`` is the smallest gap between the two best logits along the
    reference's greedy path of (up to :data:`MARGIN_CHECKS`) differing requests: under bf16 a gap
    of about a bf16 step is a tie that any change in summation order can flip. Items/s, prompt and generated tokens/s and peak GPU memory per mode.
    """
    import torch
    from transformers import AutoConfig, Qwen2_5_VLForConditionalGeneration

    config = AutoConfig.from_pretrained(model_folder)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    started = time.perf_counter()
    device = args.device
    cuda = device.startswith("cuda")
    # random init straight into bf16 on the GPU, float32 for a CPU smoke test; the dtype is passed
    # explicitly: ``_from_config`` otherwise takes the config's ``torch_dtype`` (bfloat16) and
    # ignores ``torch.set_default_dtype``
    dtype = torch.bfloat16 if cuda else torch.float32
    with torch.device(device):
        model = Qwen2_5_VLForConditionalGeneration._from_config(config, dtype=dtype)
    model.eval()
    model.generation_config.do_sample = False

    def synchronize() -> None:
        if cuda:
            torch.cuda.synchronize()
    processor, processor_source = load_processor(model_folder)
    print(f"[transformers] model up in {time.perf_counter() - started:.1f} s; processor: {processor_source}",
          flush=True)

    requests = to_requests(items)
    by_component: dict[str, list[Any]] = {}
    for item, request in zip(items, requests):
        by_component.setdefault(item.component, []).append(request)
    rows: list[dict[str, Any]] = []
    budget_started = time.perf_counter()
    for component in ("c2", "c1"):
        pool = by_component.get(component, [])
        per_image: dict[str, list[Any]] = {}
        for request in pool:
            per_image.setdefault(str(request.image_path), []).append(request)
        groups = [g[: args.hf_questions] if args.hf_questions else g
                  for g in list(per_image.values())[: max(1, args.hf_images)]]
        if args.hf_max_new_tokens:
            groups = [[replace(r, max_new_tokens=args.hf_max_new_tokens) for r in g]
                      for g in groups]
        subset = [r for group in groups for r in group]
        if not subset:
            continue
        modes = [
            ("hf_per_request", _backend_around(model, processor, batch_size=1,
                                               shared_prefix=False, device=device),
             [[r] for r in subset]),
            ("hf_batched", _backend_around(model, processor, batch_size=args.hf_batch,
                                           shared_prefix=False, device=device),
             batches(subset, args.hf_batch)),
            ("hf_shared_prefix", _backend_around(model, processor, batch_size=max(
                len(g) for g in groups), shared_prefix=True, device=device), groups),
        ]
        answers: dict[str, list[Any]] = {}
        for mode, backend, calls in modes:
            if time.perf_counter() - budget_started > args.hf_budget_s:
                print(f"[transformers] {component} {mode}: skipped (time budget)", flush=True)
                continue
            backend.generate(calls[0][:2])  # warm-up
            backend.__dict__.pop("_shared_stats", None)  # shared-prefix use: measured calls only
            synchronize()
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            started = time.perf_counter()
            replies = []
            for call in calls:
                replies += backend.generate(call)
            synchronize()
            seconds = time.perf_counter() - started
            answers[mode] = [(r.text, r.completion_tokens) for r in replies]
            measurement = Measurement(f"{mode}_{component}", len(subset), seconds,
                                      sum(r.prompt_tokens or 0 for r in replies),
                                      sum(r.completion_tokens or 0 for r in replies))
            row = measurement.row()
            row["peak_gpu_memory_gib"] = (torch.cuda.max_memory_allocated() / 2**30
                                          if cuda else None)
            row["processor"] = processor_source
            row["failed"] = sum(r.status != "ok" for r in replies)
            row["first_error"] = next((r.error for r in replies if r.error), None)
            if backend.shared_prefix:  # did the groups take the shared path, or fall back (why)?
                row["shared_prefix_use"] = backend.describe().get("shared_prefix")
            rows.append(row)
            # kept if the stage is stopped by its timeout: the parent reads what was measured
            (Path(args.out) / "stage-transformers.partial.json").write_text(json.dumps(rows, indent=2, default=str))
            memory = row["peak_gpu_memory_gib"]
            print(f"[transformers] {mode}_{component}: {measurement.items_per_s:.2f} items/s"
                  + ("" if memory is None else f", peak {memory:.1f} GiB"), flush=True)
        # the reference is one request per call: no padding at all
        for row in rows:
            mode = row["mode"].rsplit("_", 1)[0]
            if row["mode"].endswith(component) and "hf_per_request" in answers and mode in answers:
                row["equal_to_per_request"] = answers[mode] == answers["hf_per_request"]
                differing = [i for i, (got, want) in enumerate(zip(answers[mode], answers["hf_per_request"]))
                             if got != want]
                row["requests_differing"] = len(differing)
                # how close the reference's greedy choices were where the answers differ: a
                # near-zero top-2 gap is a tie (bf16), not a wrong cache or position
                checked = differing[:MARGIN_CHECKS]
                if time.perf_counter() - budget_started > args.hf_budget_s:
                    checked = []  # out of measuring time: the row says none was checked
                margins = greedy_margins(model, processor, [subset[i] for i in checked], device)
                row["min_top2_logit_margin"] = min(margins) if margins else None
                row["margin_checked_requests"] = len(checked)
    return rows


#: At most this many differing requests per mode get their top-2 logit margins measured.
MARGIN_CHECKS = 4


# ------------------------------------------------------------------------------------ main


#: What the transformers stage imports; a bare machine may lack any of these (biovqa itself needs pyarrow).
REQUIRED_MODULES = ("torch", "transformers", "numpy", "PIL", "pyarrow")
OPTIONAL_MODULES = ("torchvision", "vllm", "accelerate")


def environment() -> dict[str, Any]:
    """Versions of what the stages import (None: not importable here) and the GPU, without
    importing anything heavy: the module specs and their distribution metadata only."""
    import importlib.metadata
    import importlib.util
    import platform

    distributions = {"PIL": "pillow"}
    found: dict[str, Any] = {"python": platform.python_version()}
    for module in (*REQUIRED_MODULES, *OPTIONAL_MODULES):
        if importlib.util.find_spec(module) is None:
            found[module] = None
            continue
        try:
            found[module] = importlib.metadata.version(distributions.get(module, module))
        except importlib.metadata.PackageNotFoundError:
            found[module] = "installed"
    return found


def preflight(args: argparse.Namespace) -> dict[str, Any]:
    """Fail in seconds, with what is missing, rather than minutes into a run. The device is
    checked in the stage processes only (the parent keeps no CUDA context while they run)."""
    found = environment()
    missing = [m for m in REQUIRED_MODULES if found.get(m) is None]
    if missing:
        raise SystemExit(f"cannot run: {', '.join(missing)} not importable here (environment: {found}); "
                         "see benchmarks/gpu/README.md")
    if args.stage != "all" and args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise SystemExit(f"--device {args.device} but torch {torch.__version__} sees no CUDA device "
                             "(use --smoke --device cpu for the CPU smoke test)")
        properties = torch.cuda.get_device_properties(0)
        found["gpu"] = properties.name
        found["gpu_memory_gib"] = round(properties.total_memory / 2**30, 1)
    return found


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="gpu-bench-results", help="folder for results.json/.md")
    parser.add_argument("--workdir", default=None, help="model folder and images (default: OUT/work)")
    parser.add_argument("--smoke", action="store_true", help="tiny model of the same architecture")
    parser.add_argument("--stage", choices=("all", "vllm", "transformers"), default="all")
    parser.add_argument("--c1-images", type=int, default=96)
    parser.add_argument("--c2-images", type=int, default=24)
    parser.add_argument("--c1-size", default="800x600", help="C1 image WIDTHxHEIGHT (GBIF-like)")
    parser.add_argument("--c2-size", default="500x375", help="C2 image WIDTHxHEIGHT (CUB-like)")
    parser.add_argument("--batch-items", type=int, default=1024, help="requests per backend batch")
    parser.add_argument("--per-request-items", type=int, default=160, help="items timed in (b)")
    parser.add_argument("--hf-images", type=int, default=4,
                        help="images per component in the transformers modes (C2: 35 questions each)")
    parser.add_argument("--hf-batch", type=int, default=16)
    parser.add_argument("--device", default="cuda", help="cuda (the benchmark) or cpu (smoke)")
    parser.add_argument("--hf-questions", type=int, default=0,
                        help="transformers modes: at most N questions per image (0: all; smoke)")
    parser.add_argument("--hf-max-new-tokens", type=int, default=0,
                        help="transformers modes: override the token caps (0: the sample's; smoke)")
    parser.add_argument("--hf-budget-s", type=float, default=240.0,
                        help="skip remaining transformers modes after this many seconds")
    parser.add_argument("--min-pixels", type=int, default=3136)
    parser.add_argument("--max-pixels", type=int, default=12845056)
    parser.add_argument("--max-model-len", type=int, default=8192)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    parser.add_argument("--enforce-eager", action="store_true", help="skip CUDA graphs/compile")
    parser.add_argument("--stage-timeout-s", type=float, default=330.0)
    return parser.parse_args(argv)


def parse_size(text: str) -> tuple[int, int]:
    """``"800x600"`` → (800, 600)."""
    width, _, height = text.lower().partition("x")
    return int(width), int(height)


def stage_arguments(args: argparse.Namespace, stage: str) -> list[str]:
    """The command-line arguments that rerun this configuration as one ``stage``."""
    arguments = ["--stage", stage, "--out", str(args.out), "--workdir", str(args.workdir)]
    for name, value in sorted(vars(args).items()):
        if name in ("stage", "out", "workdir") or value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        arguments += [flag] if value is True else [flag, str(value)]
    return arguments


def prepare(args: argparse.Namespace) -> tuple[Path, list[SampleItem]]:
    workdir = Path(args.workdir or Path(args.out) / "work")
    items = make_sample(workdir / "images", c1_images=args.c1_images, c2_images=args.c2_images,
                        c1_size=parse_size(args.c1_size), c2_size=parse_size(args.c2_size))
    architecture = QWEN2_5_VL_SMOKE if args.smoke else QWEN2_5_VL_7B
    model_folder = workdir / ("qwen2_5_vl_smoke" if args.smoke else "qwen2_5_vl_7b_random")
    if not (model_folder / "tokenizer.json").exists():
        write_model_folder(model_folder, architecture, tokenizer_corpus(),
                           min_pixels=args.min_pixels, max_pixels=args.max_pixels)
    return model_folder, items


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    args.workdir = str(Path(args.workdir or out / "work"))
    found = preflight(args)
    model_folder, items = prepare(args)
    if args.stage != "all":
        stage = stage_vllm if args.stage == "vllm" else stage_transformers
        rows = [{"mode": f"_environment_{args.stage}", **found}, *stage(args, model_folder, items)]
        (out / f"stage-{args.stage}.json").write_text(json.dumps(rows, indent=2, default=str))
        return 0
    print(f"sample: {len(items)} items, {args.c1_images} C1 images × 9, {args.c2_images} C2 images "
          f"× 35; model folder {model_folder}", flush=True)
    rows: list[dict[str, Any]] = []
    import importlib.util

    stages = ["transformers"] + (["vllm"] if importlib.util.find_spec("vllm") else [])
    if "vllm" not in stages:
        print("vllm is not importable here: the vLLM image-grouped path is skipped", flush=True)
    for stage in stages:
        command = [sys.executable, __file__, *stage_arguments(args, stage)]
        environment = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(REPOSITORY / "src"), os.environ.get("PYTHONPATH", "")]))
        started = time.perf_counter()
        (out / f"stage-{stage}.partial.json").unlink(missing_ok=True)  # not an earlier run's
        try:
            subprocess.run(command, check=True, timeout=args.stage_timeout_s, env=environment)
            rows += json.loads((out / f"stage-{stage}.json").read_text())
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, FileNotFoundError) as error:
            print(f"[{stage}] stage failed after {time.perf_counter() - started:.0f} s: {error}",
                  flush=True)
            partial = out / f"stage-{stage}.partial.json"
            if partial.is_file():  # the modes measured before it stopped
                kept = json.loads(partial.read_text())
                rows += [{**row, "partial_stage": True} for row in kept]
                print(f"[{stage}] keeping the {len(kept)} mode(s) measured before it stopped", flush=True)
    measured = [row for row in rows if not row["mode"].startswith("_")]
    summary = summarise(measured)
    table = format_table(measured, summary)
    print("\n" + table)
    (out / "results.json").write_text(json.dumps({"rows": rows, "summary": summary, "environment": found,
                                                  "smoke": args.smoke, "arguments": vars(args)},
                                                 indent=2, default=str))
    described = ", ".join(f"{k} {v}" for k, v in found.items())
    (out / "results.md").write_text(table + f"\n\nenvironment: {described}\n")
    return 0 if measured else 1


if __name__ == "__main__":
    raise SystemExit(main())
