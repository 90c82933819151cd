"""The items of the hierarchical 4-way VQA (HCA paper §2.3, App. C.1) and of its text-only
control (§3.3.1): per image, one question for each asked level of its path (:func:`make_questions`,
:func:`visual_items`), and the text control of a visual items table (:func:`text_items`), each under
its prompt variant (:class:`PromptVariant`).

Items carry ``image_key`` (the image a visual question is about), ``paths`` (the images a
question stands for), ``level``, ``level_name``, ``depth`` (levels on the path), ``leaf``,
``system`` (the system prompt of the authors' code / §3.3.1, sent by the engine as the system message in place of a
preset's), ``policy``, ``genus_leak`` (text: the genus is the first word of the entity), ``variant``
(App. C.1.2–C.1.4: plain, cot, taxonomy, binary and their combinations — :class:`PromptVariant`), ``statement``
(binary: the letter of the option stated) and ``max_new_tokens`` (the item's own token cap: CoT).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from biovqa.components.hca.distractors import (POLICIES, SMALL_LEVEL_POLICIES, ClipScorer, random_distractors,
                                               seeded_rng, similarity_distractors, taxonomy_distractors)
from biovqa.components.hca.prompts import (COT_MAX_NEW_TOKENS, LETTERS, TEMPLATES, TEXT_TEMPLATES, binary_statement,
                                           taxonomy_json, text_binary_statement, text_question, visual_question,
                                           with_cot, with_taxonomy)
from biovqa.components.hca.tasks import task
from biovqa.components.hca.taxonomy import Hierarchy
from biovqa.errors import BiovqaError, InputFormatError
from biovqa.records import ITEM_COLUMNS

#: the two tasks' records: instruction (closing line) and system prompt of their items
VISUAL, TEXT = task("visual"), task("text")

COMPONENT = "hca"
#: the hierarchical VQA's item columns after the core ones (:data:`biovqa.records.ITEM_COLUMNS`): name → type
HCA_COLUMNS: dict[str, pa.DataType] = {
    "image_key": pa.string(), "paths": pa.list_(pa.string()), "level": pa.int16(), "level_name": pa.string(),
    "depth": pa.int16(), "leaf": pa.string(), "system": pa.string(), "policy": pa.string(), "genus_leak": pa.bool_(),
    # prompt variant (HCA paper App. C.1.2–C.1.4): plain, cot, taxonomy, taxonomy+cot, binary, taxonomy+binary
    "variant": pa.string(),
    # binary variant: the letter of the option this statement states (null otherwise)
    "statement": pa.string(),
    # the item's own cap on new tokens (CoT; null: the preset's HCA cap) — read by the engine
    "max_new_tokens": pa.int32(),
}
ITEM_SCHEMA = pa.schema([*ITEM_COLUMNS, *HCA_COLUMNS.items()])


@dataclass(frozen=True)
class PromptVariant:
    """The prompt variants (HCA paper App. C.1.2–C.1.4) a bench is built with (recorded in the manifest).

    ``cot``: "Let's think step by step." appended to the question sentence; replies are parsed for
    their final answer and may use ``cot_max_new_tokens`` tokens. ``taxonomy``: "Here's a taxonomy: "
    + the taxonomy JSON (leaf → ancestors up to the root) + a newline before the prompt.
    ``binary``: every option becomes its own Yes/No statement item (4 passes per level); a level is
    right only if exactly one statement got "Yes" and it is the true one. Binary statements carry
    no system prompt: the visual one asks for a letter, and the paper names none for this variant.
    """

    cot: bool = False
    taxonomy: bool = False
    binary: bool = False
    cot_max_new_tokens: int = COT_MAX_NEW_TOKENS

    def __post_init__(self) -> None:
        if self.cot and self.binary:
            raise BiovqaError("--cot and --binary cannot be combined (a statement is answered Yes or No)",
                              field="variant")
        if self.cot_max_new_tokens < 1:
            raise BiovqaError("the CoT token cap must be at least 1", field="cot_max_new_tokens")

    @property
    def name(self) -> str:
        parts = [n for n, on in (("taxonomy", self.taxonomy), ("cot", self.cot), ("binary", self.binary)) if on]
        return "+".join(parts) or "plain"

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "cot": self.cot, "taxonomy_context": self.taxonomy, "binary": self.binary,
                "cot_max_new_tokens": self.cot_max_new_tokens if self.cot else None,
                "biological_cot": "not offered: its worked example is missing from the paper (App. C.1.2)"}


def _split_question(question: str) -> tuple[str, str]:
    """(question sentence, options block) of a rendered question."""
    line, _, block = question.partition("\n")
    return line, block


def apply_variant(question: str, variant: PromptVariant, taxonomy: str | None) -> str:
    """The question column under ``variant`` (CoT suffix on the sentence, taxonomy prefix)."""
    if variant.cot:
        line, block = _split_question(question)
        question = f"{with_cot(line)}\n{block}"
    if variant.taxonomy:
        assert taxonomy is not None
        question = with_taxonomy(question, taxonomy)
    return question


def plan_levels(hierarchy: Hierarchy, small_levels: str) -> dict[int, dict[str, Any]]:
    """Per level: how many labels the taxonomy has there and what the build does with it."""
    if small_levels not in SMALL_LEVEL_POLICIES:
        raise BiovqaError(f"small-level policy {small_levels!r} is not one of {', '.join(SMALL_LEVEL_POLICIES)}",
                          field="small_levels")
    plan = {}
    for level in range(1, hierarchy.max_depth + 1):
        n = len(hierarchy.labels_at(level))
        if n >= 4:
            action = "ask with 4 options"
        elif n >= 2 and small_levels == "fewer":
            action = f"ask with {n} options"
        else:
            action = "skip"
        plan[level] = {"name": hierarchy.level_name(level), "labels": n, "action": action}
    return plan


def make_questions(hierarchy: Hierarchy, images: Sequence[tuple[str, str]], *, policy: str, small_levels: str,
                   seed: int, similarity: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Per image ``{"image", "label", "depth", "levels": [(level, gold, options)]}``.
    ``similarity`` (images × all labels, columns in :func:`_label_index` order) drives the
    ``similarity`` policy."""
    if policy not in POLICIES:
        raise BiovqaError(f"distractor policy {policy!r} is not one of {', '.join(POLICIES)}", field="policy")
    plan = plan_levels(hierarchy, small_levels)
    candidates = {level: hierarchy.labels_at(level) for level in plan}
    ancestors = {level: hierarchy.ancestors(level) for level in plan}
    index = _label_index(hierarchy)
    several = set(hierarchy.notes.get("several_parents", ()))
    rows = []
    for row, (image, leaf) in enumerate(images):
        path = hierarchy.paths[leaf]
        levels = []
        for level in range(1, len(path)):
            if plan[level]["action"] == "skip":
                continue
            gold, pool = path[level], candidates[level]
            rng = seeded_rng(seed, image, level)
            if policy == "random":
                distractors = random_distractors(gold, pool, 3, rng)
            elif policy == "taxonomy":
                # a label with several parents takes its siblings on this image's own path
                above = {**ancestors[level], gold: path[:level]} if gold in several else ancestors[level]
                distractors = taxonomy_distractors(gold, pool, 3, rng, above)
            else:
                assert similarity is not None
                scores = similarity[row, [index[(level, label)] for label in pool]]
                distractors = similarity_distractors(gold, pool, 3, scores)
            options = [gold, *distractors]
            seeded_rng(seed, "shuffle", image, level).shuffle(options)
            levels.append((level, gold, options))
        rows.append({"image": image, "label": leaf, "depth": len(path) - 1, "levels": levels})
    return rows


