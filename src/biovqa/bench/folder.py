"""Reading and writing benchmark folders.

Layout::

    BENCH/
      items.parquet     one row per question (records.ITEM_COLUMNS + component columns)
      manifest.json     what made it: sources with sha256, generator version, seed, counts,
                        parameters, and the sha256 of items.parquet
      images/           images the component renders (C2 markers, C3 canvases, C4 pairs)
      <component>/      component side files (C1: the benchmark tree and vernacular index)

Nothing time-dependent is written, so the same inputs and seed give byte-identical files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from biovqa._version import __version__
from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError
from biovqa.records import ITEM_COLUMNS, Item, items_from_table

ITEMS_FILE = "items.parquet"
MANIFEST_FILE = "manifest.json"
RENDERED_PREFIX = "rendered/"


def sha256_file(path: str | Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary name beside ``path`` to write to; renamed onto ``path`` only when the block
    finishes, so an interrupted write never leaves a half file under the real name."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


@contextmanager
def staged_folder(out: str | Path) -> Iterator[Path]:
    """A staging folder beside ``out`` to write a whole output folder into; when the block
    finishes each file is renamed into ``out`` (results first, so a reader never sees a new
    summary beside old items), and on failure ``out`` is left exactly as it was. Files in ``out``
    that the block did not write are kept."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BiovqaError("the output path is a file, not a folder", file=out,
                          hint="give a folder with --out")
    stage = out.parent / f".{out.name}.partial-{os.getpid()}"
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    try:
        yield stage
        out.mkdir(parents=True, exist_ok=True)
        written = sorted(stage.iterdir(), key=lambda p: (p.suffix == ".json", p.name))
        for path in written:
            target = out / path.name
            if target.is_dir() and not path.is_dir():
                raise BiovqaError("a folder is in the way of an output file", file=target)
            if path.is_dir() and target.exists():
                shutil.rmtree(target) if target.is_dir() else target.unlink()
            os.replace(path, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def write_text(path: str | Path, text: str) -> None:
    """Write a text file atomically (UTF-8)."""
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_json(path: str | Path, payload: Any) -> None:
    """Write JSON deterministically (sorted keys, fixed indentation, trailing newline), atomically."""
    write_text(path, json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=True) + "\n")


def write_parquet(table: pa.Table, path: str | Path) -> None:
    """Parquet with fixed settings, so equal tables give equal bytes; written atomically."""
    with atomic_path(path) as temporary:
        pq.write_table(table, temporary, compression="zstd", write_statistics=True,
                       row_group_size=1 << 20)


def read_json_object(path: str | Path, *, what: str) -> dict[str, Any]:
    """A JSON file holding one object; not UTF-8, not JSON or not an object is an
    :class:`InputFormatError` naming the file (and line)."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFormatError(f"{what} is not UTF-8 text (byte {exc.start + 1})", file=path) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFormatError(f"{what} is not valid JSON: {exc.msg}", file=path, row=exc.lineno) from None
    if not isinstance(value, dict):
        raise InputFormatError(f"{what} must be a JSON object, found {type(value).__name__}", file=path)
    return value


def iter_json_lines(path: str | Path, *, what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line of a JSON Lines file; a missing file, a line
    that is not UTF-8, not JSON or not an object is an :class:`InputFormatError` naming the line."""
    path = Path(path)
    if not path.is_file():
        raise InputFormatError(f"no such {what}", file=path)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputFormatError(f"not UTF-8 text (byte {exc.start + 1} of the line)", file=path,
                                       row=number, hint=f"write the {what} as UTF-8") from None
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputFormatError(f"not valid JSON: {exc.msg} (column {exc.colno})", file=path,
                                       row=number) from None
            if not isinstance(value, dict):
                raise InputFormatError(f"each line must hold a JSON object, got {type(value).__name__}",
                                       file=path, row=number)
            yield number, value


def read_parquet(path: str | Path, *, what: str = "Parquet file") -> pa.Table:
    path = Path(path)
    if not path.exists():
        raise MissingResourceError(f"{what} not found", file=path)
    try:
        return pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputFormatError(
            f"cannot read {what}: {exc}",
            file=path,
            hint="the file looks truncated or is not Parquet; re-create or re-download it",
        ) from None


def _counts(table: pa.Table, column: str) -> dict[str, int]:
    if column not in table.column_names:
        return {}
    values = pc.value_counts(table.column(column).cast(pa.string()).fill_null("None"))
    return dict(sorted((str(v["values"]), int(v["counts"])) for v in values.to_pylist()))


def count_items(table: pa.Table, by: Iterable[str] = ("task", "group", "tier")) -> dict[str, Any]:
    counts: dict[str, Any] = {"total": table.num_rows}
    for column in by:
        if column in table.column_names:
            counts[f"by_{column}"] = _counts(table, column)
    return counts


