"""``biovqa specialist …``: non-VLM reference models that write predictions ``biovqa score``
scores like any model's (the run card says ``"kind": "specialist"``).

* ``biovqa specialist megadescriptor BENCH --model PATH --out RUN`` — the C4 ceiling
  (MegaDescriptor-L-384, cosine similarity, threshold fitted on the random condition).
* ``biovqa specialist bioclip2 BENCH --model PATH --out RUN`` — the C1 ceiling (BioCLIP-2 top-1
  species per image; paper §4.2, App. B.4).

Each component declares its specialist (``Component.commands``, group ``specialist``) and the
``biovqa specialist`` group lists what the declarations name; nothing heavy is imported here,
timm and torch load when the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from biovqa.cli._app import console
from biovqa.cli.release import ImagesOption, bench_folder

def megadescriptor_command(
    bench: Annotated[Path, typer.Argument(help="C4 benchmark folder (or exported folder / hf:// id)")],
    model: Annotated[Path, typer.Option("--model", help="local MegaDescriptor-L-384 folder (timm config.json + weights)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="run folder to write (predictions.parquet, specialist.json, run.json)")],
    dataset: Annotated[Optional[list[str]], typer.Option("--dataset", help="only these datasets (repeatable; the paper: gzcd)")] = None,
    batch_size: Annotated[int, typer.Option(help="pairs per batch (two photos each)")] = 16,
    device: Annotated[Optional[str], typer.Option(help="torch device (default: cuda when available)")] = None,
    images: ImagesOption = None,
) -> None:
    """C4 ceiling: MegaDescriptor cosine similarity, threshold fitted on random, AUC → d′ = √2·z(AUC)."""
    import json

    from biovqa.components.c4.specialist import run_specialist, specialist_table

    predictions = run_specialist(bench_folder(bench, images), model, out, datasets=dataset, batch_size=batch_size, device=device,
                                 progress=True)
    results = json.loads((Path(out) / "specialist.json").read_text(encoding="utf-8"))
    for row in specialist_table(results):
        auc, dprime, acc = row["megadescriptor_AUC"], row["megadescriptor_dprime"], row["megadescriptor_acc"]
        console.print(f"  {row['dataset']:10s} {row['condition']:6s} AUC {_fmt(auc)}  d′ {_fmt(dprime)}  acc {_fmt(acc)}")
    console.print(f"[green]predictions written[/green] to {predictions}; score them with "
                  f"`biovqa score {bench}{_images_flag(images)} -p {predictions} -o SCORES`")


def bioclip2_command(
    bench: Annotated[Path, typer.Argument(help="C1 benchmark folder (or exported folder / hf:// id)")],
    model: Annotated[Path, typer.Option("--model", help="local BioCLIP-2 folder (open_clip_config.json + weights)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="run folder to write (predictions.parquet, top1.parquet, run.json)")],
    candidates: Annotated[str, typer.Option(help="candidate species: kingdom (fair), tol (Table 3) or group")] = "kingdom",
    labels: Annotated[Optional[Path], typer.Option(help="TreeOfLife species list (txt_emb_species.json); default: the benchmark's species")] = None,
    label_embeddings: Annotated[Optional[Path], typer.Option("--label-embeddings", help="folder with precomputed txt_emb_species.npy + .json (BioCLIP's; also DIR/embeddings/): used instead of encoding the names")] = None,
    batch_size: Annotated[int, typer.Option(help="images (and labels) per batch")] = 64,
    device: Annotated[Optional[str], typer.Option(help="torch device (default: cuda when available)")] = None,
    images: ImagesOption = None,
) -> None:
    """C1 ceiling: BioCLIP-2 top-1 species per image answers every rank; the MCQ over its four options."""
    from biovqa.components.c1.specialist import run_bioclip2

    predictions = run_bioclip2(bench_folder(bench, images), model, out, candidates=candidates, labels=labels,
                               label_embeddings=label_embeddings, batch_size=batch_size, device=device,
                               progress=True)
    console.print(f"[green]predictions written[/green] to {predictions}; score them with "
                  f"`biovqa score {bench}{_images_flag(images)} -p {predictions} -o SCORES`")


def _images_flag(images: Path | None) -> str:
    return "" if images is None else f" --images {images}"


def _fmt(value: float | None) -> str:
    return "  –  " if value is None else f"{value:.3f}"

