"""One containment rule for every path that comes from a file.

A downloaded dataset, a built benchmark and a release are untrusted input: an item's ``image``, a
release's shard list, a rendered image's path, an annotation's photo name (Bees ``<filename>``,
beetle ``pictureID``, COCO ``file_name``, HCA image lists and released items, the core location of
a GBIF ``meta.xml``) each name a file *inside* a folder biovqa was given. :func:`contained_path`
is the one place that decides whether such a path stays inside: it refuses an absolute path (POSIX,
a Windows drive or UNC share), any ``..`` part (backslashes count as separators, so ``..\\x`` is
caught too), a NUL byte, and a path whose real location (symlinks followed) lies outside the
root's real location. The refusal is a :class:`~biovqa.errors.PathEscapeError` naming the file,
row and field the path came from, and the path itself (exit 2), so no command reads, uploads or
writes a file outside the folders it was given.
"""

from __future__ import annotations

import functools
import os
import posixpath
from os import PathLike
from pathlib import Path, PurePosixPath, PureWindowsPath

from biovqa.errors import PathEscapeError


@functools.lru_cache(maxsize=1 << 16)
def _real_folder(path: str) -> str:
    """``os.path.realpath`` of a folder, remembered: the photos of a benchmark share a few thousand
    folders, so checking one photo then costs one ``lstat`` (a million photos in seconds)."""
    return os.path.realpath(path)


def lexical_escape_reason(relative: str) -> str | None:
    """Why ``relative``, read as text alone, is not a plain path below some folder (None when it
    is): empty, a NUL byte, absolute (POSIX, Windows drive, UNC), or a ``..`` part. For names
    inside an archive, where no link can lead anywhere; :func:`escape_reason` adds the links."""
    if not isinstance(relative, str) or not relative.strip():
        return "the path is empty"
    if "\x00" in relative:
        return "the path holds a NUL byte"
    posix = relative.replace("\\", "/")
    windows = PureWindowsPath(relative)
    if PurePosixPath(posix).is_absolute() or windows.drive or windows.root:
        return "the path is absolute"
    if ".." in PurePosixPath(posix).parts:
        return "the path climbs out with '..'"
    return None


def escape_reason(root: str | PathLike[str], relative: str, *,
                  links_within: str | PathLike[str] | None = None) -> str | None:
    """Why ``relative`` does not stay inside ``root`` (None when it does). ``links_within`` widens
    where symlinks may lead (a Hugging Face snapshot links its files into the repository's blob
    store beside it); the path itself must still be a plain relative path under ``root``."""
    lexical = lexical_escape_reason(relative)
    if lexical is not None:
        return lexical
    head, tail = posixpath.split(posixpath.normpath(relative.replace("\\", "/")))
    base = _real_folder(os.fspath(root))
    parent = _real_folder(os.path.join(base, head)) if head else base
    full = os.path.join(parent, tail)
    real = os.path.realpath(full) if os.path.islink(full) else full
    real_root = base if links_within is None else _real_folder(os.fspath(links_within))
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        return f"a symlink leads outside (to {real})"
    return None


def contained_path(root: str | PathLike[str], relative: str, *, file: str | PathLike[str] | None = None,
                   row: int | None = None, field: str | None = None, what: str = "path",
                   links_within: str | PathLike[str] | None = None) -> Path:
    """``root / relative`` when it stays inside ``root`` (see the module docstring), else a
    :class:`~biovqa.errors.PathEscapeError` naming ``file``, ``row`` and ``field`` (where the path
    was read) and the path. ``what`` says what the path names (``"image"``, ``"data shard"``)."""
    reason = escape_reason(root, relative, links_within=links_within)
    if reason is not None:
        raise PathEscapeError(f"{what} path {relative!r} leaves its folder {root}: {reason}",
                              file=file, row=row, field=field,
                              hint="a path read from a file must name a file inside its folder; "
                                   "the input may be damaged or crafted, so it was refused")
    return Path(root) / relative.replace("\\", "/")