def write_bench(
    out: str | Path,
    items: pa.Table,
    *,
    component: str,
    generator: str,
    seed: int,
    sources: dict[str, str | Path],
    parameters: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> "Bench":
    """Write ``items`` and a manifest describing how they were made; returns the opened bench."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    missing = [name for name, _ in ITEM_COLUMNS if name not in items.column_names]
    if missing:
        raise ValueError(f"items table lacks required columns {missing}")
    items_path = out / ITEMS_FILE
    write_parquet(items, items_path)
    manifest = {
        "benchmark": "bio-vqa",
        "component": component,
        "generator": generator,
        "generator_version": __version__,
        "seed": seed,
        "sources": {
            name: {"file": Path(p).name, "sha256": sha256_file(p), "bytes": Path(p).stat().st_size}
            for name, p in sorted(sources.items())
            if Path(p).is_file()
        },
        "parameters": parameters,
        "counts": count_items(items),
        "items_sha256": sha256_file(items_path),
    }
    if extra:
        manifest.update(extra)
    write_json(out / MANIFEST_FILE, manifest)
    return open_bench(out)


@dataclass(frozen=True)
class Bench:
    """An opened benchmark folder."""

    root: Path
    manifest: dict[str, Any]

    @property
    def component(self) -> str:
        return str(self.manifest["component"])

    @property
    def items_path(self) -> Path:
        return self.root / ITEMS_FILE

    @cached_property
    def items(self) -> pa.Table:
        return read_parquet(self.items_path, what="benchmark items")

    def iter_items(self, batch_size: int = 4096) -> Iterator[Item]:
        """The benchmark's questions as :class:`~biovqa.records.Item` records, in order, read in
        batches (component-specific columns go to ``Item.extra``)."""
        for batch in self.items.to_batches(max_chunksize=batch_size):
            yield from items_from_table(pa.Table.from_batches([batch]))

    @property
    def manifest_sha256(self) -> str:
        return sha256_file(self.root / MANIFEST_FILE)

    def resolve_image(self, image: str) -> Path:
        """Path of an item's image: ``rendered/…`` images live in the benchmark folder, source
        photos under :meth:`images_root`."""
        if image.startswith(RENDERED_PREFIX):
            return self.root / image
        return self.images_root() / image

    def images_root(self) -> Path:
        """Where item ``image`` paths are relative to (recorded at build time)."""
        recorded = self.manifest.get("images_root")
        if recorded:
            path = Path(recorded)
            return path if path.is_absolute() else (self.root / path)
        return self.root


def open_bench(path: str | Path, *, verify: bool = True) -> Bench:
    # --- released benchmarks (issue 15): an exported folder or hf://owner/name → biovqa.bench.hub
    if str(path).startswith("hf:/") or (Path(path) / "biovqa" / "release.json").is_file() or (
            Path(path).parent.name == "data" and (Path(path).parent.parent / "biovqa" / "release.json").is_file()):
        from biovqa.bench.hub import open_release

        return open_release(path, verify=verify)
    # --- end released benchmarks
    root = Path(path)
    manifest_path = root / MANIFEST_FILE
    if not root.is_dir():
        raise MissingResourceError(
            "benchmark folder not found", file=root, hint="build one with `biovqa build c1 …`"
        )
    if not manifest_path.exists():
        raise MissingResourceError(
            "not a benchmark folder: manifest.json is missing",
            file=manifest_path,
            hint="build one with `biovqa build …`",
        )
    manifest = read_json_object(manifest_path, what="manifest")
    for key, kind in (("component", str), ("counts", dict)):
        if key not in manifest:
            raise InputFormatError("manifest lacks a required key", file=manifest_path, field=key)
        if not isinstance(manifest[key], kind):
            raise InputFormatError(f"manifest {key} must be a JSON {'text' if kind is str else 'object'}",
                                   file=manifest_path, field=key)
    if not (root / ITEMS_FILE).exists():
        raise MissingResourceError("benchmark items are missing", file=root / ITEMS_FILE)
    bench = Bench(root=root, manifest=manifest)
    if verify:
        problem = items_integrity_problem(bench)
        if problem:
            raise InputFormatError(problem, file=bench.items_path,
                                   hint="rebuild the benchmark (`biovqa build …`); `biovqa audit` lists every problem")
    return bench


def items_integrity_problem(bench: Bench) -> str | None:
    """Why the items file is not the one the manifest describes (None when it is): the manifest
    must record its sha256, the file must match it and hold the core item columns."""
    recorded = bench.manifest.get("items_sha256")
    if not recorded:
        return "the manifest records no items_sha256, so the items cannot be verified"
    if recorded != sha256_file(bench.items_path):
        return "items.parquet differs from the sha256 the manifest recorded (changed after build)"
    try:
        names = set(pq.read_schema(bench.items_path).names)
    except (pa.ArrowInvalid, OSError) as exc:
        return f"cannot read benchmark items: {exc}"
    missing = [name for name, _ in ITEM_COLUMNS if name not in names]
    if missing:
        return f"items lack the column(s) {', '.join(missing)}"
    return None
