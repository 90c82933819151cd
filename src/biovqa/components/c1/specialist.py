"""The BioCLIP-2 ceiling for C1 (paper §4.2, App. B.4).

BioCLIP-2 cannot read prompts. Every image is embedded once; each candidate species is embedded
from its label string (BioCLIP's taxonomic + common-name form, "a photo of Animalia Chordata
Amphibia Anura Hylidae Dryophytes gratiosus with common name Barking Treefrog."); the top-1
species by cosine similarity answers every rank question of the image from its lineage (phylum …
genus, the epithet, the binomial, the common name), so a coarse rank is right only when the
predicted species shares the true lineage there. The common-name MCQ is a zero-shot classifier
over its four option strings ("a photo of {option}."), arg-max.

Candidate sets:

* ``kingdom`` — the species in the target's kingdom ("fair"; the default);
* ``tol`` — every species of the label space (the paper's Table 3 row);
* ``group`` — the benchmark's gold species of the image's organismal group (a potential ceiling
  the paper lists but does not evaluate).

The label space is the TreeOfLife-200M species list given with ``labels=`` (BioCLIP's
``txt_emb_species.json``: ``[[kingdom, phylum, class, order, family, genus, epithet], common]``
per entry), or, without it, the benchmark's own species (from its items) — then ``tol`` and
``kingdom`` are the benchmark's species, a much smaller space than the paper's, and the run card
says so.

Precomputed label embeddings (``label_embeddings=`` / ``--label-embeddings DIR``): BioCLIP ships
the text embeddings of its whole label space, ``txt_emb_species.npy`` (float, ``[dims × species]``
as published; ``[species × dims]`` is accepted too) beside ``txt_emb_species.json`` (the names, in
the same order), in ``DIR`` or ``DIR/embeddings/`` (the layout of ``imageomics/TreeOfLife-200M``).
They are used instead of encoding the candidate names — the paper's label space without encoding
~1M strings. The matrix must have one column per name and the model's embedding width; the
``group`` candidate set looks the benchmark's species up in it by genus and epithet.

Outputs in ``RUN``: ``predictions.parquet`` (scored by ``biovqa score`` like any model's),
``top1.parquet`` (image, candidate set, predicted lineage), ``run.json`` (``"kind": "specialist"``).
A local weights folder holds ``open_clip_config.json`` and ``open_clip_model.safetensors`` (or
``open_clip_pytorch_model.bin``), as ``imageomics/bioclip-2`` ships them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.bench.folder import open_bench, write_json, write_parquet
from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError

MODEL_LABEL = "BioCLIP-2"
CANDIDATE_SETS = ("kingdom", "tol", "group")
LINEAGE = ("kingdom", "phylum", "class", "order", "family", "genus", "epithet")
#: what each C1 task's answer is, read off the predicted species
RANK_TASKS = {"phylum": "phylum", "class": "class", "order": "order", "family": "family", "genus": "genus",
              "species": "epithet", "scientific_name": "scientific_name", "common_name": "common_name"}
MCQ_TASK = "common_name_mcq"


@dataclass(frozen=True)
class Species:
    """One candidate label: a lineage down to the epithet, and the English common name."""

    kingdom: str | None
    phylum: str | None
    klass: str | None
    order: str | None
    family: str | None
    genus: str
    epithet: str
    common_name: str | None = None
    group: str | None = None

    @property
    def scientific_name(self) -> str:
        return f"{self.genus} {self.epithet}"

    def answer(self, field: str) -> str | None:
        if field == "class":
            return self.klass
        return getattr(self, field)

    def label(self) -> str:
        taxa = " ".join(t for t in (self.kingdom, self.phylum, self.klass, self.order, self.family, self.genus,
                                    self.epithet) if t)
        return f"a photo of {taxa} with common name {self.common_name}." if self.common_name else f"a photo of {taxa}."


def _species(lineage: list[Any], common_name: str | None, group: str | None) -> Species:
    kingdom, phylum, klass, order, family, genus, epithet = lineage
    return Species(kingdom, phylum, klass, order, family, str(genus), str(epithet), common_name, group)


def bench_species(items: pa.Table) -> list[Species]:
    """The distinct species of a C1 benchmark (genus and epithet known), with their group, sorted by
    lineage; a rank the benchmark tree lacks (no order for some groups) stays None."""
    columns = ["kingdom", "phylum", "class", "order", "family", "genus", "epithet", "common_name", "group"]
    missing = [c for c in columns if c not in items.column_names]
    if missing:
        raise InputFormatError("the C1 items lack lineage columns", field=missing[0])
    found: dict[tuple[str | None, ...], Species] = {}
    for row in items.select(columns).to_pylist():
        if row["genus"] is None or row["epithet"] is None:
            continue
        key = tuple(row[c] for c in LINEAGE)
        found.setdefault(key, _species(list(key), row["common_name"], row["group"]))
    return [found[key] for key in sorted(found, key=lambda k: tuple(v or "" for v in k))]


def read_label_space(path: str | Path) -> list[Species]:
    """A species list in BioCLIP's ``txt_emb_species.json`` form (see the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise MissingResourceError("label space file not found", file=path, field="--labels")
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputFormatError(f"not valid JSON: {exc}", file=path, field="--labels") from None
    if not isinstance(entries, list):
        raise InputFormatError("the label space must be a JSON list", file=path)
    species = []
    for k, entry in enumerate(entries):
        # a rank above the genus may be empty (unranked in the source taxonomy); genus and epithet may not
        ok = (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list) and len(entry[0]) == 7
              and all(isinstance(v, str) for v in entry[0]) and all(entry[0][5:])
              and (entry[1] is None or isinstance(entry[1], str)))
        if not ok:
            raise InputFormatError("an entry must be [[kingdom, phylum, class, order, family, genus, epithet], "
                                   "common name] (genus and epithet not empty)", file=path, row=k + 1)
        species.append(_species([v or None for v in entry[0]], entry[1] or None, None))
    return species


