"""The ``biovqa`` command line: build → audit → run → score → report, and ``demo``.

Each command is a thin shell over a library function. Nothing heavy is imported until a command
runs: ``biovqa --help`` reads only the component declarations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperCommand, TyperGroup

from biovqa._version import __version__
from biovqa.cli._app import OverwriteOption, console, readable_metavars, run_app
from biovqa.cli.release import ImagesOption, bench_folder
from biovqa.errors import BiovqaError


def with_exclusion_summary(build: Any) -> Any:
    """A build command that, once the benchmark is written, prints what its sources lost: per
    reason the count and the first files or rows (the manifest's ``exclusions`` and
    ``exclusion_examples``), so an exclusion is never silent."""
    import functools
    import inspect

    signature = inspect.signature(build)

    @functools.wraps(build)
    def summarized(*args: Any, **kwargs: Any) -> Any:
        result = build(*args, **kwargs)
        out = signature.bind_partial(*args, **kwargs).arguments.get("out")
        manifest = Path(out) / "manifest.json" if out is not None else None
        if manifest is not None and manifest.is_file():
            import json

            from biovqa.sources.validate import summarize_exclusions

            lines = summarize_exclusions(json.loads(manifest.read_text(encoding="utf-8")))
            if lines:
                typer.echo("excluded from the sources (count, first files; all in manifest.json):", err=True)
                for line in lines:
                    typer.echo(f"  {line}", err=True)
        return result

    return summarized


class _ComponentBuildGroup(TyperGroup):
    """``biovqa build <component>``: one sub-command per registered component, whose builder
    module is imported only when that sub-command runs or shows its help."""

    def list_commands(self, ctx: Any) -> list[str]:
        from biovqa.components import list_components

        return [component.name for component in list_components()]

    def get_command(self, ctx: Any, name: str) -> Any:
        from biovqa.components import list_components
        from biovqa.components.registry import plugin_errors

        components = list_components()
        component = next((c for c in components if c.name == name.lower()), None)
        if component is None and name.lower() in plugin_errors():
            raise plugin_errors()[name.lower()]  # an installed plug-in that failed to load
        if component is None:
            from biovqa.errors import did_you_mean

            known = [c.name for c in components]
            ctx.fail(f"No such component {name!r}{did_you_mean(name, known)}; "
                     f"known: {', '.join(known)}")
            return None  # ctx.fail raises; this keeps the type checker informed
        function = component.load("builder")
        from biovqa.bench.folder import is_staged, staged_build

        if not is_staged(component.load("build_function")):
            # the build writes a staging sibling of --out that replaces it only when complete
            # (a component whose build function stages itself prints the final folder)
            function = staged_build(function)
        function = with_exclusion_summary(function)
        function = _claiming_build(component.name, function)
        single = typer.Typer(add_completion=False, rich_markup_mode=None)
        single.command(component.name, help=function.__doc__ or component.title)(function)
        built = typer.main.get_command(single)
        readable_metavars(built)
        return built

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        from biovqa.components import list_components

        rows = [(component.name, component.title) for component in list_components()]
        with formatter.section("Components"):
            formatter.write_dl(rows)


#: the shared command groups components add commands to (``Command.group``), with their help
SHARED_GROUPS: dict[str, str] = {
    "specialist": "Specialist reference models (non-VLM ceilings) that write scoreable predictions.",
}


def _component_command(command: Any) -> Any:
    """The click command of a component's declared :class:`~biovqa.components.registry.Command`:
    its target imported now (a Typer app becomes a group, a function a command)."""
    from biovqa.components.registry import load_target

    target = load_target(command.target, what=f"the command {command.name!r}")
    built: Any
    if isinstance(target, typer.Typer):
        built = typer.main.get_group(target)  # a group even when it holds one command
    else:
        single = typer.Typer(add_completion=False, rich_markup_mode=None)
        single.command(command.name, help=target.__doc__ or command.help)(target)
        built = typer.main.get_command(single)
    built.name = command.name
    readable_metavars(built)
    return built


def _declared_commands(group: str | None, *, plugins: bool) -> dict[str, Any]:
    """The commands the components declare for ``group`` (None: top level), by name: the
    built-ins' only unless ``plugins`` (listing them for help loads no plug-in)."""
    from biovqa.components.registry import builtin_components, list_components

    components = list_components() if plugins else builtin_components()
    return {command.name: command for component in components for command in component.commands
            if command.group == group}


