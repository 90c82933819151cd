"""The released item format (hierarchy.md §3, [code]): one JSON line per image,
``{"image", "label", "level1", "choices_level1", …}``; a level whose value is null is skipped."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from biovqa.bench.folder import iter_json_lines
from biovqa.errors import InputFormatError

_LEVEL_KEY = re.compile(r"^level(\d+)$")


def read_released(path: Path) -> list[dict[str, Any]]:
    """Each line as ``{"image", "label", "levels": [(level, gold, choices) …]}`` (null levels
    dropped, level numbers kept); errors name the line and key."""
    out = []
    for row, record in iter_json_lines(path, what="released item file"):
        for key in ("image", "label"):
            if not isinstance(record.get(key), str) or not record[key].strip():
                raise InputFormatError(f"{key} must be non-empty text", file=path, row=row, field=key)
        levels = []
        numbers = sorted(int(m.group(1)) for m in map(_LEVEL_KEY.match, record) if m)
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
        out.append({"image": record["image"], "label": record["label"], "levels": levels})
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
