"""Build a BAGEL benchmark folder from the item JSONL files (the paper's evaluation protocol).

Each item becomes one text-only row (``image`` null): ``question`` holds the whole evaluation
prompt of the paper's Appendix A.1.2 in the chosen style, ``instruction`` is empty, ``options`` the four option texts in
the order shown, ``answer`` the gold letter, ``prompt_mode`` how the engine sends it (``chat``: a
user turn through the model's chat template; ``raw``: the prompt as completion text — no chat
template in the transformers backend, ``/v1/completions`` in the openai backend, ``LLM.generate``
in the vllm backend; the paper's Appendix A.1.2: raw for base models). With ``permute_seed`` every item's options are
re-permuted by a seeded permutation of its own (biovqa's robustness run); ``permutation``
records, for each shown position, the original letter.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import pyarrow as pa
import typer

from biovqa.bench.folder import staged_build
from biovqa.components.bagel.items import LETTERS, BagelItem, load_items, parse_source
from biovqa.components.bagel.prompts import MODES, PROMPT_STYLES, render_prompt
from biovqa.errors import BiovqaError
from biovqa.records import ITEM_COLUMNS

if TYPE_CHECKING:
    from biovqa.bench.folder import Bench

COMPONENT = "bagel"
#: Columns after the shared item columns.
BAGEL_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("domain", pa.string()),
    ("dimension", pa.string()),
    ("tier", pa.string()),  # the difficulty tier, the released files' ``level``
    ("gold_index", pa.int8()),
    ("meta", pa.string()),
    ("permutation", pa.string()),
    # how the engine sends the prompt: "chat" (user turn through the chat template / chat
    # endpoint) or "raw" (completion text: no template, /v1/completions, LLM.generate)
    ("prompt_mode", pa.string()),
)
ITEM_SCHEMA = pa.schema(list(ITEM_COLUMNS) + list(BAGEL_COLUMNS))
#: Decoding the paper used (the paper's evaluation protocol): greedy, seed 0, one run.
DECODING = {"greedy": True, "seed": 0, "runs": 1}


def permutation_for(item_id: str, seed: int) -> tuple[int, ...]:
    """The seeded permutation of item ``item_id``: shown position i holds original option p[i].
    Each item's permutation depends only on the seed and its id (not on file order)."""
    digest = hashlib.sha256(f"{seed}:{item_id}".encode()).digest()
    order = [0, 1, 2, 3]
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return tuple(order)


def items_table(items: list[BagelItem], *, prompt_style: str = "canonical",
                permute_seed: int | None = None, mode: str = "chat") -> pa.Table:
    """The items table of ``items`` (see the module docstring)."""
    if prompt_style not in PROMPT_STYLES:
        raise BiovqaError(f"prompt style {prompt_style!r} is not one of {', '.join(PROMPT_STYLES)}",
                          field="prompt_style")
    rows: dict[str, list] = {name: [] for name in ITEM_SCHEMA.names}
    for item in items:
        order = permutation_for(item.item_id, permute_seed) if permute_seed is not None else (0, 1, 2, 3)
        options = [item.options[i] for i in order]
        gold = order.index(item.gold)
        rows["item_id"].append(item.item_id)
        rows["component"].append(COMPONENT)
        rows["task"].append(item.domain)
        rows["question"].append(render_prompt(item.question, options, prompt_style))
        rows["instruction"].append("")
        rows["options"].append(options)
        rows["answer"].append(LETTERS[gold])
        rows["image"].append(None)
        rows["image_sha256"].append(None)
        rows["source_id"].append(item.item_id)
        rows["domain"].append(item.domain)
        rows["dimension"].append(item.dimension)
        rows["tier"].append(item.tier)
        rows["gold_index"].append(gold)
        rows["meta"].append(json.dumps(item.meta, sort_keys=True, ensure_ascii=False))
        rows["permutation"].append("".join(LETTERS[i] for i in order) if permute_seed is not None else None)
        rows["prompt_mode"].append(mode)
    return pa.table(rows, schema=ITEM_SCHEMA)


@staged_build
def build_bagel(items: Sequence[str | Path], out: str | Path, *, prompt_style: str = "canonical",
                mode: str = "chat", permute_seed: int | None = None) -> Bench:
    """Load, validate and write the BAGEL items of ``items`` (paths or ``DOMAIN=PATH``) to ``out``."""
    from biovqa.bench.folder import write_bench

    if mode not in MODES:
        raise BiovqaError(f"mode {mode!r} is not one of {', '.join(MODES)}", field="mode")
    loaded = load_items(list(items))
    table = items_table(loaded, prompt_style=prompt_style, permute_seed=permute_seed, mode=mode)
    sources: dict[str, str | Path] = {f"items_{i}": parse_source(spec)[0] for i, spec in enumerate(items)}
    return write_bench(
        out, table, component=COMPONENT, generator="biovqa.components.bagel.build",
        seed=0 if permute_seed is None else permute_seed, sources=sources,
        parameters={"prompt_style": prompt_style, "mode": mode, "permute_seed": permute_seed},
        extra={"decoding": DECODING, "text_only": True,
               "gold_positions": {letter: rows for letter, rows in zip(
                   LETTERS, [sum(1 for g in table.column("gold_index").to_pylist() if g == i) for i in range(4)])}},
    )


def build_command(
    items: Annotated[list[str], typer.Option("--items", help="item JSONL file, or DOMAIN=PATH when its lines carry no domain (repeatable)")],
    out: Annotated[Path, typer.Option(help="benchmark folder to write")],
    prompt_style: Annotated[str, typer.Option(help="canonical (one option per line) or inline (the paper's printed one-line string)")] = "canonical",
    mode: Annotated[str, typer.Option(help="chat (a user turn through the chat template) or raw (completion text, no template: for base models); recorded per item and in the manifest")] = "chat",
    permute_seed: Annotated[int | None, typer.Option(help="re-permute every item's options with this seed (robustness run)")] = None,
) -> None:
    """Build BAGEL (text-only animal-knowledge MCQ) from its per-domain JSONL files."""
    from biovqa.progress import stderr_console

    bench = build_bagel(items, out, prompt_style=prompt_style, mode=mode, permute_seed=permute_seed)
    counts = bench.manifest["counts"]
    stderr_console().print(f"[green]built BAGEL[/green]: {counts['total']:,} items "
                               f"{counts.get('by_task', {})} → {bench.root}")


__all__ = ["BAGEL_COLUMNS", "ITEM_SCHEMA", "build_bagel", "build_command", "items_table", "permutation_for"]
