"""How every ``biovqa`` command meets the user: input errors as one message (exit 2), usage errors
as click's usage text (exit 2), Ctrl-C as a note that work is kept (exit 130), and only real bugs
as "internal error" with a saved traceback (exit 3)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from biovqa.errors import BiovqaError
from biovqa.progress import show_progress, stderr_console

console = stderr_console()

#: ``--overwrite`` of every command that writes a folder (see :func:`biovqa.bench.folder.claim_output`)
OverwriteOption = Annotated[bool, typer.Option(
    "--overwrite", help="write into a non-empty folder that holds something else, replacing only "
                        "what this command writes there (its own earlier output is always replaced)")]


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


#: the signal that stopped the command (SIGINT or SIGTERM), once one arrived
_received: list[int] = []


def _on_signal(signum: int, frame: object) -> None:
    """SIGINT and SIGTERM both unwind the command as Ctrl-C does (every ``finally`` runs: staged
    output is removed, a run flushes its replies and marks its card interrupted)."""
    _received.append(signum)
    raise KeyboardInterrupt


@contextmanager
def _signals_unwind() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _ignore_further_signals() -> None:
    """From here the process only reports and exits: a second Ctrl-C, or an interrupt pyarrow
    re-emits after cancelling one of its reads on the first signal, must not replace the exit
    status with "killed by SIGINT". A pending interrupt may still fire while the handlers are
    being replaced; it is absorbed and the replacement tried again."""
    while True:
        try:
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_IGN)
            return
        except KeyboardInterrupt:
            continue


def _interrupted(argv: list[str] | None) -> None:
    """One line for a stopped command: what was kept and the command that resumes it; exit
    128 + the first signal's number (130 for Ctrl-C, 143 for SIGTERM)."""
    if argv is None and threading.current_thread() is threading.main_thread():
        _ignore_further_signals()  # the process is about to exit (not a caller's in-process run)
    import shlex

    signum = _received[0] if _received else signal.SIGINT
    args = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in args if not a.startswith("-")), "")
    again = shlex.join(["biovqa", *args])
    kept = {
        "run": "every reply received so far is kept in the run folder; resume with",
        "merge": "the merged folder was not finished; run again",
        "demo": "the demo folder is incomplete (a re-run replaces it); run again",
        "fetch": "the partial download is kept; resume with",
    }.get(command, "the output folder was left as it was, nothing half-written; run again")
    name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    console.print(f"[yellow]interrupted[/yellow] ({name}): {kept}: {_escape(again)}", highlight=False)
    sys.exit(128 + signum)


@contextmanager
def _plugin_warnings_as_lines() -> Iterator[None]:
    """A plug-in that fails to load (:class:`biovqa.components.registry.PluginWarning`) is one
    ``warning:`` line naming it, not Python's ``file:line: Category:`` form; the command goes on."""
    import warnings

    from biovqa.components.registry import PluginWarning

    previous = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, PluginWarning):
            console.print(f"[yellow]warning[/yellow]: {_escape(str(message))}", highlight=False)
        else:
            previous(message, category, *args, **kwargs)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous


def run_app(typer_app: typer.Typer, argv: list[str] | None = None) -> None:
    """Run a Typer app with biovqa's error contract (see the module docstring)."""
    del _received[:]
    try:
        _run_reporting_errors(typer_app, argv)
    except KeyboardInterrupt:
        # wherever it lands, also inside an error handler below or while the handlers of the
        # signals are being restored: the command stops as interrupted
        _interrupted(argv)