EMBEDDINGS_NPY = "txt_emb_species.npy"
EMBEDDINGS_JSON = "txt_emb_species.json"


@dataclass(frozen=True)
class LabelEmbeddings:
    """A precomputed label space: species and their L2-normalised text embeddings, row k for
    ``species[k]``."""

    species: list[Species]
    vectors: np.ndarray  # (species, dims) float32
    folder: Path

    @property
    def dims(self) -> int:
        return int(self.vectors.shape[1])

    def rows_for(self, wanted: Sequence[Species]) -> np.ndarray:
        """The rows of ``wanted`` species (matched by genus and epithet, the kingdom breaking ties);
        an error names the first species the embeddings lack."""
        rows: dict[tuple[str, str], list[int]] = {}
        for k, species in enumerate(self.species):
            rows.setdefault((species.genus, species.epithet), []).append(k)
        found = []
        for species in wanted:
            candidates = rows.get((species.genus, species.epithet), [])
            same_kingdom = [k for k in candidates if self.species[k].kingdom == species.kingdom]
            if not candidates:
                raise InputFormatError(f"species {species.scientific_name} ({species.kingdom}) of the benchmark is "
                                       f"not among the {len(self.species):,} names of the label embeddings",
                                       file=self.folder / EMBEDDINGS_JSON, field="--label-embeddings",
                                       hint="use embeddings of a label space that holds the benchmark's species")
            found.append((same_kingdom or candidates)[0])
        return np.asarray(found, dtype=np.int64)


def _embedding_files(folder: Path) -> tuple[Path, Path]:
    for base in (folder, folder / "embeddings"):
        if (base / EMBEDDINGS_NPY).is_file() or (base / EMBEDDINGS_JSON).is_file():
            return base / EMBEDDINGS_NPY, base / EMBEDDINGS_JSON
    return folder / EMBEDDINGS_NPY, folder / EMBEDDINGS_JSON


