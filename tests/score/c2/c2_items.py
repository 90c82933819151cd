"""Hand-built C2 benchmark folders that follow the C2 item schema exactly (shared by the C2
scorer and report tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from biovqa.manifests.bench import Bench, write_bench
from biovqa.records import ITEM_COLUMNS

C2_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("family", pa.string()), ("category", pa.string()), ("answer_letter", pa.string()),
    ("part", pa.string()), ("property", pa.string()), ("attribute_group", pa.string()),
    ("gold_set", pa.list_(pa.string())), ("class_id", pa.int32()), ("class_name", pa.string()),
    ("scientific_name", pa.string()), ("genus", pa.string()), ("kind_category", pa.string()),
    ("kind_modifier", pa.string()), ("marker_color", pa.string()), ("marker_shape", pa.string()),
)
SCHEMA = pa.schema([*ITEM_COLUMNS, *C2_COLUMNS])
CATEGORY = {
    "attr_bare_value": "morphological", "attr_group_value": "relative_salience",
    "marker_localization": "anatomical", "visibility_partset": "anatomical",
    "visibility_side": "anatomical", "category_mcq": "naming", "open_common_name": "naming",
    "open_scientific_name": "naming", "open_genus": "naming", "open_kind_of": "naming",
}
MCQ_INSTRUCTION = "[CRITICAL INSTRUCTIONS - NO VIOLATIONS ALLOWED]: (abridged for tests)"
OPEN_INSTRUCTION = "Answer with ONLY the everyday English common name of the bird. Do not write full sentences."
LETTERS = "ABCDEFGHIJ"

#: A part layout (bounding-box-normalized x, y) of the 15 CUB parts, bird facing right.
LAYOUT = {
    "back": [0.45, 0.3], "beak": [0.98, 0.22], "belly": [0.5, 0.7], "breast": [0.7, 0.55],
    "crown": [0.82, 0.1], "forehead": [0.9, 0.12], "left eye": [0.86, 0.18], "left leg": [0.5, 0.9],
    "left wing": [0.4, 0.45], "nape": [0.75, 0.15], "right eye": [0.86, 0.18],
    "right leg": [0.5, 0.9], "right wing": [0.4, 0.45], "tail": [0.02, 0.6], "throat": [0.85, 0.35],
}

STEMS = {
    "attr_bare_value": "What is the {part_property} of this bird?",
    "attr_group_value": "Which of the following is the most prominently visible physical trait of the bird in this image?",
    "marker_localization": "What is the body part of this bird marked with the {color} {shape}?",
    "visibility_partset": "Which of the following parts of the bird are visible in this image?",
    "visibility_side": "Which of the {side_part}s of the bird are visible in this image?",
    "category_mcq": "What type of bird is this in the image?",
    "open_common_name": "What is the common name of the bird?",
    "open_scientific_name": "What is the scientific name of the bird?",
    "open_genus": "What is the genus of the bird?",
    "open_kind_of": "What kind of {category} is the bird in this image?",
}


def c2_item(family: str, item_id: str, answer: str, options: list[str] | None = None,
            **fields: Any) -> dict[str, Any]:
    """One items.parquet row in the C2 schema (question text per prompts.md §3.1)."""
    row: dict[str, Any] = {name: None for name in SCHEMA.names}
    stem = STEMS[family].format(
        part_property=f"{fields.get('part') or ''} {fields.get('property') or ''}".strip(),
        color=fields.get("marker_color") or "red", shape=fields.get("marker_shape") or "dot",
        side_part=fields.get("part") or "eye", category=(fields.get("kind_category") or "gull").lower())
    if options is not None:
        question = stem + " Options: " + ", ".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(options))
    else:
        question = stem
    row.update(
        item_id=item_id, component="c2", task=family, family=family, category=CATEGORY[family],
        question=question, instruction=MCQ_INSTRUCTION if options else OPEN_INSTRUCTION,
        options=options, answer=answer, image=f"001.Black_footed_Albatross/{item_id}.jpg",
        image_sha256="0" * 64, source_id="1", class_id=1,
        answer_letter=LETTERS[options.index(answer)] if options and answer in options else None,
    )
    row.update(fields)
    return row


def write_c2_bench(path: Path, rows: list[dict[str, Any]], layout: dict | None = LAYOUT) -> Bench:
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    bench = write_bench(path, table, component="c2", generator="tests", seed=42, sources={},
                        parameters={})
    if layout is not None:
        (path / "c2").mkdir(exist_ok=True)
        (path / "c2" / "part_layout.json").write_text(json.dumps(layout), encoding="utf-8")
    return bench


def predictions_for(bench: Bench, replies: list[str | None], statuses: list[str] | None = None) -> pa.Table:
    statuses = statuses or ["ok" if r is not None else "missing" for r in replies]
    return pa.table({"item_id": bench.items.column("item_id"), "response": pa.array(replies, pa.string()),
                     "status": pa.array(statuses, pa.string())})
