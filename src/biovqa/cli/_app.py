"""How every ``biovqa`` command meets the user: input errors as one message (exit 2), usage errors
as click's usage text (exit 2), Ctrl-C as a note that work is kept (exit 130), and only real bugs
as "internal error" with a saved traceback (exit 3)."""

from __future__ import annotations

import os
import sys

import typer
from rich.console import Console

from biovqa.errors import BiovqaError

console = Console(stderr=True, soft_wrap=True)


def _click_exception_types() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(usage-error types, abort types) of whichever click typer runs on: typer ≥ 0.29 ships its
    own copy of click, older typer uses click itself."""
    usage: list[type[BaseException]] = []
    abort: list[type[BaseException]] = []
    try:
        from typer._click import exceptions as vendored  # typer ≥ 0.29

        usage.append(vendored.ClickException)
    except ImportError:
        pass
    abort.append(typer.Abort)
    import click

    usage.append(click.exceptions.ClickException)
    abort.append(click.exceptions.Abort)
    return tuple(usage), tuple(abort)


def run_app(typer_app: typer.Typer, argv: list[str] | None = None) -> None:
    """Run a Typer app with biovqa's error contract (see the module docstring)."""
    usage_errors, aborts = _click_exception_types()
    try:
        typer_app(args=argv, prog_name="biovqa", standalone_mode=False)
    except BiovqaError as exc:
        console.print(f"[bold red]error:[/bold red] {_escape(exc.render())}", highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/yellow]: work written so far is kept; "
                      "re-run the same command to resume")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except usage_errors as exc:
        exc.show()  # type: ignore[attr-defined]
        sys.exit(exc.exit_code)  # type: ignore[attr-defined]
    except aborts:
        console.print("[yellow]aborted[/yellow]")
        sys.exit(1)
    except OSError as exc:  # the file system said no: a path the user gave is not usable
        where = f"{exc.filename}: " if exc.filename else ""
        console.print(
            f"[bold red]error:[/bold red] {_escape(where)}{_escape(exc.strerror or str(exc))}\n"
            "  hint: check that the path exists, is the kind expected (file or folder) and is writable",
            highlight=False)
        sys.exit(2)
    except Exception as exc:
        if os.environ.get("BIOVQA_DEBUG"):
            raise
        log = _save_traceback()
        console.print(
            f"[bold red]internal error[/bold red] ({type(exc).__name__}: {exc}). This is a bug in "
            f"biovqa, not in your input; the traceback is in {log}. Set BIOVQA_DEBUG=1 to see it here.",
            highlight=False,
        )
        sys.exit(3)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _save_traceback() -> str:
    import tempfile
    import traceback

    with tempfile.NamedTemporaryFile("w", prefix="biovqa-error-", suffix=".log", delete=False) as handle:
        traceback.print_exc(file=handle)
        return handle.name
