"""Export benchmark folders as a Hugging Face dataset folder (the layout :mod:`biovqa.bench.hub`
describes and reads back): the item shards with their rendered images, the release card
(``biovqa/release.json``), each component's manifest and side files, and the dataset card
(``README.md``: YAML front matter for the hub and ``datasets``, attribution, citation).
"""

from __future__ import annotations

import base64
import hashlib
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from biovqa.bench.files import atomic_path, sha256_file, write_json, write_parquet, write_text
from biovqa.bench.folder import open_bench
from biovqa.bench.hub import IMAGE_KIND, RELEASE_FILE, RELEASE_FORMAT, RELEASE_VERSION, RENDERED_IMAGE, SPLIT
from biovqa.bench.layout import ITEMS_FILE, MANIFEST_FILE, RENDERED_PREFIX
from biovqa.bench.outputs import staged_folder
from biovqa.bench.paths import contained_path
from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError

if TYPE_CHECKING:
    from biovqa.bench.folder import Bench

DEFAULT_SHARD_ROWS = 50_000
DEFAULT_REPO = "imageomics/Bio-VQA"

CITATION = """@misc{biovqa,
  title  = {Bio-VQA: a benchmark of biological visual question answering},
  author = {{Imageomics Institute}},
  note   = {Dataset: https://huggingface.co/datasets/imageomics/Bio-VQA;
            code: https://github.com/Imageomics/Bio-VQA},
}"""



def export_bench(
    benches: Iterable[str | Path],
    out: str | Path,
    *,
    shard_rows: int = DEFAULT_SHARD_ROWS,
    repo_id: str = DEFAULT_REPO,
    console: Any | None = None,
) -> Path:
    """Write one or more benchmark folders (one per component) as a Hugging Face dataset folder
    at ``out``; returns ``out``. The same benches and options give byte-identical files."""
    try:  # the `release` extra: features and the card's YAML come from the real library
        import datasets
    except ImportError:
        raise MissingResourceError("exporting a Hugging Face dataset folder needs the datasets library",
                                   hint="pip install 'biovqa[release]'") from None

    if shard_rows < 1:
        raise BiovqaError("the shard size must be at least one row", field="--shard-rows")
    opened: dict[str, Bench] = {}
    for path in benches:
        bench = open_bench(path)
        if bench.component in opened:
            raise BiovqaError(f"two benchmarks of component {bench.component} given", file=bench.root,
                              hint="export one benchmark folder per component")
        opened[bench.component] = bench
    if not opened:
        raise BiovqaError("give at least one benchmark folder to export")
    out = Path(out)
    release: dict[str, Any] = {"format": RELEASE_FORMAT, "version": RELEASE_VERSION, "split": SPLIT,
                               "components": {}}
    features_yaml: dict[str, Any] = {}
    with staged_folder(out) as stage:
        for component, bench in sorted(opened.items()):
            table = _release_table(bench, console)
            features = datasets.Features.from_arrow_schema(table.drop_columns([RENDERED_IMAGE]).schema)
            features[RENDERED_IMAGE] = datasets.Image()
            schema = features.arrow_schema
            table = table.cast(schema)
            shards = _write_shards(table, stage / "data" / component, shard_rows)
            side = _copy_side_files(bench, stage / "biovqa" / component / "files")
            (stage / "biovqa" / component).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(bench.root / MANIFEST_FILE, stage / "biovqa" / component / MANIFEST_FILE)
            release["components"][component] = {
                "rows": table.num_rows,
                "items_canonical_sha256": _canonical_items_sha256(bench.items, stage),
                "items_schema": base64.b64encode(bench.items.schema.serialize().to_pybytes()).decode("ascii"),
                "manifest_sha256": sha256_file(stage / "biovqa" / component / MANIFEST_FILE),
                "shards": shards,
                "bytes": sum(int((stage / shard["path"]).stat().st_size) for shard in shards),
                "files": side,
            }
            features_yaml[component] = features._to_yaml_list()
        write_json(stage / RELEASE_FILE, release)
        write_text(stage / "README.md", dataset_card(opened, release, features_yaml, repo_id))
    return out


def _release_table(bench: "Bench", console: Any | None) -> pa.Table:
    """The items plus ``image_kind`` and ``rendered_image`` (bytes of each rendered image)."""
    items = bench.items
    images = items.column("image").to_pylist()
    digests = items.column("image_sha256").to_pylist()
    ids = items.column("item_id").to_pylist()
    kinds = ["rendered" if (image or "").startswith(RENDERED_PREFIX) else "source" for image in images]
    payload: list[dict[str, Any] | None] = []
    cache: dict[str, bytes] = {}
    from biovqa.progress import track

    for item_id, image, digest, kind in track(zip(ids, images, digests, kinds),
                                              f"{bench.component}: rendered images",
                                              total=len(ids), console=console):
        if kind != "rendered":
            payload.append(None)
            continue
        if image not in cache:
            path = bench.resolve_image(image)
            if not path.is_file():
                raise MissingResourceError(f"item {item_id}: rendered image missing", file=path, field="image",
                                           hint="rebuild the benchmark; `biovqa audit` lists every problem")
            cache[image] = path.read_bytes()
            if digest and hashlib.sha256(cache[image]).hexdigest() != digest:
                raise InputFormatError(f"item {item_id}: rendered image differs from its recorded sha256",
                                       file=path, field="image_sha256")
        payload.append({"bytes": cache[image], "path": Path(image).name})
    return items.append_column(IMAGE_KIND, pa.array(kinds, pa.string())).append_column(
        RENDERED_IMAGE, pa.array(payload, pa.struct([("bytes", pa.binary()), ("path", pa.string())])))


