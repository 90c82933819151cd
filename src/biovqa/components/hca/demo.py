"""The hierarchical-VQA part of ``biovqa demo``: from the demo's C1 benchmark (its lineage is the
hierarchy), a visual bench with taxonomy-distance distractors and its text-only control (the
image replaced by the binomial), each answered by the always-"A" floor and scored."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from biovqa.components.registry import DemoContext


def demo_hca(out: Path, bench_c1: Path, say: Callable[[str], Any], step: str) -> list[Path]:
    """Build, run (baseline) and score both benches inside ``out``; returns the score folders."""
    from biovqa.components.hca.build import build_hca
    from biovqa.engine.runner import RunOptions, run_benchmark
    from biovqa.scoring.pipeline import score_predictions

    visual = build_hca(out / "bench-hca", c1_bench=bench_c1, policy="taxonomy")
    text = build_hca(out / "bench-hca-text", text_from=visual.root)
    scores = []
    for name, bench, label in (("hca", visual, "floor (always A)"), ("hca-text", text, "floor (always A) [text]")):
        predictions = run_benchmark(bench.root, out / f"run-baseline-{name}",
                                    RunOptions(backend="baseline", progress=False)).predictions_path
        scores.append(score_predictions(bench.root, predictions, out / f"scores-baseline-{name}",
                                        label=label, options={"bootstrap": 200}))
    dedup = text.manifest["dedup"]
    say(f"{step} built the hierarchical 4-way VQA from the C1 bench: {visual.manifest['counts']['total']} "
        f"questions; text-only control {dedup['non_leaf_questions']} → {dedup['unique']} after dedup; "
        f"baseline scored → {', '.join(str(s) for s in scores)}")
    return scores


def run_demo(context: DemoContext) -> list[Path]:
    """The hierarchical suite's part of ``biovqa demo`` (:func:`demo_hca`), built from the demo's
    C1 benchmark (none built: nothing to do)."""
    bench_c1 = context.benches.get("c1")
    if bench_c1 is None:
        return []
    for name in ("bench-hca", "bench-hca-text", "run-baseline-hca", "run-baseline-hca-text", "scores-baseline-hca",
                 "scores-baseline-hca-text"):
        context.folder(name)
    return demo_hca(context.out, bench_c1, context.say, "   ")


__all__ = ["demo_hca", "run_demo"]
