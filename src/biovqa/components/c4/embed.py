"""Annotation crops and their DINOv2 embeddings (paper §3.4: pairs are set by DINOv2 similarity).

* crop = the axis-aligned box enclosing the annotation's rotated box, clipped to the photo
  (:meth:`biovqa.sources.wildlife.WildlifeAnnotation.crop_box`), as RGB;
* crop key = SHA-256 of ``"<w>x<h>\\n"`` + the crop's raw RGB bytes;
* embedding = the CLS token of the last hidden state of a transformers ``AutoModel`` (DINOv2),
  L2-normalised, float32, computed in batches under ``torch.inference_mode`` on the CPU or the
  first GPU;
* cache = one Parquet file per model fingerprint (``sha256, vector``), so a rebuild embeds no crop
  twice; written atomically after each build. Its schema metadata ``biovqa.embedder`` (JSON:
  ``model``, ``fingerprint``, ``crop``) names what made the vectors;
* embeddings file = the same format, written by ``biovqa c4 embed`` (:func:`embed_catalogs`) on a
  machine with torch and read by ``biovqa build c4 --embeddings FILE`` anywhere
  (:func:`read_embeddings`): the build then needs neither torch nor the model, and a crop the file
  lacks is an error naming the annotation.

torch and transformers are imported only inside the functions that need them.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from biovqa.bench.folder import read_parquet, write_parquet
from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError

if TYPE_CHECKING:
    from PIL import Image as PILImage

    from biovqa.sources.wildlife import WildlifeAnnotation

BATCH_SIZE = 32


def load_crop(annotation: WildlifeAnnotation, *, whole_photo: bool = False) -> PILImage.Image:
    """The annotation's crop (or the whole photo) as an RGB image."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(annotation.image_path) as picture:
            picture.load()
            rgb = picture.convert("RGB")
    except (UnidentifiedImageError, OSError) as exc:
        raise InputFormatError(f"cannot read the photo: {exc}", file=annotation.image_path,
                               row=annotation.row, field="file_name") from None
    if rgb.size != (annotation.width, annotation.height):
        annotation = _with_size(annotation, *rgb.size)
    return rgb if whole_photo else rgb.crop(annotation.crop_box())


def _with_size(annotation: WildlifeAnnotation, width: int, height: int) -> WildlifeAnnotation:
    from dataclasses import replace

    return replace(annotation, width=width, height=height)


def crop_key(image: PILImage.Image) -> str:
    """SHA-256 of the crop's size and raw RGB pixels."""
    digest = hashlib.sha256(f"{image.width}x{image.height}\n".encode())
    digest.update(image.tobytes())
    return digest.hexdigest()


