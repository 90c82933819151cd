"""Errors a user can act on.

Every problem with outside input is raised as a :class:`BiovqaError` that names the file, the row
(1-based, as a spreadsheet or ``sed -n`` would count it; header lines count) and the field, says
what was expected and what was found, and, where we know it, what to do next. The CLI prints
these as one readable message and exits non-zero; it never shows a traceback for them.
"""

from __future__ import annotations

from collections.abc import Iterable
from os import PathLike


class BiovqaError(Exception):
    """A problem the user can fix: bad input, a missing file, an inconsistent option."""

    def __init__(
        self,
        message: str,
        *,
        file: str | PathLike[str] | None = None,
        row: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.file = None if file is None else str(file)
        self.row = row
        self.field = field
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        where = []
        if self.file is not None:
            where.append(self.file)
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        text = f"{': '.join([', '.join(where)]) + ': ' if where else ''}{self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """" (did you mean 'waid'?)" for the closest of ``choices`` to a mistyped ``word``, else ""."""
    import difflib

    close = difflib.get_close_matches(word.lower(), [c.lower() for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class InputFormatError(BiovqaError):
    """An input file does not follow its native format (wrong columns, bad value, truncated)."""


class PathEscapeError(InputFormatError):
    """A path read from a file (an item's image, a release's shard, an annotation's photo) leaves
    the folder it must lie in: ``..``, an absolute path, or a symlink pointing outside."""


class MissingResourceError(BiovqaError):
    """A file or index the step needs does not exist (e.g. the synonym index for EM_soft)."""


class AuditError(BiovqaError):
    """A built benchmark violates the verification contract (paper L.2)."""

    def __init__(self, violations: list[str], *, file: str | PathLike[str] | None = None) -> None:
        self.violations = list(violations)
        shown = "\n".join(f"  - {v}" for v in self.violations[:50])
        more = len(self.violations) - 50
        tail = f"\n  … and {more} more" if more > 0 else ""
        super().__init__(
            f"{len(self.violations)} audit violation(s):\n{shown}{tail}", file=file
        )
