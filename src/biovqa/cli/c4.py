"""``biovqa c4 …``: C4 steps outside ``biovqa build c4``.

* ``biovqa c4 embed --catalog NAME=PATH … --embedder DINOV2 --out FILE`` — embed the catalogs'
  crops once on a machine with torch (a GPU machine for the real catalogs); ``biovqa build c4
  --embeddings FILE`` then builds anywhere, without torch.

C4's declaration names this group (``Component.commands``); the command line imports this module
only for ``biovqa c4 …``, and the component's module (:mod:`biovqa.components.c4.build`) only
when the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

c4_app = typer.Typer(help="C4 re-identification: embed catalogs once for `biovqa build c4 --embeddings`.",
                     no_args_is_help=True, rich_markup_mode=None)


@c4_app.command("embed")
def embed(
    catalog: Annotated[list[str], typer.Option("--catalog", help="NAME=PATH, NAME one of whaleshark, beluga, hyena, leopard, gzcd (repeatable)")],
    embedder: Annotated[str, typer.Option(help="DINOv2 checkpoint folder or hub id (transformers AutoModel)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="embeddings file to write (Parquet: sha256, vector); an existing one of the same model is extended")],
    whole_photo: Annotated[bool, typer.Option("--whole-photo", help="embed whole photos (for `build c4 --whole-photo`)")] = False,
    batch_size: Annotated[int, typer.Option(help="crops per embedding batch")] = 32,
    device: Annotated[str | None, typer.Option(help="torch device (default: cuda when available)")] = None,
    catalog_reader: Annotated[str, typer.Option("--catalog-reader", help="Wild Me catalog reader: biovqa or wildlife-datasets")] = "biovqa",
) -> None:
    """Embed the catalogs' crops once (on a machine with torch) for `biovqa build c4 --embeddings`."""
    from biovqa.progress import stderr_console

    from biovqa.components.c4.build import embed_catalogs

    path = embed_catalogs(catalog, embedder, out, whole_photo=whole_photo, batch_size=batch_size, device=device,
                          progress=True, catalog_reader=catalog_reader)
    stderr_console().print(f"embeddings written: {path}; build anywhere with "
                               f"`biovqa build c4 --catalog … --embeddings {path} --out BENCH`",
                               highlight=False, markup=False)
