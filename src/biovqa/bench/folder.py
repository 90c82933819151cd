"""Reading and writing benchmark folders.

Layout::

    BENCH/
      items.parquet     one row per question (records.ITEM_COLUMNS + component columns)
      manifest.json     what made it: sources with sha256, generator version, seed, counts,
                        parameters, and the sha256 of items.parquet
      images/           images the component renders (C2 markers, C3 canvases, C4 pairs)
      <component>/      component side files (C1: the benchmark tree and vernacular index)

Nothing time-dependent is written, so the same inputs and seed give byte-identical files. The
manifest's ``files`` card holds the sha256 and size of every side file (everything but
items.parquet, manifest.json, ``rendered/`` and the reusable caches it lists under ``caches``), and
:func:`open_bench` checks it. A build writes the whole folder into a staging sibling and moves it
into place only when it is complete (:func:`staged_build`), so a failed rebuild leaves the earlier
benchmark as it was.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from biovqa._version import __version__

# the folder's file names, the file readers/writers and the output claims live in their own
# modules; they are re-exported here because every stage imports them from biovqa.bench.folder
from biovqa.bench.files import (atomic_path, iter_json_lines, read_json_object, read_parquet, sha256_file,
                                write_json, write_parquet, write_text)
from biovqa.bench.layout import CACHES_KEY, FILES_KEY, ITEMS_FILE, MANIFEST_FILE, REBUILD_HINT, RENDERED_PREFIX
from biovqa.bench.outputs import FolderLock, claim_output, output_lock_path, process_alive, staged_folder
from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError
from biovqa.records import ITEM_COLUMNS, Item, items_from_table

#: staging folders of the builds running in this context (see :func:`staged_build`)
_ACTIVE_STAGES: ContextVar[tuple[Path, ...]] = ContextVar("biovqa_active_stages", default=())


def recorded_caches(out: str | Path) -> list[str]:
    """The reusable caches an existing benchmark at ``out`` lists in its manifest (relative paths
    inside the folder; anything else is ignored)."""
    manifest_path = Path(out) / MANIFEST_FILE
    if not manifest_path.is_file():
        return []
    try:
        caches = json.loads(manifest_path.read_bytes().decode("utf-8")).get(CACHES_KEY, [])
    except (ValueError, AttributeError):
        return []
    if not isinstance(caches, list):
        return []
    return [c for c in caches if isinstance(c, str) and c and not Path(c).is_absolute()
            and ".." not in Path(c).parts]


@contextmanager
def staged_bench(out: str | Path) -> Iterator[Path]:
    """A staging sibling to build a benchmark folder in (:func:`staged_folder` with the manifest as
    the folder's card); the caches the existing benchmark lists start the stage, so a rebuild
    reuses them (C4's embeddings)."""
    out = Path(out)
    with staged_folder(out, card=MANIFEST_FILE, carry=recorded_caches(out)) as stage:
        token = _ACTIVE_STAGES.set(_ACTIVE_STAGES.get() + (stage.resolve(),))
        try:
            yield stage
        finally:
            _ACTIVE_STAGES.reset(token)


def _in_active_stage(path: Path) -> bool:
    resolved = path.resolve()
    return any(resolved == stage or stage in resolved.parents for stage in _ACTIVE_STAGES.get())


BuildFunction = TypeVar("BuildFunction", bound=Callable[..., Any])


def staged_build(build: BuildFunction) -> BuildFunction:
    """Wrap a build function (or build command) whose ``out`` parameter names the benchmark
    folder: it runs against a staging sibling (:func:`staged_bench`) that replaces ``out`` only
    when the build returns, and the result is the benchmark opened at ``out``. A build already
    writing into a stage (one build calling another) runs unwrapped; wrapping twice is a no-op."""
    if getattr(build, "__biovqa_staged__", False):
        return build
    signature = inspect.signature(build)
    if "out" not in signature.parameters:
        raise TypeError(f"{build.__qualname__} has no 'out' parameter to stage")

    @functools.wraps(build)
    def staged(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        out = Path(bound.arguments["out"])
        if _in_active_stage(out):
            return build(*args, **kwargs)
        with staged_bench(out) as stage:
            bound.arguments["out"] = stage
            result = build(*bound.args, **bound.kwargs)
        return open_bench(out) if isinstance(result, Bench) else result

    staged.__biovqa_staged__ = True  # type: ignore[attr-defined]
    return staged  # type: ignore[return-value]


def is_staged(build: Callable[..., Any]) -> bool:
    """Whether ``build`` already stages its output (:func:`staged_build`)."""
    return bool(getattr(build, "__biovqa_staged__", False))


def _counts(table: pa.Table, column: str) -> dict[str, int]:
    if column not in table.column_names:
        return {}
    values = pc.value_counts(table.column(column).cast(pa.string()).fill_null("None"))
    return dict(sorted((str(v["values"]), int(v["counts"])) for v in values.to_pylist()))


#: the prefix of a manifest's per-column count keys (``counts.by_task``)
COUNT_PREFIX = "by_"


def count_items(table: pa.Table, by: Iterable[str]) -> dict[str, Any]:
    """The manifest's ``counts``: the total, and the items per value of each column of ``by`` the
    table has (``by_<column>``; the component declares them, ``Component.manifest_counts``)."""
    counts: dict[str, Any] = {"total": table.num_rows}
    for column in by:
        if column in table.column_names:
            counts[f"{COUNT_PREFIX}{column}"] = _counts(table, column)
    return counts


def counted_columns(counts: dict[str, Any]) -> list[str]:
    """The columns a manifest's ``counts`` were taken by (what :func:`count_items` recounts to
    verify them, whichever columns the build that wrote them counted)."""
    return [key[len(COUNT_PREFIX):] for key in counts if key.startswith(COUNT_PREFIX)]


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
    caches: Iterable[str | Path] = (),
) -> "Bench":
    """Write ``items`` and a manifest describing how they were made; returns the opened bench.
    Call it last: the manifest's ``files`` card hashes the side files already in ``out``.
    ``caches`` are files inside ``out`` a rebuild reuses (listed, not hashed)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cache_list = sorted({bench_relative(path, out) for path in caches if _inside(Path(path), out)})
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
        "counts": count_items(items, _manifest_counts(component)),
        "items_sha256": sha256_file(items_path),
        FILES_KEY: side_file_card(out, skip=cache_list),
    }
    if cache_list:
        manifest[CACHES_KEY] = cache_list
    if extra:
        manifest.update(extra)
    write_json(out / MANIFEST_FILE, manifest)
    return open_bench(out)


def _manifest_counts(component: str) -> tuple[str, ...]:
    """The declared ``manifest_counts`` (a name no declaration has: the declaration's default)."""
    from biovqa.components.registry import DEFAULT_MANIFEST_COUNTS, find_component

    declared = find_component(component)
    return declared.manifest_counts if declared is not None else DEFAULT_MANIFEST_COUNTS


def _inside(path: Path, folder: Path) -> bool:
    resolved, root = path.resolve(), folder.resolve()
    return resolved != root and root in resolved.parents


def bench_relative(path: str | Path, out: str | Path) -> str:
    """``path`` relative to the benchmark folder ``out`` (POSIX form) when it lies inside it, so
    a manifest never records where the folder was built (a staging sibling); else ``path``."""
    if _inside(Path(path), Path(out)):
        return Path(path).resolve().relative_to(Path(out).resolve()).as_posix()
    return str(path)


def relative_to_bench(path: str | Path, out: str | Path) -> str:
    """``path`` (a source folder or file outside the benchmark) as seen from the benchmark folder
    ``out`` (POSIX, ``..`` allowed), however it was given (relative, absolute, through a link):
    what a manifest records, so that no builder path is written and a benchmark moved together
    with its sources still finds them. A build writes into a staging sibling of ``out`` (same
    parent), so the path holds for the final folder too; :meth:`Bench.images_root` and the
    scorers resolve it against the folder they open."""
    return Path(os.path.relpath(Path(path).resolve(), Path(out).resolve())).as_posix()


def _side_files(root: Path, skip: Iterable[str] = ()) -> list[str]:
    """Relative paths of a benchmark's side files: everything but the items, the manifest,
    rendered images, the listed caches and hidden (temporary) names, sorted."""
    skipped = {ITEMS_FILE, MANIFEST_FILE, *skip}
    found = []
    for folder, subfolders, files in os.walk(root):  # prunes rendered/ (maybe 10^5 images) unread
        here = Path(folder).relative_to(root)
        subfolders[:] = [d for d in subfolders if not d.startswith(".")
                         and (here / d).as_posix() != RENDERED_PREFIX.rstrip("/")]
        for file in files:
            name = (here / file).as_posix()
            if name not in skipped and not file.startswith(".") and (root / name).is_file():
                found.append(name)
    return sorted(found)


def side_file_card(root: str | Path, *, skip: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """The manifest's ``files`` card: sha256 and size of every side file of the folder ``root``.
    Rendered images are left to ``biovqa audit`` (each item records its image's sha256), so
    opening a benchmark stays fast."""
    root = Path(root)
    return {name: {"sha256": sha256_file(root / name), "bytes": (root / name).stat().st_size}
            for name in _side_files(root, skip)}


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

    def item_columns(self, names: Iterable[str], *, dictionaries: Iterable[str] = ()) -> pa.Table:
        """The items' columns ``names`` (those the items have): from :attr:`items` once it is read
        (or set, as a subset bench does), else only those columns from the file, so a stage that
        needs a few columns of a wide bench (the scoring pipeline: ``item_id``) skips the rest.
        ``dictionaries`` (see :func:`~biovqa.bench.files.read_parquet`) may come back
        dictionary-encoded: a caller handles both."""
        if "items" in self.__dict__:
            return self.items.select([name for name in names if name in self.items.column_names])
        return read_parquet(self.items_path, what="benchmark items", columns=names, dictionaries=dictionaries)

    def iter_items(self, batch_size: int = 4096) -> Iterator[Item]:
        """The benchmark's questions as :class:`~biovqa.records.Item` records, in order, read in
        batches (component-specific columns go to ``Item.extra``)."""
        for batch in self.items.to_batches(max_chunksize=batch_size):
            yield from items_from_table(pa.Table.from_batches([batch]))

    @property
    def manifest_sha256(self) -> str:
        return sha256_file(self.root / MANIFEST_FILE)

    def resolve_image(self, image: str, *, row: int | None = None) -> Path:
        """Path of an item's image: ``rendered/…`` images live in the benchmark folder, source
        photos under :meth:`images_root`, or, for a benchmark built from several sources (C3),
        ``<source>/<path>`` under that source's folder (the manifest's ``image_roots``).

        The image path comes from the items file, so it must stay inside that folder
        (:func:`biovqa.bench.paths.contained_path`): ``..``, an absolute path or a symlink out is
        a :class:`~biovqa.errors.PathEscapeError` naming the items file, ``row`` (the item's
        1-based row, when known) and the field, and nothing is opened."""
        from biovqa.bench.paths import contained_path, escape_reason

        root, relative = self.image_location(image)
        if row is None and escape_reason(root, relative) is not None:
            row = self._first_row_of(image)  # only on the way to an error: name the row anyway
        return contained_path(root, relative, file=self.items_path, row=row, field="image", what="image")

    def image_location(self, image: str) -> tuple[Path, str]:
        """(folder, path under it) an item's ``image`` names (see :meth:`resolve_image`)."""
        if image.startswith(RENDERED_PREFIX):
            return self.root, image
        roots = self.manifest.get("image_roots")
        if isinstance(roots, dict):
            source, _, rest = image.partition("/")
            if rest and isinstance(roots.get(source), str):
                root = Path(roots[source])  # C3 records it relative to the benchmark folder
                return (root if root.is_absolute() else self.root / root), rest
        return self.images_root(), image

    def _first_row_of(self, image: str) -> int | None:
        """1-based row of the first item whose ``image`` is ``image`` (None if no item has it)."""
        matches = pc.indices_nonzero(pc.equal(self.items.column("image"), image)).to_pylist()
        return int(matches[0]) + 1 if matches else None

    def images_root(self) -> Path:
        """Where item ``image`` paths are relative to (recorded at build time)."""
        recorded = self.manifest.get("images_root")
        if recorded:
            path = Path(recorded)
            return path if path.is_absolute() else (self.root / path)
        return self.root


def open_bench(path: str | Path, *, verify: bool = True, images: str | Path | None = None) -> Bench:
    """Open a benchmark: a built folder, an exported release folder or an ``hf://owner/name`` id.

    ``images`` is where a release's source photos are (default ``$BIOVQA_IMAGES``); each is checked
    against its sha256. A built folder records its own images folder, so ``images`` is refused there.
    With ``verify`` the items (and the side files the manifest's card lists) must match the hashes
    the build recorded."""
    from biovqa.bench.hub import is_release_reference, open_release

    if is_release_reference(path):
        return open_release(path, verify=verify, images=images)
    if images is not None:
        raise BiovqaError("--images is for exported folders and hf:// ids; a built benchmark folder "
                          "records its own images folder (manifest.json images_root)", file=path, field="--images")
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
            raise InputFormatError(problem, file=bench.items_path, hint=REBUILD_HINT)
        changed = side_file_problems(bench)
        if changed:
            name, problem = changed[0]
            more = f" (and {len(changed) - 1} more side file(s))" if len(changed) > 1 else ""
            raise InputFormatError(problem + more, file=root / name, hint=REBUILD_HINT)
    return bench


def side_file_problems(bench: Bench) -> list[tuple[str, str]]:
    """(relative path, why) for each side file that differs from the manifest's ``files`` card:
    missing, another size, another sha256. A manifest without a card (a benchmark built before
    cards existed) gives none here; :func:`biovqa.bench.audit.audit_violations` reports it."""
    card = bench.manifest.get(FILES_KEY)
    if card is None:
        return []
    if not isinstance(card, dict):
        return [(MANIFEST_FILE, f"the manifest's {FILES_KEY!r} card must be a JSON object")]
    from biovqa.bench.paths import escape_reason

    problems: list[tuple[str, str]] = []
    for name, entry in sorted(card.items()):
        path = bench.root / name
        escape = escape_reason(bench.root, name) if isinstance(name, str) else "not a path"
        if not isinstance(entry, dict) or not {"sha256", "bytes"} <= set(entry):
            problems.append((MANIFEST_FILE, f"the {FILES_KEY!r} card entry {name!r} is malformed"))
        elif escape is not None:  # never read (or hashed) a file outside the benchmark folder
            problems.append((MANIFEST_FILE, f"the {FILES_KEY!r} card entry {name!r} leaves the benchmark "
                                            f"folder: {escape}"))
        elif not path.is_file():
            problems.append((name, "side file missing (the manifest's files card lists it)"))
        elif path.stat().st_size != entry["bytes"] or sha256_file(path) != entry["sha256"]:
            problems.append((name, "side file differs from the sha256 the manifest recorded (changed after build)"))
    return problems


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


__all__ = [
    "CACHES_KEY", "FILES_KEY", "ITEMS_FILE", "MANIFEST_FILE", "REBUILD_HINT", "RENDERED_PREFIX", "Bench", "FolderLock",
    "atomic_path", "bench_relative", "claim_output", "count_items", "is_staged", "items_integrity_problem",
    "iter_json_lines", "open_bench", "output_lock_path", "process_alive", "read_json_object", "read_parquet",
    "recorded_caches", "relative_to_bench", "sha256_file", "side_file_card", "side_file_problems", "staged_bench",
    "staged_build", "staged_folder", "write_bench", "write_json", "write_parquet", "write_text",
]
