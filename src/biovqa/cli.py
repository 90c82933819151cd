"""The ``biovqa`` command line: build → audit → run → score → report, and ``demo``.

Each command is a thin shell over a library function; errors the user can fix are printed as one
message naming file, row and field, with a non-zero exit and no traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from .errors import BiovqaError

app = typer.Typer(
    name="biovqa",
    help="Bio-VQA: build, run, score and report the biological VQA benchmark.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
build_app = typer.Typer(help="Build a component's benchmark from its native source files.",
                        no_args_is_help=True)
taxonomy_app = typer.Typer(help="GBIF Backbone taxonomy: build and inspect the cached index.",
                           no_args_is_help=True)
app.add_typer(build_app, name="build")
app.add_typer(taxonomy_app, name="taxonomy")

console = Console(stderr=True, soft_wrap=True)


def _register_component_builders() -> None:
    from .components import components

    for component in components():
        try:
            command = component.load("builder")
        except (ImportError, AttributeError):
            continue  # a component whose builder is not written yet offers no build command
        build_app.command(component.name, help=command.__doc__)(command)


@app.command()
def audit(
    bench: Annotated[Path, typer.Argument(help="benchmark folder")],
) -> None:
    """Check a built benchmark against the verification contract (paper L.2)."""
    from .manifests.audit import audit_bench

    report = audit_bench(bench)
    console.print(f"[green]audit passed[/green]: {report}")


@app.command()
def score(
    bench: Annotated[Path, typer.Argument(help="benchmark folder")],
    predictions: Annotated[list[Path], typer.Option("--predictions", "-p", help="predictions .parquet or .jsonl (item_id, response); repeat with --sweep")],
    out: Annotated[Path, typer.Option("--out", "-o", help="output folder for items.parquet + summary.json")],
    backbone: Annotated[Optional[Path], typer.Option(help="taxonomy index (C1; default: the one recorded at build)")] = None,
    bootstrap: Annotated[int, typer.Option(help="bootstrap resamples for 95% CIs")] = 1000,
    seed: Annotated[int, typer.Option(help="bootstrap seed")] = 42,
    epithet_last_word: Annotated[bool, typer.Option(help="C1: keep only the last word of species-epithet replies (paper quirk)")] = True,
    prefer_text: Annotated[bool, typer.Option(help="C2: when letter and option text disagree, take the text (default: the letter)")] = False,
    sweep: Annotated[Optional[str], typer.Option(help="run a component's sensitivity sweep over several predictions files (c2)")] = None,
    label: Annotated[Optional[str], typer.Option(help="model label shown in reports (default: from predictions)")] = None,
) -> None:
    """Score a predictions file against a benchmark (a pure function of both)."""
    from .scoring import score_predictions, sweep_predictions

    options = {
        "backbone": backbone,
        "bootstrap": bootstrap,
        "seed": seed,
        "epithet_last_word": epithet_last_word,
        "prefer_text": prefer_text,
        "label": label,
    }
    if sweep:
        path = sweep_predictions(bench, list(predictions), out, kind=sweep, options=options)
        console.print(f"[green]sweep written[/green] to {path}")
        return
    if len(predictions) != 1:
        raise BiovqaError("give one --predictions file (several only with --sweep)")
    result_dir = score_predictions(bench, predictions[0], out, options=options, console=console)
    console.print(f"[green]scores written[/green] to {result_dir}")


@app.command()
def report(
    scores: Annotated[list[Path], typer.Argument(help="one or more score folders")],
    out: Annotated[Path, typer.Option("--out", "-o", help="report folder")],
) -> None:
    """Turn score folders into leaderboard tables (Markdown, CSV), plots and an HTML page."""
    from .report import write_report

    index = write_report(scores, out)
    console.print(f"[green]report written[/green]: {index}")


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="where to write the demo")] = Path("biovqa-demo"),
) -> None:
    """Build a small benchmark from bundled data, run the baseline, score it and write the report."""
    from .demo import run_demo

    run_demo(out, console=console)


def _register_extra_commands() -> None:
    # Commands owned by other stages register themselves here; each module imports nothing heavy.
    from . import cli_run, cli_taxonomy

    cli_run.register(app)
    cli_taxonomy.register(taxonomy_app)


def main(argv: list[str] | None = None) -> None:
    _register_component_builders()
    _register_extra_commands()
    run_app(app, argv)


def run_app(typer_app: typer.Typer, argv: list[str] | None = None) -> None:
    """Run a Typer app the way a user should meet it: errors in their input as one message and
    exit code 2, interruptions as a note that work is kept, bugs as a saved traceback (exit 3)."""
    try:
        typer_app(args=argv, standalone_mode=False)
    except BiovqaError as exc:
        console.print(f"[bold red]error:[/bold red] {exc.render()}", highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/yellow]: work written so far is kept; re-run the same command to resume")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:  # click usage errors
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if isinstance(exc, click.exceptions.Abort):
            sys.exit(1)
        if os.environ.get("BIOVQA_DEBUG"):
            raise
        log = _save_traceback()
        console.print(
            f"[bold red]internal error[/bold red] ({type(exc).__name__}: {exc}). This is a bug in "
            f"biovqa, not in your input; the traceback is in {log}. Set BIOVQA_DEBUG=1 to see it here.",
            highlight=False,
        )
        sys.exit(3)


def _save_traceback() -> str:
    import tempfile
    import traceback

    with tempfile.NamedTemporaryFile("w", prefix="biovqa-error-", suffix=".log", delete=False) as handle:
        traceback.print_exc(file=handle)
        return handle.name


if __name__ == "__main__":
    main()