def _label_index(hierarchy: Hierarchy) -> dict[tuple[int, str], int]:
    index: dict[tuple[int, str], int] = {}
    for level in range(1, hierarchy.max_depth + 1):
        for label in hierarchy.labels_at(level):
            index[(level, label)] = len(index)
    return index


def similarity_matrix(hierarchy: Hierarchy, images: Sequence[tuple[str, str]], images_root: Path,
                      model: str | Path, *, device: str | None = None, progress: bool = False) -> np.ndarray:
    """Cosine similarity of every image with every (level, label) text (the similarity policy)."""
    scorer = ClipScorer(model, device=device)
    paths = []
    for image, _ in images:
        full = Path(image) if Path(image).is_absolute() else images_root / image
        if not full.is_file():
            raise InputFormatError("image not found", file=full, field="image")
        paths.append(full)
    index = _label_index(hierarchy)
    labels = [label for (_, label) in index]
    if progress:
        from biovqa.progress import stage

        with stage("HCA: embedding images", total=len(paths), unit="images") as embedded:
            image_vectors = scorer.image_embeddings(paths, embedded.advance)
    else:
        image_vectors = scorer.image_embeddings(paths)
    return image_vectors @ scorer.text_embeddings(labels).T


def visual_items(rows: list[dict[str, Any]], hierarchy: Hierarchy | None, *, policy: str, template_set: str,
                 template: int, subject: str, variant: PromptVariant | None = None,
                 taxonomy: str | None = None, digests: dict[str, str] | None = None) -> pa.Table:
    """One item per image and level (``variant.binary``: one statement item per option);
    ``digests``: each photo's sha256 (the items' ``image_sha256``)."""
    digests = digests or {}
    variant = variant or PromptVariant()
    kind, _ = TEMPLATES[template_set][template]
    binary_subject = "bird" if template_set == "cub" else subject
    columns: dict[str, list] = {name: [] for name in ITEM_SCHEMA.names}
    for row in rows:
        for level, gold, options in row["levels"]:
            name = hierarchy.level_name(level) if hierarchy is not None else None
            if (kind == "hierarchical" or variant.binary) and name is None:
                raise BiovqaError(f"template {template} of {template_set} (or the binary variant) names the level, "
                                  f"but level {level} has no name", field="template",
                                  hint="give --levels or choose a general template")
            common = dict(options=options, answer=LETTERS[options.index(gold)], image=row["image"],
                          image_sha256=digests.get(row["image"]),
                          source_id=row["image"], image_key=row["image"], paths=[row["image"]], level=level,
                          level_name=name, depth=row["depth"], leaf=row["label"], policy=policy, genus_leak=False,
                          variant=variant.name)
            if variant.binary:
                assert name is not None
                for letter, option in zip(LETTERS, options):
                    statement = binary_statement(option, level=name, subject=binary_subject)
                    _append(columns, item_id=f"hca:{row['image']}:{level}:{letter}", task="visual",
                            question=apply_variant(statement, variant, taxonomy), instruction="", system=None,
                            statement=letter, **common)
                continue
            question = visual_question(template_set, template, options, level=name, subject=subject)
            _append(columns, item_id=f"hca:{row['image']}:{level}", task="visual",
                    question=apply_variant(question, variant, taxonomy), instruction=VISUAL.instruction,
                    system=VISUAL.system_prompt, max_new_tokens=variant.cot_max_new_tokens if variant.cot else None,
                    **common)
    return pa.table(columns, schema=ITEM_SCHEMA)


