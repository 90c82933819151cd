"""Bio-VQA components as inspect_ai tasks: ``inspect eval biovqa/c1 -T bench=BENCH --model …``.

inspect finds these tasks through its entry-point group (``[project.entry-points.inspect_ai]``
names this module), so they are namespaced ``biovqa/<component>``. A task has one sample per
benchmark item, in item order, with the item id as the sample id: the system message, user text
and image biovqa's engine sends for the ``--model`` in use (its preset's wrappers, paper App.
B.2; ``-T preset=NAME`` picks a preset outright), decoded greedily (temperature 0) under the
item's cap on new tokens (C1 15, paper App. B.2). The scorer gives each sample the component's
own per-item score and explanation — C1 exact match and parse status, C2 cags, C3 the task's
metric, C4 the Yes/No verdict — by running the component's scorer on that one item, so inspect's
viewer shows what ``biovqa score`` would.

The log (``.eval`` or ``.json``) is read back by ``biovqa score BENCH -p LOG`` for the
benchmark's floors, intervals and leaderboard (:mod:`biovqa.interop.logs`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    Content,
    ContentImage,
    ContentText,
    GenerateConfig,
    get_model,
)
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from biovqa.bench.folder import Bench, open_bench
from biovqa.components.registry import get_component
from biovqa.errors import BiovqaError
from biovqa.interop.prompts import HarnessRequest, harness_requests

#: Sample metadata key holding the item's cap on new tokens (the solver reads it).
CAP_KEY = "max_new_tokens"


def _sample(request: HarnessRequest, manifest_sha256: str) -> Sample:
    content: list[Content] = []
    if request.image is not None:
        content.append(ContentImage(image=str(request.image)))
    content.append(ContentText(text=request.user_text))
    messages: list[ChatMessage] = []
    if request.system:
        messages.append(ChatMessageSystem(content=request.system))
    messages.append(ChatMessageUser(content=content))
    return Sample(input=messages, id=request.item_id,
                  metadata={"component": request.component, "task": request.task,
                            CAP_KEY: request.max_new_tokens,
                            "benchmark_manifest_sha256": manifest_sha256})


@solver
def biovqa_generate() -> Solver:
    """Greedy generation under the item's own cap on new tokens (the engine's decoding)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        return await generate(state, max_tokens=int(state.metadata[CAP_KEY]), temperature=0.0)

    return solve


@lru_cache(maxsize=8)
def _bench(path: str) -> Bench:
    return open_bench(path)


def item_score(bench: Bench, item_id: str, reply: str) -> dict[str, Any]:
    """The component's scorer run on one item with ``reply``: that item's row of the score
    table (``score``, ``parsed`` and the component's columns), bootstrap off."""
    import pyarrow as pa

    from biovqa.scoring.predictions import subset_bench

    component = get_component(bench.component)
    options = component.resolve_score_options({"bootstrap": 0})
    one = subset_bench(bench, [item_id])
    aligned = pa.table({"item_id": pa.array([item_id], pa.string()),
                        "response": pa.array([reply], pa.string()),
                        "status": pa.array(["ok"], pa.string())})
    with component.load("scorer")(one, aligned, options) as result:  # its summary is never aggregated
        return result.items.to_pylist()[0]


def _explanation(component: str, row: dict[str, Any]) -> str:
    parts = [f"parsed: {row.get('parsed')!r}"]
    for column in get_component(component).explain_columns:
        if column in row and row[column] is not None:
            parts.append(f"{column}: {row[column]}")
    return "; ".join(parts)


@scorer(metrics=[mean()])
def biovqa_scorer(bench: str) -> Scorer:
    """Each sample's score from the component's own scorer (``biovqa score``'s per-item value)."""

    async def score(state: TaskState, target: Target) -> Score:
        opened = _bench(bench)
        reply = state.output.completion
        row = item_score(opened, str(state.sample_id), reply)
        value = row.get("score")
        numeric = 0.0 if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
        shown = {k: row[k] for k in ("parsed", *get_component(opened.component).explain_columns)
                 if k in row and isinstance(row[k], (str, int, float, bool, type(None)))}
        return Score(value=numeric, answer=None if row.get("parsed") is None else str(row["parsed"]),
                     explanation=_explanation(opened.component, row), metadata=shown)

    return score


def bench_task(bench: str | Path, component: str, *, preset: str | None = None,
               model: str | None = None) -> Task:
    """The inspect task of ``component`` on the benchmark folder ``bench``; the prompts are those
    of ``model`` (default: the model inspect runs, ``--model``)."""
    opened = open_bench(bench)
    if opened.component != component:
        raise BiovqaError(f"{opened.root} is a {opened.component.upper()} benchmark, not "
                          f"{component.upper()}", field="bench",
                          hint=f"run it as biovqa/{opened.component}")
    name = model or get_model().name
    requests = harness_requests(opened, name, preset=preset)
    root = str(Path(opened.root).resolve())
    dataset = MemoryDataset([_sample(r, opened.manifest_sha256) for r in requests],
                            name=f"biovqa-{component}", location=root)
    return Task(dataset=dataset, solver=biovqa_generate(), scorer=biovqa_scorer(root),
                config=GenerateConfig(temperature=0.0),
                metadata={"biovqa_benchmark": root,
                          "biovqa_manifest_sha256": opened.manifest_sha256,
                          "biovqa_component": component})


@task
def c1(bench: str, preset: str | None = None) -> Task:
    """Bio-VQA C1, hierarchical taxonomic reasoning (paper §3.1)."""
    return bench_task(bench, "c1", preset=preset)


@task
def c2(bench: str, preset: str | None = None) -> Task:
    """Bio-VQA C2, fine-grained attribute grounding."""
    return bench_task(bench, "c2", preset=preset)


@task
def c3(bench: str, preset: str | None = None) -> Task:
    """Bio-VQA C3, quantitative spatial reasoning."""
    return bench_task(bench, "c3", preset=preset)


@task
def c4(bench: str, preset: str | None = None) -> Task:
    """Bio-VQA C4, individual re-identification."""
    return bench_task(bench, "c4", preset=preset)


@task
def hca(bench: str, preset: str | None = None) -> Task:
    """The hierarchical (HCA) suite on a Bio-VQA benchmark folder."""
    return bench_task(bench, "hca", preset=preset)


@task
def bagel(bench: str, preset: str | None = None) -> Task:
    """The BAGEL suite (chat mode; raw-completion items are refused)."""
    return bench_task(bench, "bagel", preset=preset)


__all__ = ["bagel", "bench_task", "biovqa_generate", "biovqa_scorer", "c1", "c2", "c3", "c4",
           "hca", "item_score"]