def read_label_embeddings(folder: str | Path, *, names: str | Path | None = None) -> LabelEmbeddings:
    """Read BioCLIP's precomputed label embeddings from ``folder`` (see the module docstring).
    ``names``: a species list (``--labels``) that must equal the embeddings' own names."""
    folder = Path(folder)
    if not folder.is_dir():
        raise MissingResourceError("the label embeddings folder does not exist", file=folder,
                                   field="--label-embeddings")
    matrix_path, names_path = _embedding_files(folder)
    for path in (matrix_path, names_path):
        if not path.is_file():
            raise MissingResourceError(f"the label embeddings folder lacks {path.name}", file=path,
                                       field="--label-embeddings",
                                       hint=f"give the folder holding {EMBEDDINGS_NPY} and {EMBEDDINGS_JSON}")
    species = read_label_space(names_path)
    try:
        matrix = np.load(matrix_path, allow_pickle=False, mmap_mode="r")
    except (ValueError, OSError, EOFError) as exc:
        raise InputFormatError(f"not a NumPy .npy file ({exc})", file=matrix_path, field="--label-embeddings") from None
    if matrix.ndim != 2 or not np.issubdtype(matrix.dtype, np.floating):
        raise InputFormatError(f"the label embeddings must be a 2-D float matrix, got shape {matrix.shape} "
                               f"of {matrix.dtype}", file=matrix_path, field="--label-embeddings")
    n = len(species)
    if matrix.shape[1] == n:  # as published: dims × species
        vectors = np.asarray(matrix, dtype=np.float32).T
    elif matrix.shape[0] == n:
        vectors = np.asarray(matrix, dtype=np.float32)
    else:
        raise InputFormatError(f"the label embeddings have shape {tuple(matrix.shape)} but {names_path.name} "
                               f"lists {n:,} names: neither axis matches", file=matrix_path,
                               field="--label-embeddings",
                               hint=f"{EMBEDDINGS_NPY} and {EMBEDDINGS_JSON} must come from the same release")
    if not np.isfinite(vectors).all():
        raise InputFormatError("the label embeddings hold NaN or infinite values", file=matrix_path,
                               field="--label-embeddings")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if not np.allclose(norms, 1.0, atol=1e-5):  # published unit-length: left bit-exact
        vectors = (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    if names is not None:
        given = read_label_space(names)
        if given != species:
            row = next((k for k, (a, b) in enumerate(zip(given, species)) if a != b), min(len(given), len(species)))
            raise InputFormatError(f"--labels and the label embeddings' {names_path.name} differ at entry {row + 1} "
                                   f"({len(given):,} vs {len(species):,} names)", file=names, row=row + 1,
                                   field="--labels", hint="give one of them, or both from the same release")
    return LabelEmbeddings(species=species, vectors=np.ascontiguousarray(vectors), folder=folder)


class OpenClipModel:
    """An open_clip model from a local folder: L2-normalised image and text embeddings."""

    def __init__(self, folder: str | Path, *, device: str | None = None, batch_size: int = 64) -> None:
        folder = Path(folder)
        if not (folder / "open_clip_config.json").is_file():
            raise MissingResourceError("the BioCLIP-2 folder has no open_clip_config.json", file=folder,
                                       hint="download imageomics/bioclip-2 once and give its folder")
        try:
            import open_clip
            import torch
        except ImportError as exc:
            raise BiovqaError(f"the BioCLIP-2 specialist needs open_clip and torch(vision): {exc}",
                              hint="pip install 'biovqa[bioclip]'") from None
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        model, preprocess = open_clip.create_model_from_pretrained(f"local-dir:{folder}", device=self.device)
        self.model = model.eval()
        self.preprocess = preprocess
        self.tokenizer = open_clip.get_tokenizer(f"local-dir:{folder}")
        self.batch_size = max(1, int(batch_size))
        self.name = f"{MODEL_LABEL} ({folder.name})"

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        import torch

        batch = torch.stack([self.preprocess(image.convert("RGB")) for image in images]).to(self.device)
        with torch.inference_mode():
            features = self.model.encode_image(batch)
        return torch.nn.functional.normalize(features.float(), dim=-1).cpu().numpy()

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        tokens = self.tokenizer(list(texts)).to(self.device)
        with torch.inference_mode():
            features = self.model.encode_text(tokens)
        return torch.nn.functional.normalize(features.float(), dim=-1).cpu().numpy()


def _embed_texts(model: Any, texts: Sequence[str], batch: int, bar: Any, label: str) -> np.ndarray:
    task = bar.add_task(label, total=len(texts))
    parts = []
    for start in range(0, len(texts), batch):
        parts.append(np.asarray(model.embed_texts(texts[start:start + batch]), dtype=np.float32))
        bar.update(task, advance=len(texts[start:start + batch]))
    return np.concatenate(parts) if parts else np.zeros((0, 1), np.float32)


def run_bioclip2(bench_path: str | Path, model: str | Path | Any, out: str | Path, *,
                 candidates: str = "kingdom", labels: str | Path | None = None,
                 label_embeddings: str | Path | None = None, batch_size: int = 64,
                 device: str | None = None, progress: bool = False) -> Path:
    """Run BioCLIP-2 on a C1 benchmark; returns the predictions file (see the module docstring).
    ``model`` is a local open_clip folder or an object with ``embed_images``, ``embed_texts``, ``name``;
    ``label_embeddings`` a folder of precomputed label embeddings used instead of encoding the names."""
    from PIL import Image

    if candidates not in CANDIDATE_SETS:
        raise BiovqaError(f"unknown candidate set {candidates!r}; choose {', '.join(CANDIDATE_SETS)}",
                          field="--candidates")
    bench = open_bench(bench_path)
    if bench.component != "c1":
        raise BiovqaError(f"the BioCLIP-2 specialist runs on C1 benchmarks, this one is {bench.component}",
                          file=bench.root)
    items = bench.items
    gold = bench_species(items)
    precomputed = read_label_embeddings(label_embeddings, names=labels) if label_embeddings is not None else None
    if precomputed is not None:
        space = precomputed.species
    else:
        space = read_label_space(labels) if labels is not None else gold
    if candidates == "group":
        space = gold  # the group's gold species: always the benchmark's own
    if not space:
        raise BiovqaError("the label space is empty", field="--labels")
    given_vectors: np.ndarray | None = None
    if precomputed is not None:
        given_vectors = precomputed.vectors if space is precomputed.species else \
            precomputed.vectors[precomputed.rows_for(space)]
    embedder = OpenClipModel(model, device=device, batch_size=batch_size) if isinstance(model, (str, Path)) else model
    batch = max(1, int(getattr(embedder, "batch_size", batch_size)))

    rows = items.select(["item_id", "task", "image", "kingdom", "group", "options"]).to_pylist()
    images = sorted({r["image"] for r in rows})
    image_key = {r["image"]: (r["kingdom"], r["group"]) for r in rows}
    by_key: dict[str | None, np.ndarray] = {}
    for image in images:
        kingdom, group = image_key[image]
        key = None if candidates == "tol" else (kingdom if candidates == "kingdom" else group)
        if key not in by_key:
            if key is None:
                chosen = np.arange(len(space))
            elif candidates == "kingdom":
                chosen = np.array([k for k, s in enumerate(space) if s.kingdom == key], dtype=np.int64)
            else:
                chosen = np.array([k for k, s in enumerate(space) if s.group == key], dtype=np.int64)
            by_key[key] = chosen
    mcq_rows = [r for r in rows if r["task"] == MCQ_TASK]
    mcq_images = {r["image"] for r in mcq_rows}
    image_vectors: dict[str, np.ndarray] = {}  # the MCQ reuses the images' embeddings
    started = time.perf_counter()
    top1: dict[str, int | None] = {}
    from biovqa.progress import stage_sequence

    with stage_sequence(enabled=progress) as bar:
        if given_vectors is not None:
            label_vectors = given_vectors
        else:
            label_vectors = _embed_texts(embedder, [s.label() for s in space], batch, bar, "BioCLIP-2 labels")
        task = bar.add_task("BioCLIP-2 images", total=len(images))
        for start in range(0, len(images), batch):
            chunk = images[start:start + batch]
            opened = []
            for image in chunk:
                path = bench.resolve_image(image)
                if not path.is_file():
                    raise MissingResourceError(f"image {image} not found", file=path, field="image",
                                               hint="`biovqa audit` lists every missing image")
                with Image.open(path) as handle:
                    handle.load()
                    opened.append(handle.convert("RGB"))
            vectors = np.asarray(embedder.embed_images(opened), dtype=np.float32)
            if vectors.shape[1] != label_vectors.shape[1]:
                raise InputFormatError(
                    f"the label embeddings are {label_vectors.shape[1]}-dimensional, the model's image "
                    f"embeddings {vectors.shape[1]}-dimensional", field="--label-embeddings",
                    file=precomputed.folder if precomputed is not None else None,
                    hint="use the label embeddings published with this model (BioCLIP-2's differ from BioCLIP's)")
            similarity = vectors @ label_vectors.T
            for k, image in enumerate(chunk):
                if image in mcq_images:
                    image_vectors[image] = vectors[k]
                kingdom, group = image_key[image]
                key = None if candidates == "tol" else (kingdom if candidates == "kingdom" else group)
                chosen = by_key[key]
                top1[image] = int(chosen[int(np.argmax(similarity[k, chosen]))]) if len(chosen) else None
            bar.update(task, advance=len(chunk))
        option_texts = sorted({o for r in mcq_rows for o in (r["options"] or [])})
        option_vectors = dict(zip(option_texts, _embed_texts(embedder, [f"a photo of {o}." for o in option_texts],
                                                             batch, bar, "BioCLIP-2 MCQ options")))
    elapsed = time.perf_counter() - started

    responses: list[str | None] = []
    statuses: list[str] = []
    for row in rows:
        reply: str | None
        if row["task"] == MCQ_TASK:
            options = list(row["options"] or [])
            if not options:
                raise InputFormatError(f"item {row['item_id']}: an MCQ without options", file=bench.items_path,
                                       field="options")
            scores = [float(image_vectors[row["image"]] @ option_vectors[o]) for o in options]
            reply = options[int(np.argmax(scores))]
        elif row["task"] in RANK_TASKS:
            best = top1.get(row["image"])
            reply = None if best is None else space[best].answer(RANK_TASKS[row["task"]])
        else:
            raise InputFormatError(f"item {row['item_id']}: task {row['task']!r} is not a C1 task",
                                   file=bench.items_path, field="task")
        responses.append(reply if reply is not None else "")
        statuses.append("ok")
    label = f"{MODEL_LABEL} [specialist, {candidates}]"
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    n = len(rows)
    predictions = pa.table({
        "item_id": items.column("item_id"),
        "response": pa.array(responses, pa.string()),
        "status": pa.array(statuses, pa.string()),
        "model": pa.array([label] * n, pa.string()),
        "latency_s": pa.array([elapsed / max(1, n)] * n, pa.float64()),
        "prompt_tokens": pa.nulls(n, pa.int64()),
        "completion_tokens": pa.nulls(n, pa.int64()),
        "error": pa.nulls(n, pa.string()),
    })
    predictions_path = out / "predictions.parquet"
    write_parquet(predictions, predictions_path)
    predicted = [None if (best := top1[i]) is None else space[best] for i in images]
    write_parquet(pa.table({
        "image": pa.array(images, pa.string()),
        "candidates": pa.array([candidates] * len(images), pa.string()),
        **{field: pa.array([s.answer(field) if s else None for s in predicted], pa.string())
           for field in (*LINEAGE, "common_name")},
    }), out / "top1.parquet")
    from biovqa._version import __version__

    write_json(out / "run.json", {
        "kind": "specialist", "model": label, "weights": str(model) if isinstance(model, (str, Path)) else None,
        "component": "c1", "candidates": candidates,
        "label_space": ("benchmark species" if candidates == "group" or (labels is None and precomputed is None)
                        else str(precomputed.folder) if precomputed is not None else str(labels)),
        "label_embeddings": str(precomputed.folder) if precomputed is not None else None,
        "label_space_size": len(space), "benchmark": str(bench.root),
        "benchmark_manifest_sha256": bench.manifest_sha256, "items": n, "images": len(images),
        "elapsed_s": round(elapsed, 3), "images_per_s": round(len(images) / elapsed, 2) if elapsed else None,
        "biovqa_version": __version__,
    })
    return predictions_path


__all__ = ["CANDIDATE_SETS", "LabelEmbeddings", "OpenClipModel", "Species", "bench_species", "read_label_embeddings",
           "read_label_space", "run_bioclip2"]