def _append(columns: dict[str, list], **values: Any) -> None:
    values = {"component": COMPONENT, **values}
    for name in columns:
        columns[name].append(values.get(name))


def text_items(visual: pa.Table, *, entity: str, template: int, common_names: dict[str, str],
               variant: PromptVariant | None = None) -> pa.Table:
    """The text-only control of a visual items table (see the module docstring); ``variant``: CoT,
    taxonomy-in-context and binary apply. The source is always a 4-option visual bench: with
    ``variant.binary`` the questions are deduplicated first (the 4-way key, so every statement
    group stays whole) and each unique question then becomes one Yes/No statement per option
    (:data:`~.prompts.TEXT_BINARY_TEMPLATE`, ``statement`` = the option's letter, instruction empty,
    the text system prompt kept: it asks for no letter)."""
    variant = variant or PromptVariant()
    if "statement" in visual.column_names and visual.column("statement").null_count < visual.num_rows:
        raise InputFormatError("the visual bench was built with --binary; build the text control from a 4-option "
                               "visual bench (add --binary to the text build for Yes/No statements)",
                               field="statement")
    taxonomy = taxonomy_json(_paths_from_items(visual)) if variant.taxonomy else None
    kind, _ = TEXT_TEMPLATES[template]
    merged: dict[tuple[str, int, frozenset[str]], dict[str, Any]] = {}
    for row in visual.to_pylist():
        if row["level"] == row["depth"]:
            continue  # the leaf is given, not asked
        if entity == "common":
            if row["leaf"] not in common_names:
                raise BiovqaError(f"no common name for {row['leaf']!r}", field="entity",
                                  hint="use --entity leaf, or build from a C1 benchmark that has common names")
            label = common_names[row["leaf"]]
        else:
            label = row["leaf"]
        key = (label, row["level"], frozenset(row["options"]))
        if key in merged:
            merged[key]["paths"].append(row["image_key"])
            continue
        if (kind == "hierarchical" or variant.binary) and row["level_name"] is None:
            raise BiovqaError(f"text template {template} (or the binary variant) names the level, but level "
                              f"{row['level']} has no name", field="text_template")
        gold = row["options"][LETTERS.index(row["answer"])]
        digest = hashlib.sha256(json.dumps([label, row["level"], sorted(row["options"])]).encode()).hexdigest()[:16]
        merged[key] = dict(
            item_id=f"hca-text:{row['level']}:{digest}", task="text",
            question=apply_variant(text_question(template, row["options"], label=label, level=row["level_name"]),
                                   variant, taxonomy),
            instruction=TEXT.instruction, options=row["options"], answer=row["answer"], image=None, source_id=label,
            image_key=None, paths=[row["image_key"]], level=row["level"], level_name=row["level_name"],
            depth=row["depth"], leaf=row["leaf"], system=TEXT.system_prompt, policy=row["policy"],
            genus_leak=_genus_leak(label, gold, row["level_name"]), variant=variant.name,
            max_new_tokens=variant.cot_max_new_tokens if variant.cot else None)
    columns: dict[str, list] = {name: [] for name in ITEM_SCHEMA.names}
    for values in merged.values():
        if not variant.binary:
            _append(columns, **values)
            continue
        for letter, option in zip(LETTERS, values["options"]):
            statement = text_binary_statement(option, entity=values["source_id"], level=values["level_name"])
            _append(columns, **{**values, "item_id": f"{values['item_id']}:{letter}", "statement": letter,
                                "question": apply_variant(statement, variant, taxonomy), "instruction": ""})
    return pa.table(columns, schema=ITEM_SCHEMA)


