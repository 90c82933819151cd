"""Repeatable ``NAME=VALUE`` arguments, read one way by every command.

C3's ``--source waid=PATH``, C4's ``--catalog``, C1's ``--authority``, BAGEL's ``--items
DOMAIN=PATH``, ``biovqa score -O tau=20`` and ``biovqa run --option dtype=bfloat16`` all split
each argument at its first ``=`` (a value may hold more), strip both sides and refuse a name given
twice; each caller says what its option is called, what its left-hand side names, and which names
it knows. Every problem is one :class:`~biovqa.errors.BiovqaError` naming the option.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from biovqa.errors import BiovqaError, did_you_mean


def split_name_value(text: str, *, option: str, form: str = "NAME=VALUE", empty_value: bool = False,
                     hint: str | None = None) -> tuple[str, str]:
    """``"waid=/data/waid"`` → ``("waid", "/data/waid")``, both stripped; an argument without
    ``=``, with an empty name, or with an empty value (unless ``empty_value``) is an error naming
    ``option`` and the ``form`` it takes."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not (value or empty_value):
        raise BiovqaError(f"expected {form}, got {text!r}", field=option, hint=hint)
    return name, value


def parse_name_values(
    pairs: Iterable[str] | Mapping[str, object] | None,
    *,
    option: str,
    what: str,
    form: str = "NAME=VALUE",
    names: Sequence[str] | None = None,
    key: Callable[[str], str] = str,
    empty_values: bool = False,
    hint: str | None = None,
) -> dict[str, str]:
    """``NAME=VALUE`` strings (or a mapping already split, from Python) → ``{key(name): value}``
    in the order given.

    ``what`` is what a name names in messages (``"C3 source"``, ``"option"``); ``names``, when
    given, are the only names accepted (an unknown one is an error with the closest known name);
    ``key`` normalises a name (``str.lower``) before it is checked and kept."""
    split = ([(str(name), str(value)) for name, value in pairs.items()] if isinstance(pairs, Mapping)
             else [split_name_value(text, option=option, form=form, empty_value=empty_values, hint=hint)
                   for text in pairs or ()])
    out: dict[str, str] = {}
    for name, value in split:
        name = key(name.strip())
        if names is not None and name not in names:
            raise BiovqaError(f"unknown {what} {name!r}{did_you_mean(name, names)}", field=option,
                              hint=f"one of {', '.join(names)}")
        if name in out:
            raise BiovqaError(f"{what} {name!r} is given twice", field=option)
        out[name] = value
    return out


__all__ = ["parse_name_values", "split_name_value"]