def _run_reporting_errors(typer_app: typer.Typer, argv: list[str] | None) -> None:
    usage_errors, aborts = _click_exception_types()
    try:
        command = typer.main.get_command(typer_app)
        readable_metavars(command)
        with _signals_unwind(), _plugin_warnings_as_lines(), show_progress():
            code = command.main(args=argv, prog_name="biovqa", standalone_mode=False)
    except BiovqaError as exc:
        if _received:
            _interrupted(argv)
        console.print(f"[bold red]error:[/bold red] {_escape(exc.render())}", highlight=False)
        sys.exit(2)
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
        if _received:
            _interrupted(argv)
        if os.environ.get("BIOVQA_DEBUG"):
            raise
        missing = missing_extra(exc)
        if missing:
            console.print(f"[bold red]error:[/bold red] {_escape(missing)}", highlight=False)
            sys.exit(2)
        log = _save_traceback()
        console.print(
            f"[bold red]internal error[/bold red] ({type(exc).__name__}: {exc}). This is a bug in "
            f"biovqa, not in your input; the traceback is in {log}. Set BIOVQA_DEBUG=1 to see it here.",
            highlight=False,
        )
        sys.exit(3)
    # click turns KeyboardInterrupt into Exit(130) and, not standalone, returns exit codes; the
    # signals' handlers are restored by now, so the exit below cannot be replaced by a late one
    if _received or code == 130:
        _interrupted(argv)
    if isinstance(code, int) and not isinstance(code, bool) and code:
        sys.exit(code)


#: optional dependency (top-level module) → the biovqa extra that installs it
EXTRAS: dict[str, str] = {
    "torch": "transformers", "transformers": "transformers", "tokenizers": "transformers",
    "vllm": "vllm", "ray": "ray", "openai": "serve", "wildlife_datasets": "wildlife",
    "timm": "specialists", "torchvision": "specialists", "open_clip": "specialists",
    "safetensors": "specialists", "datasets": "release", "huggingface_hub": "release",
    "yaml": "release",
}
#: what each backend (and the Ray executor) imports, checked before a run creates its folder
BACKEND_MODULES: dict[str, tuple[str, ...]] = {
    "transformers": ("torch", "transformers"), "vllm": ("vllm",), "ray": ("ray",),
}


def require_modules(modules: tuple[str, ...], *, what: str, field: str) -> None:
    """Refuse (exit 2, naming the extra to install) when one of ``modules`` is not installed,
    before anything is written."""
    import importlib.util

    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise BiovqaError(f"{what} needs {module}, which is not installed", field=field,
                              hint=f"{extra_hint(module) or f'pip install {module}'}; nothing was written")


def extra_hint(module: str) -> str | None:
    """``pip install 'biovqa[EXTRA]'`` for an optional dependency's top-level module, else None."""
    extra = EXTRAS.get(module.partition(".")[0])
    return None if extra is None else f"pip install 'biovqa[{extra}]'"


def missing_extra(exc: BaseException) -> str | None:
    """The one-line message for an optional dependency that is not installed (a user can fix
    that), or None when ``exc`` is not one."""
    if not isinstance(exc, ImportError) or not getattr(exc, "name", None):
        return None
    hint = extra_hint(str(exc.name))
    if hint is None:
        return None
    return f"this needs {exc.name}, which is not installed\n  hint: {hint}"


def _readable(label: str) -> str:
    inner = label.strip("<>")
    if inner.startswith("list[") and inner.endswith("]"):
        inner = inner[5:-1]
    inner = inner.replace(" range", "")
    if "|" in inner:
        return f"[{inner}]"
    return {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH",
            "bool": "BOOLEAN"}.get(inner.lower(), inner.upper())


def readable_metavars(command: Any) -> None:
    """Name option values as click does (``PATH``, ``INTEGER``, ``TEXT``, ``[a|b]``) instead of
    typer's ``<list[Path]>`` or ``<int range>``; arguments keep their own names."""
    for param in getattr(command, "params", ()):
        if getattr(param, "metavar", None) is not None or getattr(param, "is_flag", False):
            continue
        if param.param_type_name not in ("option", "argument"):
            continue
        try:
            label = param.display_type(None)
        except Exception:  # noqa: BLE001 - a type typer cannot describe keeps its own display
            continue
        if not isinstance(label, str):
            continue
        if param.param_type_name == "argument":  # its name stays what usage and errors show
            param.display_type_rich = lambda ctx, text=_readable(label): text
        else:
            param.metavar = _readable(label)
    for sub in getattr(command, "commands", {}).values():
        readable_metavars(sub)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _save_traceback() -> str:
    import tempfile
    import traceback

    with tempfile.NamedTemporaryFile("w", prefix="biovqa-error-", suffix=".log", delete=False) as handle:
        traceback.print_exc(file=handle)
        return handle.name