def _paths_from_items(visual: pa.Table) -> dict[str, list[str]]:
    """leaf → [level-1 gold, …, leaf] from a visual items table (the gold of every asked level)."""
    by_leaf: dict[str, dict[int, str]] = {}
    for leaf, level, options, answer in zip(*(visual.column(c).to_pylist()
                                              for c in ("leaf", "level", "options", "answer"))):
        by_leaf.setdefault(leaf, {})[level] = options[LETTERS.index(answer)]
    paths = {}
    for leaf, golds in by_leaf.items():
        path = [golds[level] for level in sorted(golds)]
        paths[leaf] = path if path and path[-1] == leaf else [*path, leaf]
    return paths


def _genus_leak(entity: str, gold: str, level_name: str | None) -> bool:
    """The genus question is answerable by string matching when the entity is a binomial
    whose first word is the gold genus (a leak of binomial leaves)."""
    words = entity.split()
    if len(words) < 2 or level_name not in (None, "genus"):
        return False
    return words[0].casefold() == gold.casefold()


__all__ = ["COMPONENT", "HCA_COLUMNS", "ITEM_SCHEMA", "TEXT", "VISUAL", "PromptVariant", "apply_variant",
           "make_questions", "plan_levels", "similarity_matrix", "text_items", "visual_items"]
