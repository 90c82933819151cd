"""C4 — individual re-identification: build the benchmark from Wild Me / LILA COCO catalogs and
GZCD (paper §3.4, Tables 2 and 11).

Pipeline:

1. read each catalog (:mod:`biovqa.sources.wildlife`); annotations of unknown identity are left
   out (a "different individual" needs a known identity), counted in the manifest;
2. embed every annotation crop with DINOv2 (:mod:`.embed`; cached per crop SHA-256);
3. draw the pairs per dataset × condition within viewpoint groups (:mod:`.pairs`);
4. render one side-by-side canvas per pair into ``rendered/c4/<dataset>/<condition>/`` (:mod:`.render`);
5. write ``items.parquet`` and the manifest: per dataset the counts (requested, produced, anchors,
   exclusions) and the construction checks — DINOv2 AUC per dataset × condition and the
   similarity margin (mean cosine of same-ID pairs − different-ID pairs).

Items: task = condition (``easy``/``random``/``hard``); the question and instruction are the C4
prompt (K.4) split at its first line; gold ``Yes``/``No``; columns :data:`C4_COLUMNS`.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pyarrow as pa
import typer

from biovqa.arguments import parse_name_values
from biovqa.bench.folder import Bench, bench_relative, staged_build, write_bench
from biovqa.errors import BiovqaError, InputFormatError
from biovqa.records import ITEM_COLUMNS
from biovqa.sources.validate import count_exclusion
from biovqa.sources.wildlife import CATALOG_SPECIES, READERS, read_wildlife_catalog
from biovqa.components.c4.metrics import construction_checks
from biovqa.components.c4.pairs import PairResult, build_pairs
from biovqa.components.c4.prompts import C4_INSTRUCTION, C4_QUESTION
from biovqa.components.c4.render import GUTTER, PANEL_HEIGHT
from biovqa.components.c4.tasks import CONDITIONS, DATASETS, task

GENERATOR = "biovqa.components.c4.build"
RENDER_FOLDER = "rendered/c4"
PAIRS_PER_KIND = 500
EXCLUDED_UNKNOWN_IDENTITY = "unknown identity"

C4_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("dataset", pa.string()),
    ("species", pa.string()),
    ("condition", pa.string()),
    ("same", pa.bool_()),
    ("viewpoint", pa.string()),
    ("left_annotation", pa.string()),
    ("right_annotation", pa.string()),
    ("left_identity", pa.string()),
    ("right_identity", pa.string()),
    ("anchor_side", pa.string()),
    ("similarity", pa.float64()),
    ("pool_min_similarity", pa.float64()),
    ("pool_max_similarity", pa.float64()),
    ("left_panel_width", pa.int32()),
)
ITEM_SCHEMA = pa.schema([*ITEM_COLUMNS, *C4_COLUMNS])


def parse_catalogs(specs: Sequence[str] | Mapping[str, str | Path]) -> dict[str, Path]:
    """``["whaleshark=/data/whaleshark.coco", …]`` (or a mapping) → ``{name: path}`` in
    :data:`DATASETS` order; unknown or repeated names are errors."""
    given = parse_name_values(specs, option="--catalog", what="C4 catalog", form="NAME=PATH", names=DATASETS,
                              key=str.lower)
    if not given:
        raise BiovqaError("give at least one --catalog NAME=PATH", field="--catalog")
    return {name: Path(given[name]) for name in DATASETS if name in given}


def _codes(values: Sequence[Any]) -> np.ndarray:
    """Dense integer codes in sorted value order; None → −1."""
    labels = sorted({v for v in values if v is not None})
    index = {v: i for i, v in enumerate(labels)}
    return np.array([index[v] if v is not None else -1 for v in values], dtype=np.int64)


def check_catalog_form(name: str, path: str | Path) -> None:
    """Refuse, before anything is read or embedded, a catalog that cannot give identities: C4
    pairs annotations by individual, and the GGR pipeline's detection table (the GZCD CSV form)
    has no identity column."""
    path = Path(path)
    if name == "gzcd" and path.exists():
        from biovqa.sources.gzcd import find_gzcd_file

        try:
            found, form = find_gzcd_file(path)
        except BiovqaError:
            return  # the catalog reader gives the precise error
        if form == "table":
            raise InputFormatError(
                "this is the GGR pipeline's detection table: it has no individual identities, and C4 pairs "
                "annotations by individual", file=found, field="--catalog gzcd",
                hint="give the GZCD folder (or its final_metadata.json) whose annotations carry the "
                     "individual's name; the table form feeds C3 only")
    elif path.is_file() and path.suffix.lower() in (".csv", ".tsv", ".txt"):
        raise InputFormatError("a Wild Me catalog is COCO JSON (annotations/instances_train<YEAR>.json), "
                               "not a table", file=path, field=f"--catalog {name}",
                               hint=f"give the extracted {name}.coco folder or its annotation JSON")


def read_catalogs(paths: Mapping[str, Path], reader: str) -> dict[str, tuple[Any, list[Any]]]:
    """``{name: (catalog, annotations of known identity)}``; every catalog is read and checked
    (form, identities) before any model is loaded."""
    if reader not in READERS:
        raise BiovqaError(f"unknown catalog reader {reader!r}", field="--catalog-reader",
                          hint=f"readers: {', '.join(READERS)}")
    for name, path in paths.items():
        check_catalog_form(name, path)
    out: dict[str, tuple[Any, list[Any]]] = {}
    for name, path in paths.items():
        catalog = read_wildlife_catalog(path, name, reader=reader)
        known = [a for a in catalog.annotations if a.identity is not None]
        if catalog.annotations and not known:
            raise InputFormatError(
                f"none of the {len(catalog.annotations):,} annotations names its individual", file=catalog.annotation_file,
                field="name", hint="C4 needs identities: use the catalog export whose annotations carry "
                                   "'name' (or 'individual_id')")
        out[name] = (catalog, known)
    return out


def _open_embedder(embedder: str | Path | Any | None, embeddings: str | Path | None, *, cache: str | Path | None,
                   out: Path, device: str | None, batch_size: int, whole_photo: bool
                   ) -> tuple[Any | None, Any, dict[str, str], Path | None]:
    """(model or None, embedding store, embedder record, cache file to list in the manifest)."""
    from biovqa.components.c4.embed import EmbeddingCache, read_embeddings

    crop = "whole photo" if whole_photo else "crop"
    if embeddings is not None:
        if embedder is not None:
            raise BiovqaError("give either --embedder (embed the crops now) or --embeddings (read them), not both",
                              field="--embeddings")
        store = read_embeddings(embeddings)
        recorded = dict(store.recorded_embedder or {})
        if recorded.get("crop") not in (None, crop):
            raise InputFormatError(f"the embeddings file holds {recorded['crop']} embeddings; this build "
                                   f"embeds {crop}s", file=embeddings, field="--embeddings",
                                   hint="build with the same --whole-photo choice as `biovqa c4 embed`")
        record = {"model": str(recorded["model"]), "fingerprint": str(recorded.get("fingerprint", "unknown")),
                  "crop": crop}
        return None, store, record, None
    if embedder is None:
        raise BiovqaError("give --embedder (a DINOv2 checkpoint) or --embeddings (a file from `biovqa c4 embed`)",
                          field="--embedder")
    if isinstance(embedder, (str, Path)):
        from biovqa.components.c4.embed import DinoEmbedder

        network: Any = DinoEmbedder(embedder, device=device, batch_size=batch_size)
    else:
        network = embedder
    fingerprint = str(getattr(network, "fingerprint", "custom"))
    model_name = str(getattr(network, "name", type(network).__name__))
    record = {"model": model_name, "fingerprint": fingerprint, "crop": crop}
    cache_path = Path(cache) if cache is not None else out / "c4" / f"embeddings-{fingerprint}.parquet"
    store = EmbeddingCache(cache_path, embedder=record)
    recorded = store.recorded_embedder or {}
    if recorded.get("fingerprint") not in (None, fingerprint):
        raise InputFormatError(f"the embedding cache holds vectors of another model ({recorded.get('model')}, "
                               f"fingerprint {recorded.get('fingerprint')}; this one is {fingerprint})",
                               file=cache_path, field="--cache", hint="give another --cache file for this model")
    return network, store, record, cache_path


def embed_catalogs(
    catalogs: Sequence[str] | Mapping[str, str | Path],
    embedder: str | Path | Any,
    out: str | Path,
    *,
    whole_photo: bool = False,
    batch_size: int = 32,
    device: str | None = None,
    progress: bool = False,
    catalog_reader: str = "biovqa",
) -> Path:
    """Embed every annotation crop (or whole photo) of known identity in ``catalogs`` with the
    DINOv2 ``embedder`` and write the embeddings file ``out`` (``biovqa c4 embed``), which
    ``build_c4(..., embedder=None, embeddings=out)`` reads on a machine without torch. An existing
    ``out`` of the same model is extended (only crops it lacks are embedded)."""
    from biovqa.components.c4.embed import embed_annotations

    out = Path(out)
    if out.is_dir():
        raise BiovqaError("the embeddings output is a folder; give a file name (e.g. embeddings.parquet)",
                          file=out, field="--out")
    read = read_catalogs(parse_catalogs(catalogs), catalog_reader)
    network, store, _, _ = _open_embedder(embedder, None, cache=out, out=out.parent, device=device,
                                          batch_size=batch_size, whole_photo=whole_photo)
    for name, (_, known) in read.items():
        _, _, stats = embed_annotations(known, network, store, progress=progress, label=f"embedding {name}",
                                        whole_photo=whole_photo)
        if progress:
            _report_embedding(name, stats)
    store.dirty = True  # written even when every crop was there already: the file then names its model
    store.save()
    return out


@staged_build
def build_c4(
    catalogs: Sequence[str] | Mapping[str, str | Path],
    embedder: str | Path | Any | None,
    out: str | Path,
    *,
    embeddings: str | Path | None = None,
    seed: int = 42,
    pairs_per_kind: int = PAIRS_PER_KIND,
    batch_size: int = 32,
    cache: str | Path | None = None,
    whole_photo: bool = False,
    device: str | None = None,
    progress: bool = False,
    workers: int = 1,
    panel_height: int = PANEL_HEIGHT,
    catalog_reader: str = "biovqa",
) -> Bench:
    """Build the C4 benchmark folder ``out``. ``embedder`` is a DINOv2 checkpoint folder or hub id
    (or an object with ``embed(images)``, ``name`` and ``fingerprint``); or ``embedder=None`` and
    ``embeddings`` = a precomputed embeddings file (``biovqa c4 embed``; no torch needed).
    ``cache`` is the embedding cache file (default ``out/c4/embeddings-<model fingerprint>.parquet``);
    ``catalog_reader`` is ``"biovqa"`` or ``"wildlife-datasets"`` (:func:`read_wildlife_catalog`).
    Every catalog is read and checked before the embedder loads."""
    from biovqa.components.c4.embed import embed_annotations
    from biovqa.components.c4.render import CanvasJob, render_all

    out = Path(out)
    paths = parse_catalogs(catalogs)
    if pairs_per_kind < 1:
        raise BiovqaError(f"pairs per kind must be at least 1, got {pairs_per_kind}", field="--pairs")
    read = read_catalogs(paths, catalog_reader)
    network, store, record, cache_path = _open_embedder(embedder, embeddings, cache=cache, out=out, device=device,
                                                        batch_size=batch_size, whole_photo=whole_photo)

    rows: list[dict[str, Any]] = []
    jobs: list[CanvasJob] = []
    datasets: dict[str, Any] = {}
    checks: dict[str, Any] = {}
    sources: dict[str, str | Path] = {}
    if embeddings is not None:
        sources["embeddings"] = embeddings
    embedding_stats: dict[str, Any] = {}
    for name, (catalog, known) in read.items():
        sources[f"{name}_annotations"] = catalog.annotation_file
        exclusions = dict(catalog.exclusions)
        examples = {reason: list(names) for reason, names in catalog.exclusion_examples.items()}
        for annotation in (a for a in catalog.annotations if a.identity is None):
            count_exclusion(exclusions, examples, EXCLUDED_UNKNOWN_IDENTITY,
                            [f"row {annotation.row} ({annotation.file_name})"])
        identity = _codes([a.identity for a in known])
        group = _codes([a.viewpoint for a in known])
        per_identity = np.bincount(identity[identity >= 0], minlength=1) if len(known) else np.zeros(0, int)
        vectors, keys, stats = embed_annotations(known, network, store, progress=progress,
                                                 label=f"{'embedding' if network else 'looking up'} {name}",
                                                 whole_photo=whole_photo)
        # Only what the inputs determine goes into the manifest: how many crops were embedded now
        # rather than read from the cache, and how fast, differ between a build and its rebuild.
        embedding_stats[name] = {"crops": stats["crops"]}
        if progress and network is not None:
            _report_embedding(name, stats)
        store.save()
        results: dict[str, PairResult] = {}
        summary: dict[str, Any] = {
            "species": CATALOG_SPECIES.get(name),
            "reader": catalog.reader,
            "annotations_read": len(catalog.annotations) + sum(catalog.exclusions.values()),
            "annotations_used": len(known),
            "exclusions": dict(sorted(exclusions.items())),
            # the first photos (unknown identity: annotation rows) of each reason
            "exclusion_examples": dict(sorted(examples.items())),
            "notes": catalog.notes,
            "identities": int((per_identity > 0).sum()),
            "identities_with_one_annotation": int((per_identity == 1).sum()),
            "viewpoint_groups": sorted({a.viewpoint for a in known}),
            "conditions": {},
        }
        checks[name] = {}

        for condition in CONDITIONS:
            result = build_pairs(vectors, identity, group, condition=condition, target=pairs_per_kind,
                                 seed=seed, dataset=name)
            results[condition] = result
            summary["eligible_anchors"] = result.eligible_anchors
            summary["annotations_without_same_id_partner"] = len(known) - result.eligible_anchors
            summary["conditions"][condition] = {
                "requested_per_kind": pairs_per_kind, "produced_per_kind": result.per_kind,
                "shortfall_per_kind": pairs_per_kind - result.per_kind,
                "same_found": result.same_found, "different_found": result.different_found,
                "anchors_skipped_partner_taken": dict(result.skipped_partner_taken),
                "short": result.per_kind < pairs_per_kind,
            }
            order = np.random.default_rng([seed, zlib.crc32(name.encode()), zlib.crc32(condition.encode()),
                                           zlib.crc32(b"order")]).permutation(len(result.pairs))
            similarity = np.array([p.similarity for p in result.pairs])
            checks[name][condition] = construction_checks(similarity, np.array([p.same for p in result.pairs]))
            for k, index in enumerate(order.tolist()):
                pair = result.pairs[index]
                item_id = f"c4-{name}-{condition}-{k:04d}"
                image = f"{RENDER_FOLDER}/{name}/{condition}/{item_id}.png"
                left, right = known[pair.left], known[pair.right]
                jobs.append(CanvasJob(left, right, out / image, whole_photo, panel_height))
                rows.append({
                    "item_id": item_id, "component": "c4", "task": condition, "question": C4_QUESTION,
                    "instruction": task(condition).instruction, "options": None, "answer": "Yes" if pair.same else "No",
                    "image": image, "image_sha256": None,
                    "source_id": f"{left.annotation_id}|{right.annotation_id}",
                    "dataset": name, "species": CATALOG_SPECIES.get(name), "condition": condition,
                    "same": pair.same, "viewpoint": left.viewpoint,
                    "left_annotation": left.annotation_id, "right_annotation": right.annotation_id,
                    "left_identity": left.identity, "right_identity": right.identity,
                    "anchor_side": "left" if pair.anchor == pair.left else "right",
                    "similarity": round(pair.similarity, 6), "pool_min_similarity": round(pair.pool_min, 6),
                    "pool_max_similarity": round(pair.pool_max, 6),
                    "left_panel_width": None,
                })
        datasets[name] = summary
    if not rows:
        raise BiovqaError("no C4 pair could be drawn: no annotation has another annotation of the same "
                          "individual in its viewpoint group", hint="check the catalogs' name and viewpoint fields")
    for row, (digest, width) in zip(rows, render_all(jobs, workers=workers)):
        row["image_sha256"], row["left_panel_width"] = digest, width
    table = pa.Table.from_pylist(rows, schema=ITEM_SCHEMA)
    parameters = {
        "seed": seed, "pairs_per_kind": pairs_per_kind, "conditions": list(CONDITIONS),
        "catalog_reader": catalog_reader,
        "embedder": {**record, "precomputed": embeddings is not None,
                     "representation": "CLS token of the last hidden state, L2-normalised; cosine similarity"},
        "crop": "whole photo" if whole_photo else "axis-aligned box enclosing the rotated annotation box, clipped",
        "canvas": {"panel_height": panel_height, "gutter": GUTTER, "background": "white", "format": "PNG"},
        "anchors": "uniform (seeded) among annotations with >= 1 other same-ID annotation in their viewpoint group",
        "different_easy": "least similar different-ID annotation in the viewpoint group",
        "random_different": "uniform other individual in the viewpoint group, then a uniform annotation of it",
    }
    return write_bench(
        out, table, component="c4", generator=GENERATOR, seed=seed, sources=sources, parameters=parameters,
        caches=[] if cache_path is None else [cache_path],  # listed: a rebuild over this folder starts from it
        extra={
            "datasets": datasets,
            "construction_checks": checks,
            "embedding": {"cache": None if cache_path is None else _cache_name(cache_path, out),
                          "precomputed": None if embeddings is None else Path(embeddings).name, **embedding_stats},
            "prompt": {"question": C4_QUESTION, "instruction": C4_INSTRUCTION, "system_message": None},
            "images": {"rendered": table.num_rows},
        },
    )


def build_command(
    catalog: Annotated[list[str], typer.Option("--catalog", help="NAME=PATH, NAME one of whaleshark, beluga, hyena, leopard, gzcd (repeatable)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="benchmark folder to write")],
    embedder: Annotated[str | None, typer.Option(help="DINOv2 checkpoint folder or hub id (transformers AutoModel; needs torch)")] = None,
    embeddings: Annotated[Path | None, typer.Option(help="precomputed crop embeddings from `biovqa c4 embed` (instead of --embedder; no torch needed)")] = None,
    seed: Annotated[int, typer.Option(help="anchor, partner and placement seed")] = 42,
    pairs: Annotated[int, typer.Option("--pairs", help="pairs of each kind (same / different) per dataset x condition")] = PAIRS_PER_KIND,
    batch_size: Annotated[int, typer.Option(help="crops per embedding batch")] = 32,
    cache: Annotated[Path | None, typer.Option(help="embedding cache file (default: OUT/c4/embeddings-<model>.parquet)")] = None,
    whole_photo: Annotated[bool, typer.Option("--whole-photo", help="show and embed whole photos instead of annotation crops")] = False,
    device: Annotated[str | None, typer.Option(help="torch device (default: cuda when available)")] = None,
    workers: Annotated[int, typer.Option(help="processes for canvas rendering (output is identical for any number)")] = 1,
    catalog_reader: Annotated[str, typer.Option("--catalog-reader", help="Wild Me catalog reader: biovqa, or wildlife-datasets (pip install 'biovqa[wildlife]'; same items)")] = "biovqa",
) -> None:
    """Build C4 (individual re-identification pairs) from Wild Me / LILA COCO catalogs and GZCD."""
    from biovqa.progress import stderr_console

    console = stderr_console()
    bench = build_c4(catalog, embedder, out, embeddings=embeddings, seed=seed, pairs_per_kind=pairs,
                     batch_size=batch_size, cache=cache, whole_photo=whole_photo, device=device, progress=True,
                     workers=workers, catalog_reader=catalog_reader)
    manifest = bench.manifest
    console.print(f"[green]built C4[/green]: {manifest['counts']['total']:,} pairs → {bench.root}", highlight=False)
    embedder_name = manifest["parameters"]["embedder"]["model"]
    for name, entry in manifest["datasets"].items():
        produced = ", ".join(f"{c} {v['produced_per_kind']}" for c, v in entry["conditions"].items())
        skipped = sum(sum(v["anchors_skipped_partner_taken"].values()) for v in entry["conditions"].values())
        checks = ", ".join(f"{c} {v['auc']}" for c, v in manifest["construction_checks"][name].items())
        excluded = ", ".join(f"{k} {v}" for k, v in entry["exclusions"].items()) or "none"
        console.print(f"  {name:10s} pairs per kind: {produced} (requested {pairs}; {skipped} anchors skipped, "
                      f"their rule partner taken); construction AUC ({embedder_name}): {checks}; "
                      f"excluded: {excluded}", highlight=False, markup=False)


def _cache_name(cache_path: Path, out: Path) -> str:
    """The cache as the manifest records it: its path inside the benchmark, or its file name
    when it lies elsewhere (never the builder's path)."""
    relative = bench_relative(cache_path, out)
    return relative if relative != str(cache_path) else cache_path.name


def _report_embedding(name: str, stats: dict[str, Any]) -> None:
    from biovqa.progress import stderr_console

    stderr_console().print(f"  {name:10s} crops {stats['crops']:,}: embedded {stats['embedded']:,}, "
                               f"cached {stats['cached']:,}, {stats['crops_per_s']} crops/s")


__all__ = ["C4_COLUMNS", "ITEM_SCHEMA", "build_c4", "build_command", "check_catalog_form", "embed_catalogs",
           "parse_catalogs", "read_catalogs"]