def _canonical_items_sha256(items: pa.Table, stage: Path) -> str:
    """sha256 of the items as :func:`write_parquet` writes them: the file a rebuild must reproduce
    (the built file's own bytes depend on how its table happened to be chunked)."""
    path = stage / ".canonical-items.parquet"
    try:
        write_parquet(items.combine_chunks(), path)
        return sha256_file(path)
    finally:
        path.unlink(missing_ok=True)


def _write_shards(table: pa.Table, folder: Path, shard_rows: int) -> list[dict[str, Any]]:
    folder.mkdir(parents=True, exist_ok=True)
    n = max(1, -(-table.num_rows // shard_rows))
    shards = []
    for k in range(n):
        name = f"{SPLIT}-{k:05d}-of-{n:05d}.parquet"
        part = table.slice(k * shard_rows, shard_rows).combine_chunks()
        with atomic_path(folder / name) as temporary:
            pq.write_table(part, temporary, compression="zstd", write_statistics=True, row_group_size=1000)
        shards.append({"path": f"data/{folder.name}/{name}", "rows": part.num_rows,
                       "sha256": sha256_file(folder / name)})
    return shards


def _copy_side_files(bench: "Bench", target: Path) -> dict[str, str]:
    """Copy everything in the bench folder except items, manifest and rendered images."""
    files: dict[str, str] = {}
    skip = {ITEMS_FILE, MANIFEST_FILE, RENDERED_PREFIX.rstrip("/")}
    for path in sorted(bench.root.rglob("*")):
        relative = path.relative_to(bench.root)
        if relative.parts[0] in skip or relative.parts[0].startswith(".") or not path.is_file():
            continue
        # a link inside the benchmark that leads outside is refused, not shipped
        contained_path(bench.root, relative.as_posix(), file=bench.root / MANIFEST_FILE, field="files",
                       what="side file")
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
        files[relative.as_posix()] = sha256_file(destination)
    return files


def dataset_card(benches: dict[str, "Bench"], release: dict[str, Any], features: dict[str, Any],
                 repo_id: str) -> str:
    """The README.md of the release: YAML front matter the hub and ``datasets`` read, then prose."""
    import yaml

    from biovqa.sources.fetch import SOURCES

    from biovqa.components.registry import get_component

    # where each component's items come from: its declaration's ``sources``
    names = sorted({name for c in benches for name in get_component(c).sources})
    licences = sorted({SOURCES[name].licence_id for name in names if name in SOURCES}) or ["other"]
    front = {
        "pretty_name": "Bio-VQA",
        "license": licences[0] if len(licences) == 1 else "other",
        "task_categories": ["visual-question-answering"],
        "language": ["en"],
        "tags": ["biology", "taxonomy", "benchmark"],
        "configs": [{"config_name": c, "data_files": [{"split": SPLIT, "path": f"data/{c}/*.parquet"}]}
                    for c in sorted(benches)],
        "dataset_info": [{"config_name": c, "features": features[c],
                          "splits": [{"name": SPLIT, "num_bytes": release["components"][c]["bytes"],
                                      "num_examples": release["components"][c]["rows"]}]}
                         for c in sorted(benches)],
    }
    lines = ["---", yaml.safe_dump(front, sort_keys=False, allow_unicode=True).rstrip(), "---", "",
             "# Bio-VQA", "",
             "Biological visual question answering in four components. Load a component with "
             f"`datasets.load_dataset(\"{repo_id}\", \"c1\")`, or run the toolkit on it directly: "
             f"`biovqa run hf://{repo_id}/c1 …` (see docs/release.md of biovqa).", "",
             "## Components", "", "| config | items | generator | seed |", "|---|---|---|---|"]
    for component, bench in sorted(benches.items()):
        lines.append(f"| {component} | {release['components'][component]['rows']:,} | "
                     f"{bench.manifest.get('generator', '')} {bench.manifest.get('generator_version', '')} | "
                     f"{bench.manifest.get('seed', '')} |")
    lines += ["", "## Images", "",
              "Images we render (C2 markers, C3 canvases and overlays, C4 pair canvases) are shipped in "
              f"`{RENDERED_IMAGE}` under the licence of the source they are drawn from. Source "
              "photographs are **not** redistributed: `image` holds the identifier the builder read and "
              "`image_sha256` the SHA-256 of the photo as downloaded; fetch the sources "
              "(`biovqa fetch SOURCE`) and pass the folder as `--images` (or `$BIOVQA_IMAGES`).", "",
              "## Licences and attribution", "", "| source | licence | attribution |", "|---|---|---|"]
    for name in names:
        if name in SOURCES:
            info = SOURCES[name]
            lines.append(f"| {info.title} | {info.licence} | {info.attribution} |")
    lines += ["", "## Citation", "", "```bibtex", CITATION, "```", ""]
    return "\n".join(lines)


__all__ = ["CITATION", "DEFAULT_REPO", "DEFAULT_SHARD_ROWS", "dataset_card", "export_bench"]
