"""The C4 prompt (paper appendix K.4), verbatim: the question line and the answer-format lines."""

from __future__ import annotations

#: The question line of the C4 prompt (K.4), verbatim.
C4_QUESTION = ("This image shows two images placed side by side. Is the main subject in the left image "
               "the very same individual animal as the main subject in the right image?")
#: The answer-format lines of the C4 prompt (K.4), verbatim; appended to the question with "\n".
C4_INSTRUCTION = (
    "- The image shows two photographs placed side by side.\n"
    "- Each photograph may contain more than one animal - consider only the main subject in the foreground.\n"
    "- Judge only from what is visible in the two photographs.\n"
    "- Answer with one word: Yes or No. Do not explain."
)
#: The whole user text, as a model sees it.
C4_PROMPT = f"{C4_QUESTION}\n{C4_INSTRUCTION}"

__all__ = ["C4_INSTRUCTION", "C4_PROMPT", "C4_QUESTION"]
