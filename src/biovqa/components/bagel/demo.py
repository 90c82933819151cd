"""The BAGEL part of ``biovqa demo``: the paper's Appendix B items (one per domain)
written as per-domain JSONL in the different accepted forms (options as an object or a list;
gold as a letter, an index or the option text), built, answered by the seeded random-letter
floor through ``biovqa run --backend baseline``, and scored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from biovqa.components.registry import DemoContext

_FLAMINGO = {"scientific_name": "Phoenicoparrus andinus", "taxon_class": "Aves"}
#: The paper's Appendix B (the bioRxiv item's stem and distractors are ours: the paper prints only its gold).
DEMO_ITEMS: dict[str, list[dict[str, Any]]] = {
    "wikipedia": [
        {"id": "wiki-1", "dimension": "Taxonomy", "level": "easy", "meta": _FLAMINGO,
         "question": "What is the scientific name of the Andean flamingo?",
         "options": {"A": "Phoenicopterus andinus", "B": "Phoenicoparrus andinus",
                     "C": "Phoenicopterus chilensis", "D": "Phoenicoparrus chilensis"}, "answer": "B"},
        {"id": "wiki-2", "dimension": "Communication", "level": "medium", "meta": _FLAMINGO,
         "question": "What is one of the distinct call types of the Andean flamingo?",
         "options": ["Chirp", "Peep", "Whistle", "Growl"], "answer": "Peep"},
    ],
    "globi": [
        {"id": "globi-1", "domain": "GloBI", "dimension": "Masked participant identification", "level": "hard",
         "question": "Which taxon is likely to be the host in the interaction where Pearsonema plica is an "
                     "endoparasite?",
         "options": ["Procyon lotor", "Ursus americanus", "Canis lupus", "Lynx rufus"], "answer": 0,
         "meta": {"scientific_name": "Pearsonema plica", "taxon_class": "Enoplea"}},
    ],
    "biorxiv": [
        {"id": "biorxiv-1", "domain": "bioRxiv", "dimension": "Result Interpretation", "level": "easy",
         "question": "Nematostella vectensis polyps kept on a substrate fission more often than polyps kept "
                     "without one. Which interpretation fits best?",
         "options": {"A": "Substrate provides a mechanical advantage that facilitates the physical process of "
                          "fissioning.",
                     "B": "Substrate releases chemical cues that induce fissioning.",
                     "C": "Substrate lowers the polyps' metabolic rate.",
                     "D": "Substrate shields the polyps from light."},
         "correct_answer": "A", "meta": {"scientific_name": "Nematostella vectensis", "taxon_class": "Anthozoa"}},
    ],
    "xeno-canto": [
        {"id": "xc-1", "domain": "xeno_canto", "dimension": "Dominant frequency range", "level": "medium",
         "question": "What is the typical dominant frequency range of the song of the Red Warbler "
                     "(Cardellina rubra)?",
         "options": ["~9–11 kHz", "~3–5 kHz", "~6–8 kHz", "~1–2 kHz"], "answer": "B",
         "meta": {"scientific_name": "Cardellina rubra", "taxon_class": "Aves"}},
    ],
}


def write_demo_items(folder: Path) -> list[str]:
    """The per-domain JSONL files; returns the ``--items`` arguments (``Wiki=PATH`` for the file
    whose lines carry no domain)."""
    folder.mkdir(parents=True, exist_ok=True)
    arguments = []
    for name, rows in DEMO_ITEMS.items():
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        arguments.append(f"Wiki={path}" if name == "wikipedia" else str(path))
    return arguments


def demo_bagel(out: Path, say: Callable[[str], Any], step: str) -> Path:
    """Build, run (baseline) and score the demo BAGEL bench inside ``out``; returns the score folder."""
    from biovqa.components.bagel.build import build_bagel
    from biovqa.engine.runner import RunOptions, run_benchmark
    from biovqa.scoring.pipeline import score_predictions

    bench = build_bagel(write_demo_items(out / "bagel-items"), out / "bench-bagel")
    predictions = run_benchmark(bench.root, out / "run-baseline-bagel",
                                RunOptions(backend="baseline", progress=False)).predictions_path
    score_dir = score_predictions(bench.root, predictions, out / "scores-baseline-bagel",
                                  label="random guess (seeded)", options={"bootstrap": 200})
    say(f"{step} built BAGEL from the Appendix B items ({bench.manifest['counts']['total']} text-only questions, "
        f"{len(DEMO_ITEMS)} JSONL files); the seeded random guess scored → {score_dir}")
    return score_dir


def run_demo(context: DemoContext) -> list[Path]:
    """BAGEL's part of ``biovqa demo`` (:func:`demo_bagel`)."""
    for name in ("bagel-items", "bench-bagel", "run-baseline-bagel", "scores-baseline-bagel"):
        context.folder(name)
    score_dir = demo_bagel(context.out, context.say, "   ")
    context.benches["bagel"] = context.out / "bench-bagel"
    return [score_dir]


__all__ = ["DEMO_ITEMS", "demo_bagel", "run_demo", "write_demo_items"]
