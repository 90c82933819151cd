"""Backends that need no model: the image-blind ``baseline`` floor and the diagnostic ``echo``.

* ``baseline`` answers every item with its component's floor rule (the registry's ``floor``
  callable, computed once over the whole benchmark so that a shard or a ``--limit`` sample gets
  the same answers as the full run). It is the floor every model is compared with.
* ``echo`` answers with a hash of exactly what a model would see (system message, user text,
  image reference). It costs nothing, is deterministic, and can be slowed (``delay_s``) or made to
  fail on a fixed subset of items (``fail_every``); the engine's overhead benchmark and the crash,
  shard and Ray tests use it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from biovqa._version import __version__
from biovqa.components.registry import get_component
from biovqa.errors import BiovqaError, MissingResourceError
from biovqa.engine.backends.base import Reply, Request

BASELINE_MODEL = "baseline"
ECHO_MODEL = "echo"


class BaselineBackend:
    """Replies with the component floor rules: ``floor(items) -> pa.Array`` per component."""

    name = "baseline"
    #: no model, nothing to bound: one batch holds a whole image-grouped benchmark
    batch_tokens = 1 << 40
    max_batch_items = 65_536

    def __init__(self, bench: Any, floor: Callable[[pa.Table], pa.Array] | None = None) -> None:
        if isinstance(bench, (str, Path)):
            from biovqa.bench import open_bench

            bench = open_bench(bench)
        self._bench = bench
        self._floor_override = floor
        self._answers: dict[str, str | None] | None = None

    def _floor_for(self, component: str) -> Callable[[pa.Table], pa.Array]:
        if self._floor_override is not None:
            return self._floor_override
        entry = get_component(component)
        try:
            return entry.load("floor")
        except (ImportError, AttributeError, MissingResourceError) as exc:
            raise MissingResourceError(
                f"the floor rules of component {component!r} are not available ({exc})",
                field="--backend",
                hint="this component has no baseline yet; run a model backend instead",
            ) from None

    def _all_answers(self) -> dict[str, str | None]:
        if self._answers is None:
            items = self._bench.items
            components = (
                sorted(set(items.column("component").to_pylist()))
                if "component" in items.column_names
                else [self._bench.component]
            )
            answers: dict[str, str | None] = {}
            for component in components:
                if "component" in items.column_names and len(components) > 1:
                    import pyarrow.compute as pc

                    part = items.filter(pc.equal(items.column("component"), component))
                else:
                    part = items
                replies = self._floor_for(component)(part)
                if len(replies) != part.num_rows:
                    raise BiovqaError(
                        f"floor of component {component!r} returned {len(replies)} replies for "
                        f"{part.num_rows} items",
                        hint="the floor callable must return one reply per item, in order",
                    )
                answers.update(zip(part.column("item_id").to_pylist(), replies.to_pylist()))
            self._answers = answers
        return self._answers

    def generate(self, requests: Sequence[Request]) -> list[Reply]:
        answers = self._all_answers()
        replies = []
        for request in requests:
            if request.item_id not in answers:
                replies.append(Reply(key=request.key, text=None, status="failed",
                                     error=f"item {request.item_id!r} is not in the benchmark"))
            else:
                replies.append(Reply(key=request.key, text=answers[request.item_id],
                                     prompt_tokens=0, completion_tokens=0))
        return replies

    def describe(self) -> dict[str, Any]:
        return {"backend": "baseline", "backend_version": __version__, "revision": __version__,
                "rules": "component floor (image-blind)"}

    def close(self) -> None:
        self._answers = None


def create(model: str = BASELINE_MODEL, *, bench: Any = None,
           floor: Callable[[pa.Table], pa.Array] | None = None, **options: Any) -> BaselineBackend:
    """Factory of the ``baseline`` backend; ``model`` is only a label, ``bench`` is required."""
    if bench is None:
        raise BiovqaError("the baseline backend needs the benchmark", field="bench")
    if options:
        raise BiovqaError(f"the baseline backend takes no options, got {sorted(options)}",
                          field="--option")
    return BaselineBackend(bench, floor=floor)


class EchoBackend:
    """Deterministic diagnostic backend: ``text = "echo-" + sha256(system, prompt, image)[:16]``."""

    name = "echo"
    #: no model, nothing to bound
    batch_tokens = 1 << 40
    max_batch_items = 4096

    def __init__(self, delay_s: float = 0.0, fail_every: int = 0, fail_salt: str = "",
                 revision: str = "echo-1") -> None:
        self.delay_s = float(delay_s)
        self.revision = str(revision)
        self.fail_every = int(fail_every)
        self.fail_salt = fail_salt

    def generate(self, requests: Sequence[Request]) -> list[Reply]:
        replies = []
        for request in requests:
            if self.delay_s:
                time.sleep(self.delay_s)
            seen = "\x1f".join(
                (request.system or "", request.prompt,
                 "" if request.image_path is None else Path(request.image_path).name)
            ) + ("" if request.mode == "chat" else f"\x1f{request.mode}")  # raw completion differs
            digest = hashlib.sha256(seen.encode()).hexdigest()
            if self.fail_every and int(
                hashlib.sha256((self.fail_salt + request.key).encode()).hexdigest()[:8], 16
            ) % self.fail_every == 0:
                replies.append(Reply(key=request.key, text=None, status="failed",
                                     error="echo: injected failure"))
                continue
            replies.append(Reply(key=request.key, text=f"echo-{digest[:16]}",
                                 prompt_tokens=len(request.prompt.split()),
                                 completion_tokens=1))
        return replies

    def describe(self) -> dict[str, Any]:
        return {"backend": "echo", "backend_version": __version__, "revision": self.revision,
                "delay_s": self.delay_s}

    def close(self) -> None:
        pass


def create_echo(model: str = ECHO_MODEL, **options: Any) -> EchoBackend:
    """Factory of the ``echo`` backend (options: ``delay_s``, ``fail_every``, ``fail_salt``,
    ``revision``)."""
    allowed = {"delay_s", "fail_every", "fail_salt", "revision"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise BiovqaError(f"the echo backend does not take {unknown}", field="--option",
                          hint=f"echo options: {', '.join(sorted(allowed))}")
    return EchoBackend(**options)
