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
* ``Request.system`` is the system message (the item's own system prompt, else the preset's) and
  goes in a system turn; a backend whose model has no system role puts it before the user text
  (:func:`system_in_user_text`) and says so in ``describe()``.
* ``Request.mode`` is ``"chat"`` (a user turn through the chat template / chat endpoint) or
  ``"raw"`` (the text of :func:`raw_prompt_text` sent as-is: no chat template, the completions
  endpoint, ``LLM.generate``). A raw request carries no image; a backend fails one that does.
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
    #: "chat" (chat template / chat endpoint) or "raw" (completion text, no template)
    mode: str = "chat"


#: Request modes: a chat turn, or raw completion text (BAGEL paper App. A.1.2).
REQUEST_MODES: tuple[str, ...] = ("chat", "raw")
#: What joins a system message to the text it is put before, where it cannot be a system turn.
SYSTEM_JOINER = "\n\n"


def system_in_user_text(system: str | None, text: str) -> str:
    """``system + "\\n\\n" + text`` (``text`` alone without a system message): how a system
    message reaches a model that has no system role, and how it leads a raw prompt."""
    return f"{system}{SYSTEM_JOINER}{text}" if system else text


def raw_prompt_text(request: Request) -> str:
    """The exact completion text of a raw-mode request: the system message (if any), a blank
    line, then the prompt — no chat template, no role markers."""
    return system_in_user_text(request.system, request.prompt)


def build_messages(request: Request) -> list[dict[str, Any]]:
    """Chat messages for one request to a vision-language chat template (the transformers backend
    and its shared-prefix decoding): optional system turn, then a user turn whose content is the
    image (if any) followed by the prompt text."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": [{"type": "text", "text": request.system}]})
    content: list[dict[str, Any]] = []
    if request.image_path is not None:
        content.append({"type": "image"})
    content.append({"type": "text", "text": request.prompt})
    messages.append({"role": "user", "content": content})
    return messages


def build_text_messages(request: Request) -> list[dict[str, Any]]:
    """Chat messages for a text-only language model: plain-string contents (text-only chat
    templates do not take content parts)."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.append({"role": "user", "content": request.prompt})
    return messages



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
