"""Distractor policies (HCA paper §2.3): three wrong labels from the same level as the gold.

* ``taxonomy`` (offline hard negatives): the labels closest to the gold in the tree first —
  siblings under the same parent, then under the same grandparent, … — ties in seeded order;
* ``random``: a seeded uniform sample of the other labels of the level;
* ``similarity`` (the paper's): the labels whose text embedding (``"a photo of a {label}."``) is
  most cosine-similar to the image embedding of any CLIP/SigLIP-style transformers model in a
  local folder; ties broken by label order.

Every choice depends only on the seed, the image and the level (never on build order).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from biovqa.errors import BiovqaError

POLICIES: tuple[str, ...] = ("taxonomy", "random", "similarity")
#: What to do with a level whose whole taxonomy has fewer than 4 labels (the paper does not say).
SMALL_LEVEL_POLICIES: tuple[str, ...] = ("fewer", "skip")
CLIP_TEXT_TEMPLATE = "a photo of a {label}."


def seeded_rng(seed: int, *parts: object) -> random.Random:
    """A ``random.Random`` seeded by ``seed`` and ``parts`` through sha256 (order independent)."""
    key = ":".join(str(p) for p in (seed, *parts))
    return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


def random_distractors(gold: str, candidates: Sequence[str], k: int, rng: random.Random) -> list[str]:
    others = sorted(c for c in candidates if c != gold)
    return rng.sample(others, min(k, len(others)))


def taxonomy_distractors(gold: str, candidates: Sequence[str], k: int, rng: random.Random,
                         ancestors: dict[str, tuple[str, ...]]) -> list[str]:
    """Closest relatives first: rank by the depth of the lowest common ancestor with ``gold``."""
    gold_up = ancestors[gold]

    def shared(label: str) -> int:
        up = ancestors[label]
        depth = 0
        for a, b in zip(gold_up, up):
            if a != b:
                break
            depth += 1
        return depth

    others = sorted(c for c in candidates if c != gold)
    keys = {label: (-shared(label), rng.random()) for label in others}
    return sorted(others, key=keys.__getitem__)[:k]


def similarity_distractors(gold: str, candidates: Sequence[str], k: int, scores: np.ndarray) -> list[str]:
    """The ``k`` candidates other than ``gold`` with the highest ``scores`` (aligned with
    ``candidates``), ties by label order."""
    ranked = sorted((i for i, c in enumerate(candidates) if c != gold), key=lambda i: (-scores[i], candidates[i]))
    return [candidates[i] for i in ranked[:k]]


class ClipScorer:
    """Image–label cosine similarities from a CLIP/SigLIP-style transformers model (local weights).

    ``model`` is a folder (or a cached hub id) loadable with ``AutoModel`` and ``AutoProcessor``
    whose model has ``get_image_features`` and ``get_text_features``."""

    def __init__(self, model: str | Path, *, device: str | None = None, batch_size: int = 32) -> None:
        try:
            import torch
            from transformers import AutoModel, AutoProcessor
        except ImportError as error:
            raise BiovqaError("the similarity policy needs torch and transformers", field="policy",
                              hint="pip install 'biovqa[transformers]' or use --policy taxonomy") from error
        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            self.processor = AutoProcessor.from_pretrained(str(model))
            self.model: Any = AutoModel.from_pretrained(str(model)).to(self.device).eval()
        except (OSError, ValueError) as error:
            raise BiovqaError(f"cannot load the similarity model {str(model)!r}: {error}", field="similarity_model",
                              hint="pass a local CLIP or SigLIP checkpoint folder") from error
        if not hasattr(self.model, "get_image_features") or not hasattr(self.model, "get_text_features"):
            raise BiovqaError(f"{str(model)!r} is not a CLIP/SigLIP-style model (no image/text features)",
                              field="similarity_model")
        self.batch_size = batch_size
        self.name = str(model)
        self._text_cache: dict[str, np.ndarray] = {}

    def _normalise(self, features: Any) -> np.ndarray:
        if not isinstance(features, self._torch.Tensor):  # newer transformers return an output object
            features = getattr(features, "pooler_output", None)
            if features is None:
                raise BiovqaError("the similarity model returned no pooled features", field="similarity_model")
        array = features.float().cpu().numpy()
        return array / np.maximum(np.linalg.norm(array, axis=1, keepdims=True), 1e-12)

    def image_embeddings(self, paths: Sequence[Path], progress: Callable[[int], None] | None = None) -> np.ndarray:
        from PIL import Image

        out = []
        for start in range(0, len(paths), self.batch_size):
            images = []
            for path in paths[start:start + self.batch_size]:
                with Image.open(path) as image:
                    images.append(image.convert("RGB"))
            inputs = self.processor(images=images, return_tensors="pt").to(self.device)
            with self._torch.inference_mode():
                out.append(self._normalise(self.model.get_image_features(pixel_values=inputs["pixel_values"])))
            if progress is not None:
                progress(len(images))
        return np.concatenate(out)

    def text_embeddings(self, labels: Sequence[str]) -> np.ndarray:
        missing = [label for label in labels if label not in self._text_cache]
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start:start + self.batch_size]
            texts = [CLIP_TEXT_TEMPLATE.format(label=label) for label in chunk]
            inputs = self.processor(text=texts, padding="max_length", truncation=True, return_tensors="pt")
            inputs = {k: v.to(self.device) for k, v in inputs.items() if k in ("input_ids", "attention_mask")}
            with self._torch.inference_mode():
                vectors = self._normalise(self.model.get_text_features(**inputs))
            self._text_cache.update(zip(chunk, vectors))
        return np.stack([self._text_cache[label] for label in labels])
