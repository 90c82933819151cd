"""The requests a harness sends: exactly those of biovqa's engine, in benchmark order.

Every harness task is built from :func:`biovqa.engine.requests.build_requests`, the function the
engine itself calls, so a sample carries the same user text (question + instruction through the
model preset's wrappers: Gemma's system message on C1/C2, InternVL's "Please answer in English."
prefix, paper App. B.2), the same system message (an item's own replaces the preset's), the same
image file and the same cap on new tokens (C1 15 tokens, paper App. B.2; the other components'
caps as the engine sets them), decoded greedily.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from biovqa.bench.folder import Bench
from biovqa.errors import BiovqaError


@dataclass(frozen=True, slots=True)
class HarnessRequest:
    """One benchmark item as a harness sends it."""

    item_id: str
    component: str
    task: str | None
    system: str | None
    user_text: str
    image: Path | None
    max_new_tokens: int


def harness_requests(bench: Bench, model: str, *, preset: str | None = None) -> list[HarnessRequest]:
    """The engine's requests for ``model`` (its preset found as ``biovqa run --model`` finds it;
    ``preset`` names one outright, as ``--preset``), in benchmark item order.

    A raw-completion item (BAGEL's raw mode) cannot be a chat sample and is refused.
    """
    from biovqa.engine.requests import build_requests, resolve_preset

    chosen, wrap = resolve_preset(model, preset)
    plan = build_requests(bench, bench.items, chosen, wrap, model, revision="")
    raw = next((r for r in plan.requests if r.mode != "chat"), None)
    if raw is not None:
        raise BiovqaError(f"item {raw.item_id!r} is a raw-completion request, which a chat harness "
                          "cannot send", file=bench.root / "items.parquet", field="prompt_mode",
                          hint="build the benchmark in chat mode, or run it with `biovqa run`")
    by_id = {r.item_id: r for r in plan.requests}
    components = bench.items.column("component").to_pylist()
    return [HarnessRequest(item_id=item_id, component=component, task=by_id[item_id].task,
                           system=by_id[item_id].system, user_text=by_id[item_id].prompt,
                           image=by_id[item_id].image_path,
                           max_new_tokens=by_id[item_id].max_new_tokens)
            for item_id, component in zip(bench.items.column("item_id").to_pylist(), components)]


__all__ = ["HarnessRequest", "harness_requests"]
