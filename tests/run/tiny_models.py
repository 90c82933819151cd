"""Tiny randomly initialised vision-language models, built from configs, for offline backend tests.

Nothing is downloaded: a small byte-level BPE tokenizer is trained on a few sentences with the
``tokenizers`` library, a config of a real architecture (LLaVA: CLIP vision tower + Llama text
model; Gemma3: SigLIP vision tower + Gemma3 text model) is shrunk to a few thousand parameters,
and model, tokenizer, image processor and processor are saved with ``save_pretrained`` to a
folder that ``AutoModelForImageTextToText`` / ``AutoProcessor`` / ``transformers serve`` load with
``HF_HUB_OFFLINE=1``. Random weights produce junk text; tests assert plumbing, never content.

The builders are deterministic (fixed seed), so two builds of the same model give the same weights.
"""

from __future__ import annotations

from pathlib import Path

TRAINING_SENTENCES = (
    "What is the order of the animal shown in this image?",
    "Answer with ONLY the Order name (e.g., Araneae). Do not write full sentences.",
    ("Which of the following parts of the bird are visible in this image? Options: (A) bill, (B) "
    "wing, (C) tail, (D) None, (E) All three"),
    "You are a precise taxonomy expert. Reply with only the requested term.",
    "Please answer in English. How many animals are there in this image?",
    "Argiope aurantia Araneidae Arthropoda Insecta Arachnida Passeriformes Corvus brachyrhynchos",
    "0 1 2 3 4 5 6 7 8 9 [x, y, width, height] cm (A) (B) (C) (D) yes no left right both",
)

LLAVA_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}SYSTEM: "
    "{% else %}{{ message['role'] | upper }}: {% endif %}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] in ('image', 'image_url') %}<image>\n"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{% if message['role'] == 'assistant' %}{{ eos_token }}{% endif %}{{ '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)

GEMMA3_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% set system_text = '' %}"
    "{% if messages[0]['role'] == 'system' %}"
    "{% if messages[0]['content'] is string %}{% set system_text = messages[0]['content'] + '\n\n' %}"
    "{% else %}{% set system_text = messages[0]['content'][0]['text'] + '\n\n' %}{% endif %}"
    "{% set loop_messages = messages[1:] %}"
    "{% else %}{% set loop_messages = messages %}{% endif %}"
    "{% for message in loop_messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "<start_of_turn>{{ role }}\n"
    "{% if loop.first %}{{ system_text }}{% endif %}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] in ('image', 'image_url') %}<start_of_image>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "<end_of_turn>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def _train_tokenizer(special_tokens: list[str], vocab_size: int = 400):  # -> PreTrainedTokenizerFast
    """A byte-level BPE over :data:`TRAINING_SENTENCES`; any text encodes (bytes fall back)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(list(TRAINING_SENTENCES) * 4, trainer=trainer)
    return tokenizer


def build_tiny_llava(folder: Path) -> Path:
    """Save a tiny LLaVA (CLIP-vision + Llama) with tokenizer and processor into ``folder``."""
    import torch
    from transformers import (
        CLIPImageProcessorPil,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    folder.mkdir(parents=True, exist_ok=True)
    specials = ["<pad>", "<s>", "</s>", "<image>"]
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=_train_tokenizer(specials),
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        padding_side="left",
        chat_template=LLAVA_CHAT_TEMPLATE,
        extra_special_tokens={"image_token": "<image>"},
    )
    image_size, patch_size = 32, 8
    config = LlavaConfig(
        vision_config={
            "model_type": "clip_vision_model",
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": image_size,
            "patch_size": patch_size,
        },
        text_config={
            "model_type": "llama",
            "vocab_size": len(tokenizer),
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 512,
        },
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
        pad_token_id=tokenizer.pad_token_id,
    )
    config.text_config.pad_token_id = tokenizer.pad_token_id
    config.text_config.bos_token_id = tokenizer.bos_token_id
    config.text_config.eos_token_id = tokenizer.eos_token_id
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config).eval()
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": image_size},
        crop_size={"height": image_size, "width": image_size},
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=patch_size,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=LLAVA_CHAT_TEMPLATE,
    )
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def build_tiny_gemma3(folder: Path) -> Path:
    """Save a tiny Gemma3 (SigLIP-vision + Gemma3 text) with tokenizer and processor into ``folder``."""
    import torch
    from transformers import (
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3ImageProcessorPil,
        Gemma3Processor,
        PreTrainedTokenizerFast,
    )

    folder.mkdir(parents=True, exist_ok=True)
    specials = [
        "<pad>",
        "<eos>",
        "<bos>",
        "<start_of_turn>",
        "<end_of_turn>",
        "<start_of_image>",
        "<end_of_image>",
        "<image_soft_token>",
    ]
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=_train_tokenizer(specials),
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        padding_side="left",
        chat_template=GEMMA3_CHAT_TEMPLATE,
        extra_special_tokens={
            "image_token": "<image_soft_token>",
            "boi_token": "<start_of_image>",
            "eoi_token": "<end_of_image>",
        },
    )
    image_size, patch_size, tokens_per_image = 32, 8, 4
    config = Gemma3Config(
        vision_config={
            "model_type": "siglip_vision_model",
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": image_size,
            "patch_size": patch_size,
        },
        text_config={
            "model_type": "gemma3_text",
            "vocab_size": len(tokenizer),
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "max_position_embeddings": 512,
            "sliding_window": 64,
        },
        mm_tokens_per_image=tokens_per_image,
        image_token_index=tokenizer.convert_tokens_to_ids("<image_soft_token>"),
        boi_token_index=tokenizer.convert_tokens_to_ids("<start_of_image>"),
        eoi_token_index=tokenizer.convert_tokens_to_ids("<end_of_image>"),
        pad_token_id=tokenizer.pad_token_id,
    )
    config.text_config.pad_token_id = tokenizer.pad_token_id
    config.text_config.bos_token_id = tokenizer.bos_token_id
    config.text_config.eos_token_id = tokenizer.eos_token_id
    torch.manual_seed(0)
    model = Gemma3ForConditionalGeneration(config).eval()
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    image_processor = Gemma3ImageProcessorPil(size={"height": image_size, "width": image_size})
    processor = Gemma3Processor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        chat_template=GEMMA3_CHAT_TEMPLATE,
        image_seq_length=tokens_per_image,
    )
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


TINY_MODEL_BUILDERS = {"llava": build_tiny_llava, "gemma3": build_tiny_gemma3}


def write_test_images(folder: Path, count: int = 4) -> list[Path]:
    """``count`` small, distinct, deterministic RGB PNGs (different sizes and colours)."""
    import numpy as np
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    generator = np.random.default_rng(7)
    paths = []
    for index in range(count):
        height, width = 24 + 8 * index, 40 - 4 * index
        pixels = generator.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
        path = folder / f"image_{index}.png"
        Image.fromarray(pixels).save(path)
        paths.append(path)
    return paths
