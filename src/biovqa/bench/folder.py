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

import codecs
import functools
import hashlib
import inspect
import json
import os
import re
import shutil
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Self, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from biovqa._version import __version__
from biovqa.errors import BiovqaError, InputFormatError, MissingResourceError
from biovqa.records import ITEM_COLUMNS, Item, items_from_table

ITEMS_FILE = "items.parquet"
MANIFEST_FILE = "manifest.json"
RENDERED_PREFIX = "rendered/"
#: manifest key of the side-file card: {relative path: {"sha256", "bytes"}}
FILES_KEY = "files"
#: manifest key listing reusable caches inside the folder (relative paths; a rebuild starts from them)
CACHES_KEY = "caches"
REBUILD_HINT = "rebuild the benchmark (`biovqa build …`); `biovqa audit` lists every problem"


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


#: staging folders of the builds running in this context (see :func:`staged_build`)
_ACTIVE_STAGES: ContextVar[tuple[Path, ...]] = ContextVar("biovqa_active_stages", default=())
_LEFTOVER = re.compile(r"\.(?P<name>.+)\.(?:partial|previous)-(?P<pid>\d+)")


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` of this machine still runs (one we may not signal counts as
    running), so its partial files must be left alone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _remove_dead_leftovers(folder: Path, name: str | None = None) -> None:
    """Delete ``.NAME.partial-PID`` / ``.NAME.previous-PID`` folders in ``folder`` that a killed
    process left (its pid no longer runs); ``name`` limits it to one output's leftovers."""
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        match = _LEFTOVER.fullmatch(path.name)
        if match and (name is None or match["name"] == name) and not process_alive(int(match["pid"])):
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def _link_or_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)  # every writer replaces files by rename, so the original is untouched
    except OSError:
        shutil.copy2(source, target)


@contextmanager
def staged_folder(out: str | Path, *, card: str | None = None,
                  carry: Iterable[str] = ()) -> Iterator[Path]:
    """A staging folder beside ``out`` to write a whole output folder into; when the block
    finishes each entry is moved into ``out`` (results first, so a reader never sees a new
    summary beside old items), and on failure ``out`` is left exactly as it was. Entries of
    ``out`` the block did not write are kept.

    ``card`` names the file that makes the folder usable (a benchmark's manifest.json): the old
    one is withdrawn before the first entry moves and the new one moves last, so a reader finds
    the old folder whole, no card, or the new folder whole. ``carry`` lists files of ``out``
    (relative paths) that start the stage (reusable caches), linked, not copied, where possible."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BiovqaError("the output path is a file, not a folder", file=out,
                          hint="give a folder with --out")
    beside = out.resolve()  # "." or "x/.." have no name to put a sibling beside
    _remove_dead_leftovers(beside.parent, beside.name)
    _remove_dead_leftovers(out)
    stage = beside.parent / f".{beside.name}.partial-{os.getpid()}"
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    try:
        for relative in carry:
            source = out / relative
            if source.is_file():
                _link_or_copy(source, stage / relative)
        yield stage
        if not out.exists() or out.is_dir() and not out.is_symlink() and not any(out.iterdir()):
            try:  # a new (or empty) folder: the whole output appears in one rename
                os.replace(stage, out)
                return
            except OSError:
                pass  # e.g. a file system that will not rename onto an empty folder: move entries
        out.mkdir(parents=True, exist_ok=True)
        written = sorted(stage.iterdir(), key=lambda p: (p.name == card, p.suffix == ".json", p.name))
        for path in written:
            if (out / path.name).is_dir() and not path.is_dir():
                raise BiovqaError("a folder is in the way of an output file", file=out / path.name)
        if card is not None and (out / card).is_file() and (stage / card).exists():
            (out / card).unlink()
        for path in written:
            target = out / path.name
            if path.is_dir() and (target.exists() or target.is_symlink()):
                aside = out / f".{path.name}.previous-{os.getpid()}"
                os.replace(target, aside)
                os.replace(path, target)
                shutil.rmtree(aside) if aside.is_dir() and not aside.is_symlink() else aside.unlink()
            else:
                os.replace(path, target)
        if _replaces_whole(out):  # this command's earlier output: what it no longer writes goes
            names = {path.name for path in written}
            for name in _foreign_entries(out):
                if name not in names:
                    stale = out / name
                    shutil.rmtree(stale) if stale.is_dir() and not stale.is_symlink() else stale.unlink()
    finally:
        shutil.rmtree(stage, ignore_errors=True)


#: the output folders claimed in this context (:func:`claim_output`): resolved path → whether the
#: folder held this command's own earlier output (replaced whole) or not (only overwritten)
_CLAIMS: ContextVar[dict[Path, bool]] = ContextVar("biovqa_claims", default={})
#: hidden names a command may find inside its folder without it counting as "not empty"
_OWN_HIDDEN = re.compile(r"\.biovqa-run\.lock|\..+\.\d+\.partial|\.DS_Store")


class FolderLock:
    """An advisory, exclusive lock (``flock``) held by the one process writing a folder: the file
    ``path`` records the holder (``biovqa pid N on host H (biovqa COMMAND)``) so a second writer is
    refused at once naming it. The lock dies with its process (kill -9 included). ``shared`` locks
    (readers such as ``biovqa merge``'s inputs) exclude writers but not each other. On systems
    without ``fcntl`` no lock is taken."""

    def __init__(self, path: str | Path, *, folder: str | Path, command: str = "",
                 shared: bool = False) -> None:
        self.path = Path(path)
        self.folder = Path(folder)
        self.command = command
        self.shared = shared
        self._fd: int | None = None

    def holder(self) -> str:
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return "another process"
        return text or "another process"

    def acquire(self) -> Self:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            return self
        import socket

        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise BiovqaError(
                    f"this folder is in use by {self.holder()}", file=self.folder,
                    hint="wait for that command to finish (or stop it), or use another --out "
                    "folder; two processes never write one folder together") from None
            try:  # a holder that removed the file as it finished: lock the new file instead
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        if not self.shared:
            os.ftruncate(fd, 0)
            by = f" (biovqa {self.command})" if self.command else ""
            os.write(fd, f"biovqa pid {os.getpid()} on host {socket.gethostname()}{by}\n".encode())
        self._fd = fd
        return self

    def release(self, *, remove: bool = False) -> None:
        """Give the lock up; ``remove`` deletes its file first (a lock beside the folder)."""
        if self._fd is not None:
            if remove:
                try:
                    if os.path.samestat(os.fstat(self._fd), os.stat(self.path)):
                        self.path.unlink()
                except OSError:
                    pass
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def __enter__(self) -> Self:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def output_written_by(folder: str | Path) -> str | None:
    """The biovqa command whose output ``folder`` holds, recognised by the file that makes it
    usable: ``"demo"``, ``"export"``, ``"run"``, ``"merge"``, ``"score"``, ``"report"``,
    ``"taxonomy index"``, ``"lite"`` or ``"build <component>"``; None for anything else (or an
    empty folder)."""
    folder = Path(folder)
    if (folder / ".biovqa-demo.json").is_file():
        return "demo"
    if (folder / "biovqa" / "release.json").is_file():
        return "export"
    if (folder / "run.json").is_file() or (folder / "store" / "store.json").is_file():
        try:
            status = json.loads((folder / "run.json").read_bytes().decode("utf-8")).get("status")
        except (ValueError, OSError, AttributeError):
            status = None
        return "merge" if status == "merged" else "run"
    if (folder / "summary.json").is_file() or (folder / "sweep.json").is_file():
        return "score"
    if (folder / "index.json").is_file() and (folder / "index.html").is_file():
        return "report"
    if (folder / "index.json").is_file() and (folder / "taxa.parquet").is_file():
        return "taxonomy index"
    if (folder / MANIFEST_FILE).is_file():
        try:
            manifest = json.loads((folder / MANIFEST_FILE).read_bytes().decode("utf-8"))
        except (ValueError, OSError):
            return None
        if isinstance(manifest, dict) and isinstance(manifest.get("component"), str):
            return "lite" if "lite" in manifest else f"build {manifest['component']}"
    return None


def _foreign_entries(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if not _OWN_HIDDEN.fullmatch(p.name))


def output_lock_path(out: str | Path) -> Path:
    """Where the writer of ``out`` keeps its lock: a hidden file beside the folder, so the
    folder itself holds only the output (and a whole new folder still appears in one rename)."""
    beside = Path(out).resolve()
    return beside.parent / f".{beside.name}.biovqa-lock"


@contextmanager
def claim_output(out: str | Path, *, command: str, overwrite: bool = False) -> Iterator[Path]:
    """Make ``out`` this process's output folder for ``biovqa COMMAND`` for the length of the block.

    * One writer per folder: the lock (:class:`FolderLock`, beside ``out``) is taken first; a second
      writer is refused naming the holder's pid.
    * A new or empty folder, or one holding this command's own earlier output
      (:func:`output_written_by`), is accepted; that earlier output is replaced whole (entries the
      new output does not write are removed when it moves in, see :func:`staged_folder`).
    * Any other non-empty folder is refused, naming it, unless ``overwrite``: then only what the
      command writes is replaced and everything else is left as it was.

    Nothing is created but the lock; the command's own writer makes the folder."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BiovqaError("the output path is a file, not a folder", file=out,
                          hint="give a folder with --out")
    lock = FolderLock(output_lock_path(out), folder=out, command=command).acquire()
    try:
        found = _foreign_entries(out)
        holder = output_written_by(out) if found else None
        own = holder == command
        if found and not own and not overwrite:
            what = (f"the output of `biovqa {holder}`" if holder
                    else f"{len(found)} other entr{'y' if len(found) == 1 else 'ies'} ({', '.join(found[:3])}"
                         f"{', …' if len(found) > 3 else ''})")
            raise BiovqaError(
                f"the folder is not empty: it holds {what}; nothing was changed", file=out,
                hint=f"give a new or empty folder with --out, or pass --overwrite to replace what "
                     f"`biovqa {command}` writes there (other files are kept)")
        token = _CLAIMS.set({**_CLAIMS.get(), out.resolve(): own})
        try:
            yield out
        finally:
            _CLAIMS.reset(token)
    finally:
        lock.release(remove=True)


def _replaces_whole(out: Path) -> bool:
    return _CLAIMS.get().get(out.resolve(), False)


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
    that is not UTF-8, not JSON or not an object, or one longer than the sources' line bound is
    an :class:`InputFormatError` naming the line. A leading byte-order mark (editors on Windows
    write one) is accepted."""
    from biovqa.sources.validate import bounded_lines

    path = Path(path)
    if not path.is_file():
        raise InputFormatError(f"no such {what}", file=path)
    with open(path, "rb") as handle:
        for number, raw in enumerate(bounded_lines(handle, file=path), start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]
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


def read_parquet(path: str | Path, *, what: str = "Parquet file",
                 columns: Iterable[str] | None = None) -> pa.Table:
    """A Parquet file as a table; with ``columns``, only those of them the file has (a reader
    that needs a few columns of a wide file skips decoding the rest)."""
    path = Path(path)
    if not path.exists():
        raise MissingResourceError(f"{what} not found", file=path)
    try:
        if columns is not None:
            with pq.ParquetFile(path) as parquet:
                names = set(parquet.schema_arrow.names)
                return parquet.read(columns=[name for name in columns if name in names])
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
        "counts": count_items(items),
        "items_sha256": sha256_file(items_path),
        FILES_KEY: side_file_card(out, skip=cache_list),
    }
    if cache_list:
        manifest[CACHES_KEY] = cache_list
    if extra:
        manifest.update(extra)
    write_json(out / MANIFEST_FILE, manifest)
    return open_bench(out)


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

    def item_columns(self, names: Iterable[str]) -> pa.Table:
        """The items' columns ``names`` (those the items have): from :attr:`items` once it is read
        (or set, as a subset bench does), else only those columns from the file, so a stage that
        needs a few columns of a wide bench (the scoring pipeline: ``item_id``) skips the rest."""
        if "items" in self.__dict__:
            return self.items.select([name for name in names if name in self.items.column_names])
        return read_parquet(self.items_path, what="benchmark items", columns=names)

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