class _RootGroup(TyperGroup):
    """The ``biovqa`` group: its own commands, then those the components declare
    (``Component.commands``), each imported only when it runs or shows its help; the list in
    ``biovqa --help`` reads only the built-in declarations, so no plug-in is loaded for it."""

    def list_commands(self, ctx: Any) -> list[str]:
        return sorted({*super().list_commands(ctx), *_declared_commands(None, plugins=False),
                       *(g for g in SHARED_GROUPS)})

    def get_command(self, ctx: Any, name: str) -> Any:
        found = super().get_command(ctx, name)
        if found is not None:
            return found
        if name in SHARED_GROUPS:
            return _SharedGroup(name=name, help=SHARED_GROUPS[name], no_args_is_help=True, rich_markup_mode=None)
        declared = _declared_commands(None, plugins=False).get(name) or _declared_commands(None, plugins=True).get(name)
        return None if declared is None else _component_command(declared)


class _SharedGroup(TyperGroup):
    """A shared group (``biovqa specialist …``) whose commands the components declare."""

    def list_commands(self, ctx: Any) -> list[str]:
        return sorted(_declared_commands(self.name, plugins=False))

    def get_command(self, ctx: Any, name: str) -> Any:
        declared = _declared_commands(self.name, plugins=False).get(name) \
            or _declared_commands(self.name, plugins=True).get(name)
        return None if declared is None else _component_command(declared)


def _claiming_build(name: str, function: Any) -> Any:
    """The build command ``function`` as every writing command behaves: ``--out``/``-o``, the
    output folder claimed (:func:`biovqa.bench.folder.claim_output`, ``--overwrite``)."""
    import functools
    import inspect
    from copy import copy
    from typing import get_args

    from biovqa.bench.folder import claim_output
    from biovqa.cli._app import OverwriteOption

    signature = inspect.signature(function, eval_str=True)
    parameters = []
    for parameter in signature.parameters.values():
        if parameter.name == "out" and get_args(parameter.annotation):
            kind, *infos = get_args(parameter.annotation)
            info = copy(infos[0])
            names = list(info.param_decls or ())
            if isinstance(info.default, str) and info.default.startswith("-"):
                names.insert(0, info.default)  # Option("--out", …) keeps its first name as default
                info.default = ...
            names = names or ["--out"]
            info.param_decls = tuple(names + ["-o"] if "-o" not in names else names)
            parameter = parameter.replace(annotation=Annotated[kind, info])
        parameters.append(parameter)
    parameters.append(inspect.Parameter("overwrite", inspect.Parameter.KEYWORD_ONLY, default=False,
                                        annotation=OverwriteOption))

    @functools.wraps(function)
    def command(*args: Any, overwrite: bool = False, **kwargs: Any) -> Any:
        out = signature.bind(*args, **kwargs).arguments["out"]
        with claim_output(out, command=f"build {name}", overwrite=overwrite):
            return function(*args, **kwargs)

    command.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters}
    return command


app = typer.Typer(
    cls=_RootGroup,
    name="biovqa",
    help="Bio-VQA: build, run, score and report the biological VQA benchmark.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)
build_app = typer.Typer(cls=_ComponentBuildGroup, no_args_is_help=True, rich_markup_mode=None,
                        help="Build a component's benchmark from its native source files.")
taxonomy_app = typer.Typer(help="GBIF Backbone taxonomy: build and inspect the cached index.",
                           no_args_is_help=True, rich_markup_mode=None)
app.add_typer(build_app, name="build")
app.add_typer(taxonomy_app, name="taxonomy")


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"biovqa {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_show_version, is_eager=True,
                                          help="print the version and exit")] = False,
) -> None:
    """Bio-VQA: build, run, score and report the biological VQA benchmark."""


@app.command()
def audit(
    bench: Annotated[Path, typer.Argument(help="benchmark folder, exported folder or hf:// id")],
    images: ImagesOption = None,
) -> None:
    """Check a built benchmark against the verification contract (paper L.2)."""
    from biovqa.bench.audit import audit_bench

    report = audit_bench(bench_folder(bench, images))
    console.print(f"[green]audit passed[/green]: {report}")


def _score_options_help() -> str:
    """The score options of every registered component, from their declarations."""
    from biovqa.components import list_components
    from biovqa.components.registry import COMMON_SCORE_OPTIONS

    lines = ["Component options (--option NAME=VALUE):"]
    for component in list_components():
        lines.append(f"  {component.name.upper()}:")
        lines.extend(f"    {option.describe()}" for option in component.score_options)
    common = ", ".join(option.name for option in COMMON_SCORE_OPTIONS)
    lines.append(f"  every component: {common} (also as --bootstrap, --seed, --confidence)")
    return "\b\n" + "\n".join(lines)  # \b: click keeps the lines as written


def parse_option_pairs(pairs: list[str] | None, *, flag: str = "--option") -> dict[str, str]:
    """``["tau=20", "prefer_text=true"]`` → ``{"tau": "20", "prefer_text": "true"}``; each
    value is typed later by the option's declaration."""
    from biovqa.arguments import parse_name_values

    return parse_name_values(pairs, option=flag, what="option", key=lambda name: name.replace("-", "_"),
                             empty_values=True)


