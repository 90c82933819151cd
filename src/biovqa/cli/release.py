"""``biovqa export``, ``biovqa lite`` and ``biovqa fetch``: getting the benchmark to users.

Thin shells over :mod:`biovqa.bench.export`, :mod:`biovqa.bench.hub`, :mod:`biovqa.bench.lite` and
:mod:`biovqa.sources.fetch`; nothing heavy is imported until a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from biovqa.cli._app import OverwriteOption, console

#: ``--images DIR`` of every command that takes ``BENCH``.
ImagesOption = Annotated[Optional[Path], typer.Option(
    "--images", help="source photos of an exported folder or hf:// id, each checked against its sha256 "
                     "(default: $BIOVQA_IMAGES)")]


def bench_folder(bench: Path, images: Path | None) -> Path:
    """The benchmark folder ``BENCH`` (+ ``--images``) names: an exported folder or hub id is
    rebuilt into the cache with its source photos resolved and verified (see
    :func:`biovqa.bench.hub.resolve_bench`)."""
    from biovqa.bench.hub import resolve_bench

    return resolve_bench(bench, images)


def export(
    benches: Annotated[list[Path], typer.Argument(help="benchmark folders, one per component")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Hugging Face dataset folder to write")],
    shard_rows: Annotated[int, typer.Option("--shard-rows", help="items per Parquet shard")] = 50_000,
    repo_id: Annotated[str, typer.Option("--repo-id", help="hub id named in the dataset card")] = "imageomics/Bio-VQA",
    format: Annotated[str, typer.Option("--format", help="hf: a Hugging Face dataset folder; lmms-eval: a task folder for `lmms-eval --include_path OUT --tasks biovqa_c1`")] = "hf",
    model: Annotated[Optional[str], typer.Option("--model", help="lmms-eval format: the model whose prompt wrappers the documents carry (as biovqa run --model)")] = None,
    preset: Annotated[Optional[str], typer.Option("--preset", help="lmms-eval format: name the model preset outright")] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Write benchmarks as a Hugging Face dataset folder (Parquet shards, rendered images, card),
    or as an lmms-eval task folder (--format lmms-eval)."""
    from biovqa.bench.folder import claim_output
    from biovqa.bench.export import export_bench
    from biovqa.errors import BiovqaError

    if format not in ("hf", "lmms-eval"):
        raise BiovqaError(f"unknown export format {format!r}", field="--format", hint="use hf or lmms-eval")
    if format == "lmms-eval":
        from biovqa.interop.lmms_eval import export_lmms_eval, task_name
        from biovqa.bench import open_bench

        opened = [open_bench(b) for b in benches]
        with claim_output(out, command="export", overwrite=overwrite):
            folder = export_lmms_eval(opened, out, model=model, preset=preset)
        tasks = ",".join(task_name(b.component) for b in opened)
        console.print(f"[green]lmms-eval task folder written[/green]: {folder} (run with `lmms-eval --model … "
                      f"--include_path {folder} --tasks {tasks} --log_samples --output_path OUT`)", highlight=False)
        return
    with claim_output(out, command="export", overwrite=overwrite):
        folder = export_bench(benches, out, shard_rows=shard_rows, repo_id=repo_id, console=console)
    # huggingface_hub ≥ 0.34 ships the `hf` command (`huggingface-cli` is gone from new installs)
    console.print(f"[green]dataset folder written[/green]: {folder} "
                  f"(upload with `hf upload {repo_id} {folder} --repo-type dataset`)", highlight=False)


def lite(
    bench: Annotated[Path, typer.Argument(help="benchmark folder, exported folder or hf:// id")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Lite benchmark folder to write")],
    per_task: Annotated[int, typer.Option("--per-task", help="items per task")] = 500,
    seed: Annotated[int, typer.Option(help="selection seed")] = 42,
    images: ImagesOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Bio-VQA-Lite: a stratified subset, PER-TASK items per task (the paper's Conclusion: 500 per task, 12K in all)."""
    from biovqa.bench.folder import claim_output
    from biovqa.bench.lite import make_lite

    with claim_output(out, command="lite", overwrite=overwrite):
        result = make_lite(bench, out, per_task=per_task, seed=seed, images=images)
    console.print(f"[green]Lite benchmark written[/green]: {result.root} ({result.items.num_rows:,} items)")


def fetch(
    source: Annotated[str, typer.Argument(help="source name (biovqa fetch --list)")] = "",
    out: Annotated[Path, typer.Option("--out", "-o", help="folder to download and unpack into")] = Path("sources"),
    mirror: Annotated[Optional[str], typer.Option(help="fetch the archives from this base URL instead")] = None,
    list_sources: Annotated[bool, typer.Option("--list", help="list the known sources and exit")] = False,
    sha256: Annotated[Optional[list[str]], typer.Option("--sha256", help="pin the archive's sha256 (HEX, or FILE=HEX for a source of several archives; repeatable)")] = None,
    size: Annotated[Optional[list[str]], typer.Option("--size", help="pin the archive's size in bytes (N or FILE=N; repeatable)")] = None,
) -> None:
    """Download a public source dataset (resumable) and unpack it where the builders read it.

    The catalogue pins no checksum it could not compute (each archive says why); pin one with
    --sha256/--size, otherwise the download is reported as not verified."""
    from biovqa.sources.fetch import (
        SOURCES,
        fetch_source,
        get_source,
        licence_note,
        parse_pins,
        verification_note,
        with_mirror,
        with_pins,
    )

    if list_sources or not source:
        for name, info in sorted(SOURCES.items()):
            console.print(f"{name:16s} {info.title} ({info.licence})")
        return
    chosen = get_source(source)
    if sha256 or size:
        chosen = with_pins(chosen, sha256=parse_pins(sha256, chosen, flag="--sha256"),
                           size=parse_pins(size, chosen, flag="--size"))
    if mirror:
        chosen = with_mirror(chosen, mirror)
    folder = fetch_source(chosen, out, console=console)
    console.print(f"[green]{chosen.title} ready[/green]: {folder}")
    for archive in chosen.archives:
        console.print(verification_note(archive), highlight=False)
    if chosen.layout:
        console.print(f"layout: {chosen.layout}")
    console.print(licence_note(chosen))


def register(app: typer.Typer) -> None:
    """Add ``export``, ``lite`` and ``fetch`` to the main ``biovqa`` app."""
    app.command("export")(export)
    app.command("lite")(lite)
    app.command("fetch")(fetch)
