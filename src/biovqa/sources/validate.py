"""The one validation layer every source reader reads through (paper §3 and Appendix L.2: a gold
the source cannot vouch for is never written).

A downloaded dataset is untrusted input. Its readers use these helpers, so that every problem is
either an :class:`~biovqa.errors.InputFormatError` naming the file, the 1-based row and the field,
or a counted exclusion naming the file or row it excluded — never a traceback, never a silent skip:

* **text**: :func:`read_text` / :func:`read_lines` decode UTF-8 (a byte-order mark and CRLF line
  ends accepted), an XML file in the encoding its declaration names (:func:`read_xml`), and
  refuse anything else naming the line of the first bad byte; a line longer than
  :data:`MAX_LINE_CHARS` is refused before it is held in memory;
* **numbers**: :func:`number` accepts only finite values, in a declared range, integral where the
  field is a count or an id (``inf``, ``1e400``, ``nan``, ``1e-300`` where a length is expected);
* **ids**: :func:`first_duplicate` finds the first id given twice;
* **exclusions**: a reader counts each reason and keeps its first :data:`MAX_EXAMPLES` files or
  rows (named under the source folder, :func:`relative_name`); a build writes them to the
  manifest's ``exclusion_examples`` beside the counts in ``exclusions``, and
  :func:`summarize_exclusions` gives the summary ``biovqa build`` prints.
"""

from __future__ import annotations

import codecs
import csv
import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from biovqa.errors import InputFormatError

#: Longest text line a source file may hold [DEFAULT]: far above any annotation line (the longest
#: beetle CSV row is < 2 000 characters), far below what would exhaust memory.
MAX_LINE_CHARS = 1 << 20
#: Longest CSV field [DEFAULT]; Python's csv module refuses fields over 131 072 characters itself.
MAX_FIELD_CHARS = 131_072
#: Largest XML annotation file read [DEFAULT]: a Pascal VOC file is a few kB.
MAX_XML_BYTES = 16 << 20
#: Files or rows named per exclusion reason in a manifest.
MAX_EXAMPLES = 20

