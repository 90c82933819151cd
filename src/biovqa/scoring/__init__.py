"""Scoring shared by every component: predictions in, one score schema out.

:data:`PARSE_MAX_CHARS` is the one reply-length cap of every component's parser and
:data:`STATED_LETTER` the option-letter pattern the multiple-choice parsers share; they live here,
with no imports, so parsers and text helpers can share them without loading the pipeline (and a
component declaration whose task records name their parsers stays cheap for ``biovqa --help``).
"""

#: Parsers read a reply's first PARSE_MAX_CHARS characters (code points) [DEFAULT]: far beyond any
#: answer under the paper's token budgets (C1 15 new tokens, C2 48, C4 8), and a bound on the work
#: a hostile reply can cause. The raw reply is kept whole in the score table's ``response``, and
#: its ``truncated`` column flags the replies the cap shortened (:mod:`biovqa.scoring.schema`).
PARSE_MAX_CHARS = 4096

#: A stated option letter after "answer is" / "Answer:" in a multiple-choice reply (HCA, BAGEL): a
#: letter A–D as a word, except that a lower-case ``a`` counts only where the line ends after it
#: (``a.``), so the article of "The answer is a raven" is never read as option A. One capture
#: group; compile with ``re.MULTILINE`` so a letter closing one line of a longer reply counts.
STATED_LETTER = r"(?-i:([A-D]\b|[b-d]\b|a(?=[ \t.)*]*$)))"

__all__ = ["PARSE_MAX_CHARS", "STATED_LETTER"]
