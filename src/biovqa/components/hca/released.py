"""The released item format of the HCA paper's authors (Tan, Qing, Gong 2025): one JSON line per image,
``{"image", "label", "level1", "choices_level1", …}``; a level whose value is null is skipped.

The authors' files name each photo by its absolute path on their cluster
(``/projectnb/…/CUB_200_2011/images/001.Black_footed_Albatross/….jpg``). :func:`reroot` finds the
photo under a local images folder by the path's tail (the longest tail that names a file there),
so a bench never records a foreign or builder-local path; a photo found nowhere is a counted,
named exclusion of the build, not an error."""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from biovqa.bench.folder import iter_json_lines
from biovqa.bench.paths import contained_path
from biovqa.errors import InputFormatError

_LEVEL_KEY = re.compile(r"^level(\d+)$")
#: The deepest level a released item may name: the items store level numbers as int16.
MAX_LEVEL = 32767


def read_released(path: Path) -> list[dict[str, Any]]:
    """Each line as ``{"image", "label", "levels": [(level, gold, choices) …], "row"}`` (null levels
    dropped, level numbers kept); errors name the line and key (a photo on two lines too)."""
    out = []
    first_row: dict[str, int] = {}
    for row, record in iter_json_lines(path, what="released item file"):
        for key in ("image", "label"):
            if not isinstance(record.get(key), str) or not record[key].strip():
                raise InputFormatError(f"{key} must be non-empty text", file=path, row=row, field=key)
        levels = []
        numbers = sorted(int(m.group(1)) for m in map(_LEVEL_KEY.match, record) if m)
        if numbers and not 1 <= numbers[-1] <= MAX_LEVEL:  # the items store levels as int16
            raise InputFormatError(f"level numbers run from 1 to {MAX_LEVEL}, found level{numbers[-1]}", file=path,
                                   row=row, field=f"level{numbers[-1]}")
        if numbers and numbers[0] < 1:
            raise InputFormatError("level numbers start at 1, found level0", file=path, row=row, field="level0")
        for number in numbers:
            gold = record[f"level{number}"]
            if gold is None:
                continue
            choices = record.get(f"choices_level{number}")
            field = f"choices_level{number}"
            if (not isinstance(choices, list) or not 2 <= len(choices) <= 4
                    or not all(isinstance(c, str) and c for c in choices)):
                raise InputFormatError("choices must be a list of 2–4 labels", file=path, row=row, field=field)
            if len(set(choices)) != len(choices):
                raise InputFormatError(f"choices repeat a label: {choices}", file=path, row=row, field=field)
            if choices.count(gold) != 1:
                raise InputFormatError(f"the gold {gold!r} is not among the choices", file=path, row=row,
                                       field=field)
            levels.append((number, gold, list(choices)))
        if not levels:
            raise InputFormatError("no level to ask", file=path, row=row, field="level1")
        previous = first_row.setdefault(record["image"], row)
        if previous != row:
            raise InputFormatError(f"the image {record['image']!r} is already on line {previous}", file=path,
                                   row=row, field="image")
        out.append({"image": record["image"], "label": record["label"], "levels": levels, "row": row})
    if not out:
        raise InputFormatError("no items", file=path)
    return out


def released_lines(rows: list[dict[str, Any]]) -> list[str]:
    """JSON lines of ``rows`` (``image``, ``label``, ``depth``, ``levels`` = [(level, gold, choices)])."""
    lines = []
    for row in rows:
        record: dict[str, Any] = {"image": row["image"], "label": row["label"]}
        asked = {level: (gold, choices) for level, gold, choices in row["levels"]}
        for level in range(1, row["depth"] + 1):
            gold, choices = asked.get(level, (None, None))
            record[f"level{level}"] = gold
            record[f"choices_level{level}"] = choices
        lines.append(json.dumps(record, ensure_ascii=False))
    return lines


def _parts(image: str) -> tuple[str, ...]:
    """The path components of ``image`` without its anchor (``/``, ``C:\\``), either separator."""
    path = PureWindowsPath(image) if "\\" in image or re.match(r"^[A-Za-z]:", image) else PurePosixPath(image)
    return tuple(part for part in path.parts if part != path.anchor and part not in ("", "."))


def reroot(image: str, root: Path, prefixes: list[tuple[str, ...]], *, file: Path, row: int) -> str | None:
    """The path under ``root`` (``/``-separated) of the photo ``image`` names: the longest tail of
    its components that is a file under ``root``; None when no tail is. ``prefixes`` remembers the
    leading components dropped so far (one stat per photo once the first is found). A ``..``
    component, or a tail that leads out of ``root`` through a link, is an error naming the line."""
    parts = _parts(image)
    if ".." in parts:
        raise InputFormatError(f"the image path {image!r} climbs out of its folder ('..')", file=file, row=row,
                               field="image")
    starts = [len(prefix) for prefix in prefixes if parts[:len(prefix)] == prefix]
    starts += [k for k in range(len(parts)) if k not in starts]
    for k in starts:
        candidate = root.joinpath(*parts[k:])
        if candidate.is_file():
            # the one containment rule (a tail that leads out through a link is refused)
            contained_path(root, "/".join(parts[k:]), file=file, row=row, field="image", what="image")
            if parts[:k] not in prefixes:
                prefixes.append(parts[:k])
            return "/".join(parts[k:])
    return None
