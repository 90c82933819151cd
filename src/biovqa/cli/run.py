"""``biovqa run``, ``biovqa merge`` and ``biovqa plan``: thin shells over :mod:`biovqa.engine`.

Nothing heavy is imported here; a backend's library loads only when that backend is selected.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from biovqa.cli._app import BACKEND_MODULES, OverwriteOption, console, require_modules
from biovqa.cli.release import ImagesOption, bench_folder
from biovqa.errors import BiovqaError


def _split_list(values: list[str] | None) -> tuple[str, ...] | None:
    if not values:
        return None
    parts = [p.strip() for v in values for p in v.split(",") if p.strip()]
    return tuple(parts) or None


def _parse_value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    return text


def parse_backend_options(pairs: list[str] | None) -> dict[str, Any]:
    """``["dtype=bfloat16", "max_pixels=1003520"]`` → ``{"dtype": "bfloat16", "max_pixels": 1003520}``."""
    from biovqa.arguments import parse_name_values

    given = parse_name_values(pairs, option="--option", what="backend option", empty_values=True)
    return {name: _parse_value(value) for name, value in given.items()}


def _selection(components: list[str] | None, tasks: list[str] | None, limit: int | None,
               seed: int, shard: str | None) -> Any:
    from biovqa.engine.selection import Selection, parse_shard

    return Selection(components=_split_list(components), tasks=_split_list(tasks), limit=limit,
                     seed=seed, shard=None if shard is None else parse_shard(shard))


def run_command(
    bench: Annotated[Path, typer.Argument(help="benchmark folder (items.parquet + manifest.json), exported folder or hf:// id")],
    out: Annotated[Path, typer.Option("--out", "-o", help="run folder: predictions.parquet, run.json, store/ (re-run the same command to resume)")],
    model: Annotated[str | None, typer.Option("--model", "-m", help="HF id, local checkpoint folder or served model name (preset names work too)")] = None,
    backend: Annotated[str, typer.Option(help="transformers | vllm | openai | baseline | echo | module:factory")] = "transformers",
    components: Annotated[list[str] | None, typer.Option("--components", help="only these components (comma list or repeated)")] = None,
    tasks: Annotated[list[str] | None, typer.Option("--tasks", help="only these tasks (comma list or repeated)")] = None,
    limit: Annotated[int | None, typer.Option(help="at most N items per task, stratified as Bio-VQA-Lite is, deterministic")] = None,
    seed: Annotated[int, typer.Option(help="seed of the --limit sample")] = 42,
    shard: Annotated[str | None, typer.Option(help="run shard i of n (i/n, counting from 0); images are dealt to shards")] = None,
    executor: Annotated[str, typer.Option(help="inprocess | ray (one replica per GPU)")] = "inprocess",
    replicas: Annotated[int | None, typer.Option(help="ray: model replicas (default: one per GPU)")] = None,
    gpus_per_replica: Annotated[float | None, typer.Option(help="ray: GPUs per replica (default 1 when GPUs exist)")] = None,
    ray_address: Annotated[str | None, typer.Option(help="ray: cluster address (default: start or join a local one)")] = None,
    base_url: Annotated[str | None, typer.Option(help="openai: endpoint, e.g. http://127.0.0.1:8000/v1")] = None,
    api_key_env: Annotated[str | None, typer.Option(help="openai: NAME of the environment variable holding the API key")] = None,
    concurrency: Annotated[int | None, typer.Option(help="openai: requests in flight")] = None,
    rpm: Annotated[float | None, typer.Option(help="openai: requests-per-minute limit")] = None,
    timeout: Annotated[float | None, typer.Option(help="openai: per-request timeout (s)")] = None,
    max_retries: Annotated[int | None, typer.Option(help="openai: retries per request")] = None,
    dtype: Annotated[str | None, typer.Option(help="transformers/vllm: torch dtype, e.g. bfloat16")] = None,
    device: Annotated[str | None, typer.Option(help="transformers: device, e.g. cuda:0 or cpu")] = None,
    revision: Annotated[str | None, typer.Option(help="model revision (branch, tag or commit)")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", help="extra backend option NAME=VALUE (repeatable)")] = None,
    batch_tokens: Annotated[int | None, typer.Option(help="token budget of one batch (default: the backend's, else 32768)")] = None,
    max_batch: Annotated[int | None, typer.Option(help="most requests in one batch (default: the backend's, else 64)")] = None,
    max_new_tokens: Annotated[int | None, typer.Option(help="override the per-component token caps")] = None,
    retry_failed: Annotated[bool, typer.Option(help="on resume, ask again the items that failed")] = False,
    threads: Annotated[int | None, typer.Option(help="torch intra-op threads per worker (default: physical cores shared among workers)")] = None,
    preset: Annotated[str | None, typer.Option(help="force the paper preset NAME (wrappers, caps, processor limits) for this model")] = None,
    flush_rows: Annotated[int, typer.Option(help="write a store segment every N replies …")] = 4096,
    flush_seconds: Annotated[float, typer.Option(help="… or every S seconds, whichever comes first")] = 10.0,
    progress: Annotated[bool, typer.Option(help="live progress on stderr")] = True,
    images: ImagesOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Run a model on a benchmark: predictions.parquet + run.json in --out (resumable)."""
    from biovqa.bench.folder import claim_output
    from biovqa.engine.runner import RunOptions, run_benchmark

    require_modules(BACKEND_MODULES.get(backend, ()), what=f"the {backend} backend", field="--backend")
    require_modules(BACKEND_MODULES.get(executor, ()), what=f"the {executor} executor", field="--executor")

    backend_options = parse_backend_options(option)
    named = {"base_url": base_url, "api_key_env": api_key_env, "concurrency": concurrency,
             "rpm": rpm, "timeout_s": timeout, "max_retries": max_retries, "dtype": dtype,
             "device": device, "revision": revision}
    backend_options.update({k: v for k, v in named.items() if v is not None})
    if backend == "openai":
        if "base_url" not in backend_options:
            raise BiovqaError("the openai backend needs an endpoint", field="--base-url",
                              hint="e.g. --base-url http://127.0.0.1:8000/v1")
        backend_options.setdefault("api_key_env", None)  # a local server needs no key
    options = RunOptions(
        model=model, backend=backend, backend_options=backend_options,
        selection=_selection(components, tasks, limit, seed, shard), executor=executor,
        replicas=replicas, gpus_per_replica=gpus_per_replica, ray_address=ray_address,
        batch_tokens=batch_tokens, max_batch_items=max_batch, max_new_tokens=max_new_tokens,
        revision=revision, retry_failed=retry_failed, threads=threads, preset=preset,
        flush_rows=flush_rows,
        flush_seconds=flush_seconds, progress=progress,
    )
    bench = bench_folder(bench, images)
    with claim_output(out, command="run", overwrite=overwrite):
        result = run_benchmark(bench, out, options)
    if result.selected and result.failed >= result.selected:
        from rich.markup import escape

        first_error = escape(_first_error(result.predictions_path))
        console.print(
            f"[bold red]error:[/bold red] all {result.failed} of {result.selected} requests failed "
            f"(predictions in {result.predictions_path}); first error: {first_error}\n"
            "  hint: fix the cause, then re-run the same command with --retry-failed",
            highlight=False,
        )
        raise SystemExit(1)
    console.print(
        f"[green]predictions written[/green] to {result.predictions_path}: {result.selected} items "
        f"({result.resumed} resumed, {result.asked} asked, {result.failed} failed)",
        highlight=False,
    )


