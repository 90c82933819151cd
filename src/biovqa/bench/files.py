"""The one way stages write and read the files they exchange: writes are deterministic and atomic
(a file appears whole under its name or not at all); reads turn every problem of a JSON, JSON Lines
or Parquet input into one error naming the file (and the line)."""

from __future__ import annotations

import codecs
import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from biovqa.errors import InputFormatError, MissingResourceError


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
                 columns: Iterable[str] | None = None, dictionaries: Iterable[str] = ()) -> pa.Table:
    """A Parquet file as a table; with ``columns``, only those of them the file has (a reader
    that needs a few columns of a wide file skips decoding the rest). ``dictionaries``: text
    columns (a list column's values: ``"options.list.element"``) read dictionary-encoded, as
    Parquet stores them, instead of as one string per row."""
    path = Path(path)
    if not path.exists():
        raise MissingResourceError(f"{what} not found", file=path)
    try:
        if columns is not None:
            with pq.ParquetFile(path) as parquet:
                names = set(parquet.schema_arrow.names)
                selected = [name for name in columns if name in names]
                # the reader refuses a dictionary column the file lacks
                paths = {parquet.schema.column(i).path for i in range(len(parquet.schema))} | names
                wanted = [name for name in dictionaries if name in paths]
                if wanted:
                    with pq.ParquetFile(path, metadata=parquet.metadata, read_dictionary=wanted) as encoded:
                        return encoded.read(columns=selected)
                return parquet.read(columns=selected)
        return pq.read_table(path, read_dictionary=list(dictionaries) or None)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputFormatError(
            f"cannot read {what}: {exc}",
            file=path,
            hint="the file looks truncated or is not Parquet; re-create or re-download it",
        ) from None


__all__ = ["atomic_path", "iter_json_lines", "read_json_object", "read_parquet", "sha256_file", "write_json",
           "write_parquet", "write_text"]
