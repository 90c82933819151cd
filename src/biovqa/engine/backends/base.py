"""The backend extension point: a batch of requests in, one reply per request out.

A backend turns :class:`Request` records (one benchmark item each, with its model-specific
wrappers already applied) into :class:`Reply` records. The engine owns everything else: grouping
an image's questions together, batching, sharding, the prediction store, progress and resume.

Contract for implementers:

* ``generate(requests)`` returns exactly ``len(requests)`` replies, ``replies[i].key ==
  requests[i].key``. The engine hands whole image-grouped batches; a backend may reorder
  internally but must return in request order.
* Decoding is greedy and deterministic for the same inputs; ``max_new_tokens`` is a hard cap.
* A request that cannot be answered (after the backend's own retries) yields a reply with
  ``status="failed"`` and an ``error`` message — never a made-up answer, never an exception that
  loses the rest of the batch. Exceptions are for setup errors (model not found, bad options).
* Heavy libraries (torch, transformers, vllm, openai) are imported inside the backend's module,
  which is imported only when the backend is selected.
* ``describe()`` returns JSON-able facts for the run card (library versions, resolved model
  revision, dtype, device, processor pixel limits …).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable


@dataclass(frozen=True, slots=True)
class Request:
    key: str
    item_id: str
    prompt: str
    image_path: Path | None = None
    system: str | None = None
    max_new_tokens: int = 16
    options: tuple[str, ...] | None = None
    task: str | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    key: str
    text: str | None
    status: str = "ok"  # "ok" | "failed"
    error: str | None = None
    latency_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@runtime_checkable
class Backend(Protocol):
    name: str

    def generate(self, requests: Sequence[Request]) -> list[Reply]:
        """Answer a batch; see the module docstring for the contract."""
        ...

    def describe(self) -> dict[str, Any]:
        """Facts for the run card."""
        ...

    def close(self) -> None:
        """Release GPUs, sockets, worker processes."""
        ...