class _ScoreCommand(TyperCommand):
    """``biovqa score``, whose help ends with every component's score options: read from the
    declarations when the help is shown, so no other command loads a component (or a plug-in)."""

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        self.epilog = _score_options_help()
        super().format_epilog(ctx, formatter)


@app.command(cls=_ScoreCommand)
def score(
    bench: Annotated[Path, typer.Argument(help="benchmark folder, exported folder or hf:// id")],
    predictions: Annotated[list[Path], typer.Option("--predictions", "-p", help="predictions .parquet or .jsonl (item_id, response), an inspect_ai log or folder of logs, or an lmms-eval samples .jsonl; repeat with --sweep")],
    out: Annotated[Path, typer.Option("--out", "-o", help="output folder for items.parquet + summary.json")],
    option: Annotated[Optional[list[str]], typer.Option("--option", "-O", help="component score option NAME=VALUE (repeatable; listed below)")] = None,
    bootstrap: Annotated[Optional[int], typer.Option(help="bootstrap resamples for the intervals (0: no intervals) [default: the component's: C3 and C4 2000, others 1000]")] = None,
    seed: Annotated[Optional[int], typer.Option(help="bootstrap seed [default: 42]")] = None,
    confidence: Annotated[Optional[float], typer.Option(help="confidence level of the intervals [default: 0.95]")] = None,
    sweep: Annotated[bool, typer.Option("--sweep", help="run the component's sensitivity sweep over several predictions files")] = False,
    label: Annotated[Optional[str], typer.Option(help="model label shown in reports (default: from predictions)")] = None,
    score_missing_as_wrong: Annotated[bool, typer.Option(help="score every benchmark item, those a --limit run did not ask as wrong (default: only the run's selection)")] = False,
    images: ImagesOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Score a predictions file against a benchmark (a pure function of both)."""
    from biovqa.bench.folder import claim_output
    from biovqa.scoring.pipeline import score_predictions, sweep_predictions

    options: dict[str, Any] = parse_option_pairs(option)
    bench = bench_folder(bench, images)
    for name, value in (("bootstrap", bootstrap), ("seed", seed), ("confidence", confidence)):
        if value is not None:
            if name in options:
                raise BiovqaError(f"{name} is given both as --{name} and as --option", field=name)
            options[name] = value
    if not sweep and len(predictions) != 1:
        raise BiovqaError("give one --predictions file (several only with --sweep)")
    with claim_output(out, command="score", overwrite=overwrite):
        if sweep:
            path = sweep_predictions(bench, list(predictions), out, options=options)
            console.print(f"[green]sweep written[/green] to {path}")
            return
        result_dir = score_predictions(bench, predictions[0], out, options=options, label=label,
                                       console=console, score_missing_as_wrong=score_missing_as_wrong)
    console.print(f"[green]scores written[/green] to {result_dir}")


@app.command()
def report(
    scores: Annotated[list[Path], typer.Argument(
        help="one or more score folders (full runs; Lite runs of the same models add a full-vs-Lite comparison)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="report folder")],
    overwrite: OverwriteOption = False,
    with_paper: Annotated[bool, typer.Option(
        "--with-paper", help="add the paper's published Table 3 rows (18 models, specialists, floor) as "
        "reference rows marked 'published, not re-run'")] = False,
) -> None:
    """Turn score folders into Table 3 (rank intervals from a shared bootstrap), component tables
    (Markdown, CSV, LaTeX), plots, the cross-component analysis and an HTML page with an item browser."""
    from rich.markup import escape

    from biovqa.bench.folder import claim_output
    from biovqa.reporting import write_report

    def warn(message: str) -> None:
        console.print(f"[yellow]warning[/yellow]: {escape(message)}", highlight=False)

    with claim_output(out, command="report", overwrite=overwrite):
        index = write_report(scores, out, with_paper=with_paper, warn=warn)
    console.print(f"[green]report written[/green]: {index}")


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="where to write the demo (a new or empty folder, or an earlier demo's)")] = Path("biovqa-demo"),
) -> None:
    """Build a small benchmark from bundled data, run the baseline, score it and write the report."""
    from biovqa.demo import run_demo

    run_demo(out, console=console)


def _register_commands() -> None:
    from biovqa.cli import run as run_commands
    from biovqa.cli import taxonomy as taxonomy_commands

    run_commands.register(app)
    taxonomy_commands.register(taxonomy_app)
    __import__("biovqa.cli.analyze", fromlist=["register"]).register(app)  # biovqa analyze …
    __import__("biovqa.cli.release", fromlist=["register"]).register(app)  # export, lite, fetch


_register_commands()


def main(argv: list[str] | None = None) -> None:
    run_app(app, argv)


if __name__ == "__main__":
    main()