_XML_DECLARATION = re.compile(rb"""^<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


def count_exclusion(counts: dict[str, int], examples: dict[str, list[str]], reason: str,
                    names: Iterable[Any] = (), n: int = 1) -> None:
    """Count ``n`` exclusions under ``reason`` and keep ``names`` (files or rows) while the reason
    has fewer than :data:`MAX_EXAMPLES`: the one way every reader records what it left out."""
    counts[reason] = counts.get(reason, 0) + n
    named = examples.setdefault(reason, [])
    for name in names:
        if len(named) >= MAX_EXAMPLES:
            break
        if str(name) not in named:
            named.append(str(name))


def relative_name(path: str | Path, root: str | Path) -> str:
    """``path`` as written under ``root`` (POSIX), so that a manifest names a file without the
    builder's folders; the bare name when ``path`` is not under ``root``."""
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return Path(path).name


def summarize_exclusions(manifest: dict[str, Any], *, shown: int = 3) -> list[str]:
    """Short lines ``source: reason: N (first, second, …)`` for every exclusion a manifest records
    (``exclusions`` holds counts, possibly per source; ``exclusion_examples`` the same keys with
    the first files or rows excluded)."""
    lines: list[str] = []

    def walk(counts: Any, examples: Any, prefix: str) -> None:
        if not isinstance(counts, dict):
            return
        for key in sorted(counts):
            value = counts[key]
            named = examples.get(key) if isinstance(examples, dict) else None
            if isinstance(value, dict):
                if value and all(isinstance(v, int) for v in value.values()) and not isinstance(named, dict):
                    # C1: reason → {group: count}
                    total = sum(value.values())
                    lines.append(_line(f"{prefix}{key}", total, named, shown))
                else:
                    walk(value, named, f"{prefix}{key}: ")
            elif isinstance(value, int) and value:
                lines.append(_line(f"{prefix}{key}", value, named, shown))

    walk(manifest.get("exclusions"), manifest.get("exclusion_examples"), "")
    datasets = manifest.get("datasets")
    if isinstance(datasets, dict):  # C4: per dataset
        for name in sorted(datasets):
            entry = datasets[name]
            if isinstance(entry, dict):
                walk(entry.get("exclusions"), entry.get("exclusion_examples"), f"{name}: ")
    return lines


def _line(label: str, count: int, named: Any, shown: int) -> str:
    text = f"{label}: {count:,}"
    if isinstance(named, list) and named:
        more = ", …" if count > min(len(named), shown) else ""
        text += f" ({', '.join(str(n) for n in named[:shown])}{more})"
    return text


# ----------------------------------------------------------------------------- text


def decode_text(data: bytes, *, file: str | Path, encoding: str = "utf-8") -> str:
    """Bytes → text in ``encoding`` (a UTF-8 byte-order mark is dropped); a byte that does not
    decode is an error naming the file and its line."""
    if data.startswith(codecs.BOM_UTF8) and encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
        data = data[len(codecs.BOM_UTF8):]
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFormatError(f"not {encoding} text: byte {data[exc.start:exc.start + 1]!r} at offset "
                               f"{exc.start} does not decode", file=file, row=line,
                               hint="save the file as UTF-8 (or declare its encoding where the format "
                                    "allows one)") from None
    except LookupError:
        raise InputFormatError(f"unknown text encoding {encoding!r}", file=file) from None


def read_text(path: str | Path, *, max_line: int = MAX_LINE_CHARS) -> str:
    """A UTF-8 text file (BOM and CRLF accepted), its line lengths bounded before decoding."""
    return "\n".join(read_lines(path, max_line=max_line))


def read_lines(path: str | Path, *, max_line: int = MAX_LINE_CHARS) -> list[str]:
    """The lines of a UTF-8 text file without their line ends (``\\n``, ``\\r\\n``); a line longer
    than ``max_line`` bytes, or one that is not UTF-8, is an error naming the file and line."""
    return list(iter_lines(path, max_line=max_line))


def iter_lines(path: str | Path, *, max_line: int = MAX_LINE_CHARS) -> Iterator[str]:
    for line in _decoded_lines(path, max_line=max_line):
        yield line.rstrip("\r\n")


def _decoded_lines(path: str | Path, *, max_line: int) -> Iterator[str]:
    """Decoded lines of a UTF-8 file, line ends kept (a first-line BOM dropped)."""
    path = Path(path)
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise InputFormatError(f"cannot be read: {exc.strerror or exc}", file=path) from None
    with handle:
        for number, raw in enumerate(bounded_lines(handle, max_line=max_line, file=path), start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputFormatError(f"not UTF-8 text: byte {raw[exc.start:exc.start + 1]!r} does not "
                                       "decode", file=path, row=number,
                                       hint="save the file as UTF-8") from None


def csv_records(path: str | Path, *, max_line: int = MAX_LINE_CHARS) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every record of a UTF-8 CSV file (BOM, CRLF and quoted line breaks
    accepted); the number is the line where the record ends, as ``sed -n`` counts. A line over
    ``max_line`` bytes, a field over :data:`MAX_FIELD_CHARS` characters or a malformed quote is an
    error naming the file and line."""
    path = Path(path)
    lines = _decoded_lines(path, max_line=max_line)
    reader = csv.reader(lines)
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputFormatError(f"not a readable CSV record: {exc} (a field over {MAX_FIELD_CHARS:,} "
                                   "characters, or an unclosed quote)", file=path,
                                   row=reader.line_num) from None
        yield reader.line_num, record


def bounded_lines(handle: Any, *, max_line: int = MAX_LINE_CHARS, file: str | Path) -> Iterator[bytes]:
    """Lines of a binary stream, each read with a bound, so that one 400 MB line is refused
    (naming the file and line) instead of being held in memory."""
    number = 0
    while True:
        raw = handle.readline(max_line + 1)
        if not raw:
            return
        number += 1
        if len(raw) > max_line and not raw.endswith(b"\n"):
            raise InputFormatError(f"line longer than {max_line:,} bytes (not a text table of this format)",
                                   file=file, row=number)
        yield raw


def read_xml(path: str | Path) -> tuple[bytes, str]:
    """An XML file's bytes and its text, decoded in the encoding its declaration names (UTF-8
    when there is none), so that the parser's errors are about structure only."""
    path = Path(path)
    try:
        n_bytes = path.stat().st_size
        if n_bytes > MAX_XML_BYTES:
            raise InputFormatError(f"{n_bytes:,} bytes: larger than any annotation file ({MAX_XML_BYTES:,} at most)",
                                   file=path)
        data = path.read_bytes()
    except OSError as exc:
        raise InputFormatError(f"cannot be read: {exc.strerror or exc}", file=path) from None
    declared = _XML_DECLARATION.match(data.removeprefix(codecs.BOM_UTF8))
    encoding = declared.group(1).decode("ascii") if declared else "utf-8"
    return data, decode_text(data, file=path, encoding=encoding)


# ----------------------------------------------------------------------------- numbers


def number(text: str | float | None, *, file: str | Path, row: int | None, field: str,
           low: float | None = None, high: float | None = None, positive: bool = False,
           integral: bool = False, what: str | None = None) -> float:
    """A finite number in range (``low <= x <= high``, ``x > 0`` when ``positive``; integral when
    ``integral``); anything else — text, ``nan``, ``inf``, ``1e400``, ``1e-300`` where a positive
    length is expected below its resolution — is an error naming file, row and field."""
    name = what or field
    try:
        if text is None:
            raise ValueError("missing")
        value = float(text)
    except ValueError:
        raise InputFormatError(f"{name} is not a number: {text!r}", file=file, row=row, field=field) from None
    if not math.isfinite(value):
        raise InputFormatError(f"{name} must be a finite number, found {text!r}", file=file, row=row,
                               field=field)
    if positive and not value > 0:
        raise InputFormatError(f"{name} must be positive, found {text!r}", file=file, row=row, field=field)
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"[{'' if low is None else f'{low:g}'}, {'' if high is None else f'{high:g}'}]"
        raise InputFormatError(f"{name} {text!r} is outside {bounds}", file=file, row=row, field=field)
    if integral and value != int(value):
        raise InputFormatError(f"{name} must be a whole number, found {text!r}", file=file, row=row,
                               field=field)
    return value


def integer(text: str | float | None, *, file: str | Path, row: int | None, field: str,
            low: int | None = None, high: int | None = None, what: str | None = None) -> int:
    """A whole number (written ``3`` or ``3.0``) in range; see :func:`number`."""
    return int(number(text, file=file, row=row, field=field, low=low, high=high, integral=True, what=what))


# ----------------------------------------------------------------------------- ids


def json_id(value: Any, *, file: str | Path, row: int | None, field: str) -> int | str:
    """A JSON id (COCO ``images[].id``, ``image_id``, ``category_id``): a whole number or a
    string; a list, an object, a fraction, ``true`` or ``null`` is an error naming the field."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputFormatError(f"{field} must be a number or a string, found {value!r}"[:200], file=file, row=row,
                               field=field)
    if isinstance(value, float):
        if not (math.isfinite(value) and value == int(value)):
            raise InputFormatError(f"{field} must be a whole number, found {value!r}", file=file, row=row,
                                   field=field)
        return int(value)
    return value


def first_duplicate(ids: Iterable[Any]) -> tuple[Any, int, int] | None:
    """(id, first position, second position) of the first id given twice, 0-based; None if unique."""
    seen: dict[Any, int] = {}
    for position, key in enumerate(ids):
        if key in seen:
            return key, seen[key], position
        seen[key] = position
    return None


__all__ = ["MAX_EXAMPLES", "MAX_FIELD_CHARS", "MAX_LINE_CHARS", "MAX_XML_BYTES", "bounded_lines", "count_exclusion", "csv_records", "decode_text",
           "first_duplicate", "integer", "iter_lines", "json_id", "number", "read_lines", "read_text", "read_xml",
           "relative_name", "summarize_exclusions"]
