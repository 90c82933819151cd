"""Scoring shared by every component: predictions in, one score schema out.

:data:`PARSE_MAX_CHARS` is the one reply-length cap of every component's parser; it lives here,
with no imports, so parsers and text helpers can share it without loading the pipeline.
"""

#: Parsers read a reply's first PARSE_MAX_CHARS characters (code points) [DEFAULT]: far beyond any
#: answer under the paper's token budgets (C1 15 new tokens, C2 48, C4 8), and a bound on the work
#: a hostile reply can cause. The raw reply is kept whole in the score table's ``response``, and
#: its ``truncated`` column flags the replies the cap shortened (:mod:`biovqa.scoring.schema`).
PARSE_MAX_CHARS = 4096

__all__ = ["PARSE_MAX_CHARS"]