def _first_error(predictions_path: Path) -> str:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    errors = pq.read_table(predictions_path, columns=["error"]).column("error")
    found = pc.drop_null(errors).to_pylist()
    return str(found[0])[:300] if found else "unknown"


def merge_command(
    runs: Annotated[list[Path], typer.Argument(help="run folders to combine (shards, machines)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="merged run folder")],
    allow_partial: Annotated[bool, typer.Option(help="accept shards that do not cover the whole selection (exit 0)")] = False,
    overwrite: OverwriteOption = False,
) -> None:
    """Combine run folders; refuses folders made with different benchmark/model/prompts/decoding.

    The merged folder is always written; when the inputs do not cover their selection (a shard
    missing, a run unfinished) the coverage is printed and the exit status is 1 unless
    --allow-partial."""
    from biovqa.engine.card import build_merge_card, write_card
    from biovqa.engine.selection import merge_coverage
    from biovqa.engine.store import merge_runs

    from biovqa.bench.folder import claim_output

    with claim_output(out, command="merge", overwrite=overwrite):
        table = merge_runs(runs, out)
        coverage = merge_coverage(runs, table)
        card = build_merge_card(runs, out, table)
        card["coverage"] = coverage
        write_card(out, card)
    console.print(f"[green]merged[/green] {len(runs)} run(s) into {out}: {table.num_rows} items",
                  highlight=False)
    if not coverage["complete"]:
        parts = []
        if coverage["expected"] is not None:
            share = coverage["covered"] / max(coverage["expected"], 1)
            parts.append(f"{coverage['covered']} of {coverage['expected']} selected items "
                         f"({100 * share:.1f}%)")
        if coverage["missing_shards"]:
            parts.append("missing shards " + ", ".join(coverage["missing_shards"]))
        if coverage["incomplete_runs"]:
            parts.append("unfinished runs " + ", ".join(coverage["incomplete_runs"]))
        console.print(f"[yellow]warning[/yellow]: the merge is partial: {'; '.join(parts)}",
                      highlight=False)
        if not allow_partial:
            console.print("  hint: run the missing shards (same command) and merge again, or "
                          "pass --allow-partial to accept a partial merge", highlight=False)
            raise SystemExit(1)


def plan_command(
    bench: Annotated[Path, typer.Argument(help="benchmark folder, exported folder or hf:// id")],
    model: Annotated[str, typer.Option("--model", "-m", help="model (preset name, HF id or path)")],
    components: Annotated[list[str] | None, typer.Option("--components")] = None,
    tasks: Annotated[list[str] | None, typer.Option("--tasks")] = None,
    limit: Annotated[int | None, typer.Option(help="at most N items per task")] = None,
    seed: Annotated[int, typer.Option()] = 42,
    shard: Annotated[str | None, typer.Option(help="i/n")] = None,
    throughput: Annotated[float | None, typer.Option(help="items/s per GPU for the GPU-hours estimate (default 10)")] = None,
    price_in: Annotated[float, typer.Option(help="API price in USD per 1M prompt tokens")] = 0.0,
    price_out: Annotated[float, typer.Option(help="API price in USD per 1M completion tokens")] = 0.0,
    max_new_tokens: Annotated[int | None, typer.Option(help="override the token caps")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
    calibrate: Annotated[int | None, typer.Option(help="run about N items here first (prefill-only, then full) and extrapolate from the measured rates")] = None,
    backend: Annotated[str, typer.Option(help="--calibrate: the backend to run")] = "transformers",
    option: Annotated[list[str] | None, typer.Option("--option", help="--calibrate: backend option NAME=VALUE")] = None,
    threads: Annotated[int | None, typer.Option(help="--calibrate: torch threads")] = None,
    preset: Annotated[str | None, typer.Option(help="force the paper preset NAME")] = None,
    images: ImagesOption = None,
) -> None:
    """Dry run: items, images, prompt/completion tokens, GPU-hours and API cost of a run."""
    from biovqa.engine.plan import calibrate as run_calibration
    from biovqa.engine.plan import plan_run, render_plan

    bench = bench_folder(bench, images)
    selection = _selection(components, tasks, limit, seed, shard)
    estimate = plan_run(bench, model, selection, throughput=throughput, price_in=price_in,
                        price_out=price_out, max_new_tokens=max_new_tokens,
                        force_preset=preset)
    if calibrate is not None:
        import tempfile

        require_modules(BACKEND_MODULES.get(backend, ()), what=f"the {backend} backend",
                        field="--backend")

        from biovqa.engine.runner import RunOptions

        run_options = RunOptions(model=model, backend=backend,
                                 backend_options=parse_backend_options(option),
                                 selection=selection, max_new_tokens=max_new_tokens,
                                 threads=threads, preset=preset)
        with tempfile.TemporaryDirectory(prefix="biovqa-calibrate-") as workdir:
            estimate = run_calibration(bench, run_options, calibrate, estimate, workdir)
    estimate = _with_assumption_notes(estimate, model, preset, price_in, price_out)
    if as_json:
        typer.echo(json.dumps(estimate.to_json(), indent=2, sort_keys=True, ensure_ascii=False))
    else:
        typer.echo(render_plan(estimate))


def _with_assumption_notes(estimate: Any, model: str, preset: str | None, price_in: float,
                           price_out: float) -> Any:
    """Say what the plan assumed where the user did not say it: the image-token rule of a model
    that is none of the paper's, and a cost of 0 when no prices were given."""
    from dataclasses import replace

    from biovqa.engine.presets import resolve_preset

    found, match = resolve_preset(model, preset)
    notes = list(estimate.notes)
    if match.get("matched_by") == "default":
        notes.append(f"{model!r} is not one of the paper's models: its image tokens follow the "
                     f"{found.image_token_rule!r} rule guessed from its name; give --preset NAME "
                     "to plan it as a known architecture")
    if price_in == 0 and price_out == 0:
        notes.append("no API prices given: the cost is 0; give --price-in/--price-out (USD per 1M "
                     "tokens) for an API model")
    return replace(estimate, notes=notes)


def register(app: typer.Typer) -> None:
    """Add ``run``, ``merge`` and ``plan`` to the main ``biovqa`` app."""
    app.command("run")(run_command)
    app.command("merge")(merge_command)
    app.command("plan")(plan_command)
