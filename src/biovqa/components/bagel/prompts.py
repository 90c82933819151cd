"""The BAGEL evaluation prompt (the BAGEL paper's Appendix A.1.2).

The paper's prompt survives only as flattened text with literal ``\\n`` markers. ``canonical``
puts each option on its own line; ``inline`` reproduces the printed string (newline where the
source prints ``\\n``, the space after it kept, the options on one line).
"""

from __future__ import annotations

from collections.abc import Sequence

PROMPT_STYLES: tuple[str, ...] = ("canonical", "inline")
#: How the prompt reaches the model: a user turn through the chat template, or raw completion text.
MODES: tuple[str, ...] = ("chat", "raw")

_HEAD = ("You are answering a multiple-choice closed-book benchmark question for testing animal expertise. "
         "Choose exactly one answer.")
_FORMAT = "Output exactly one capital letter: A, B, C, or D."
_NO_EXTRA = "Do not output any explanation, words, punctuation, or extra text."


def render_prompt(question: str, options: Sequence[str], style: str = "canonical") -> str:
    """The whole evaluation prompt for one item (the model sees nothing else)."""
    a, b, c, d = options
    if style == "canonical":
        return (f"{_HEAD}\n{_FORMAT}\n{_NO_EXTRA}\n\nQuestion: {question}\nOptions:\n"
                f"A. {a}\nB. {b}\nC. {c}\nD. {d}\nAnswer:")
    if style == "inline":
        return (f"{_HEAD}\n {_FORMAT}\n {_NO_EXTRA}\n\n Question: {question}\n "
                f"Options: A. {a} B. {b} C. {c} D. {d} Answer:")
    raise ValueError(f"unknown prompt style {style!r}")


__all__ = ["MODES", "PROMPT_STYLES", "render_prompt"]