def model_fingerprint(model: str | Path) -> str:
    """A short fingerprint of a local checkpoint folder (SHA-256 over its config and weight
    files) or of a hub id (the id itself)."""
    path = Path(model)
    digest = hashlib.sha256()
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and (
            p.suffix in (".json", ".safetensors", ".bin", ".pth", ".pt")))
        if not files:
            raise MissingResourceError("no config or weight files in the embedder folder", file=path)
        for file in files:
            digest.update(file.name.encode() + b"\0")
            with open(file, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    else:
        digest.update(str(model).encode())
    return digest.hexdigest()[:16]


#: Parquet schema-metadata key naming the embedder of a cache / embeddings file (JSON object).
EMBEDDER_METADATA = b"biovqa.embedder"
CROP_MODES: tuple[str, ...] = ("crop", "whole photo")


class EmbeddingCache:
    """crop sha256 → L2-normalised vector, persisted as Parquet (``sha256``, ``vector``; schema
    metadata :data:`EMBEDDER_METADATA` = ``embedder``, the model that made them)."""

    def __init__(self, path: str | Path | None, *, embedder: dict[str, str] | None = None) -> None:
        self.path = None if path is None else Path(path)
        self.vectors: dict[str, np.ndarray] = {}
        self.dirty = False
        self.embedder = embedder
        #: the embedder recorded in the file read (None: no file, or a file without the record)
        self.recorded_embedder: dict[str, Any] | None = None
        if self.path is not None and self.path.exists():
            self._read(self.path)

    def _read(self, path: Path) -> None:
        table = read_parquet(path, what="embeddings file")
        if table.column_names[:2] != ["sha256", "vector"]:
            raise InputFormatError(f"not an embeddings file: the columns are {table.column_names[:4]}, "
                                   "expected sha256, vector", file=path,
                                   hint="write one with `biovqa c4 embed`")
        metadata = table.schema.metadata or {}
        if EMBEDDER_METADATA in metadata:
            try:
                recorded = json.loads(metadata[EMBEDDER_METADATA].decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                recorded = None
            if not isinstance(recorded, dict) or not isinstance(recorded.get("model"), str):
                raise InputFormatError("the embedder record in the schema metadata is not a JSON object with "
                                       "a 'model' name", file=path, field=EMBEDDER_METADATA.decode())
            self.recorded_embedder = recorded
        keys = table.column("sha256").to_pylist()
        vectors = table.column("vector").to_pylist()
        width: int | None = None
        for row, (key, vector) in enumerate(zip(keys, vectors), start=1):
            if not isinstance(key, str) or len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
                raise InputFormatError(f"sha256 must be 64 lower-case hex digits, found {key!r}", file=path,
                                       row=row, field="sha256")
            if not isinstance(vector, list) or not vector:
                raise InputFormatError("the vector is missing or empty", file=path, row=row, field="vector")
            if width is None:
                width = len(vector)
            if len(vector) != width:
                raise InputFormatError(f"the vector has {len(vector)} values, the first one {width}", file=path,
                                       row=row, field="vector")
            array = np.asarray([math.nan if v is None else v for v in vector], dtype=np.float32)
            norm = float(np.linalg.norm(array))
            if not np.isfinite(array).all() or norm == 0.0:
                raise InputFormatError("the vector holds a null, NaN or infinite value, or is all zeros",
                                       file=path, row=row, field="vector")
            if key in self.vectors and not np.allclose(self.vectors[key], array / norm, atol=1e-5):
                raise InputFormatError(f"sha256 {key[:12]}… appears twice with different vectors", file=path,
                                       row=row, field="sha256")
            # cosine similarity needs unit vectors; a stored unit vector is kept bit for bit, so a
            # build from the cache gives the same similarities as the build that embedded
            self.vectors[key] = array if abs(norm - 1.0) < 1e-5 else array / norm

    def __contains__(self, key: str) -> bool:
        return key in self.vectors

    def add(self, key: str, vector: np.ndarray) -> None:
        self.vectors[key] = np.asarray(vector, dtype=np.float32)
        self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(self.vectors)
        width = len(self.vectors[keys[0]]) if keys else 0
        flat = np.concatenate([self.vectors[k] for k in keys]) if keys else np.zeros(0, np.float32)
        vectors = pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.float32()), width) if keys else \
            pa.array([], pa.list_(pa.float32(), 0))
        table = pa.table({"sha256": pa.array(keys, pa.string()), "vector": vectors})
        embedder = self.embedder or self.recorded_embedder
        if embedder is not None:
            table = table.replace_schema_metadata(
                {EMBEDDER_METADATA: json.dumps(embedder, sort_keys=True).encode("utf-8")})
        write_parquet(table, self.path)
        self.dirty = False


def read_embeddings(path: str | Path) -> EmbeddingCache:
    """A precomputed embeddings file (``--embeddings``): it must exist and name its embedder."""
    path = Path(path)
    if not path.is_file():
        raise MissingResourceError("embeddings file not found", file=path, field="--embeddings",
                                   hint="write it with `biovqa c4 embed --catalog … --embedder … --out FILE`")
    store = EmbeddingCache(path)
    if store.recorded_embedder is None:
        raise InputFormatError("the embeddings file does not say which model made it (schema metadata "
                               f"{EMBEDDER_METADATA.decode()!r})", file=path, field="--embeddings",
                               hint="write it with `biovqa c4 embed`, or add the JSON record "
                                    '{"model": …, "fingerprint": …, "crop": …} to the Parquet schema metadata')
    return store


class DinoEmbedder:
    """A transformers image backbone (DINOv2): CLS token of the last hidden state, L2-normalised."""

    def __init__(self, model: str | Path, *, device: str | None = None, batch_size: int = BATCH_SIZE) -> None:
        try:
            import torch
            from transformers import AutoModel
        except ImportError as exc:  # pragma: no cover - depends on the installation
            raise BiovqaError("building C4 needs torch and transformers",
                              hint="pip install 'biovqa[transformers]'") from exc
        path = Path(model)
        # a local folder is named by its folder name, never by the builder's path
        self.name = path.name if path.exists() else str(model)
        self.fingerprint = model_fingerprint(model)
        self.batch_size = max(1, int(batch_size))
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if path.exists() and not (path / "config.json").is_file():
            raise MissingResourceError("the embedder folder has no config.json", file=path,
                                       hint="give a DINOv2 checkpoint folder (save_pretrained) or a hub id")
        try:
            self.model = AutoModel.from_pretrained(str(model)).to(self.device).eval()
        except OSError as exc:
            raise MissingResourceError(f"cannot load the embedder: {exc}", file=path,
                                       hint="give a local DINOv2 checkpoint folder or a cached hub id") from None
        self.processor = _processor(str(model), self.model)

    def embed(self, images: Sequence[PILImage.Image]) -> np.ndarray:
        """L2-normalised CLS embeddings, one row per image (float32)."""
        import torch

        if not images:
            return np.zeros((0, int(self.model.config.hidden_size)), np.float32)
        pixels = self.processor(list(images)).to(self.device)
        with torch.inference_mode():
            hidden = self.model(pixel_values=pixels).last_hidden_state[:, 0]
            hidden = torch.nn.functional.normalize(hidden.float(), dim=-1)
        return hidden.cpu().numpy().astype(np.float32)


