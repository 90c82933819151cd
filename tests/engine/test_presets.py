"""Model presets: the paper's 18 models, their wrappers (paper App. B.2), caps and image-token rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biovqa.engine.presets import (
    GEMMA_SYSTEM_MESSAGE,
    INTERNVL_ENGLISH_PREFIX,
    PRESETS,
    apply_wrappers,
    get_preset,
)

#: paper App. B.1: display name → checkpoint.
PAPER_MODELS = {
    "Qwen2.5-VL-3B": "Qwen/Qwen2.5-VL-3B-Instruct",
    "Qwen2.5-VL-7B": "Qwen/Qwen2.5-VL-7B-Instruct",
    "Qwen3-VL-8B": "Qwen/Qwen3-VL-8B-Instruct",
    "Qwen3-VL-30B-A3B": "Qwen/Qwen3-VL-30B-A3B-Instruct",
    "Qwen3-VL-32B": "Qwen/Qwen3-VL-32B-Instruct",
    "InternVL3-8B": "OpenGVLab/InternVL3-8B-Instruct",
    "InternVL3-38B": "OpenGVLab/InternVL3-38B-Instruct",
    "InternVL3.5-8B": "OpenGVLab/InternVL3_5-8B-Instruct",
    "InternVL3.5-30B-A3B": "OpenGVLab/InternVL3_5-30B-A3B-Instruct",
    "InternVL3.5-38B": "OpenGVLab/InternVL3_5-38B-Instruct",
    "Gemma-3-12B": "google/gemma-3-12b-it",
    "Gemma-4-12B": "google/gemma-4-12B-it",
    "Molmo2-8B": "allenai/Molmo2-8B",
    "Pixtral-12B": "mistral-community/pixtral-12b",
    "Phi-3.5-Vision": "microsoft/Phi-3.5-vision-instruct",
    "Llama-3.2-Vision": "meta-llama/Llama-3.2-11B-Vision-Instruct",
    "LLaVA-NeXT-Vicuna": "llava-hf/llava-v1.6-vicuna-7b-hf",
    "LLaVA-NeXT-Mistral": "llava-hf/llava-v1.6-mistral-7b-hf",
}
ENGLISH_PREFIX_MODELS = {"InternVL3-8B", "InternVL3-38B", "InternVL3.5-38B"}
GEMMA_MODELS = {"Gemma-3-12B", "Gemma-4-12B"}
COMPONENTS = ("c1", "c2", "c3", "c4")


def test_the_18_paper_models_with_their_checkpoints() -> None:
    assert len(PRESETS) == 18
    assert {preset.display_name: preset.checkpoint for preset in PRESETS.values()} == PAPER_MODELS


@pytest.mark.parametrize(
    ("display_name", "key"),
    [("Qwen2.5-VL-7B", "qwen2_5-vl-7b"), ("InternVL3.5-38B", "internvl3_5-38b"),
     ("Phi-3.5-Vision", "phi-3_5-vision"), ("Gemma-3-12B", "gemma-3-12b")],
)
def test_keys_are_lower_case_names_with_dots_as_underscores(display_name: str, key: str) -> None:
    assert get_preset(display_name).key == key
    assert PRESETS[key].display_name == display_name


@pytest.mark.parametrize("name", ["gemma-3-12b", "GEMMA-3-12B", "google/gemma-3-12b-it", "Gemma-3-12B"])
def test_lookup_by_key_name_or_checkpoint(name: str) -> None:
    assert get_preset(name).key == "gemma-3-12b"


@pytest.mark.parametrize("display_name", sorted(PAPER_MODELS))
@pytest.mark.parametrize("component", COMPONENTS)
def test_wrappers_follow_appendix_b2(display_name: str, component: str) -> None:
    preset = get_preset(display_name)
    system, user_text = apply_wrappers(preset, component, "What is the order?")
    if display_name in GEMMA_MODELS and component in ("c1", "c2"):
        assert system == GEMMA_SYSTEM_MESSAGE
    else:
        assert system is None  # includes C4 for every model
    if display_name in ENGLISH_PREFIX_MODELS:
        assert user_text == f"{INTERNVL_ENGLISH_PREFIX} What is the order?"
    else:
        assert user_text == "What is the order?"


@pytest.mark.parametrize(("component", "cap"), [("c1", 15), ("C1", 15), ("c2", 48), ("c3", 48),
                                                ("c4", 8), ("bagel", 5), ("HCA", 10),
                                                ("some-new-suite", 48)])
def test_token_caps(component: str, cap: int) -> None:
    assert all(preset.max_new_tokens(component) == cap for preset in PRESETS.values())


def test_qwen_presets_carry_processor_pixel_limits() -> None:
    assert get_preset("Qwen2.5-VL-7B").processor_options() == {"min_pixels": 3136, "max_pixels": 12845056}
    assert get_preset("Qwen3-VL-8B").processor_options() == {"min_pixels": 65536, "max_pixels": 16777216}
    assert get_preset("Pixtral-12B").processor_options() == {}


def test_unknown_models_get_defaults(tmp_path: Path) -> None:
    other = get_preset("someone/Qwen2.5-VL-72B-Instruct")
    assert other.checkpoint == "someone/Qwen2.5-VL-72B-Instruct"
    assert other.family == "default"
    assert other.image_token_rule == "qwen2_5_vl" and other.min_pixels == 3136
    assert apply_wrappers(other, "c1", "Q?") == (None, "Q?")
    local = tmp_path / "my-model"
    local.mkdir()
    (local / "config.json").write_text(json.dumps({"model_type": "llava_next"}))
    assert get_preset(str(local)).image_token_rule == "llava_next"
    assert get_preset(str(local)).checkpoint == str(local)
    assert get_preset("org/unknown-vlm").image_token_rule == "clip336"


def test_native_conversions_keep_the_paper_wrappers() -> None:
    preset = get_preset("OpenGVLab/InternVL3-8B-hf")
    assert preset.key == "internvl3-8b"
    assert preset.checkpoint == "OpenGVLab/InternVL3-8B-hf"
    assert preset.trust_remote_code is False
    assert preset.user_prefix("c1") == INTERNVL_ENGLISH_PREFIX


def test_presets_are_frozen() -> None:
    preset = get_preset("Pixtral-12B")
    with pytest.raises(AttributeError):
        preset.dtype = "float32"  # type: ignore[misc]


# -- local copies of the paper's models ------------------------------------------------------------
def _checkpoint(folder: Path, config: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def test_a_local_copy_matches_its_preset_by_config_name(tmp_path: Path) -> None:
    from biovqa.engine.presets import resolve_preset

    folder = _checkpoint(tmp_path / "weights" / "copy", {
        "_name_or_path": "google/gemma-3-12b-it",
        "architectures": ["Gemma3ForConditionalGeneration"]})
    preset, match = resolve_preset(str(folder))
    assert preset.key == get_preset("gemma-3-12b").key and preset.checkpoint == str(folder)
    assert preset.system_message("c1")  # the paper's Gemma system message came with it
    assert match["matched_by"] == "config" and match["via"] == "config _name_or_path"
    assert match["architectures"] == ["Gemma3ForConditionalGeneration"]


def test_a_local_copy_matches_by_folder_name_and_snapshot_repo(tmp_path: Path) -> None:
    from biovqa.engine.presets import resolve_preset

    by_name = _checkpoint(tmp_path / "data" / "hf" / "gemma-3-12b-it", {"model_type": "gemma3"})
    assert resolve_preset(str(by_name))[1]["via"] == "folder name"
    snapshot = _checkpoint(
        tmp_path / "hub" / "models--Qwen--Qwen2.5-VL-7B-Instruct" / "snapshots" / ("a" * 40), {})
    preset, match = resolve_preset(str(snapshot))
    assert match["via"] == "hf-cache snapshot" and match["name"] == "Qwen/Qwen2.5-VL-7B-Instruct"
    assert preset.key == get_preset("Qwen/Qwen2.5-VL-7B-Instruct").key


def test_unknown_local_folder_gets_defaults_and_preset_can_be_forced(tmp_path: Path) -> None:
    from biovqa.engine.presets import resolve_preset
    from biovqa.errors import BiovqaError

    folder = _checkpoint(tmp_path / "my-finetune", {"_name_or_path": "me/private-vlm"})
    assert resolve_preset(str(folder))[1]["matched_by"] == "default"
    preset, match = resolve_preset(str(folder), "gemma-3-12b")
    assert match["matched_by"] == "forced" and preset.checkpoint == str(folder)
    with pytest.raises(BiovqaError, match="unknown preset"):
        resolve_preset(str(folder), "no-such-model")


def test_internvl_hf_aliases_carry_a_caveat() -> None:
    from biovqa.engine.presets import resolve_preset

    _, match = resolve_preset("OpenGVLab/InternVL3-8B-hf")
    assert match["matched_by"] == "alias" and "-Instruct" in match["note"]
    assert "note" not in resolve_preset("OpenGVLab/InternVL3-8B-Instruct")[1]
