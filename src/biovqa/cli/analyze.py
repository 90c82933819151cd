"""``biovqa analyze SCORES… --out DIR``: the cross-component analysis (paper Supplement J) over
score folders — model × task matrix, task-pair Spearman, within- vs across-component gap with a
permutation test, standardized α per component, Holm-corrected component correlations, PCA.

``--design paper27`` (default) builds the paper's 27-task matrix from the score summaries (C1
groups, five C2 families, seven C3 tasks, C4 species); ``--design table3`` uses Table 3's columns."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from biovqa.cli._app import console


def analyze(
    scores: Annotated[list[Path], typer.Argument(help="score folders (several models, any of C1–C4)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="folder for the analysis tables")],
    permutations: Annotated[int, typer.Option(help="label permutations of the within/across test", min=1)] = 2000,
    seed: Annotated[int, typer.Option(help="permutation seed")] = 42,
    include_ocr: Annotated[bool, typer.Option("--include-ocr", help="keep the C3 OCR control as a task")] = False,
    design: Annotated[str, typer.Option(
        help="task matrix: paper27 (Supplement J's 27 tasks) or table3 (Table 3's columns)")] = "paper27",
) -> None:
    """Cross-component analysis: Spearman between tasks, within vs across components, α, Holm, PCA."""
    from biovqa.errors import BiovqaError
    from biovqa.reporting.analysis import DESIGNS
    from biovqa.reporting.writer import write_analysis

    if design not in DESIGNS:
        raise BiovqaError(f"unknown --design {design!r}", field="--design", hint=f"choose one of {', '.join(DESIGNS)}")
    path = write_analysis(scores, out, B=permutations, seed=seed, include_ocr=include_ocr, design=design)
    console.print(f"[green]analysis written[/green] to {path}")


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze)
