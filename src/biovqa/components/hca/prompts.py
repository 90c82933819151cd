"""Prompts of the hierarchical VQA (hierarchy.md §4–5, §7) and the strict parser of §4.1."""

from __future__ import annotations

import re
from collections.abc import Sequence

LETTERS = "ABCD"
#: System prompt for open VLMs [code] (hierarchy.md §4).
VISUAL_SYSTEM_PROMPT = (
    "You are an expert in hierarchical image classification. Given an image, classify it at its current "
    "hierarchy level by selecting the most appropriate option from the provided choices (labeled with "
    "letters). Respond with only the corresponding letter.")
#: Closing line of the visual user text [code].
VISUAL_CLOSING = "Answer with the option's letter from the given choices directly."
#: System prompt and closing line of the text-only control (§7).
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
#: Text-only templates (§7, [code] variants mirroring Table 12; the first is §3.3.1's).
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


_MARKUP = "*_`\"'[](){}<> \t\r\n"
_LEADING = re.compile(r"^\(?([A-D])(?:\)|\.|\s*\))(?:\s|$)|^\(([A-D])\)")
_PHRASE = re.compile(r"^(?:the\s+)?answer\s+is\s*:?\s*\(?([A-D])\b", re.IGNORECASE)


def parse_choice(output: str | None, options: Sequence[str]) -> str | None:
    """The letter a reply chose, or None (hierarchy.md §4.1, [toolkit] strict rule):

    1. after stripping whitespace and markup, exactly one letter among the offered ones;
    2. else a leading ``(X)``, ``X.`` or ``X)`` or a leading "answer is X";
    3. else the whole reply equal (case/whitespace-insensitively) to exactly one option's text;
    4. else None — the level is wrong and stays in place on the path.
    Never the first A–D substring anywhere (the reference code's weakness: "B. Anseriformes" is B).
    """
    if output is None:
        return None
    offered = LETTERS[: len(options)]
    text = output.strip().strip(_MARKUP).rstrip(".").strip()
    if len(text) == 1 and text.upper() in offered:
        return text.upper()
    stripped = output.strip().lstrip("*_`\"' ")
    match = _LEADING.match(stripped) or _PHRASE.match(stripped)
    if match:
        letter = next(g for g in match.groups() if g).upper()
        return letter if letter in offered else None
    folded = " ".join(text.split()).casefold()
    hits = [i for i, option in enumerate(options) if " ".join(option.split()).casefold() == folded]
    return LETTERS[hits[0]] if len(hits) == 1 else None
