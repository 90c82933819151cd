"""Model presets: the paper's 18 models (paper App. B.1–B.2) with their prompt wrappers and limits.

A :class:`ModelPreset` says how the benchmark talks to one model: its checkpoint, the wrappers of
paper App. B.2 (Gemma-3/Gemma-4 system message on C1 and C2; the InternVL "Please answer in
English." prefix), the per-component cap on new tokens, the processor's pixel limits where the
checkpoint sets them, and the name of the model's image-token rule
(:mod:`biovqa.engine.image_tokens`, used by ``biovqa plan`` and the batcher).

Any other Hugging Face id or local path gets :func:`default_preset`: no wrappers, the same token
caps, and an image-token rule guessed from the model's architecture name (the ``model_type`` of a
local ``config.json``, else the id) — a documented approximation, never a refusal.
:func:`resolve_preset` also recognises a local folder or HF-cache snapshot of a paper checkpoint.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from biovqa.engine.image_tokens import (
    QWEN2_5_VL_PIXELS,
    QWEN3_VL_PIXELS,
    guess_image_token_rule,
    image_tokens,
)
from biovqa.errors import BiovqaError, did_you_mean

#: paper App. B.2 [PAPER]: the system message of Gemma-3-12B and Gemma-4-12B on C1 and C2.
GEMMA_SYSTEM_MESSAGE = "You are a precise taxonomy expert. Reply with only the requested term."
#: paper App. B.2 [PAPER]: the user-text prefix of InternVL3-8B, InternVL3-38B, InternVL3.5-38B.
INTERNVL_ENGLISH_PREFIX = "Please answer in English."
#: [DEFAULT] cap on new tokens for a component that declares none (text-only suites, new
#: components); each built-in declares its own (:attr:`biovqa.components.registry.Component.max_new_tokens`).
DEFAULT_MAX_NEW_TOKENS = 48


@dataclass(frozen=True, slots=True)
class ModelPreset:
    """How the benchmark talks to one model (paper App. B.1–B.2)."""

    key: str
    display_name: str
    checkpoint: str
    family: str
    image_token_rule: str = "clip336"
    revision: str | None = None
    dtype: str = "bfloat16"
    system_message_text: str | None = None
    user_prefix_text: str | None = None
    min_pixels: int | None = None
    max_pixels: int | None = None
    trust_remote_code: bool = False
    aliases: tuple[str, ...] = field(default=())
    notes: str = ""

    def system_message(self, component: str) -> str | None:
        """The system message for ``component`` (None: the checkpoint's own default, if any).

        Only Gemma-3-12B and Gemma-4-12B set one, and only components that declare
        ``preset_system_message`` get it (paper App. B.2: C1 and C2; C4 never has one).
        """
        if self.system_message_text is None:
            return None
        from biovqa.components.registry import find_component

        declared = find_component(component)
        return self.system_message_text if declared is not None and declared.preset_system_message else None

    def user_prefix(self, component: str) -> str | None:
        """Text put before the user prompt (InternVL3-8B/38B, InternVL3.5-38B: the English prefix)."""
        return self.user_prefix_text  # on every component (paper App. B.2)

    def max_new_tokens(self, component: str) -> int:
        """Hard cap on generated tokens: the component's declared ``max_new_tokens`` (paper
        App. B.2: C1 15; C4 8), else :data:`DEFAULT_MAX_NEW_TOKENS`."""
        from biovqa.components.registry import find_component

        declared = find_component(component)
        cap = declared.max_new_tokens if declared is not None else None
        return DEFAULT_MAX_NEW_TOKENS if cap is None else int(cap)

    def image_tokens(self, width: int, height: int) -> int:
        """Prompt tokens one ``width``×``height`` image costs this model (markers included)."""
        return image_tokens(self.image_token_rule, width, height, min_pixels=self.min_pixels,
                            max_pixels=self.max_pixels)

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


_GEMMA = {"system_message_text": GEMMA_SYSTEM_MESSAGE}
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


def default_preset(model: str) -> ModelPreset:
    """Defaults for any other HF id or local path: no wrappers, standard token caps, and the
    image-token rule (and Qwen pixel limits) of the architecture guessed from its name."""
    name = model.rstrip("/").split("/")[-1] or model
    rule, pixels = guess_image_token_rule(model)
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