def _processor(model: str, network: Any) -> Callable[[list[Any]], Any]:
    """Resize + normalise images to the model's input: the checkpoint's image processor when it
    has one (PIL path, no torchvision), else a plain resize to ``config.image_size`` with the
    ImageNet mean and standard deviation."""
    import torch

    try:
        from transformers import AutoImageProcessor

        try:
            processor = AutoImageProcessor.from_pretrained(model, backend="pil")
        except (TypeError, ValueError):  # transformers 4.x: the PIL processor is the "slow" one
            processor = AutoImageProcessor.from_pretrained(model, use_fast=False)
    except (OSError, ValueError, ImportError):
        processor = None
    if processor is not None:
        def run(images: list[Any]) -> Any:
            return processor(images=images, return_tensors="pt")["pixel_values"]
        return run
    size = int(getattr(network.config, "image_size", 224))
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)

    def fallback(images: list[Any]) -> Any:
        from PIL import Image

        arrays = [np.asarray(im.convert("RGB").resize((size, size), Image.Resampling.BICUBIC),
                             dtype=np.float32) / 255.0 for im in images]
        batch = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2)
        return (batch - mean) / std
    return fallback


def embed_annotations(annotations: Sequence[WildlifeAnnotation], embedder: Any | None, cache: EmbeddingCache,
                      *, progress: bool = True, label: str = "embedding crops", whole_photo: bool = False,
                      ) -> tuple[np.ndarray, list[str], dict[str, Any]]:
    """Embeddings (n × d, L2-normalised) and crop keys of ``annotations`` (their crops, or their
    whole photos with ``whole_photo``: what the canvases show is what is embedded). Crops are
    decoded batch by batch (bounded memory); only those the cache lacks go through the model, in
    batches of ``embedder.batch_size``. ``embedder=None`` embeds nothing: every crop must be in
    ``cache`` (a precomputed embeddings file), else an error names the first one missing.
    Returns also ``{"crops", "cached", "embedded", "seconds", "crops_per_s"}``; the progress bar
    counts every crop."""
    batch_size = int(getattr(embedder, "batch_size", BATCH_SIZE))
    keys: list[str] = []
    embedded = 0
    missing: list[WildlifeAnnotation] = []
    started = time.perf_counter()
    from biovqa.progress import stage_sequence

    bar = stage_sequence(unit="crops", enabled=progress)
    with bar:
        task = bar.add_task(label, total=len(annotations))
        pending: list[tuple[str, Any]] = []
        queued: set[str] = set()

        def flush() -> int:
            if not pending or embedder is None:
                return 0
            vectors = embedder.embed([image for _, image in pending])
            for (key, _), vector in zip(pending, vectors):
                cache.add(key, vector)
            done = len(pending)
            pending.clear()
            queued.clear()
            return done

        for annotation in annotations:
            crop = load_crop(annotation, whole_photo=whole_photo)
            key = crop_key(crop)
            keys.append(key)
            if key not in cache and key not in queued:
                if embedder is None:
                    missing.append(annotation)
                else:
                    queued.add(key)
                    pending.append((key, crop))
                    if len(pending) >= batch_size:
                        embedded += flush()
            bar.update(task, advance=1)
        if embedder is not None:
            embedded += flush()
    if missing:
        first = missing[0]
        what = "whole photo" if whole_photo else "crop"
        raise InputFormatError(
            f"the embeddings file has no vector for the {what} of {len(missing):,} of {len(keys):,} "
            f"annotations, the first annotation {first.annotation_id} ({first.image_path.name})",
            file=cache.path, field="--embeddings",
            hint=f"embed this catalog with `biovqa c4 embed` ({'with' if whole_photo else 'without'} "
                 "--whole-photo, as this build) and give that file")
    vectors = np.stack([cache.vectors[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)
    seconds = time.perf_counter() - started
    stats = {"crops": len(keys), "cached": len(keys) - embedded, "embedded": embedded,
             "seconds": round(seconds, 3),
             "crops_per_s": round(len(keys) / seconds, 1) if seconds and keys else None}
    return vectors, keys, stats


__all__ = ["BATCH_SIZE", "CROP_MODES", "EMBEDDER_METADATA", "DinoEmbedder", "EmbeddingCache", "crop_key",
           "embed_annotations", "load_crop", "model_fingerprint", "read_embeddings"]
