"""A component's score options: :class:`Option` declares one (type, default, bounds, help) and
parses what a user gives; :class:`ScoreOptions` is the frozen record the registry makes from a
component's declarations, one attribute per option, so every option reaches the scorer typed and
checked before any work starts."""

from __future__ import annotations

import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from biovqa.errors import BiovqaError
from biovqa.stats import CONFIDENCE

__all__ = ["COMMON_SCORE_OPTIONS", "Option", "ScoreOptions"]

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


@dataclass(frozen=True, slots=True)
class Option:
    """One typed option of a component's scorer, with its default and help text.

    ``type`` is ``bool``, ``int``, ``float``, ``str``, ``Path`` or ``list[float]`` (given as
    comma-separated numbers, ``"1,0.25,0.1,0,0"``, and resolved to a tuple); ``low``/``high``
    bound a number or every element of a list, ``length`` fixes a list's length."""

    name: str
    type: Any
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    #: the value must lie in [low, high] (numbers, and each element of a list)
    low: float | None = None
    high: float | None = None
    #: a list option must have exactly this many elements
    length: int | None = None
    #: a further rule on the parsed value: returns what is wrong (None when it holds)
    check: Callable[[Any], str | None] | None = None

    def parse(self, value: Any) -> Any:
        """``value`` (text from the command line or a Python value) as this option's type; a bad
        value is a :class:`BiovqaError` naming the option and what it accepts."""
        if value is None:
            value = self.default
            if value is None:
                return None
        try:
            parsed = self._convert(value)
        except (TypeError, ValueError):
            raise BiovqaError(f"option {self.name!r} takes {self._expects()}, got {value!r}",
                              field=self.name) from None
        if self.choices is not None and parsed not in self.choices:
            raise BiovqaError(f"option {self.name!r} takes one of {', '.join(self.choices)}, got {value!r}",
                              field=self.name)
        if self._is_list():
            if self.length is not None and len(parsed) != self.length:
                raise BiovqaError(f"option {self.name!r} takes {self.length} comma-separated numbers, got "
                                  f"{len(parsed)} in {value!r}", field=self.name)
            elements = parsed
        else:
            elements = (parsed,)
        for element in elements:
            if self.low is not None and element < self.low or self.high is not None and element > self.high:
                # a share given as a percentage (--confidence 90): say what was meant
                percent = self.high is not None and self.high <= 1 < element <= 100
                raise BiovqaError(f"option {self.name!r} must lie in [{self.low}, {self.high}]"
                                  f"{' (each number)' if self._is_list() else ''}, got {value!r}", field=self.name,
                                  hint=f"a fraction: {element / 100:g} for {element:g}%" if percent else None)
        problem = self.check(parsed) if self.check is not None else None
        if problem:
            raise BiovqaError(f"option {self.name!r}: {problem}, got {value!r}", field=self.name)
        return parsed

    def _is_list(self) -> bool:
        return typing.get_origin(self.type) is list

    def _convert(self, value: Any) -> Any:
        if self._is_list():
            (element_type,) = typing.get_args(self.type) or (float,)
            parts = value.split(",") if isinstance(value, str) else list(value)
            if isinstance(value, str) and not value.strip():
                parts = []
            if any(isinstance(part, bool) for part in parts):
                raise ValueError(value)
            return tuple(element_type(part.strip() if isinstance(part, str) else part) for part in parts)
        if self.type is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE | _FALSE:
                return text in _TRUE
            raise ValueError(value)
        if self.type is int:
            if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if self.type is float:
            if isinstance(value, bool):
                raise ValueError(value)
            return float(value)
        if self.type is Path:
            return Path(value)
        return str(value)

    def _expects(self) -> str:
        if self._is_list():
            count = f"{self.length} " if self.length is not None else ""
            return f"{count}comma-separated numbers"
        names = {bool: "true or false", int: "a whole number", float: "a number", Path: "a path"}
        return names.get(self.type, "text")

    def describe(self) -> str:
        """One line for help texts: ``name=TYPE (default …): help``."""
        kind = "|".join(self.choices) if self.choices else self._expects()
        default = self.default
        if default is None:
            default = "none"
        elif isinstance(default, bool):
            default = str(default).lower()
        elif isinstance(default, (tuple, list)):
            default = ",".join(f"{value:g}" for value in default)
        return f"{self.name}=<{kind}> (default {default}): {self.help}"


#: Options every scorer takes.
COMMON_SCORE_OPTIONS: tuple[Option, ...] = (
    Option("bootstrap", int, 1000, "bootstrap resamples for the confidence intervals (0: none)", low=0),
    Option("seed", int, 42, "bootstrap seed"),
    Option("confidence", float, CONFIDENCE, "confidence level of the intervals", low=0.5, high=0.999),
)


class ScoreOptions(Mapping[str, Any]):
    """Resolved score options: a frozen record with one attribute per declared option
    (``options.bootstrap``, ``options.tau``), also readable as a mapping (``options["tau"]``,
    ``dict(options)``) for code written against the plain dict. :meth:`as_json` is what the
    summary records."""

    __slots__ = ()

    def __getitem__(self, name: str) -> Any:
        if name not in self.__dataclass_fields__:  # type: ignore[attr-defined]
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.__dataclass_fields__)  # type: ignore[attr-defined]

    def __len__(self) -> int:
        return len(self.__dataclass_fields__)  # type: ignore[attr-defined]

    def replace(self, **changes: Any) -> ScoreOptions:
        """A copy with ``changes`` (already typed values), e.g. ``options.replace(bootstrap=0)``."""
        return replace(self, **changes)  # type: ignore[type-var]

    def __reduce__(self) -> tuple[Any, ...]:
        # the record type is made at run time: a copy or a pickle rebuilds it from the registry
        # (the registry's restorer, set on each record type it makes)
        return (type(self)._restore, (type(self)._component, dict(self)))  # type: ignore[attr-defined]

    def as_json(self) -> dict[str, Any]:
        """The options as JSON values: a path as text, a list option as a list."""
        return {name: str(value) if isinstance(value, Path) else list(value) if isinstance(value, tuple) else value
                for name, value in self.items()}
