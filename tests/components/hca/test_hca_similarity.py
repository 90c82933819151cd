"""The similarity distractor policy with a tiny random CLIP built from a config (local weights)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.hca_data import LEVELS, TAXONOMY, write_images, write_taxonomy

from biovqa.components.hca.build import build_hca


@pytest.mark.models
def test_similarity_policy_takes_the_three_most_similar_labels(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from fixtures.tiny_clip import build_tiny_clip

    model_dir = build_tiny_clip(tmp_path / "clip")
    data = tmp_path / "data"
    images = write_images(data, list(TAXONOMY))
    bench = build_hca(tmp_path / "bench", taxonomy=write_taxonomy(data), images=images, levels=LEVELS,
                      policy="similarity", similarity_model=str(model_dir), device="cpu")
    assert bench.manifest["parameters"]["similarity_model"] == str(model_dir)
    # the expectation straight from the model: cosine of image and "a photo of a {label}." features
    from PIL import Image

    model = transformers.CLIPModel.from_pretrained(model_dir).eval()
    processor = transformers.CLIPProcessor.from_pretrained(model_dir)
    for item in bench.items.to_pylist():
        if item["level"] not in (2, 4):
            continue
        pool = sorted({path[item["level"]] for path in TAXONOMY.values()})
        gold = TAXONOMY[item["leaf"]][item["level"]]
        with torch.no_grad():
            image = processor(images=[Image.open(data / item["image"]).convert("RGB")], return_tensors="pt")
            text = processor(text=[f"a photo of a {label}." for label in pool], padding="max_length",
                             return_tensors="pt")
            image_features = model.get_image_features(pixel_values=image["pixel_values"])
            text_features = model.get_text_features(input_ids=text["input_ids"],
                                                    attention_mask=text["attention_mask"])
            image_features = getattr(image_features, "pooler_output", image_features)
            text_features = getattr(text_features, "pooler_output", text_features)
            similarity = torch.nn.functional.cosine_similarity(image_features, text_features).tolist()
        ranked = sorted((s, label) for s, label in zip(similarity, pool) if label != gold)[::-1]
        assert set(item["options"]) - {gold} == {label for _, label in ranked[:3]}
