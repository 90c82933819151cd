"""Output folders: one writer per folder and a folder that changes whole or not at all.

:func:`claim_output` makes a folder a command's output (its lock, :class:`FolderLock`, beside the
folder; a non-empty folder that holds another command's output, or anything else, is refused
unless ``--overwrite``); :func:`staged_folder` writes the output into a staging sibling and moves
it in only when complete, so an interrupted command leaves the earlier output as it was.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Self

from biovqa.bench.layout import MANIFEST_FILE
from biovqa.errors import BiovqaError

#: what a stage or a set-aside folder is called while it exists (``.NAME.partial-PID``, ``.NAME.previous-PID``)
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


__all__ = ["FolderLock", "claim_output", "output_lock_path", "output_written_by", "process_alive", "staged_folder"]
