"""Prompts of the hierarchical VQA (HCA paper §2.3, Table 12, §3.3.1), the prompt variants of App. C.1.2–C.1.4 and the
strict parsers (biovqa's; chain-of-thought final answers; binary Yes/No)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from biovqa.scoring import PARSE_MAX_CHARS
from biovqa.text import STATED_LETTER

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


_MARKUP = "*_`\"'[](){}<> \t\r\n"
_LEADING = re.compile(r"^\(?([A-D])(?:\)|\.|\s*\))(?:\s|$)|^\(([A-D])\)")
# "answer is X": the words in any case, the letter as :data:`~biovqa.text.STATED_LETTER` (never
# the article of "The answer is a raven")
_PHRASE = re.compile(r"^(?:the\s+)?answer\s+is\s*:?\s*\(?" + STATED_LETTER, re.IGNORECASE | re.MULTILINE)


def parse_choice(output: str | None, options: Sequence[str]) -> str | None:
    """The letter a reply chose, or None (biovqa's strict rule; the authors' code takes the first A–D anywhere):

    1. after stripping whitespace and markup, exactly one letter among the offered ones;
    2. else a leading ``(X)``, ``X.`` or ``X)`` or a leading "answer is X";
    3. else the whole reply equal (case/whitespace-insensitively) to exactly one option's text;
    4. else None — the level is wrong and stays in place on the path.
    Never the first A–D substring anywhere (the reference code's weakness: "B. Anseriformes" is B),
    and never an article: "The answer is a raven" is not A.
    Only the first :data:`~biovqa.scoring.PARSE_MAX_CHARS` characters are read.
    """
    if output is None:
        return None
    output = output[:PARSE_MAX_CHARS]
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


# "answer is X", "answer: X", "answer is: X" anywhere in the reply (bold and brackets allowed)
_LAST_PHRASE = re.compile(r"answer(?:\s+is)?\s*:?\s*\**\s*\(?" + STATED_LETTER, re.IGNORECASE | re.MULTILINE)


def parse_cot_choice(output: str | None, options: Sequence[str]) -> str | None:
    """The final stated answer of a chain-of-thought reply (the paper gives no rule; biovqa's):
    whichever comes last of

    * the last "answer is X" / "Answer: X" / "answer is: X" phrase in the reply, and
    * the last non-empty line, when the strict parser (:func:`parse_choice`) reads a letter in it;

    None when neither gives one, or the final one is not among the offered letters. A letter
    inside a word never counts, nor an article ("…the answer is a raven.\nC" is C).
    The final answer closes the reasoning, so a reply over
    :data:`~biovqa.scoring.PARSE_MAX_CHARS` characters is read from its last that many.
    """
    if output is None:
        return None
    output = output[-PARSE_MAX_CHARS:]
    offered = LETTERS[: len(options)]
    stated: list[tuple[int, str]] = [(m.start(), m.group(1).upper()) for m in _LAST_PHRASE.finditer(output)]
    stripped = output.rstrip()
    last_line = stripped[stripped.rfind("\n") + 1:]
    if last_line.strip():
        letter = parse_choice(last_line, options)
        if letter is not None:
            stated.append((len(stripped) - len(last_line), letter))
    if not stated:
        return None
    letter = max(stated)[1]
    return letter if letter in offered else None


_YES_NO = re.compile(r"^(yes|no)\b", re.IGNORECASE)


def parse_yes_no(output: str | None) -> str | None:
    """"Yes", "No" or None: the reply's first word after stripping whitespace and markup
    (case-insensitive); anything else is unparseable (and so never a "Yes")."""
    if output is None:
        return None
    match = _YES_NO.match(output[:PARSE_MAX_CHARS].strip().lstrip(_MARKUP))
    return None if match is None else match.group(1).capitalize()


def binary_level_correct(answers: Sequence[str | None], gold: int) -> bool:
    """App. C.1.4's rule for one level asked as 4 statements: right only if exactly one statement got
    "Yes" and it is the true one (``gold`` = its index); zero or several "Yes" ⇒ wrong."""
    yes = [i for i, answer in enumerate(answers) if answer == "Yes"]
    return yes == [gold]
