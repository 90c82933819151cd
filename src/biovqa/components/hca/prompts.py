"""Prompts of the hierarchical VQA (HCA paper §2.3, Table 12, §3.3.1) and the prompt variants of App. C.1.2–C.1.4;
their parsers are :mod:`.parse`'s."""

from __future__ import annotations

import json
from collections.abc import Sequence

LETTERS = "ABCD"
#: System prompt for open VLMs (the authors' code).
VISUAL_SYSTEM_PROMPT = (
    "You are an expert in hierarchical image classification. Given an image, classify it at its current "
    "hierarchy level by selecting the most appropriate option from the provided choices (labeled with "
    "letters). Respond with only the corresponding letter.")
#: Closing line of the visual user text (the authors' code).
VISUAL_CLOSING = "Answer with the option's letter from the given choices directly."
#: System prompt and closing line of the text-only control (§3.3.1).
TEXT_SYSTEM_PROMPT = "You are a helpful assistant."
TEXT_CLOSING = "Answer with the option letter only."

#: Table 12, exact: per template set, (format, template).
TEMPLATES: dict[str, tuple[tuple[str, str], ...]] = {
    "cub": (
        ("hierarchical", "Based on taxonomy, what is the {level} of the bird in this image?"),
        ("hierarchical", "Based on the image, what is the taxonomic classification at the {level} level?"),
        ("general", "What is the taxonomic classification of the bird in this image?"),
        ("general", "How can the bird in this image be categorized taxonomically?"),
        ("general", "What is the systematic position of the bird shown in the image?"),
    ),
    "inat": (
        ("hierarchical", "Based on taxonomy, where does the {object} in the image fall in terms of {level}?"),
        ("hierarchical", "Given the {object} in the image, what is its taxonomic classification at the {level} level?"),
        ("general", "What could the {object} in the image be classified as?"),
        ("general", "How can the {object} in the image be taxonomically categorized?"),
        ("general", "What is the systematic position of the {object} in the image within the biological hierarchy?"),
    ),
    "imgnet": (
        ("general", "What is the taxonomic category of the {class} in this image?"),
        ("general", "How can the {class} in this image be categorized in taxonomy?"),
        ("general", "Based on classification, what type of {class} is this?"),
        ("general", "What is the hierarchical class of the {class} shown here?"),
        ("general", "Where does this {class} belong in the taxonomic hierarchy?"),
    ),
}
#: Text-only templates (§3.3.1; the authors' code mirrors Table 12 with the label; the first is §3.3.1's).
TEXT_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("hierarchical", "Given the {label}, what is its taxonomic classification at the {level} level?"),
    ("hierarchical", "Based on taxonomy, where does {label} fall in terms of {level}?"),
    ("general", "What could {label} be classified as?"),
    ("general", "How can {label} be taxonomically categorized?"),
    ("general", "What is the systematic position of {label} in the biological classification hierarchy?"),
)


def options_block(options: Sequence[str]) -> str:
    return "\n".join(f"{LETTERS[i]}. {option}" for i, option in enumerate(options))


def visual_question(template_set: str, index: int, options: Sequence[str], *, level: str | None,
                    subject: str) -> str:
    """Question line of Table 12 (``subject`` fills ``{object}``/``{class}``) and the options."""
    kind, template = TEMPLATES[template_set][index]
    if kind == "hierarchical" and level is None:
        raise ValueError("a hierarchical template needs level names")
    text = template.replace("{object}", subject).replace("{class}", subject).replace("{level}", level or "")
    return f"{text}\n{options_block(options)}"


def text_question(index: int, options: Sequence[str], *, label: str, level: str | None) -> str:
    kind, template = TEXT_TEMPLATES[index]
    if kind == "hierarchical" and level is None:
        raise ValueError("a hierarchical template needs level names")
    return f"{template.replace('{label}', label).replace('{level}', level or '')}\n{options_block(options)}"


# -- prompt variants (HCA paper App. C.1.2–C.1.4) ---------------------------------------------------
#: CoT: this sentence is appended to the question (App. C.1.2, exact).
COT_SUFFIX = "Let's think step by step."
#: Taxonomy as context: this prefix, then the taxonomy JSON, then the original prompt (App. C.1.3).
TAXONOMY_PREFIX = "Here's a taxonomy: "
#: Binary variant: one statement per option (App. C.1.4; the example's wording with the level name and
#: label filled in, and the subject of the visual question).
BINARY_TEMPLATE = ("The {subject} in the image belongs to the {level} of {label}. Is this statement correct? "
                   "Please answer Yes or No.")
#: Binary variant of the text-only control [DEFAULT]: the paper gives no wording; derived from
#: :data:`BINARY_TEMPLATE` the way §3.3.1 derives its text templates from Table 12 ("the bird/plant in
#: the image" → "the {label}", as in §3.3.1's "Given the {label}, …").
TEXT_BINARY_TEMPLATE = ("The {entity} belongs to the {level} of {label}. Is this statement correct? "
                        "Please answer Yes or No.")
#: biovqa's default cap for chain-of-thought replies (the paper gives none; the plain prompt's 5–10 tokens
#: would cut every reasoning off before its answer).
COT_MAX_NEW_TOKENS = 512
#: Prompt variants a bench can be built with; "biological CoT" is not among them: its worked
#: example in the system prompt is missing from the paper (App. C.1.2 describes it without printing it).
VARIANTS: tuple[str, ...] = ("plain", "cot", "taxonomy", "binary")


def with_cot(question_line: str) -> str:
    """The question sentence with the CoT suffix appended (one space between)."""
    return f"{question_line} {COT_SUFFIX}"


def taxonomy_json(paths: dict[str, list[str]]) -> str:
    """The taxonomy in context: leaf → its ancestors in order up to the root (nearest first),
    leaves sorted, as compact-but-readable JSON (``", "``/``": "`` separators, UTF-8 kept)."""
    mapping = {leaf: list(reversed(path[:-1])) for leaf, path in sorted(paths.items())}
    return json.dumps(mapping, ensure_ascii=False)


def with_taxonomy(prompt: str, taxonomy: str) -> str:
    """``Here's a taxonomy: `` + the taxonomy JSON + a newline + the original prompt."""
    return f"{TAXONOMY_PREFIX}{taxonomy}\n{prompt}"


def binary_statement(label: str, *, level: str, subject: str) -> str:
    """The binary variant's statement for one option (App. C.1.4)."""
    return BINARY_TEMPLATE.format(subject=subject, level=level, label=label)


def text_binary_statement(label: str, *, entity: str, level: str) -> str:
    """The text-only control's binary statement for one option (:data:`TEXT_BINARY_TEMPLATE`)."""
    return TEXT_BINARY_TEMPLATE.format(entity=entity, level=level, label=label)
