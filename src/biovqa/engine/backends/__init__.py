"""The backend registry: a backend name maps to a ``"module:factory"`` string, imported on use.

Registering a backend imports nothing, so ``biovqa run --backend baseline`` never loads torch, and
``--backend vllm`` imports vLLM only once it is selected. A factory is called as
``factory(model, **options)`` and returns an object following :class:`~.base.Backend`.
A factory that declares a ``bench`` parameter also receives the opened benchmark (the ``baseline``
backend needs the whole items table for its floor rules).

Besides the registered names, ``--backend`` accepts a ``"module:factory"`` string directly, and
another installed package can add named backends through the ``biovqa.backends`` entry-point
group (entry point name = backend name, value = ``module:factory``), so a lab's own backend
plugs in without touching biovqa.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from biovqa.errors import BiovqaError, did_you_mean
from biovqa.engine.backends.base import Backend, Reply, Request

__all__ = [
    "BACKENDS",
    "Backend",
    "Reply",
    "Request",
    "available_backends",
    "create_backend",
    "load_factory",
    "register_backend",
]

#: name → "module:factory"
BACKENDS: dict[str, str] = {
    "transformers": "biovqa.engine.backends.transformers:create",
    "vllm": "biovqa.engine.backends.vllm:create",
    "openai": "biovqa.engine.backends.openai:create",
    "baseline": "biovqa.engine.backends.baseline:create",
    "echo": "biovqa.engine.backends.baseline:create_echo",
}


def register_backend(name: str, target: str) -> None:
    """Register ``name`` → ``"module:factory"`` (re-registering the same target is a no-op)."""
    if ":" not in target:
        raise ValueError(f"backend target must look like 'module:factory', got {target!r}")
    known = BACKENDS.get(name)
    if known is not None and known != target:
        raise ValueError(f"backend {name!r} is already registered as {known!r}")
    BACKENDS[name] = target


ENTRY_POINT_GROUP = "biovqa.backends"


def _entry_point_targets() -> dict[str, str]:
    """Backends that installed packages declare in the ``biovqa.backends`` entry-point group."""
    from importlib.metadata import entry_points

    return {entry.name: entry.value for entry in entry_points(group=ENTRY_POINT_GROUP)}


def available_backends() -> dict[str, str]:
    """Every backend name a user can pass to ``--backend`` → its ``module:factory``."""
    return {**_entry_point_targets(), **BACKENDS}


def load_factory(name: str) -> Callable[..., Backend]:
    """Import and return the factory of backend ``name`` (a registered name, an entry point of
    the ``biovqa.backends`` group, or "module:factory")."""
    target = available_backends().get(name, name if ":" in name else None)
    if target is None:
        raise BiovqaError(
            f"unknown backend {name!r}{did_you_mean(name, available_backends())}",
            field="--backend",
            hint=f"known backends: {', '.join(sorted(available_backends()))}, or give 'module:factory'",
        )
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        extra = {"transformers": "transformers", "vllm": "vllm", "openai": "openai"}.get(name)
        hint = (
            f"install the extra: pip install 'biovqa[{extra}]'"
            if extra
            else "check the module name and that it is importable"
        )
        raise BiovqaError(
            f"backend {name!r} cannot be imported ({exc})", field="--backend", hint=hint
        ) from None
    except Exception as exc:  # noqa: BLE001 - a plug-in's module failing on import is named, not a traceback
        first_line = (str(exc).strip().splitlines() or [""])[0]
        raise BiovqaError(
            f"backend {name!r} ({target}) failed to load: {type(exc).__name__}: {first_line}",
            field="--backend", hint="fix or uninstall the package that provides it (`pip show` names it)",
        ) from None
    factory = getattr(module, attribute, None)
    if factory is None or not callable(factory):
        raise BiovqaError(
            f"backend {name!r} ({target}): module {module_name!r} has no callable factory {attribute!r}",
            field="--backend",
        )
    return factory


def create_backend(name: str, model: str, *, bench: Any = None, **options: Any) -> Backend:
    """Create backend ``name`` for ``model``; ``bench`` reaches factories that ask for it."""
    factory = load_factory(name)
    if bench is not None and "bench" in inspect.signature(factory).parameters:
        options["bench"] = bench
    return factory(model, **options)
