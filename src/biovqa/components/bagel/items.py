"""The BAGEL item files (biovqa's canonical layout): per-domain JSONL, one question per line.

Accepted forms, since the release's exact field names are not published: options as an object
keyed ``A``–``D`` or a list of four strings; the gold answer (``answer``, ``correct_answer``,
``gold`` or ``label``) as a letter, a 0–3 index (``answer_index`` / ``answer_idx`` too) or the
gold option's exact text; the stem as ``question`` (or ``stem``); the id as ``id`` (or
``item_id``; default ``<file stem>-<line>``). Fields beyond the canonical ones join ``meta``.
Every problem is a :class:`~biovqa.errors.InputFormatError` naming file, line and field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biovqa.arguments import split_name_value
from biovqa.bench.folder import iter_json_lines
from biovqa.components.bagel.tasks import DOMAINS, TASKS
from biovqa.errors import InputFormatError

LETTERS: tuple[str, ...] = ("A", "B", "C", "D")
#: Domain sizes of the released benchmark (the paper's dataset statistics).
DOMAIN_SIZES: dict[str, int] = {domain.name: domain.size for domain in TASKS}
#: The spellings of each domain the released files use, case-insensitively.
DOMAIN_ALIASES: dict[str, str] = {alias: domain.name for domain in TASKS for alias in domain.aliases}
#: The difficulty tiers a question may carry; the released files name the field ``level``.
TIERS: tuple[str, ...] = ("easy", "medium", "hard")
GOLD_FIELDS: tuple[str, ...] = ("answer", "correct_answer", "gold", "label", "answer_index", "answer_idx")
_KNOWN = {"id", "item_id", "domain", "dimension", "question", "stem", "options", "level", "meta", *GOLD_FIELDS}


@dataclass(frozen=True, slots=True)
class BagelItem:
    """One validated BAGEL question: options in A–D order, gold as a 0–3 index."""

    item_id: str
    domain: str
    dimension: str | None
    question: str
    options: tuple[str, str, str, str]
    gold: int
    tier: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def gold_letter(self) -> str:
        return LETTERS[self.gold]


def canonical_domain(value: Any, *, file: Path | None, row: int | None, field: str = "domain") -> str:
    """The canonical domain name of ``value`` (case-insensitive aliases); ``file`` and ``row``
    are where it was read (None for a command-line argument, whose ``field`` is its option)."""
    if isinstance(value, str):
        name = DOMAIN_ALIASES.get(value.strip().lower())
        if name is not None:
            return name
    raise InputFormatError(f"domain {value!r} is not one of {', '.join(DOMAINS)}", file=file, row=row,
                           field=field)


def _options(value: Any, *, file: Path, row: int) -> tuple[str, str, str, str]:
    if isinstance(value, dict):
        keys = {str(k).strip().upper(): v for k, v in value.items()}
        if sorted(keys) != list(LETTERS) or len(keys) != len(value):
            raise InputFormatError(f"options must have exactly the keys A, B, C, D, got {sorted(value)}",
                                   file=file, row=row, field="options")
        texts = [keys[letter] for letter in LETTERS]
    elif isinstance(value, list):
        if len(value) != 4:
            raise InputFormatError(f"options must be 4, got {len(value)}", file=file, row=row, field="options")
        texts = value
    else:
        raise InputFormatError(f"options must be an object A–D or a list of 4 strings, got {type(value).__name__}",
                               file=file, row=row, field="options")
    for letter, text in zip(LETTERS, texts):
        if not isinstance(text, str) or not text.strip():
            raise InputFormatError(f"option {letter} is empty or not text: {text!r}", file=file, row=row,
                                   field="options")
    stripped = [t.strip() for t in texts]
    if len(set(stripped)) != 4:
        raise InputFormatError(f"options are not distinct: {stripped}", file=file, row=row, field="options")
    return stripped[0], stripped[1], stripped[2], stripped[3]


def _resolve_gold(name: str, value: Any, options: tuple[str, ...], *, file: Path, row: int) -> int:
    if isinstance(value, bool):
        raise InputFormatError(f"gold answer {value!r} is not a letter, index or option text", file=file,
                               row=row, field=name)
    if isinstance(value, int):
        if 0 <= value <= 3:
            return value
        raise InputFormatError(f"gold index {value} is not in 0–3", file=file, row=row, field=name)
    if isinstance(value, str):
        text = value.strip()
        if text.upper() in LETTERS and len(text) == 1:
            return LETTERS.index(text.upper())
        matches = [i for i, option in enumerate(options) if option == text]
        if len(matches) == 1:
            return matches[0]
        what = "no option" if not matches else f"{len(matches)} options"
        raise InputFormatError(f"gold answer {value!r} is not a letter A–D, an index 0–3, and matches {what} "
                               "exactly", file=file, row=row, field=name)
    raise InputFormatError(f"gold answer {value!r} is not a letter, index or option text", file=file, row=row,
                           field=name)


def parse_row(record: Any, *, file: Path, row: int, default_domain: str | None = None) -> BagelItem:
    """One JSONL object as a validated :class:`BagelItem` (``row`` is the 1-based line number)."""
    if not isinstance(record, dict):
        raise InputFormatError(f"a line must hold a JSON object, got {type(record).__name__}", file=file, row=row)
    item_id = record.get("id", record.get("item_id", f"{file.stem}-{row:06d}"))
    if not isinstance(item_id, (str, int)) or isinstance(item_id, bool) or str(item_id).strip() == "":
        raise InputFormatError(f"id {item_id!r} is not a non-empty string", file=file, row=row, field="id")
    if "domain" in record:
        domain = canonical_domain(record["domain"], file=file, row=row)
    elif default_domain is not None:
        domain = default_domain
    else:
        raise InputFormatError("no domain (give it in the line or as DOMAIN=PATH)", file=file, row=row,
                               field="domain")
    stem_field = "question" if "question" in record else "stem"
    question = record.get(stem_field)
    if not isinstance(question, str) or not question.strip():
        raise InputFormatError(f"question {question!r} is empty or not text", file=file, row=row, field="question")
    if "options" not in record:
        raise InputFormatError("no options", file=file, row=row, field="options")
    options = _options(record["options"], file=file, row=row)
    golds = {name: _resolve_gold(name, record[name], options, file=file, row=row)
             for name in GOLD_FIELDS if name in record}
    if not golds:
        raise InputFormatError(f"no gold answer (one of {', '.join(GOLD_FIELDS)})", file=file, row=row,
                               field="answer")
    if len(set(golds.values())) > 1:
        raise InputFormatError(f"gold fields disagree: {sorted(golds)}", file=file, row=row, field=next(iter(golds)))
    dimension = record.get("dimension")
    if dimension is not None and not isinstance(dimension, str):
        raise InputFormatError(f"dimension {dimension!r} is not text", file=file, row=row, field="dimension")
    tier = record.get("level")  # the released files' name for the difficulty tier
    if tier is not None:
        if not isinstance(tier, str) or tier.strip().lower() not in TIERS:
            raise InputFormatError(f"level {tier!r} is not one of {', '.join(TIERS)}", file=file, row=row,
                                   field="level")
        tier = tier.strip().lower()
    meta = record.get("meta", {})
    if not isinstance(meta, dict):
        raise InputFormatError(f"meta must be a JSON object, got {type(meta).__name__}", file=file, row=row,
                               field="meta")
    meta = {**{k: v for k, v in record.items() if k not in _KNOWN}, **meta}
    return BagelItem(item_id=str(item_id).strip(), domain=domain,
                     dimension=dimension.strip() or None if dimension is not None else None,
                     question=question.strip(), options=options, gold=next(iter(golds.values())),
                     tier=tier, meta=meta)


def parse_source(spec: str | Path) -> tuple[Path, str | None]:
    """``PATH`` or ``DOMAIN=PATH`` (the domain fills lines that carry none)."""
    text = str(spec)
    if "=" in text and not Path(text).exists():
        name, path = split_name_value(text, option="--items", form="DOMAIN=PATH")
        return Path(path), canonical_domain(name, file=None, row=None, field="--items")
    return Path(text), None


def load_items(sources: Sequence[str | Path]) -> list[BagelItem]:
    """Every item of the JSONL files in ``sources``, in file then line order; ids must be unique."""
    items: list[BagelItem] = []
    seen: dict[str, tuple[Path, int]] = {}
    for spec in sources:
        path, default_domain = parse_source(spec)
        for row, record in iter_json_lines(path, what="item file"):
            item = parse_row(record, file=path, row=row, default_domain=default_domain)
            if item.item_id in seen:
                first = seen[item.item_id]
                raise InputFormatError(f"id {item.item_id!r} repeats {first[0]} line {first[1]}", file=path,
                                       row=row, field="id")
            seen[item.item_id] = (path, row)
            items.append(item)
    if not items:
        raise InputFormatError("no items in " + ", ".join(str(s) for s in sources))
    return items
