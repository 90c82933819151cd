"""Released benchmarks: the release format, and opening an exported folder (or a hub id) again.

:mod:`biovqa.bench.export` writes a release; :mod:`biovqa.bench.photos` checks its source photos
when it is opened. An exported folder (paper App. A.5)::

    DIR/
      README.md                           dataset card: YAML front matter (configs, features,
                                          licence), attribution per source, citation
      data/<component>/test-00000-of-000NN.parquet
                                          the items, every column of items.parquet, plus
                                          ``image_kind`` (``rendered`` | ``source``) and
                                          ``rendered_image`` (the datasets ``Image`` feature:
                                          the bytes of an image we rendered; null for source photos)
      biovqa/release.json                 shard sha256s, row counts, the items' Arrow schema
      biovqa/<component>/manifest.json    the build manifest, unchanged
      biovqa/<component>/files/…          the component's side files (C1 tree, C2 layout, …)

Source photographs are never shipped: their rows keep the identifier (``image``, the path the
builder read, and ``source_id``) and the content hash (``image_sha256``).

Opening such a folder (or ``hf://owner/name``, fetched with ``huggingface_hub``) rebuilds the
benchmark folder the manifest describes in a cache (``$BIOVQA_CACHE`` or ``~/.cache/biovqa``):
shards are checked against their sha256, rendered images are written back and checked against
the items' hashes, and source photos are resolved against the images folder given as ``images=``
or ``$BIOVQA_IMAGES`` (the ``--images`` of the commands), each checked against its sha256 — a
missing or altered photo is an error naming the item.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from biovqa.bench.folder import (
    ITEMS_FILE,
    MANIFEST_FILE,
    RENDERED_PREFIX,
    open_bench,
    read_json_object,
    sha256_file,
    write_json,
    write_parquet,
)
from biovqa.bench.paths import contained_path
from biovqa.bench.photos import check_source_photos, recheck_source_photos
from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError

if TYPE_CHECKING:
    from biovqa.bench.folder import Bench
    from biovqa.progress import Stage

RELEASE_FORMAT = "biovqa-hf-release"
RELEASE_VERSION = 1
RELEASE_FILE = "biovqa/release.json"
HUB_PREFIX = "hf://"
SPLIT = "test"
IMAGE_KIND = "image_kind"
RENDERED_IMAGE = "rendered_image"
IMAGES_ENV = "BIOVQA_IMAGES"
CACHE_ENV = "BIOVQA_CACHE"
NO_IMAGES = "source-photos-not-given--set-BIOVQA_IMAGES"



def is_release_reference(path: str | Path) -> bool:
    """A hub id (``hf://owner/name[/component]``) or a folder (or its ``data/<component>``) that
    :func:`~biovqa.bench.export.export_bench` wrote."""
    text = str(path)
    if text.startswith("hf:/"):
        return True
    return _release_root(Path(path)) is not None


def _release_root(path: Path) -> tuple[Path, str | None] | None:
    if (path / RELEASE_FILE).is_file():
        return path, None
    if path.parent.name == "data" and (path.parent.parent / RELEASE_FILE).is_file():
        return path.parent.parent, path.name
    return None


def _hub_snapshot(reference: str) -> tuple[Path, str | None]:
    """``hf://owner/name[/component]`` → the local snapshot folder and the component."""
    parts = [p for p in reference.split(":", 1)[1].split("/") if p]
    if len(parts) not in (2, 3):
        raise BiovqaError(f"a hub id looks like hf://owner/name or hf://owner/name/c1, got {reference!r}",
                          field="BENCH")
    repo_id = "/".join(parts[:2])
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise MissingResourceError("opening a hub id needs huggingface_hub",
                                   hint="pip install 'biovqa[release]'") from None
    from huggingface_hub import constants

    from biovqa.progress import stage

    component = parts[2] if len(parts) == 3 else None
    patterns = None if component is None else ["README.md", RELEASE_FILE, f"biovqa/{component}/**",
                                               f"data/{component}/**"]
    try:
        with stage(f"{HUB_PREFIX}{repo_id}: files fetched", unit="files") as step, _hub_bars_off():
            folder = snapshot_download(repo_id, repo_type="dataset", allow_patterns=patterns,
                                       tqdm_class=_stage_bars(step))
    except Exception as exc:  # network, auth, offline mode: all mean "not available here"
        raise _hub_error(repo_id, patterns, exc, offline=bool(constants.HF_HUB_OFFLINE),
                         cache=str(constants.HF_HUB_CACHE)) from None
    return Path(folder), component


@contextmanager
def _hub_bars_off() -> Iterator[None]:
    """huggingface_hub's own tqdm bars off for the block (as ``HF_HUB_DISABLE_PROGRESS_BARS``
    does): biovqa's stage reports the download, and two displays would tear each other's lines."""
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    already_off = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if not already_off:
            enable_progress_bars()


def _stage_bars(step: Stage) -> type:
    """The ``tqdm_class`` handed to ``snapshot_download``: bars that draw nothing themselves and
    report the count of files fetched to ``step``, a :mod:`biovqa.progress` stage. Byte bars
    (``unit="B"``, newer huggingface_hub versions) are left out: the file count is what every
    version reports."""
    from tqdm.auto import tqdm

    class StageBars(tqdm):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.pop("name", None)  # huggingface_hub's bar group, not a tqdm keyword
            super().__init__(*args, **{**kwargs, "disable": False, "file": io.StringIO()})

        def display(self, msg: str | None = None, pos: int | None = None) -> bool:
            if self.unit != "B":
                step.update(done=int(self.n), total=int(self.total) if self.total else None)
            return True

    return StageBars


def _hub_error(repo_id: str, patterns: list[str] | None, exc: Exception, *, offline: bool,
               cache: str) -> MissingResourceError:
    """One clear message for each way ``snapshot_download`` can fail: what happened, what to do."""
    from huggingface_hub import errors as hub_errors

    download = (f"hf download {repo_id} --repo-type dataset"
                + "".join(f" --include '{p}'" for p in patterns or []))
    elsewhere = "or download the release elsewhere and give its folder instead of the hf:// id"
    if isinstance(exc, getattr(hub_errors, "IncompleteSnapshotError", ())):
        return MissingResourceError(f"the cached copy of the dataset {repo_id} is incomplete", file=cache,
                                    field="BENCH", hint=f"finish it with network access: {download}")
    if isinstance(exc, (hub_errors.RepositoryNotFoundError, hub_errors.GatedRepoError)):
        return MissingResourceError(f"the Hugging Face hub has no dataset {repo_id}, or it needs a token",
                                    field="BENCH", hint="check the id; for a private or gated dataset log in "
                                                        "(`hf auth login`) or set HF_TOKEN")
    if isinstance(exc, hub_errors.RevisionNotFoundError):
        return MissingResourceError(f"the dataset {repo_id} has no revision main", field="BENCH")
    if offline:
        return MissingResourceError(
            f"the dataset {repo_id} is not in the Hugging Face cache and HF_HUB_OFFLINE is set, "
            "so it cannot be downloaded", file=cache, field="BENCH",
            hint=f"download it once with network access ({download}; HF_HUB_OFFLINE unset), {elsewhere}")
    return MissingResourceError(
        f"cannot download the dataset {repo_id} from the Hugging Face hub ({type(exc).__name__})",
        file=cache, field="BENCH",
        hint=f"check the network and run again (downloads resume), {elsewhere}")


def cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "biovqa"


def open_release(reference: str | Path, *, images: str | Path | None = None, verify: bool = True) -> "Bench":
    """Open an exported folder or hub id as a :class:`Bench` (rebuilt once into the cache)."""
    text = str(reference)
    if text.startswith("hf:/"):
        root, component = _hub_snapshot(text)
    else:
        found = _release_root(Path(reference))
        if found is None:
            raise MissingResourceError("not an exported Bio-VQA folder", file=reference)
        root, component = found
    release = read_json_object(root / RELEASE_FILE, what="release description")
    if release.get("format") != RELEASE_FORMAT or release.get("version") != RELEASE_VERSION:
        raise InputFormatError("not a release this biovqa can read", file=root / RELEASE_FILE, field="format",
                               hint="update biovqa")
    components = release.get("components")
    if not isinstance(components, dict) or not components:
        raise InputFormatError("the release lists no components", file=root / RELEASE_FILE, field="components")
    if component is None:
        if len(components) != 1:
            raise BiovqaError(f"the release holds {len(components)} components ({', '.join(sorted(components))})",
                              file=root, hint=f"name one: {root / 'data' / sorted(components)[0]} "
                                               f"(or hf://owner/name/{sorted(components)[0]})")
        component = next(iter(components))
    if component not in components:
        raise MissingResourceError(f"the release has no component {component!r}", file=root / RELEASE_FILE,
                                   field="components")
    images_value = images if images is not None else os.environ.get(IMAGES_ENV) or None
    images_root = Path(images_value).resolve() if images_value else None
    description = _checked_description(root, component, components[component])
    # the whole description is in the key: any edit of the release's card rebuilds (and re-verifies)
    key = hashlib.sha256(json.dumps([str(root.resolve()), component, description, str(images_root)],
                                    sort_keys=True).encode()).hexdigest()[:20]
    target = cache_dir() / "released" / key
    _check_manifest(root, component, description)  # cheap, so checked on every open
    if not (target / ".complete").is_file():
        _materialize(root, component, description, images_root, target)
    elif images_root is not None:  # rebuilt earlier: photos changed since then are checked again
        recheck_source_photos(target, images_root)
    return open_bench(target, verify=verify)


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _links_within(root: Path) -> Path:
    """Where a release's files may really lie: the release folder, or for a Hugging Face cache
    snapshot (``datasets--owner--name/snapshots/<rev>``) the repository folder, whose ``blobs/``
    the snapshot's files are symlinks into."""
    if root.parent.name == "snapshots" and root.parent.parent.name.startswith("datasets--"):
        return root.parent.parent
    return root


def _checked_description(root: Path, component: str, description: Any) -> dict[str, Any]:
    """The release card's entry for ``component``, every field of the expected type: a card that
    lies in its shape (``shards`` an object, ``items_schema`` not base64, a row count that is not a
    count, a path leaving the release) is an :class:`InputFormatError` naming the field."""
    release_file = root / RELEASE_FILE
    prefix = f"components.{component}"

    def bad(field: str, message: str) -> InputFormatError:
        return InputFormatError(message, file=release_file, field=f"{prefix}.{field}" if field else prefix,
                                hint="the release card is damaged or was edited: download the release again")

    if not isinstance(description, dict):
        raise bad("", "the component's entry must be a JSON object")
    for key in ("rows", "items_schema", "shards", "files", "manifest_sha256", "items_canonical_sha256"):
        if key not in description:
            raise bad(key, "the release description lacks a field")
    rows = description["rows"]
    if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
        raise bad("rows", f"must be a row count, found {rows!r}")
    for key in ("manifest_sha256", "items_canonical_sha256"):
        if not isinstance(description[key], str) or not _SHA256.fullmatch(description[key]):
            raise bad(key, "must be a sha256 (64 hex digits)")
    if not isinstance(description["items_schema"], str):
        raise bad("items_schema", "must be the base64 text of an Arrow schema")
    try:
        pa.ipc.read_schema(pa.py_buffer(base64.b64decode(description["items_schema"], validate=True)))
    except (ValueError, pa.ArrowException) as exc:
        raise bad("items_schema", f"is not the base64 text of an Arrow schema ({type(exc).__name__})") from None
    shards = description["shards"]
    if not isinstance(shards, list):
        raise bad("shards", f"must be a list of shards, found {type(shards).__name__}")
    for number, shard in enumerate(shards):
        field = f"shards[{number}]"
        if not isinstance(shard, dict) or not isinstance(shard.get("path"), str) \
                or not isinstance(shard.get("sha256"), str) or not _SHA256.fullmatch(shard["sha256"]) \
                or not isinstance(shard.get("rows"), int) or isinstance(shard["rows"], bool) or shard["rows"] < 0:
            raise bad(field, "each shard must be an object with path, rows (a count) and sha256")
        contained_path(root, shard["path"], file=release_file, field=f"{prefix}.{field}.path",
                       what="data shard", links_within=_links_within(root))
    if sum(shard["rows"] for shard in shards) != rows:
        raise bad("rows", f"the card says {rows} rows, its shards say {sum(s['rows'] for s in shards)}")
    files = description["files"]
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise bad("files", "must be an object of relative path → sha256")
    for relative in files:
        contained_path(root / "biovqa" / component / "files", relative, file=release_file,
                       field=f"{prefix}.files", what="side file", links_within=_links_within(root))
    return description


def _check_manifest(root: Path, component: str, description: dict[str, Any]) -> None:
    """The shipped build manifest is the one the release card hashed."""
    path = root / "biovqa" / component / MANIFEST_FILE
    if not path.is_file():
        raise MissingResourceError("the release lacks the component's build manifest", file=path,
                                   hint="download the release again")
    if sha256_file(path) != description["manifest_sha256"]:
        raise InputFormatError("the build manifest differs from the sha256 the release card recorded (edited)",
                               file=path, field="manifest_sha256", hint="download the release again")


def resolve_bench(reference: str | Path, images: str | Path | None = None) -> Path:
    """The benchmark folder a command's ``BENCH`` and ``--images`` name.

    An exported folder or hub id is rebuilt (once) into the cache with its source photos
    resolved against ``images`` (``$BIOVQA_IMAGES`` when not given) and checked against their
    sha256; the rebuilt folder is returned. A built benchmark folder is returned as given: it
    records its own images folder, so ``images`` is refused there rather than silently ignored."""
    if is_release_reference(reference) or images is not None:
        return open_bench(reference, images=images).root
    return Path(reference)


def _materialize(root: Path, component: str, description: dict[str, Any], images_root: Path | None,
                 target: Path) -> None:
    """Rebuild the benchmark folder a (checked, :func:`_checked_description`) release entry
    describes into ``target``: every shard against its sha256 and row count, the items against the
    exported schema and their canonical sha256, every rendered image against its item's hash; it
    writes nothing outside its staging folder beside ``target``."""
    release_file = root / RELEASE_FILE
    schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(description["items_schema"])))
    parts = []
    for number, shard in enumerate(description["shards"]):
        path = contained_path(root, shard["path"], file=release_file,
                              field=f"components.{component}.shards[{number}].path", what="data shard",
                              links_within=_links_within(root))
        if not path.is_file():
            raise MissingResourceError("a data shard of the release is missing", file=path,
                                       hint="download the release again")
        if sha256_file(path) != shard["sha256"]:
            raise InputFormatError("a data shard differs from its recorded sha256", file=path,
                                   hint="download the release again")
        try:
            part = pq.read_table(path)
        except (pa.ArrowException, OSError) as exc:
            raise InputFormatError(f"cannot read the data shard: {exc}", file=path,
                                   hint="download the release again") from None
        if part.num_rows != shard["rows"]:
            raise InputFormatError(f"the shard holds {part.num_rows} rows, the release card says {shard['rows']}",
                                   file=path, field=f"components.{component}.shards[{number}].rows",
                                   hint="download the release again")
        parts.append(part)
    try:
        table = pa.concat_tables(parts) if parts else schema.empty_table()
        missing = [name for name in (*schema.names, IMAGE_KIND, RENDERED_IMAGE) if name not in table.column_names]
        if parts and missing:
            raise InputFormatError(f"the shards lack the column(s) {', '.join(missing)} of the exported items",
                                   file=root / "data" / component, field=missing[0],
                                   hint="download the release again")
        items = table.select(schema.names).cast(schema).combine_chunks()
    except (pa.ArrowException, KeyError) as exc:
        raise InputFormatError(f"the shards do not hold the items the release card describes ({exc})",
                               file=root / "data" / component, field="items_schema",
                               hint="download the release again") from None
    stage = target.parent / f".{target.name}.partial-{os.getpid()}"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    try:
        _write_rendered(table, stage, root / "data" / component)
        if images_root is not None:
            check_source_photos(table.filter(pc.equal(table.column(IMAGE_KIND), "source")), images_root, stage)
        write_parquet(items, stage / ITEMS_FILE)
        manifest = read_json_object(root / "biovqa" / component / MANIFEST_FILE, what="manifest")
        rebuilt = sha256_file(stage / ITEMS_FILE)
        if rebuilt != description.get("items_canonical_sha256"):
            raise InputFormatError("the released items do not rebuild the items that were exported",
                                   file=root / "data" / component, hint="download the release again")
        manifest["items_sha256_as_built"] = manifest.get("items_sha256")
        manifest["items_sha256"] = rebuilt
        # without photos, item paths resolve under a name that says what to do (audit and run show it)
        manifest["images_root"] = str(images_root) if images_root is not None else NO_IMAGES
        # the builder's source folders mean nothing here: C3's `<source>/<path>` photos resolve
        # under --images like any other source photo (ROOT/<source>/<path>)
        manifest.pop("image_roots", None)
        manifest["release"] = {"folder": str(root.resolve()), "component": component,
                               "source_photos_checked": images_root is not None}
        files_root = root / "biovqa" / component / "files"
        for relative, digest in sorted(description["files"].items()):
            field = f"components.{component}.files"
            source = contained_path(files_root, relative, file=release_file, field=field, what="side file",
                                    links_within=_links_within(root))
            destination = contained_path(stage, relative, file=release_file, field=field, what="side file")
            if not source.is_file() or sha256_file(source) != digest:
                raise InputFormatError("a side file of the release is missing or altered", file=source,
                                       hint="download the release again")
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
        write_json(stage / MANIFEST_FILE, manifest)
        (stage / ".complete").write_text("ok\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(stage, target)
        except OSError:
            if not (target / ".complete").is_file():  # not another process finishing the same rebuild
                raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _write_rendered(table: pa.Table, stage: Path, shards: Path) -> None:
    """Write each rendered image back under ``stage/rendered/``, checked against its item's sha256.
    The path comes from the release, so it must name a file under ``rendered/`` inside the stage
    (:func:`~biovqa.bench.paths.contained_path`): nothing is ever written outside it."""
    mask = pc.equal(table.column(IMAGE_KIND), "rendered")
    rows = table.filter(mask).select(["item_id", "image", "image_sha256", RENDERED_IMAGE]).to_pylist()
    for row in rows:
        image = row["image"]
        if not isinstance(image, str) or not image.startswith(RENDERED_PREFIX):
            raise InputFormatError(f"item {row['item_id']}: a rendered image must lie under {RENDERED_PREFIX}, "
                                   f"found {image!r}", file=shards, field="image")
        destination = contained_path(stage / RENDERED_PREFIX.rstrip("/"), image[len(RENDERED_PREFIX):],
                                     file=shards, field="image", what=f"item {row['item_id']}: rendered image")
        if destination.exists():
            continue
        payload = (row[RENDERED_IMAGE] or {}).get("bytes")
        if payload is None:
            raise InputFormatError(f"item {row['item_id']}: the release lacks its rendered image",
                                   file=shards, field=RENDERED_IMAGE)
        if not row["image_sha256"]:
            raise InputFormatError(f"item {row['item_id']}: the rendered image has no recorded sha256, so it "
                                   "cannot be verified", file=shards, field="image_sha256",
                                   hint="download the release again")
        if hashlib.sha256(payload).hexdigest() != row["image_sha256"]:
            raise InputFormatError(f"item {row['item_id']}: rendered image differs from its sha256",
                                   file=shards, field=RENDERED_IMAGE)
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(payload)
