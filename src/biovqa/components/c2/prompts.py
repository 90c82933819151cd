"""The C2 prompts, verbatim from the paper (App. K.2, Table 69): the multiple-choice
instruction, the open-answer instructions, the question stem of each family and the
``Options:`` list the multiple-choice stems end with.

The system message the paper gives Gemma models on C1 and C2 (App. B.2) is applied by the run
stage, not here (:data:`biovqa.engine.presets.GEMMA_SYSTEM_MESSAGE`).
"""

from __future__ import annotations

#: Option letters, in the order options are offered (at most ten).
LETTERS = "ABCDEFGHIJ"

MCQ_INSTRUCTION = (
    "[CRITICAL INSTRUCTIONS - NO VIOLATIONS ALLOWED]:\n"
    "1. Locate the 'Options:' section in the question above.\n"
    "2. Identify the single correct choice from that list.\n"
    "3. Output ONLY the matching option letter in parentheses and its exact trailing text string. "
    "For example, if the correct option is '(X) alpha bravo charlie', your entire response must be "
    "exactly: (X) alpha bravo charlie\n"
    "4. DO NOT truncate the response to just the option letter (e.g., do not output just '(X)').\n"
    "5. DO NOT invent, hallucinate, or insert any placeholder words from external examples. "
    "Absolutely DO NOT output any word unless it is explicitly written inside the chosen option "
    "string above.\n"
    "6. Output exactly zero extra words, zero markdown formatting, and zero punctuation outside the "
    "option string."
)
OPEN_INSTRUCTIONS: dict[str, str] = {
    "open_scientific_name": "Answer with ONLY the scientific name of the bird. Do not write full sentences.",
    "open_genus": "Answer with ONLY the capitalized Genus name of the bird. Do not write full sentences.",
    "open_common_name": "Answer with ONLY the everyday English common name of the bird. Do not write full sentences.",
    "open_kind_of": "Answer with ONLY the everyday English common name of the bird. Do not write full sentences.",
}
OPEN_FALLBACK_INSTRUCTION = (
    "Answer directly and concisely with only the exact terms requested. Do not write full sentences."
)

#: Question stems of Table 69 (the MCQ stems are followed by " Options: (A) …").
TEMPLATES: dict[str, str] = {
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


def format_options(options: list[str]) -> str:
    """``Options: (A) v1, (B) v2, …`` (paper App. K.2 (Table 69))."""
    return "Options: " + ", ".join(f"({LETTERS[i]}) {text}" for i, text in enumerate(options))


def mcq_question(stem: str, options: list[str]) -> str:
    return f"{stem} {format_options(options)}"


def open_instruction(family: str) -> str:
    """The instruction of an open family (the generic one for a family the paper gives none)."""
    return OPEN_INSTRUCTIONS.get(family, OPEN_FALLBACK_INSTRUCTION)
